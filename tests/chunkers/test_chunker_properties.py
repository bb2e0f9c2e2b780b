"""Invariants of every registered chunker on random text, and equivalence with LangChain's
splitters (the algorithms of Chroma's FixedTokenChunker and RecursiveTokenChunker)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS
from chunkmark.spans import Span
from chunkmark.tokenizers import get_encoding

SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]

_FRAGMENTS = st.one_of(
    st.sampled_from(["\n\n", "\n", " ", "  ", "\t", "\r\n", ".", ". ", "? ", "!", "...", "\n \n"]),
    st.sampled_from(["hello", "World", "Dr.", "e.g.", "3.14", "a", "naïve", "ß", "İ", "ﬁ"]),
    st.sampled_from(
        ["😀", "👩‍👩‍👧", "🇫🇷", "漢字テキスト", "한국어", "العربية", "\u00a0", "\u3000"]
    ),
    st.sampled_from(["<|endoftext|>", "\u200b", "\u0301", "\x00", "\x85", "\u2028"]),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8),
)
TEXTS = st.lists(_FRAGMENTS, max_size=40).map("".join)

SPECS = st.one_of(
    st.builds(
        lambda size, ov: f"fixed_tokens(size={size}, overlap={min(ov, size - 1)})",
        st.integers(1, 24),
        st.integers(0, 12),
    ),
    st.builds(
        lambda size, ov, length: (
            f"recursive(size={size}, overlap={min(ov, size - 1)}, length={length!r})"
        ),
        st.integers(1, 24),
        st.integers(0, 12),
        st.sampled_from(["tokens", "chars"]),
    ),
    st.builds(
        lambda n, ov: f"sentences(n={n}, overlap={min(ov, n - 1)})",
        st.integers(1, 4),
        st.integers(0, 3),
    ),
    st.builds(
        lambda n, ov: f"words(n={n}, overlap={min(ov, n - 1)})",
        st.integers(1, 6),
        st.integers(0, 5),
    ),
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _spans(spec: str, text: str) -> list[Span]:
    chunker, _ = CHUNKERS.build(spec)
    out = list(chunker(text))
    assert all(isinstance(s, Span) for s in out)
    return out  # type: ignore[return-value]


@FAST
@given(spec=SPECS, text=TEXTS)
def test_spans_are_valid_ordered_and_deterministic(spec: str, text: str) -> None:
    spans = _spans(spec, text)
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    starts = [s.start for s in spans]
    assert starts == sorted(starts)
    assert _spans(spec, text) == spans
    if not text.strip() and spec.startswith(("sentences", "words")):
        assert spans == []


@FAST
@given(spec=SPECS, text=TEXTS)
def test_every_non_whitespace_character_is_covered(spec: str, text: str) -> None:
    covered = [False] * len(text)
    for s in _spans(spec, text):
        covered[s.start : s.end] = [True] * (s.end - s.start)
    if spec.startswith("fixed_tokens"):
        assert all(covered)
    else:
        assert all(c or ch.isspace() for c, ch in zip(covered, text, strict=True))


@FAST
@given(spec=SPECS, text=TEXTS)
def test_chunks_do_not_start_or_end_with_whitespace(spec: str, text: str) -> None:
    if spec.startswith("fixed_tokens"):
        return
    for s in _spans(spec, text):
        piece = text[s.start : s.end]
        # A piece kept whole (length >= size with no separator left) is not stripped.
        if spec.startswith("recursive") and len(piece) == 1:
            continue
        assert piece == piece.strip()


@FAST
@given(text=TEXTS, size=st.integers(2, 30), overlap=st.integers(0, 29))
def test_recursive_chars_respects_size(text: str, size: int, overlap: int) -> None:
    overlap = min(overlap, size - 1)
    for s in _spans(f"recursive(size={size}, overlap={overlap}, length='chars')", text):
        assert len(s) <= size


def _fixed_oracle(text: str, size: int, overlap: int) -> list[Span]:
    """Slow, loop-based: token byte ranges, then the smallest character range covering them."""
    enc = get_encoding("cl100k_base")
    tokens = enc.encode_ordinary(text)
    byte_ends = []
    total = 0
    for t in tokens:
        total += len(enc.decode_single_token_bytes(t))
        byte_ends.append(total)
    char_of_byte = []  # character index of every byte
    for i, ch in enumerate(text):
        char_of_byte += [i] * len(ch.encode("utf-8"))
    out = []
    start = 0
    while start < len(tokens):
        end = min(start + size, len(tokens))
        first_byte = byte_ends[start - 1] if start else 0
        last_byte = byte_ends[end - 1] - 1
        out.append(Span(char_of_byte[first_byte], char_of_byte[last_byte] + 1))
        if end == len(tokens):
            break
        start += size - overlap
    return out


@FAST
@given(text=TEXTS, size=st.integers(1, 20), overlap=st.integers(0, 19))
def test_fixed_tokens_matches_slow_oracle(text: str, size: int, overlap: int) -> None:
    overlap = min(overlap, size - 1)
    spans = _spans(f"fixed_tokens(size={size}, overlap={overlap})", text)
    assert spans == _fixed_oracle(text, size, overlap)


# --- equivalence with LangChain (same algorithms as Chroma's reference chunkers) -------------

_LC_SETTINGS = settings(max_examples=120, deadline=None)


@pytest.fixture(scope="module")
def langchain() -> Any:
    return pytest.importorskip("langchain_text_splitters")


@_LC_SETTINGS
@given(text=TEXTS, size=st.integers(1, 20), overlap=st.integers(0, 19))
def test_fixed_tokens_equals_token_text_splitter(
    langchain: Any, text: str, size: int, overlap: int
) -> None:
    overlap = min(overlap, size - 1)
    splitter = langchain.TokenTextSplitter(
        encoding_name="cl100k_base", chunk_size=size, chunk_overlap=overlap, disallowed_special=()
    )
    expected = splitter.split_text(text)
    spans = _spans(f"fixed_tokens(size={size}, overlap={overlap})", text)
    assert len(spans) == len(expected)
    enc = get_encoding("cl100k_base")
    tokens = enc.encode_ordinary(text)
    for i, (span, want) in enumerate(zip(spans, expected, strict=True)):
        window = tokens[i * (size - overlap) : i * (size - overlap) + size]
        raw = b"".join(enc.decode_single_token_bytes(t) for t in window)
        try:
            exact = raw.decode("utf-8")
        except UnicodeDecodeError:  # the window splits a character: the span covers it whole
            assert raw in text[span.start : span.end].encode("utf-8")
            continue
        assert text[span.start : span.end] == want == exact


@_LC_SETTINGS
@given(
    text=TEXTS,
    size=st.integers(1, 30),
    overlap=st.integers(0, 29),
    separators=st.sampled_from(
        [SEPARATORS, ["\n\n", "\n", " ", ""], ["\n", "."], [" "], ["!", "\n\n", ""]]
    ),
    length=st.sampled_from(["tokens", "chars"]),
)
def test_recursive_equals_recursive_character_text_splitter(
    langchain: Any, text: str, size: int, overlap: int, separators: list[str], length: str
) -> None:
    overlap = min(overlap, size - 1)
    kwargs: dict[str, Any] = {
        "chunk_size": size,
        "chunk_overlap": overlap,
        "separators": separators,
    }
    if length == "tokens":
        splitter = langchain.RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", keep_separator=True, disallowed_special=(), **kwargs
        )
    else:
        splitter = langchain.RecursiveCharacterTextSplitter(keep_separator=True, **kwargs)
    spec = (
        f"recursive(size={size}, overlap={overlap}, separators={separators!r}, length={length!r})"
    )
    spans = _spans(spec, text)
    assert [text[s.start : s.end] for s in spans] == splitter.split_text(text)
