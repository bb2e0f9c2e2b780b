"""Which of a given-mode answer's candidate questions is kept (``synth generate --excerpts given
--pick``), by how well each points to its own passage: the round-trip check of generated
queries (a query is kept when a retriever finds the passage it was written for), used to choose
among candidates.

The document is cut into stretches as long as the passage (the passage itself, and the text
before and after it in stretches of its length); BM25 (``bm25s``, English stop words) scores
every stretch for the question, and the question's *margin* is the passage's score minus the
best score of any other stretch. A positive margin means keyword search over the document's
stretches finds the passage first; a question whose words are everywhere in the document ("What
is the name of the cat?" asked of a story about the cat) has a margin at or below zero.

``--pick specific`` keeps the candidate with the largest margin: it moves a set toward
keyword-findable questions whatever the real ones are like. ``--pick examples`` keeps, slot by
slot, the first candidate that singles out its passage or the first that does not, as often as
the examples' own questions single out their evidence in their documents
(:func:`examples_share`; a seeded draw per slot, :func:`wants_specific`). docs/synth.md has the
measurements.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chunkmark.retrieval.bm25 import tokenize
from chunkmark.spans import Span


def stretches(length: int, passage: Span) -> list[Span]:
    """The passage and the rest of a document of ``length`` characters cut into consecutive
    stretches as long as the passage (the last of each side may be shorter); the passage first."""
    size = max(1, passage.end - passage.start)
    out = [passage]
    for low, high in ((0, passage.start), (passage.end, length)):
        out.extend(Span(s, min(s + size, high)) for s in range(low, high, size))
    return out


def margins(questions: Sequence[str], text: str, passage: Span) -> list[float]:
    """Per question, the BM25 score of ``passage`` minus the best score of another stretch of
    ``text`` (:func:`stretches`); 0.0 for every question when the document is the passage."""
    bm25s = importlib.import_module("bm25s")
    parts = stretches(len(text), passage)
    if len(parts) == 1 or not questions:
        return [0.0] * len(questions)
    retriever = bm25s.BM25()
    retriever.index(
        tokenize([text[p.start : p.end] for p in parts], stopwords="en"), show_progress=False
    )
    out = []
    for words in tokenize(questions, stopwords="en"):
        known = [w for w in words if w in retriever.vocab_dict]
        if not known:
            out.append(0.0)
            continue
        scores = retriever.get_scores(known)
        out.append(float(scores[0] - max(scores[1:])))
    return out


def most_specific(questions: Sequence[str], text: str, passage: Span) -> int:
    """The index of the question with the largest :func:`margins` (the first of equals)."""
    found = margins(questions, text, passage)
    return max(range(len(found)), key=lambda i: (found[i], -i))


def first_like(questions: Sequence[str], text: str, passage: Span, specific: bool) -> int:
    """The index of the first question that singles out its passage (a margin above 0) when
    ``specific``, else of the first that does not; the first question when none is so."""
    found = margins(questions, text, passage)
    return next((i for i, m in enumerate(found) if (m > 0) == specific), 0)


@dataclass(frozen=True)
class Share:
    """How many of the examples with evidence located in the corpus (``located``) single out
    their evidence (``specific``): its margin above 0 over their document's stretches."""

    specific: int
    located: int

    @property
    def fraction(self) -> float:
        return self.specific / self.located if self.located else 0.0


def examples_share(
    questions: Sequence[str],
    docs: Sequence[str | None],
    spans: Sequence[tuple[int, int] | None],
    texts: Mapping[str, str],
) -> Share:
    """:class:`Share` of the example ``questions`` whose document (``docs``) is among ``texts``
    and whose evidence span (``spans``) lies inside it."""
    specific = located = 0
    for question, doc, span in zip(questions, docs, spans, strict=False):
        text = texts.get(doc) if doc is not None else None
        if text is None or span is None or not 0 <= span[0] < span[1] <= len(text):
            continue
        located += 1
        specific += margins([question], text, Span(*span))[0] > 0
    return Share(specific, located)


def wants_specific(share: Share, seed: int, slot: int) -> bool:
    """Whether slot ``slot`` keeps a candidate that singles out its passage: a seeded draw
    that comes out true in ``share.fraction`` of slots."""
    return random.Random(f"chunkmark-synth-specific:{seed}:{slot}").random() < share.fraction
