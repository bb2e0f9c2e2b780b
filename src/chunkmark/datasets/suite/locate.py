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

from chunkmark.placement import NormalisedText, find_all
from chunkmark.placement import normalise_space as normalise
from chunkmark.spans import Span

Many = Literal["first", "drop"]
Method = Literal["exact", "normalised", "elided"]
Miss = Literal["empty", "not found", "ambiguous"]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a piece of evidence was placed and how; ``occurrences`` counts its matches."""

    span: Span
    method: Method
    occurrences: int


class Locator:
    """Finds evidence in one document; the whitespace-normalised text is built once, on first
    need."""

    def __init__(self, document: str) -> None:
        self.document = document

    @cached_property
    def _normalised(self) -> NormalisedText:
        return NormalisedText(self.document)

    def locate(self, evidence: str, *, many: Many = "drop") -> Placement | Miss:
        """Place ``evidence`` (see the module docstring), or say why it cannot be placed."""
        if not evidence.strip():
            return "empty"
        document = self.document
        at = document.find(evidence)
        if at >= 0:
            count = len(find_all(document, evidence, 2, at))
            if count > 1 and many == "drop":
                return "ambiguous"
            return Placement(Span(at, at + len(evidence)), "exact", count)
        needle = normalise(evidence)
        norm = self._normalised
        found = find_all(norm.text, needle, 2)
        if not found:
            return "not found"
        if len(found) > 1 and many == "drop":
            return "ambiguous"
        return Placement(norm.span(found[0], found[0] + len(needle)), "normalised", len(found))

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
        norm = self._normalised
        match = pattern.search(norm.text)
        if match is None:
            return "not found"
        again = pattern.search(norm.text, match.start() + 1)
        count = 1 if again is None else 2
        if count > 1 and many == "drop":
            return "ambiguous"
        return Placement(norm.span(match.start(), match.end()), "elided", count)
