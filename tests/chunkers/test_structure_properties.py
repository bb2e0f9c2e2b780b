"""Invariants of the structure-aware chunkers on generated markdown and on the real corpora.

Every structure chunker skips whitespace between blocks (and between the pieces of a split
block): its spans start and end on non-whitespace characters, and every non-whitespace
character of a document is in at least one span. Size limits hold exactly, with one
documented exception for the token-limited chunkers (``paragraphs``, ``heading_limited``): a
single character whose tokens alone exceed the limit is a chunk of its own.
"""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS, Chunk
from chunkmark.chunkers.markdown import Block, parse_blocks
from chunkmark.spans import Span, as_array, union
from chunkmark.tokenizers import count_tokens

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- generated markdown-ish documents ---------------------------------------------------------

# Words, and odd whitespace as words of their own (lines join words with a space).
_WORD = st.one_of(
    st.sampled_from(["alpha", "Beta", "gamma.", "delta,", "e.g.", "3.14", "Dr.", "end!", "why?"]),
    st.sampled_from(["naïve", "ß", "İ", "漢字テキスト", "한국어", "العربية", "😀", "👩‍👩‍👧"]),
    st.sampled_from(["x|y", "#tag", "`tick`", "~~", "---", "|", "#", "```", "<|endoftext|>"]),
    st.sampled_from(["\t", "\u00a0", "\u3000", "\r", "", "\u2028", "\x0c"]),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=6),
)
_LINE = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)
_HEADING = st.builds(
    lambda indent, marks, line: f"{indent}{marks} {line}",
    st.sampled_from(["", "", " ", "   ", "    "]),
    st.sampled_from(["#", "##", "###", "####", "#####", "######", "#######"]),
    _LINE,
)
_PARAGRAPH = st.lists(_LINE, min_size=1, max_size=4).map("\n".join)
_LIST = st.lists(_LINE.map(lambda line: "- " + line), min_size=1, max_size=4).map("\n".join)
_CODE_LINE = st.one_of(
    _LINE, st.sampled_from(["", "   ", "# comment", "## not a heading", "| a | b |", "~~~~~"])
)
_CODE = st.builds(
    lambda fence, indent, body, close: "\n".join([indent + fence, *body, fence[:close]]),
    st.sampled_from(["```", "~~~", "````py", "~~~~"]),
    st.sampled_from(["", "  ", "   "]),
    st.lists(_CODE_LINE, max_size=5),
    st.sampled_from([3, 4, 0]),  # closing fence: 3 or 4 of the character, or none
)
_CELL = st.sampled_from(["1", "two", "3.5", "ß", "😀", "x y", " ", "#"])
_TABLE = st.builds(
    lambda piped, rows: "\n".join(
        f"| {a} | {b} |" if piped else f"{a} | {b}"
        for a, b in [("h1", "h2"), ("---", ":-:"), *rows]
    ),
    st.booleans(),
    st.lists(st.tuples(_CELL, _CELL), max_size=4),
)
_BLOCK = st.one_of(_HEADING, _PARAGRAPH, _PARAGRAPH, _LIST, _CODE, _TABLE)
_SEPARATOR = st.sampled_from(["\n\n", "\n\n", "\n", "\n \n", "\r\n\r\n", "\n\n\n", "\n\t\n", ""])


def documents() -> st.SearchStrategy[str]:
    """Markdown-ish documents: blocks joined by blank lines, line breaks, odd whitespace."""
    return st.lists(st.tuples(_BLOCK, _SEPARATOR), max_size=8).map(
        lambda parts: "".join(block + sep for block, sep in parts)
    )


# --- the chunkers under test ------------------------------------------------------------------

_LEVEL = st.integers(1, 6)
SPECS = st.one_of(
    st.builds(
        lambda lo, hi, ctx: (
            f"paragraphs(min_tokens={min(lo, hi)}, max_tokens={hi}, heading_context={ctx})"
        ),
        st.integers(0, 20),
        st.integers(1, 40),
        st.booleans(),
    ),
    st.builds(
        lambda n, r, levels: (
            f"markdown_sections(max_length={n}, overlap_ratio={r}, levels={sorted(levels)})"
        ),
        st.integers(1, 80),
        st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.9, 0.99]),
        st.sets(_LEVEL, min_size=1, max_size=3),
    ),
    st.builds(lambda n: f"headings(max_level={n})", _LEVEL),
    st.builds(
        lambda n, t: f"heading_limited(max_level={n}, max_tokens={t})", _LEVEL, st.integers(1, 40)
    ),
    st.builds(
        lambda n, s: f"hierarchical(max_level={n}, score_on={s!r})",
        _LEVEL,
        st.sampled_from(["leaves", "parents"]),
    ),
    st.builds(lambda n: f"heading_paragraph(max_level={n})", _LEVEL),
)


