"""Locating passages in the text: exact spans, normalised matches mapped back, pieces, checks."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chunkmark.spans import Span
from chunkmark.synth.excerpts import (
    BAD_RANGE,
    EMPTY,
    EXACT,
    NORMALISED,
    NOT_FOUND,
    PIECES,
    TOO_SHORT,
    NormalisedText,
    collapses,
    copied_run,
    cut_pieces,
    find_all,
    locate,
    normalise,
    number_pieces,
    snap_window,
    span_of_range,
)

DOC = (
    "The river rises in the hills.\n\nIt flows  east for 40 km, then turns\tnorth.\n"
    "Locals call it \u201cthe Old One\u201d \u2014 it\u2019s older than the town.\n"
    "The river rises in the hills."
)
WHOLE = Span(0, len(DOC))

# Text made of words, every kind of whitespace and the typography normalisation maps.
ALPHABET = st.sampled_from(
    [
        *"abcxyz.,'\"-",
        *(" ", "  ", "\n", "\t", "\u00a0", "\u2009"),
        *("\u2018", "\u2019", "\u201c", "\u201d", "\u2013", "\u2014", "\u2212"),
        *("\u200b", "\u00ad", "\ufeff"),
    ]
)
TEXT = st.lists(ALPHABET, min_size=1, max_size=80).map("".join)


def _straighten(text: str) -> str:
    """What an LLM's copy typically looks like: ASCII quotes and dashes, single spaces."""
    out = text
    for c in "\u2018\u2019":
        out = out.replace(c, "'")
    for c in "\u201c\u201d":
        out = out.replace(c, '"')
    for c in "\u2013\u2014\u2212":
        out = out.replace(c, "-")
    for c in "\u200b\u00ad\ufeff":
        out = out.replace(c, "")
    return " ".join(out.split())


def _trimmed(text: str, start: int, end: int) -> Span:
    """``[start, end)`` without whitespace and dropped characters at either end."""
    ignorable = set("\u200b\u00ad\ufeff")
    while start < end and (text[start].isspace() or text[start] in ignorable):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in ignorable):
        end -= 1
    return Span(start, end)


# --- exact and normalised matching ---------------------------------------------------------


def test_exact_match_in_the_window() -> None:
    match = locate(DOC, "It flows  east for 40 km", WHOLE)
    assert match.ok and match.method == EXACT and not match.ambiguous
    assert match.span is not None
    assert DOC[match.span.start : match.span.end] == "It flows  east for 40 km"


def test_outer_whitespace_of_the_passage_is_ignored() -> None:
    match = locate(DOC, "  \nIt flows  east\n ", WHOLE)
    assert match.method == EXACT and match.span is not None
    assert DOC[match.span.start : match.span.end] == "It flows  east"


def test_whitespace_and_quotes_normalised_map_back_to_the_original() -> None:
    passage = 'Locals call it "the Old One" - it\'s older than the town.'
    match = locate(DOC, passage, WHOLE)
    assert match.method == NORMALISED and match.span is not None
    found = DOC[match.span.start : match.span.end]
    assert found == "Locals call it \u201cthe Old One\u201d \u2014 it\u2019s older than the town."
    spaced = locate(DOC, "It flows east for 40 km, then turns north.", WHOLE)
    assert spaced.method == NORMALISED and spaced.span is not None
    assert (
        DOC[spaced.span.start : spaced.span.end] == "It flows  east for 40 km, then turns\tnorth."
    )


def test_a_repeated_passage_is_kept_at_its_window_and_flagged() -> None:
    second = DOC.rindex("The river")
    match = locate(DOC, "The river rises in the hills.", Span(second - 10, len(DOC)))
    assert match.span == Span(second, len(DOC)) and match.ambiguous
    first = locate(DOC, "The river rises in the hills.", Span(0, 40))
    assert first.span == Span(0, 29) and first.ambiguous


