"""recursive: hand-computed merges, stripping, recursion and parameter checks."""

from __future__ import annotations

import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.errors import SpecError


def _texts(spec: str, text: str) -> list[str]:
    chunker, _ = CHUNKERS.build(spec)
    return [text[s.start : s.end] for s in chunker(text)]


def test_recursion_and_stripping_by_characters() -> None:
    # "\n\n" splits into "aaa bbb. ccc" (12) and "\n\nddd eee" (9), both >= 8: split again.
    # The first splits at "." into "aaa bbb" + ". ccc" (the separator starts the next piece);
    # the second at "\n" into "\n" (whitespace only: dropped) + "\nddd eee" (8), split at " "
    # into "\nddd" + " eee", which merge back (4 + 4 <= 8) and are stripped.
    text = "aaa bbb. ccc\n\nddd eee"
    assert _texts("recursive(size=8, length='chars')", text) == ["aaa bbb", ". ccc", "ddd eee"]


def test_overlap_keeps_trailing_pieces() -> None:
    # Pieces "a", " b", " c", " d", " e" (lengths 1, 2, 2, 2, 2); size 5, overlap 2.
    text = "a b c d e"
    assert _texts("recursive(size=5, overlap=2, length='chars')", text) == [
        "a b c",
        "c d",
        "d e",
    ]


def test_spans_index_the_text() -> None:
    chunker, _ = CHUNKERS.build("recursive(size=8, length='chars')")
    spans = chunker("aaa bbb. ccc\n\nddd eee")
    assert [(s.start, s.end) for s in spans] == [(0, 7), (7, 12), (14, 21)]


def test_long_piece_without_separators_left_is_kept_whole() -> None:
    text = "abcdefghij klm"
    assert _texts("recursive(size=4, separators=[' '], length='chars')", text) == [
        "abcdefghij",
        " klm",
    ]


def test_whitespace_only_text_gives_no_chunks() -> None:
    assert _texts("recursive(size=10)", " \n\n \t ") == []
    assert _texts("recursive()", "") == []


def test_token_lengths_are_summed_per_piece() -> None:
    # Each "😀" is 2 tokens alone; size 4 allows two per chunk.
    assert _texts("recursive(size=4, separators=[''])", "😀😀😀") == ["😀😀", "😀"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("recursive(size=0)", "size must be a positive number"),
        ("recursive(size=10, overlap=10)", "overlap must be"),
        ("recursive(separators=[])", "separators must not be empty"),
        ("recursive(length='bytes')", "parameter 'length'"),
        ("recursive(separators='abc')", "parameter 'separators'"),
    ],
)
def test_bad_parameters_are_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        CHUNKERS.build(spec)
