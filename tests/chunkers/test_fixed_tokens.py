"""fixed_tokens: hand-checked windows and the rounding rule for split characters."""

from __future__ import annotations

import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.chunkers.tokens import window_bounds
from chunkmark.errors import SpecError
from chunkmark.spans import Span


def _chunk(spec: str, text: str) -> list[Span]:
    chunker, _ = CHUNKERS.build(spec)
    return list(chunker(text))  # type: ignore[arg-type]


def test_window_bounds_stop_after_the_window_reaching_the_last_item() -> None:
    starts, ends = window_bounds(10, 4, 3)
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [(0, 4), (3, 7), (6, 10)]
    starts, ends = window_bounds(11, 4, 3)
    assert ends.tolist()[-1] == 11 and starts.tolist() == [0, 3, 6, 9]
    assert window_bounds(3, 4, 2)[0].tolist() == [0]
    assert window_bounds(0, 4, 2)[0].tolist() == []


def test_ascii_windows() -> None:
    # "hello world foo bar" -> tokens: hello | world | foo | bar
    text = "hello world foo bar"
    assert _chunk("fixed_tokens(size=2)", text) == [Span(0, 11), Span(11, 19)]
    assert _chunk("fixed_tokens(size=2, overlap=1)", text) == [
        Span(0, 11),
        Span(5, 15),
        Span(11, 19),
    ]
    assert _chunk("fixed_tokens(size=100)", text) == [Span(0, 19)]
    assert _chunk("fixed_tokens()", "") == []


def test_split_character_start_rounds_down_and_end_rounds_up() -> None:
    # "a😀b" -> a | f0 9f 98 | 80 | b: the emoji is split across two tokens.
    assert _chunk("fixed_tokens(size=1)", "a😀b") == [
        Span(0, 1),
        Span(1, 2),  # first half of the emoji: end rounds up
        Span(1, 2),  # second half: start rounds down
        Span(2, 3),
    ]
    assert _chunk("fixed_tokens(size=2, overlap=1)", "a😀b") == [
        Span(0, 2),
        Span(1, 2),
        Span(1, 3),
    ]


def test_multibyte_offsets_are_characters() -> None:
    text = "é" * 5 + " naïve café"  # no token splits a character here
    spans = _chunk("fixed_tokens(size=1)", text)
    assert spans[0].start == 0 and spans[-1].end == len(text)
    assert "".join(text[s.start : s.end] for s in spans) == text


def test_lone_surrogates_do_not_break_offsets() -> None:
    text = "ab\ud800cd"
    spans = _chunk("fixed_tokens(size=1)", text)
    assert spans[0].start == 0 and spans[-1].end == len(text)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fixed_tokens(size=0)", "size must be a positive number of tokens"),
        ("fixed_tokens(size=4, overlap=4)", "overlap must be >= 0 and smaller than size"),
        ("fixed_tokens(size=4, overlap=-1)", "overlap must be >= 0"),
        ("fixed_tokens(encoding='no_such_encoding')", "Unknown token encoding"),
        ("fixed_tokens(size='big')", "parameter 'size'"),
    ],
)
def test_bad_parameters_are_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        CHUNKERS.build(spec)


def test_canonical_spec() -> None:
    _, spec = CHUNKERS.build("fixed_tokens(200)")
    assert str(spec) == "fixed_tokens(size=200, overlap=0, encoding='cl100k_base')"