def test_outside_the_window_it_is_found_in_the_whole_document() -> None:
    match = locate(DOC, "then turns north", Span(0, 10))
    assert match.method == NORMALISED and match.span is not None
    assert DOC[match.span.start : match.span.end] == "then turns\tnorth"


def test_window_wins_over_an_exact_match_elsewhere() -> None:
    text = 'alpha \u201cbeta\u201d gamma ... alpha "beta" gamma'
    window = Span(0, 20)
    match = locate(text, 'alpha "beta" gamma', window)
    assert match.method == NORMALISED and match.span == Span(0, 18) and match.ambiguous


def test_rejections() -> None:
    assert locate(DOC, "   \n", WHOLE).problem == EMPTY
    assert locate(DOC, "\u200b", WHOLE).problem == EMPTY
    assert locate(DOC, "river", WHOLE, min_chars=10).problem == TOO_SHORT
    missing = locate(DOC, "The sea rises in the hills.", WHOLE)
    assert missing.problem == NOT_FOUND and not missing.ok and missing.span is None


def test_normalised_text_maps_every_character() -> None:
    norm = NormalisedText("a \u00a0\n b\u200bc\u2019")
    assert norm.text == "a bc'"
    assert norm.span(1, 2) == Span(1, 5)  # the whole run of whitespace
    assert norm.span(2, 4) == Span(5, 8)  # the zero-width space inside the span
    assert normalise("  \u201cx\u201d  ") == "'x'" == normalise('"x"')


def test_double_quotes_copied_as_single_quotes_are_found() -> None:
    # a model's copy: the text's straight double quotes written as
    # single quotes; the excerpt is the text's own characters
    text = 'Set the mode to "eco" before the first run. Then wait.'
    match = locate(text, "Set the mode to 'eco' before the first run.", Span(0, len(text)))
    assert match.method == NORMALISED and match.span == Span(0, 43)
    assert text[match.span.start : match.span.end] == 'Set the mode to "eco" before the first run.'


def test_find_all_counts_overlapping_occurrences() -> None:
    assert find_all("aaaa", "aa") == [0, 1, 2]
    assert find_all("abc", "") == []
    assert find_all("aaaa", "a", limit=2) == [0, 1]


@settings(max_examples=300, deadline=None)
@given(TEXT, st.data())
def test_every_located_excerpt_is_the_document_slice(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    passage = text[i:j]
    assume(normalise(passage))
    match = locate(text, passage, Span(0, len(text)))
    assert match.ok and match.span is not None
    found = text[match.span.start : match.span.end]
    if match.method == EXACT:
        assert found == passage.strip()
    else:
        assert match.method == NORMALISED
        assert normalise(found) == normalise(passage)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.data())
def test_normalised_copies_map_back_to_the_right_offsets(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    copy = _straighten(text[i:j])
    assume(copy)
    match = locate(text, copy, Span(0, len(text)))
    assert match.ok and match.span is not None
    found = text[match.span.start : match.span.end]
    assert normalise(found) == normalise(copy)
    if not match.ambiguous:
        assert match.span == _trimmed(text, i, j)
    # The match starts and ends on the passage's own characters, never on whitespace.
    assert not found[0].isspace() and not found[-1].isspace()


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT, TEXT)
def test_a_unique_passage_is_found_where_it_was_put(before: str, passage: str, after: str) -> None:
    marked = f"Q{passage}Q"
    text = before.replace("Q", "") + " " + marked + " " + after.replace("Q", "")
    start = text.index(marked)
    match = locate(text, _straighten(marked), Span(0, len(text)))
    assert match.span == _trimmed(text, start, start + len(marked))
    assert not match.ambiguous


# --- windows and pieces --------------------------------------------------------------------


def test_snap_window_moves_onto_word_boundaries() -> None:
    text = "alpha beta gamma delta"
    assert snap_window(text, 2, 14) == Span(6, 10)  # "beta"
    assert snap_window(text, 0, len(text)) == Span(0, len(text))
    assert snap_window(text, 6, 11) == Span(6, 11)
    assert snap_window("abcdef", 2, 4) == Span(2, 4)  # no boundary in reach: unchanged


