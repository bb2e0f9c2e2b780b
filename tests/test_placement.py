"""``chunkmark.placement``: a text found in a document, exactly or with its whitespace read as
one space, comes back as the document's own offsets.

The documents are built from words joined by whitespace runs, so where each word lies is known
from the lengths of the parts, not from searching."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.placement import NormalisedText, candidates, find_all, normalise_space
from chunkmark.spans import Span

WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "x"]), min_size=1, max_size=8)
GAPS = st.sampled_from([" ", "  ", "\n", " \t\n ", "\u00a0", "\u2003"])


@settings(max_examples=200, deadline=None)
@given(words=WORDS, gaps=st.lists(GAPS, min_size=8, max_size=8), data=st.data())
def test_a_run_of_words_is_found_at_its_own_offsets(
    words: list[str], gaps: list[str], data: st.DataObject
) -> None:
    starts: list[int] = []
    document = ""
    for word, gap in zip(words, gaps, strict=False):
        starts.append(len(document))
        document += word + gap
    first = data.draw(st.integers(0, len(words) - 1))
    last = data.draw(st.integers(first, len(words) - 1))
    wanted = Span(starts[first], starts[last] + len(words[last]))
    found = candidates(document, " ".join(words[first : last + 1]))
    assert wanted in found
    for span in found:  # every candidate reads as the text, whitespace aside
        assert normalise_space(document[span.start : span.end]) == " ".join(words[first : last + 1])
    assert candidates(document, document[wanted.start : wanted.end]) == found


def test_typography_is_read_as_ascii_only_when_asked() -> None:
    document = "He said \u201cyes\u201d\u2014then\u00adleft."
    plain, typographic = NormalisedText(document), NormalisedText(document, typography=True)
    assert plain.text == document
    assert typographic.text == "He said 'yes'-thenleft."
    at = typographic.text.index("'yes'-then")
    span = typographic.span(at, at + len("'yes'-then"))
    assert (span.start, span.end) == (len("He said "), len("He said \u201cyes\u201d\u2014then"))


def test_nothing_is_found_for_a_blank_text_or_an_absent_one() -> None:
    assert candidates("some text", "   ") == ()
    assert candidates("some text", "other") == ()
    assert find_all("aaaa", "aa", start=1) == [1, 2]


def test_a_text_written_once_exactly_and_once_otherwise_has_two_candidates() -> None:
    first, gap, second = "call the desk", ". Or ", "call  the\ndesk"
    document = first + gap + second + "."
    at = len(first + gap)
    assert candidates(document, "call the desk") == (
        Span(0, len(first)),
        Span(at, at + len(second)),
    )
