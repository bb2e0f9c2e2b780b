"""Placing evidence given as text in its document, exactly or not at all.

Evidence is searched for as given first (``exact``). Failing that, both texts are compared with
every run of whitespace (``\\s+``, Unicode-aware) read as one space and the evidence's own
leading and trailing whitespace left out (``normalised``); a match there is mapped back to the
document's own offsets, from the first matched character to the last, so
``document[start:end]`` is the document's text, whitespace as the document has it. Nothing else
is forgiven: no case folding, no quote or dash folding, no fuzzy match.

Evidence shortened by its annotators (CUAD's ``<omitted>``) is placed by :meth:`Locator.elided`:
every piece, whitespace-normalised, found in order, each within ``max_gap`` characters of the one
before, and the span runs from the first piece's first character to the last piece's last
(``elided``), the text the annotator cut included, as they marked it.

Evidence that occurs more than once is *ambiguous*. What to do is the caller's choice
(``many``): ``"first"`` places it at its first occurrence and says so
(:attr:`Placement.occurrences` above 1, counted in the manifest), ``"drop"`` places nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from chunkmark.spans import Span

Many = Literal["first", "drop"]
Method = Literal["exact", "normalised", "elided"]
Miss = Literal["empty", "not found", "ambiguous"]

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a piece of evidence was placed and how; ``occurrences`` counts its matches."""

    span: Span
    method: Method
    occurrences: int


def normalise(text: str) -> str:
    """``text`` with each whitespace run as one space and no whitespace at either end."""
    return _WHITESPACE.sub(" ", text).strip()


def count_occurrences(haystack: str, needle: str, start: int = 0, limit: int = 2) -> int:
    """Occurrences of ``needle`` in ``haystack`` from ``start``, overlapping ones included,
    counting no further than ``limit``."""
    found = 0
    at = haystack.find(needle, start)
    while at >= 0 and found < limit:
        found += 1
        at = haystack.find(needle, at + 1)
    return found


class Locator:
    """Finds evidence in one document; the whitespace-normalised text is built once, on first
    need."""

    def __init__(self, document: str) -> None:
        self.document = document

    @cached_property
    def _normalised(self) -> tuple[str, list[int]]:
        """The normalised document and, for each of its characters, the original offset."""
        text = self.document
        pieces: list[str] = []
        offsets: list[int] = []
        position = 0
        for match in _WHITESPACE.finditer(text):
            pieces.append(text[position : match.start()])
            offsets.extend(range(position, match.start()))
            if offsets and match.end() < len(text):
                pieces.append(" ")
                offsets.append(match.start())
            position = match.end()
        pieces.append(text[position:])
        offsets.extend(range(position, len(text)))
        return "".join(pieces), offsets

    def locate(self, evidence: str, *, many: Many = "drop") -> Placement | Miss:
        """Place ``evidence`` (see the module docstring), or say why it cannot be placed."""
        if not evidence.strip():
            return "empty"
        document = self.document
        at = document.find(evidence)
        if at >= 0:
            count = count_occurrences(document, evidence, at)
            if count > 1 and many == "drop":
                return "ambiguous"
            return Placement(Span(at, at + len(evidence)), "exact", count)
        needle = normalise(evidence)
        text, offsets = self._normalised
        at = text.find(needle)
        if at < 0:
            return "not found"
        count = count_occurrences(text, needle, at)
        if count > 1 and many == "drop":
            return "ambiguous"
        start = offsets[at]
        end = offsets[at + len(needle) - 1] + 1
        return Placement(Span(start, end), "normalised", count)

    def nearest(self, evidence: str, stated: int, window: int) -> Span | Miss:
        """The occurrence of ``evidence`` (as given) whose start is nearest ``stated``, looking no
        further than ``window`` characters either side; two at the same distance are
        ambiguous."""
        if not evidence:
            return "empty"
        document = self.document
        low = max(0, stated - window)
        high = min(len(document), stated + window + len(evidence))
        starts: list[int] = []
        at = document.find(evidence, low, high)
        while at >= 0:
            starts.append(at)
            at = document.find(evidence, at + 1, high)
        if not starts:
            return "not found"
        distances = sorted((abs(s - stated), s) for s in starts)
        if len(distances) > 1 and distances[0][0] == distances[1][0]:
            return "ambiguous"
        best = distances[0][1]
        return Span(best, best + len(evidence))

    def elided(self, pieces: list[str], max_gap: int, *, many: Many = "drop") -> Placement | Miss:
        """Place evidence given as ``pieces`` of a passage with parts cut out (see the module
        docstring): the first occurrence where every piece follows the one before within
        ``max_gap`` normalised characters."""
        needles = [normalise(p) for p in pieces]
        needles = [n for n in needles if n]
        if not needles:
            return "empty"
        gap = rf"[\s\S]{{0,{max_gap}}}?"
        pattern = re.compile(gap.join(re.escape(n) for n in needles))
        text, offsets = self._normalised
        match = pattern.search(text)
        if match is None:
            return "not found"
        again = pattern.search(text, match.start() + 1)
        count = 1 if again is None else 2
        if count > 1 and many == "drop":
            return "ambiguous"
        span = Span(offsets[match.start()], offsets[match.end() - 1] + 1)
        return Placement(span, "elided", count)