@settings(max_examples=300, deadline=None)
@given(TEXT, st.data(), st.integers(1, 30))
def test_pieces_tile_the_window(text: str, data: st.DataObject, size: int) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    pieces = cut_pieces(text, Span(start, end), size)
    assert pieces[0].start == start and pieces[-1].end == end
    assert all(a.end == b.start for a, b in pairwise(pieces))
    assert all(len(p) > 0 for p in pieces)
    assert all(len(p) <= 2 * size + len(text) for p in pieces)
    assert "".join(text[p.start : p.end] for p in pieces) == text[start:end]


def test_pieces_end_after_whitespace_and_start_on_words() -> None:
    text = " ".join(f"word{i:02d}" for i in range(60))  # 6 characters + a space each
    pieces = cut_pieces(text, Span(0, len(text)), 20)
    for piece in pieces[1:]:
        assert text[piece.start - 1] == " " and text[piece.start] != " "
    assert all(20 <= len(p) <= 27 for p in pieces[:-1])


def test_a_long_word_is_cut() -> None:
    text = "x" * 250
    pieces = cut_pieces(text, Span(0, 250), 100)
    assert [len(p) for p in pieces] == [200, 50]


def test_several_ranges_each_get_their_own_offsets() -> None:
    # Chroma's generator gave every reference after the first the first one's offsets.
    text = "".join(f"Sentence number {i} is here. " for i in range(30))
    pieces = cut_pieces(text, Span(0, len(text)), 40)
    numbered = number_pieces(text, pieces)
    assert numbered.startswith("[[1]]Sentence number 0")
    ranges = [(2, 3), (7, 7), (10, 12)]
    spans = []
    for first, last in ranges:
        match = span_of_range(text, pieces, first, last)
        assert match.method == PIECES and match.span is not None
        expected = text[pieces[first - 1].start : pieces[last - 1].end].rstrip()
        assert text[match.span.start : match.span.end] == expected
        spans.append(match.span)
    assert len(set(spans)) == 3 and not collapses(text, spans)


def test_bad_ranges() -> None:
    text = "a b c d e f g h"
    pieces = cut_pieces(text, Span(0, len(text)), 2)
    assert span_of_range(text, pieces, 0, 1).problem == BAD_RANGE
    assert span_of_range(text, pieces, 3, 2).problem == BAD_RANGE
    assert span_of_range(text, pieces, 1, len(pieces) + 1).problem == BAD_RANGE
    assert span_of_range(text, pieces, 1, 1, min_chars=5).problem == TOO_SHORT
    blank = "word      more"
    blank_pieces = [Span(0, 5), Span(5, 10), Span(10, 14)]
    assert span_of_range(blank, blank_pieces, 2, 2).problem == EMPTY


# --- checks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        ([Span(0, 5), Span(10, 15)], False),
        ([Span(0, 5), Span(5, 9)], True),  # adjacent
        ([Span(0, 5), Span(3, 9)], True),  # overlapping
        ([Span(10, 15), Span(0, 5)], False),  # order does not matter
        ([Span(0, 5), Span(7, 9)], True),  # only whitespace between
        ([Span(0, 20), Span(2, 4), Span(30, 40)], True),  # one inside another
        ([Span(0, 5)], False),
    ],
)
def test_collapses(spans: list[Span], expected: bool) -> None:
    text = "alpha  beta gamma delta epsilon zeta eta"
    assert collapses(text, spans) is expected


def test_copied_run() -> None:
    passage = "The committee approved the new budget on Tuesday."
    assert copied_run("When did the committee approve it?", passage) is None
    assert (
        copied_run("Who approved the new budget on Tuesday?", passage) == "approved the new budget"
    )
    assert copied_run("THE COMMITTEE APPROVED THE plan", passage) == "the committee approved the"
    assert copied_run("the new budget", passage) is None