def _run(spec: str, text: str) -> list[Span | Chunk]:
    chunker, _ = CHUNKERS.build(spec)
    return list(chunker(text))


def _param(spec: str, name: str) -> int:
    match = re.search(rf"{name}=(\d+)", spec)
    assert match is not None
    return int(match.group(1))


def _is_parents(spec: str) -> bool:
    return "'parents'" in spec


def _tokens(texts: list[str]) -> list[int]:
    return count_tokens(texts, "cl100k_base")


def _assert_within_limits(spec: str, text: str, chunks: list[Span | Chunk]) -> None:
    """Token limits hold except for single characters; markdown_sections' length always."""
    if spec.startswith("markdown_sections"):
        limit = _param(spec, "max_length")
        assert all(c.end - c.start <= limit for c in chunks)
    elif spec.startswith(("paragraphs", "heading_limited")):
        limit = _param(spec, "max_tokens")
        sizes = _tokens([text[c.start : c.end] for c in chunks])
        assert all(n <= limit or c.end - c.start == 1 for c, n in zip(chunks, sizes, strict=True))


def _assert_covers(text: str, chunks: list[Span | Chunk]) -> None:
    """Every non-whitespace character of ``text`` is in some chunk (vectorised)."""
    runs = np.array([m.span() for m in re.finditer(r"\S+", text)], dtype=np.int64).reshape(-1, 2)
    if len(runs) == 0:
        return
    covered = union(as_array([(c.start, c.end) for c in chunks]))
    assert len(covered) > 0
    k = np.searchsorted(covered[:, 0], runs[:, 0], side="right") - 1
    assert (k >= 0).all()
    assert (covered[k, 1] >= runs[:, 1]).all()


@FAST
@given(spec=SPECS, text=documents())
def test_spans_are_exact_ordered_covering_and_deterministic(spec: str, text: str) -> None:
    chunks = _run(spec, text)
    for c in chunks:
        assert 0 <= c.start < c.end <= len(text)
        piece = text[c.start : c.end]
        assert not piece[0].isspace() and not piece[-1].isspace()
    if spec.startswith("markdown_sections"):  # ordered, overlapping
        assert all(a.start <= b.start for a, b in pairwise(chunks))
    elif not _is_parents(spec):  # ordered and disjoint
        assert all(a.end <= b.start for a, b in pairwise(chunks))
    _assert_covers(text, chunks)
    _assert_within_limits(spec, text, chunks)
    assert _run(spec, text) == chunks


def _expected_context(spec: str, text: str, start: int) -> str | None:
    """The context a chunk starting at ``start`` embeds: its nearest heading (paragraphs), or
    the path of enclosing headings up to max_level less one it starts with (built here with a
    stack of its own)."""
    before = [b for b in parse_blocks(text) if b.kind == "heading" and b.start <= start]
    if spec.startswith("paragraphs"):
        if "heading_context=False" in spec or not before or before[-1].start == start:
            return None
        return text[before[-1].start : before[-1].end]
    max_level = _param(spec, "max_level")
    path: list[Block] = []
    for h in (b for b in before if b.level <= max_level):
        while path and path[-1].level >= h.level:
            path.pop()
        path.append(h)
    if path and path[-1].start == start:
        path.pop()
    return " > ".join(text[h.start : h.end] for h in path) or None


@FAST
@given(spec=SPECS, text=documents())
def test_embed_text_is_context_then_span_text(spec: str, text: str) -> None:
    chunks = _run(spec, text)
    if spec.startswith(("markdown_sections", "headings")):
        assert not any(isinstance(c, Chunk) for c in chunks)
        return
    if _is_parents(spec):
        return  # see test_parents_mode_embeds_the_leaves
    for c in chunks:
        context = _expected_context(spec, text, c.start)
        if context is None:
            assert not isinstance(c, Chunk)
        else:
            assert isinstance(c, Chunk)
            assert c.embed_text == f"{context}\n\n{text[c.start : c.end]}"


