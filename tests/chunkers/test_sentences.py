"""sentences and words: the segmenter's rules and the windows."""

from __future__ import annotations

import sys

import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.chunkers.sentences import _WHITESPACE, sentence_spans, word_bounds
from chunkmark.errors import SpecError


def _sentences(text: str) -> list[str]:
    return [text[s.start : s.end] for s in sentence_spans(text)]


def test_abbreviations_decimals_and_initials_do_not_end_sentences() -> None:
    text = (
        "Dr. Smith went to Washington, e.g. the capital. It cost $3.50 today! Did he? "
        "Yes... and no. J. R. R. Tolkien wrote it. See Fig. 3 for details. Smith et al. agree."
    )
    assert _sentences(text) == [
        "Dr. Smith went to Washington, e.g. the capital.",
        "It cost $3.50 today!",
        "Did he?",
        "Yes... and no.",
        "J. R. R. Tolkien wrote it.",
        "See Fig. 3 for details.",
        "Smith et al. agree.",
    ]


def test_line_breaks_and_blank_lines_end_sentences() -> None:
    text = '# Heading\n- item one\r\n- item two\n\n  New paragraph ("quoted.") Next one.  \n'
    assert _sentences(text) == [
        "# Heading",
        "- item one",
        "- item two",
        'New paragraph ("quoted.")',
        "Next one.",
    ]


def test_a_word_abbreviation_ends_a_sentence_unless_a_number_follows() -> None:
    assert _sentences("I said no. Then I left. See No. 5 here.") == [
        "I said no.",
        "Then I left.",
        "See No. 5 here.",
    ]


def test_abbreviation_at_the_start_of_a_line() -> None:
    assert _sentences("Intro\nDr. Smith arrived.\n(Mr. Jones) left.") == [
        "Intro",
        "Dr. Smith arrived.",
        "(Mr. Jones) left.",
    ]


def test_cjk_full_stops_end_sentences_without_spaces() -> None:
    assert _sentences("今日は晴れ。明日は雨？「はい。」終わり") == [
        "今日は晴れ。",
        "明日は雨？",
        "「はい。」",
        "終わり",
    ]


def test_no_sentences_in_whitespace() -> None:
    assert sentence_spans("") == [] and sentence_spans(" \n\t\n ") == []


def test_sentence_windows() -> None:
    text = "One. Two. Three. Four. Five."
    chunker, _ = CHUNKERS.build("sentences(n=2, overlap=1)")
    assert [text[s.start : s.end] for s in chunker(text)] == [
        "One. Two.",
        "Two. Three.",
        "Three. Four.",
        "Four. Five.",
    ]
    chunker, _ = CHUNKERS.build("sentences(n=2)")
    assert [text[s.start : s.end] for s in chunker(text)] == ["One. Two.", "Three. Four.", "Five."]


def test_words_are_runs_of_non_whitespace() -> None:
    text = "  one two\tthree\n\nfour\u3000五 "
    starts, ends = word_bounds(text)
    assert [text[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)] == [
        "one",
        "two",
        "three",
        "four",
        "五",
    ]


def test_word_separators_are_exactly_python_whitespace() -> None:
    expected = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert sorted(_WHITESPACE.tolist()) == expected


def test_word_windows() -> None:
    text = "  one two\tthree\n\nfour  "
    chunker, _ = CHUNKERS.build("words(n=2, overlap=1)")
    assert [(s.start, s.end) for s in chunker(text)] == [(2, 9), (6, 15), (10, 21)]
    chunker, _ = CHUNKERS.build("words(n=3)")
    assert [text[s.start : s.end] for s in chunker(text)] == ["one two\tthree", "four"]
    assert chunker("   ") == []


@pytest.mark.parametrize(
    "spec", ["sentences(n=0)", "sentences(n=2, overlap=2)", "words(n=-1)", "words(overlap=-1)"]
)
def test_bad_parameters_are_spec_errors(spec: str) -> None:
    with pytest.raises(SpecError):
        CHUNKERS.build(spec)
