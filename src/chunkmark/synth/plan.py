"""The plan of a generation: every question is a *slot* (a document, a window of it and a style),
drawn from the seed alone.

Documents get slots in proportion to their length (largest remainders; each within one of its
exact share); a document's windows are spread over it (stratified picks among evenly spaced
tiles, snapped to word boundaries) and none is used twice until all of that document's tiles
are used. Styles are dealt out evenly and shuffled.

With given passages (``--excerpts given``, :func:`make_passage_plan`) a slot's window is the
passage itself: whole sentences of the length drawn for it, one passage in each equal stretch
of the document.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chunkmark.chunkers.sentences import sentence_spans
from chunkmark.datasets import Document
from chunkmark.spans import Span
from chunkmark.synth import excerpts as ex


@dataclass(frozen=True)
class Slot:
    """One planned question: the ``index``-th of the plan, about ``window`` of ``doc_id``."""

    index: int
    doc_id: str
    start: int
    end: int
    style: str
    part: int = 0  # with several questions a window: which of them, 0 to parts - 1
    parts: int = 1  # the questions asked about this window

    @property
    def window(self) -> Span:
        return Span(self.start, self.end)


def quotas(lengths: Sequence[int], questions: int, rng: random.Random) -> list[int]:
    """Questions per document in proportion to its length, by largest remainders: each gets
    the floor of its exact share, and the questions left go to the largest remainders (ties in
    a seeded order). Every quota is within one question of the exact share."""
    total = sum(lengths)
    if total <= 0:
        return [0 for _ in lengths]
    base = [questions * n // total for n in lengths]
    remainders = [questions * n % total for n in lengths]
    tiebreak = list(range(len(lengths)))
    rng.shuffle(tiebreak)
    order = sorted(range(len(lengths)), key=lambda i: (-remainders[i], tiebreak[i]))
    for i in order[: questions - sum(base)]:
        base[i] += 1
    return base


def tiles(length: int, window: int) -> list[Span]:
    """Evenly spaced windows of ``window`` characters that cover ``[0, length)``: the fewest
    that do, the first at 0 and the last ending at ``length`` (one window for a short text)."""
    if length <= window:
        return [Span(0, length)]
    count = math.ceil(length / window)
    step = (length - window) / (count - 1)
    return [Span(round(t * step), round(t * step) + window) for t in range(count)]


def _stratified(count: int, picks: int, rng: random.Random) -> list[int]:
    """``picks`` indices of ``range(count)`` (``picks <= count``), one drawn from each of
    ``picks`` consecutive groups of nearly equal size: spread over the whole range."""
    bounds = [j * count // picks for j in range(picks + 1)]
    return [rng.randrange(bounds[j], bounds[j + 1]) for j in range(picks)]


def document_windows(text: str, quota: int, window: int, rng: random.Random) -> list[Span]:
    """``quota`` windows of ``text``: each pass over the document's tiles picks spread-out tiles,
    and a tile is used again only after every tile was used (later passes shift a reused tile
    by a random offset of up to half a window, so the text around its edges is seen too)."""
    spans = tiles(len(text), window)
    out: list[Span] = []
    passes = 0
    while len(out) < quota:
        need = min(quota - len(out), len(spans))
        for t in sorted(_stratified(len(spans), need, rng)):
            span = spans[t]
            if passes and len(text) > window:
                shift = rng.randint(-(window // 2), window // 2)
                start = min(max(0, span.start + shift), len(text) - window)
                span = Span(start, start + window)
            out.append(ex.snap_window(text, span.start, span.end))
        passes += 1
    return out


def deal_styles(styles: Sequence[str], count: int, rng: random.Random) -> list[str]:
    """``count`` styles dealt evenly from ``styles`` (in turn), then shuffled."""
    dealt = [styles[i % len(styles)] for i in range(count)]
    rng.shuffle(dealt)
    return dealt


def make_plan(
    documents: Sequence[Document],
    questions: int,
    *,
    seed: int,
    window_chars: int,
    styles: Sequence[str],
    window_questions: int = 1,
) -> list[Slot]:
    """The whole sequence of slots, from the seed alone (see the module docs).

    Documents' slots are interleaved by their position within each document (the j-th of k
    windows sits at (j + 1/2) / k), so every stretch of the plan covers the corpus evenly. With
    ``window_questions`` above 1 a document's quota is asked about that many to a window (the
    last window of a document may get fewer), and a window's slots follow each other in the
    plan: one after the other, each sees the questions of the ones before, and a server's
    prompt cache reads the window once. Each of them is pointed at its own part of the window
    (``part`` of ``parts``, see :func:`~chunkmark.synth.prompt.build_prompt`).
    """
    rng = random.Random(f"chunkmark-synth-plan:{seed}")
    counts = quotas([len(d.text) for d in documents], questions, rng)
    placed: list[tuple[float, int, Span, str, int, int]] = []
    for order, (doc, k) in enumerate(zip(documents, counts, strict=True)):
        n = math.ceil(k / window_questions)
        for j, window in enumerate(document_windows(doc.text, n, window_chars, rng)):
            parts = min(window_questions, k - j * window_questions)
            for part in range(parts):
                placed.append(((j + 0.5) / n, order, window, doc.id, part, parts))
    placed.sort(key=lambda item: (item[0], item[1]))  # stable: a window's slots stay together
    dealt = deal_styles(styles, len(placed), rng)
    return [
        Slot(i, doc_id, window.start, window.end, dealt[i], part, parts)
        for i, (_, _, window, doc_id, part, parts) in enumerate(placed)
    ]


def snap_passage(text: str, sentences: Sequence[Span], start: int, length: int) -> Span:
    """The run of whole sentences that starts with the first sentence starting at or after
    ``start`` (else the last one) and whose end lies nearest its start plus ``length``: at least
    one sentence, never past the text. A first sentence over twice ``length`` (a text without
    sentence marks) gives ``[start, start + length)`` on word boundaries instead."""
    first = next((i for i, s in enumerate(sentences) if s.start >= start), len(sentences) - 1)
    begin = sentences[first].start
    if sentences[first].end - begin > 2 * length:
        begin = max(begin, start)
        return ex.snap_window(text, begin, min(len(text), begin + length))
    goal = begin + length
    last = first
    while last + 1 < len(sentences) and abs(sentences[last + 1].end - goal) <= abs(
        sentences[last].end - goal
    ):
        last += 1
    return Span(begin, sentences[last].end)


def make_passage_plan(
    documents: Sequence[Document],
    questions: int,
    *,
    seed: int,
    styles: Sequence[str],
    length_of: Callable[[str, int], int],
) -> list[Slot]:
    """The plan of a generation over given passages (``--excerpts given``): every slot's
    window is the passage its question must be answered by, chosen here rather than by the LLM.

    Documents get slots as in :func:`make_plan` (in proportion to their length); a document's
    ``k`` passages start one in each of ``k`` equal stretches of it, at a seeded position, and
    are whole sentences (:func:`snap_passage`) about ``length_of(doc_id, j)`` characters long,
    so passages of one document do not overlap unless they are longer than its stretches (a
    passage that would run past the document's end starts earlier). Slots are interleaved by
    position as in :func:`make_plan`."""
    rng = random.Random(f"chunkmark-synth-passages:{seed}")
    counts = quotas([len(d.text) for d in documents], questions, rng)
    placed: list[tuple[float, int, Span, str]] = []
    for order, (doc, k) in enumerate(zip(documents, counts, strict=True)):
        if k == 0:
            continue
        sentences = sentence_spans(doc.text) or [Span(0, len(doc.text))]
        stretch = len(doc.text) / k
        for j in range(k):
            length = max(1, length_of(doc.id, j))
            last_start = max(0, len(doc.text) - length)  # a passage never runs off the end
            low = min(int(j * stretch), last_start)
            high = max(low, min(int((j + 1) * stretch) - length, last_start))
            passage = snap_passage(doc.text, sentences, rng.randint(low, high), length)
            placed.append(((j + 0.5) / k, order, passage, doc.id))
    placed.sort(key=lambda item: (item[0], item[1]))
    dealt = deal_styles(styles, len(placed), rng)
    return [
        Slot(i, doc_id, span.start, span.end, dealt[i])
        for i, (_, _, span, doc_id) in enumerate(placed)
    ]