@FAST
@given(spec=SPECS, text=documents())
def test_code_blocks_and_tables_within_the_limit_stay_whole(spec: str, text: str) -> None:
    chunks = _run(spec, text)
    atomic = [b for b in parse_blocks(text) if b.kind in ("code", "table")]
    if spec.startswith("markdown_sections"):
        fits = [b.end - b.start <= _param(spec, "max_length") for b in atomic]
    elif spec.startswith(("paragraphs", "heading_limited")):
        sizes = _tokens([text[b.start : b.end] for b in atomic])
        fits = [n <= _param(spec, "max_tokens") for n in sizes]
    else:
        fits = [True] * len(atomic)
    for block, whole in zip(atomic, fits, strict=True):
        if whole:
            assert any(c.start <= block.start and block.end <= c.end for c in chunks)


@FAST
@given(
    spec=st.sampled_from(
        ["paragraphs(min_tokens=0, max_tokens={})", "heading_limited(max_tokens={})"]
    ),
    limit=st.integers(1, 30),
    text=documents(),
)
def test_long_code_blocks_and_tables_are_cut_at_lines(spec: str, limit: int, text: str) -> None:
    """Between two chunks inside one code block or table there is a line break, unless the
    line there alone is over the limit (then it is cut at words or characters)."""
    chunks = _run(spec.format(limit), text)
    for block in (b for b in parse_blocks(text) if b.kind in ("code", "table")):
        inside = [c for c in chunks if block.start <= c.start and c.end <= block.end]
        for a, b in pairwise(inside):
            if "\n" in text[a.end : b.start]:
                continue
            line_start = text.rfind("\n", 0, a.end) + 1
            line_end = text.find("\n", b.start)
            line = text[line_start : len(text) if line_end == -1 else line_end].strip()
            assert _tokens([line])[0] > limit


@FAST
@given(max_level=_LEVEL, text=documents())
def test_parents_mode_embeds_the_leaves(max_level: int, text: str) -> None:
    leaves = _run(f"hierarchical(max_level={max_level}, score_on='leaves')", text)
    parents = _run(f"hierarchical(max_level={max_level}, score_on='parents')", text)
    assert len(leaves) == len(parents)
    for leaf, parent in zip(leaves, parents, strict=True):
        assert parent.start <= leaf.start and leaf.end <= parent.end
        leaf_embedded = leaf.text(text) if isinstance(leaf, Chunk) else text[leaf.start : leaf.end]
        if isinstance(parent, Chunk):
            assert parent.embed_text == leaf_embedded
        else:  # kept its own span: the same chunk as in leaves mode
            assert (parent.start, parent.end) == (leaf.start, leaf.end)
            assert not isinstance(leaf, Chunk)


@FAST
@given(max_level=_LEVEL, text=documents())
def test_sections_start_at_headings(max_level: int, text: str) -> None:
    starts = {b.start for b in parse_blocks(text) if b.kind == "heading" and b.level <= max_level}
    for spec in (
        f"headings(max_level={max_level})",
        f"hierarchical(max_level={max_level})",
        f"heading_paragraph(max_level={max_level})",
        f"heading_limited(max_level={max_level}, max_tokens=8)",
    ):
        chunks = _run(spec, text)
        assert starts <= {c.start for c in chunks}
        # No chunk runs across one of those headings.
        assert not any(c.start < s < c.end for c in chunks for s in starts)


@FAST
@given(text=documents())
def test_paragraph_chunks_never_run_across_a_heading(text: str) -> None:
    headings = [b.start for b in parse_blocks(text) if b.kind == "heading"]
    for c in _run("paragraphs(min_tokens=40, max_tokens=60)", text):
        assert not any(c.start < h < c.end for h in headings)


# --- the real corpora -------------------------------------------------------------------------

CORPUS_SPECS = [
    "paragraphs",
    "markdown_sections",
    "markdown_sections(max_length=300, overlap_ratio=0.5)",
    "headings",
    "heading_limited",
    "hierarchical",
    "hierarchical(score_on='parents')",
    "heading_paragraph",
]


@pytest.fixture(scope="module")
def corpora(chroma_general_dir: Path) -> list[str]:
    files = sorted((chroma_general_dir / "corpora").glob("*.md"))
    assert len(files) == 5
    return [f.read_bytes().decode("utf-8") for f in files]


@pytest.mark.integration
@pytest.mark.parametrize("spec", CORPUS_SPECS)
def test_corpora_are_covered_within_limits(spec: str, corpora: list[str]) -> None:
    for text in corpora:
        chunks = _run(spec, text)
        assert chunks
        assert all(0 <= c.start < c.end <= len(text) for c in chunks)
        _assert_covers(text, chunks)
        if spec.startswith(("paragraphs", "heading_limited", "markdown_sections")):
            canonical = str(CHUNKERS.resolve(spec))
            _assert_within_limits(canonical, text, chunks)
