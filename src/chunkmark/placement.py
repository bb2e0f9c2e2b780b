"""Placing text in a document: the searching shared by every part that turns a text into a span.

``chunkmark datasets validate --fix``, the audit (:mod:`chunkmark.audit.placement`), the suite
converters (:mod:`chunkmark.datasets.suite.locate`) and synth (:mod:`chunkmark.synth.excerpts`)
each decide for themselves which match to take and what to call a miss; the ways of finding the
matches are here:

- :func:`find_all` lists every occurrence, overlapping ones too;
- :class:`NormalisedText` is a document with each run of whitespace read as one space (and,
  with ``typography``, curly quotes, apostrophes and dashes read as ASCII, zero-width characters
  and soft hyphens left out), with the way back from each normalised character to the
  document's own offsets, so a match found there is an exact span of the document;
- :func:`candidates` gives every place a document holds a text, whitespace aside;
- :func:`nearest_match` gives the best fuzzy alignment (rapidfuzz), for a text found nowhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chunkmark.spans import Span

WHITESPACE = re.compile(r"\s+")

_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_DROPPED = "\u00ad\u200b\u200c\u200d\u2060\ufeff"  # soft hyphen and zero-width characters
# Every quote mark is one quote: models straighten curly quotes and also swap double for single
# ones ('the Old One' for "the Old One"), which changes no word of the passage.
_TRANSLATION = {
    **{ord(c): "'" for c in _SINGLE_QUOTES},
    **{ord(c): "'" for c in _DOUBLE_QUOTES + '"'},
    **{ord(c): "-" for c in _DASHES},
}


def normalise_space(text: str) -> str:
    """``text`` with each whitespace run as one space and no whitespace at either end."""
    return WHITESPACE.sub(" ", text).strip()


def find_all(text: str, needle: str, limit: int = 10_000, start: int = 0) -> list[int]:
    """Start offsets of every occurrence of ``needle`` in ``text`` from ``start`` (overlapping
    ones too), at most ``limit`` of them; none for an empty needle."""
    found: list[int] = []
    if not needle:
        return found
    i = text.find(needle, start)
    while i >= 0 and len(found) < limit:
        found.append(i)
        i = text.find(needle, i + 1)
    return found


class NormalisedText:
    """A text with whitespace (and, with ``typography``, typography) normalised, and the way
    back to the original.

    ``text`` is the normalised text; its character ``i`` came from the original characters
    ``[starts[i], ends[i])`` (a collapsed run of whitespace maps to the whole run; a dropped
    character maps to nothing, so it only appears inside a mapped span, never at its ends).
    """

    def __init__(self, original: str, *, typography: bool = False) -> None:
        chars: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        dropped = _DROPPED if typography else ""
        for i, c in enumerate(original):
            if c in dropped:
                continue
            if c.isspace():
                if chars and chars[-1] == " ":
                    ends[-1] = i + 1  # extend the run (dropped characters may sit inside it)
                    continue
                c = " "
            elif typography:
                c = c.translate(_TRANSLATION)
            chars.append(c)
            starts.append(i)
            ends.append(i + 1)
        self.original = original
        self.text = "".join(chars)
        self.starts = starts
        self.ends = ends

    def span(self, start: int, end: int) -> Span:
        """The original span of the normalised characters ``[start, end)`` (``end > start``)."""
        return Span(self.starts[start], self.ends[end - 1])


def candidates(
    document: str, text: str, normalised: NormalisedText | None = None
) -> tuple[Span, ...]:
    """Every place ``document`` holds ``text`` whitespace aside (each run of whitespace read
    as one space on both sides, ``text``'s outer whitespace left out), as the document's own
    offsets from the first matched character to the last; none for a blank text.
    ``normalised`` may pass the document's :class:`NormalisedText`."""
    needle = normalise_space(text)
    if not needle:
        return ()
    norm = normalised if normalised is not None else NormalisedText(document)
    return tuple(norm.span(i, i + len(needle)) for i in find_all(norm.text, needle))


@dataclass(frozen=True, slots=True)
class Nearest:
    """The best fuzzy alignment of a text in a document: its span and score (0-100)."""

    span: Span
    score: float


def nearest_match(fuzz: Any, document: str, text: str, cutoff: float = 0.0) -> Nearest | None:
    """The span of ``document`` that best aligns with ``text`` (without its outer whitespace)
    by rapidfuzz's ``partial_ratio_alignment`` (``fuzz`` is ``rapidfuzz.fuzz``), scoring at
    least ``cutoff``; None when none does or the alignment is empty."""
    needle = text.strip()
    found = fuzz.partial_ratio_alignment(needle, document, score_cutoff=cutoff)
    if found is None or found.score < cutoff:
        return None
    start, end = int(found.dest_start), int(found.dest_end)
    if end <= start:
        return None
    return Nearest(Span(start, end), round(float(found.score), 3))
