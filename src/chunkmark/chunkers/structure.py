"""Structure-aware chunkers: markdown paragraphs, headings and sections.

All of them read the text with :func:`chunkmark.chunkers.markdown.parse_blocks` (ATX headings,
fenced code, tables, text; ``#`` lines inside fences are not headings) and share its rules:

- A fenced code block or a table is never split, nor broken at a blank line inside it, unless
  it alone exceeds the size limit; it is then split at line/row boundaries
  (:func:`~chunkmark.chunkers.markdown.split_to_fit`, or the cut rules of
  ``markdown_sections``).
- Chunk spans run from a non-whitespace character to a non-whitespace character: whitespace
  between blocks (and between the pieces of a split block) belongs to no chunk. Every other
  character belongs to at least one chunk.
- Chunks that embed context (a heading, or a heading path such as ``# Guide > ## Install``)
  are :class:`Chunk` objects whose ``embed_text`` is that context, a blank line, and the span's
  text. The context never repeats a heading the chunk starts with; a chunk with no context to
  add is a plain :class:`Span`. Size limits apply to the span's text, not to the context.
- Token counts are ``cl100k_base`` tokens unless ``encoding`` says otherwise.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Literal

from chunkmark.chunkers.base import CHUNKERS, Chunk
from chunkmark.chunkers.markdown import (
    Block,
    Section,
    TokenCounter,
    pack_exact,
    paragraph_groups,
    paragraph_piece,
    parse_blocks,
    section_piece,
    sections,
    split_to_fit,
    strip,
)
from chunkmark.spans import Span
from chunkmark.tokenizers import get_encoding

DEFAULT_LEVELS = [2, 3]  # never mutated
_LAST_SPACE = re.compile(r".*\s", re.DOTALL)


def _check_level(max_level: int) -> None:
    if not 1 <= max_level <= 6:
        raise ValueError(f"max_level must be a heading level from 1 to 6, got {max_level}")


def _check_max_tokens(max_tokens: int) -> None:
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive number of tokens, got {max_tokens}")


def _with_context(text: str, span: Span, context: str | None) -> Span | Chunk:
    if not context:
        return span
    return Chunk("", span.start, span.end, f"{context}\n\n{text[span.start : span.end]}")


def _with_path(text: str, span: Span, path: Sequence[Block]) -> Span | Chunk:
    """The span with its heading path as context, less the heading it starts with."""
    if path and path[-1].start == span.start:
        path = path[:-1]
    return _with_context(text, span, " > ".join(text[h.start : h.end] for h in path))


def _section_span(blocks: Sequence[Block], first: int, stop: int) -> Span:
    return Span(blocks[first].start, blocks[stop - 1].end)


# --- paragraphs -------------------------------------------------------------------------------


@CHUNKERS.register("paragraphs", short_keeps_first=False)  # min_tokens is a detail
def paragraphs(
    min_tokens: int = 50,
    max_tokens: int = 256,
    heading_context: bool = True,
    encoding: str = "cl100k_base",
) -> Callable[[str], list[Span | Chunk]]:
    """Blank-line paragraphs, merged up to min_tokens, split to max_tokens, with their heading.

    Paragraphs are separated by blank lines (code blocks and tables are never broken at blank
    lines inside them); a heading line is a paragraph of its own and always starts a new chunk.
    A chunk takes in the next paragraph while its size (its paragraphs' tokens plus one per
    paragraph break) is under ``min_tokens`` and the result has at most ``max_tokens`` tokens;
    chunks never merge across a heading. A paragraph over
    ``max_tokens`` is split on its own: at its blocks, then sentences (code: lines, tables:
    rows), then words, then characters (see ``split_to_fit``).

    Args:
        min_tokens: a chunk shorter than this takes in the next paragraph (0: never merge).
        max_tokens: maximum tokens of a chunk's span (a single character over it is kept).
        heading_context: embed each chunk as its section's nearest heading line, a blank
            line, and its text (unless the chunk starts with that heading).
        encoding: tiktoken encoding name.
    """
    _check_max_tokens(max_tokens)
    if not 0 <= min_tokens <= max_tokens:
        raise ValueError(
            f"min_tokens must be between 0 and max_tokens ({max_tokens}), got {min_tokens}"
        )
    enc = get_encoding(encoding)

    def chunk(text: str) -> list[Span | Chunk]:
        blocks = parse_blocks(text)
        counter = TokenCounter(text, enc)
        out: list[Span | Chunk] = []
        for span, heading in _paragraph_chunks(text, blocks, min_tokens, max_tokens, counter):
            context = None
            if heading_context and heading is not None and heading.start != span.start:
                context = text[heading.start : heading.end]
            out.append(_with_context(text, span, context))
        return out

    return chunk


_Plan = list[tuple[list[tuple[int, int]], Block | None]]  # merged paragraph ranges, heading


def _paragraph_chunks(
    text: str, blocks: list[Block], min_tokens: int, max_tokens: int, counter: TokenCounter
) -> list[tuple[Span, Block | None]]:
    """Chunk spans with the heading of their section, merged sizes checked exactly."""
    plan = _plan_paragraphs(text, blocks, min_tokens, max_tokens, counter)
    merged = [ranges for ranges, _ in plan if len(ranges) > 1]
    exact = iter(counter.sizes([(r[0][0], r[-1][1]) for r in merged]))
    out: list[tuple[Span, Block | None]] = []
    for ranges, heading in plan:
        if len(ranges) > 1 and next(exact) > max_tokens:
            out.extend((s, heading) for s in pack_exact(ranges, max_tokens, counter))
        else:
            out.append((Span(ranges[0][0], ranges[-1][1]), heading))
    return out


def _plan_paragraphs(
    text: str, blocks: list[Block], min_tokens: int, max_tokens: int, counter: TokenCounter
) -> _Plan:
    """Paragraph ranges merged by estimated size (sum of sizes + 1 per blank line)."""
    groups = paragraph_groups(blocks, 0, len(blocks))
    sizes = counter.sizes([(blocks[i].start, blocks[j - 1].end) for i, j in groups])
    plan: _Plan = []
    heading: Block | None = None
    total = max_tokens + 1  # size of the last planned chunk; over the limit: closed
    for (i, j), n in zip(groups, sizes, strict=True):
        first = blocks[i]
        if first.kind == "heading":
            heading, total = first, max_tokens + 1
        if n > max_tokens:
            pieces = split_to_fit(text, paragraph_piece(blocks, i, j), max_tokens, counter)
            plan.extend(([(s.start, s.end)], heading) for s in pieces)
            total = max_tokens + 1
        elif total < min_tokens and total + 1 + n <= max_tokens:
            plan[-1][0].append((first.start, blocks[j - 1].end))
            total += 1 + n
        else:
            plan.append(([(first.start, blocks[j - 1].end)], heading))
            total = n
    return plan


# --- markdown_sections ------------------------------------------------------------------------


@CHUNKERS.register("markdown_sections")
def markdown_sections(
    max_length: int = 1500, overlap_ratio: float = 0.3, levels: list[int] = DEFAULT_LEVELS
) -> Callable[[str], list[Span]]:
    """Sections at headers (## and ### by default) cut into overlapping pieces of max_length chars.

    A section starts at each header line whose level is in ``levels`` (text before the first
    is a section too) and is cut on its own. A piece starting at ``p`` may reach ``h = p +
    max_length``; it ends at the section's end if that is within reach, else at:

    1. the start of the code block or table that ``h`` falls inside, if that block starts after
       ``p`` and fits in ``max_length`` (the block goes whole into the next piece);
    2. inside a longer block: its last line break before ``h`` (or the block's start);
    3. otherwise: the last line break (or code block/table edge) in the last fifth of the
       window;
    4. failing those, the last whitespace in the last fifth of the window, else ``h`` itself
       (mid-word).

    The next piece starts ``int(overlap_ratio * max_length)`` characters before the end of the
    previous one, or right at that end when this would not move past the previous piece's
    start (after a piece shorter than the overlap). Two corrections keep blocks whole: an
    overlap never starts inside a code block or table that fits in ``max_length`` (it starts
    after it), and after a cut before such a block the overlap shrinks so that the block fits.
    Overlap starts are otherwise exact, so a piece may begin mid-word. Pieces are stripped of
    surrounding whitespace; a piece left empty, or adding no non-whitespace character to the
    previous piece, is dropped. No piece is longer than ``max_length`` characters.

    Args:
        max_length: maximum characters per piece.
        overlap_ratio: share of a piece repeated at the start of the next (``0 <= r < 1``).
        levels: heading levels (1-6) that start a section.
    """
    if max_length < 1:
        raise ValueError(f"max_length must be a positive number of characters, got {max_length}")
    if not 0 <= overlap_ratio < 1:
        raise ValueError(f"overlap_ratio must be >= 0 and < 1, got {overlap_ratio}")
    if not levels or any(not 1 <= level <= 6 for level in levels):
        raise ValueError(f"levels must be a non-empty list of heading levels 1-6, got {levels}")
    wanted = frozenset(levels)

    def chunk(text: str) -> list[Span]:
        blocks = parse_blocks(text)
        cutter = _Cutter(text, blocks, max_length, overlap_ratio)
        starts = [b.start for b in blocks if b.kind == "heading" and b.level in wanted]
        bounds = [0, *(s for s in starts if s > 0), len(text)]
        return [piece for s, e in pairwise(bounds) for piece in cutter.pieces(s, e)]

    return chunk


class _Cutter:
    """Cuts ranges of one text into pieces of at most ``length`` characters (markdown_sections)."""

    def __init__(self, text: str, blocks: list[Block], length: int, overlap_ratio: float) -> None:
        atomic = [b for b in blocks if b.kind in ("code", "table")]
        self.text = text
        self.length = length
        self.overlap = int(overlap_ratio * length)
        self.starts = [b.start for b in atomic]
        self.ends = [b.end for b in atomic]
        self.edges = [x for b in atomic for x in (b.start, b.end)]

    def pieces(self, start: int, end: int) -> list[Span]:
        out: list[Span] = []
        p = start
        while True:
            cut, block = self._cut(p, end)
            s, e = strip(self.text, p, cut)
            if e > s and (not out or e > out[-1].end):  # else it adds nothing new
                out.append(Span(s, e))
            if cut >= end:
                return out
            p = self._next_start(p, cut, block)

    def _next_start(self, p: int, cut: int, block: tuple[int, int] | None) -> int:
        nxt = cut - self.overlap
        if nxt <= p:
            nxt = cut
        if block is not None:  # the cut was before this block: the next piece must hold it
            nxt = max(nxt, block[1] - self.length)
        inside = self._inside(nxt)
        if inside is not None and inside[1] - inside[0] <= self.length:
            nxt = inside[1]
        return nxt

    def _inside(self, x: int) -> tuple[int, int] | None:
        """The code block or table with ``start < x < end``, if any."""
        k = bisect_left(self.starts, x) - 1
        if k >= 0 and x < self.ends[k]:
            return self.starts[k], self.ends[k]
        return None

    def _cut(self, p: int, end: int) -> tuple[int, tuple[int, int] | None]:
        """Where the piece starting at ``p`` ends, and the block it stops before (if any)."""
        h = min(p + self.length, end)
        if h == end:
            return end, None
        block = self._inside(h)
        if block is None:
            lo = max(p + 1, h - self.length // 5)
            line = max(self.text.rfind("\n", lo, h + 1), self._last_edge(lo, h))
        else:
            if block[0] > p and block[1] - block[0] <= self.length:
                return block[0], block
            line = self.text.rfind("\n", max(p + 1, block[0]), h + 1)
            if block[0] > p:
                line = max(line, block[0])
            lo = max(p + 1, block[0], h - self.length // 5)
        if line > p:
            return line, None
        space = _LAST_SPACE.match(self.text, lo, h + 1)
        return (space.end() - 1 if space is not None else h), None

    def _last_edge(self, lo: int, hi: int) -> int:
        """The last start or end of a code block or table in ``[lo, hi]``, or -1."""
        k = bisect_right(self.edges, hi) - 1
        return self.edges[k] if k >= 0 and self.edges[k] >= lo else -1


# --- heading sections -------------------------------------------------------------------------


@CHUNKERS.register("headings")
def headings(max_level: int = 3) -> Callable[[str], list[Span]]:
    """One chunk per section, from each heading of level <= max_level to the next.

    Text before the first such heading is a section of its own. Deeper headings stay inside
    their section. Sections have no size limit.

    Args:
        max_level: deepest heading level (1-6) that starts a section.
    """
    _check_level(max_level)

    def chunk(text: str) -> list[Span]:
        blocks = parse_blocks(text)
        return [_section_span(blocks, s.first, s.stop) for s in sections(blocks, max_level)]

    return chunk


@CHUNKERS.register("heading_limited")
def heading_limited(
    max_level: int = 3, max_tokens: int = 512, encoding: str = "cl100k_base"
) -> Callable[[str], list[Span | Chunk]]:
    """Sections at headings of level <= max_level, split to max_tokens, with their heading path.

    Sections as in ``headings``. A section over ``max_tokens`` is split at paragraphs, then at
    blocks, sentences (code: lines, tables: rows), words and characters, packing consecutive
    parts up to ``max_tokens`` (see ``split_to_fit``). Every chunk embeds the section's heading
    path (``# Guide > ## Install``), less the section's own heading for a chunk that starts with
    it.

    Args:
        max_level: deepest heading level (1-6) that starts a section.
        max_tokens: maximum tokens of a chunk's span (a single character over it is kept).
        encoding: tiktoken encoding name.
    """
    _check_level(max_level)
    _check_max_tokens(max_tokens)
    enc = get_encoding(encoding)

    def chunk(text: str) -> list[Span | Chunk]:
        blocks = parse_blocks(text)
        counter = TokenCounter(text, enc)
        secs = sections(blocks, max_level)
        spans = [_section_span(blocks, s.first, s.stop) for s in secs]
        out: list[Span | Chunk] = []
        for sec, span, n in zip(
            secs, spans, counter.sizes([(s.start, s.end) for s in spans]), strict=True
        ):
            pieces = [span]
            if n > max_tokens:
                piece = section_piece(blocks, sec.first, sec.stop)
                pieces = split_to_fit(text, piece, max_tokens, counter)
            out.extend(_with_path(text, p, sec.path) for p in pieces)
        return out

    return chunk


@CHUNKERS.register("hierarchical")
def hierarchical(
    max_level: int = 4, score_on: Literal["leaves", "parents"] = "leaves"
) -> Callable[[str], list[Span | Chunk]]:
    """Leaves of the heading tree embedded with their heading path, scored on leaves or parents.

    The tree is made of the headings of level <= ``max_level``. A *leaf* is the text from one
    such heading to the next (heading line included): a heading with no sub-heading is a leaf
    whole, and a heading's own text before its first sub-heading is a leaf too (as is the text
    before the first heading). Each leaf is embedded as its heading path (``# A > ## B``: the
    enclosing headings, outermost first), a blank line, and its text.

    With ``score_on="leaves"`` a chunk's span is its leaf: spans are ordered and disjoint.
    With ``score_on="parents"`` ("embed small, retrieve big") the leaf is still what is
    embedded, but the chunk's span is the smallest section that strictly contains the leaf: the
    parent heading's whole section (sub-sections included), or for a heading's own text before
    its sub-headings, that heading's whole section; a top-level leaf keeps its own span. Several
    leaves then share one span, so spans are neither ordered nor disjoint, and when several
    leaves of one parent are retrieved each counts the parent's full span (overlapping spans
    are summed in the precision denominator, as for overlapping chunks).

    Args:
        max_level: deepest heading level (1-6) in the tree.
        score_on: ``"leaves"`` or ``"parents"``: which span a retrieved leaf is scored on.
    """
    _check_level(max_level)
    if score_on not in ("leaves", "parents"):
        raise ValueError(f"score_on must be 'leaves' or 'parents', got {score_on!r}")

    def chunk(text: str) -> list[Span | Chunk]:
        blocks = parse_blocks(text)
        secs = sections(blocks, max_level)
        out: list[Span | Chunk] = []
        for sec in secs:
            leaf = _section_span(blocks, sec.first, sec.stop)
            embedded = _with_path(text, leaf, sec.path)
            target = _retrieved_section(secs, sec) if score_on == "parents" else None
            if target is None:
                out.append(embedded)
                continue
            span = _section_span(blocks, target.first, target.subtree_stop)
            embed_text = embedded.embed_text if isinstance(embedded, Chunk) else None
            out.append(Chunk("", span.start, span.end, embed_text or text[leaf.start : leaf.end]))
        return out

    return chunk


def _retrieved_section(secs: list[Section], sec: Section) -> Section | None:
    """The section whose whole subtree a leaf is scored on in parents mode (None: itself)."""
    if sec.subtree_stop > sec.stop:
        return sec
    return secs[sec.parent] if sec.parent >= 0 else None


@CHUNKERS.register("heading_paragraph")
def heading_paragraph(max_level: int = 3) -> Callable[[str], list[Span | Chunk]]:
    """Paragraphs within sections at headings of level <= max_level, with their heading path.

    Sections as in ``headings``; within each, every paragraph (blank-line block; code blocks
    and tables whole) is a chunk, embedded with the section's heading path. A heading line
    joins the paragraph after it in its section (it is a chunk alone only when nothing
    follows). Paragraphs have no size limit.

    Args:
        max_level: deepest heading level (1-6) that starts a section.
    """
    _check_level(max_level)

    def chunk(text: str) -> list[Span | Chunk]:
        blocks = parse_blocks(text)
        out: list[Span | Chunk] = []
        for sec in sections(blocks, max_level):
            for i, j in _attach_headings(blocks, paragraph_groups(blocks, sec.first, sec.stop)):
                out.append(_with_path(text, _section_span(blocks, i, j), sec.path))
        return out

    return chunk


def _attach_headings(blocks: list[Block], groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Paragraph ranges with each heading joined to the paragraph after it."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for k, (i, j) in enumerate(groups):
        if start is None:
            start = i
        if blocks[i].kind == "heading" and k + 1 < len(groups):
            continue
        out.append((start, j))
        start = None
    return out
