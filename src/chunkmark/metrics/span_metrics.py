"""Character-level retrieval metrics, as docs/design.md defines them (reference-compatible).

Per question q with excerpts E and retrieved chunks R = r1..rk:

- recall    = |∪E ∩ ∪R'| / Σ|e|         (R' = retrieved chunks of q's own document)
- precision = |∪E ∩ ∪R'| / Σ|r|         (every retrieved chunk, any document; a sum, not a union)
- IoU       = |∪E ∩ ∪R'| / (Σ|r| + Σ_e |e \\ ∪R'|)
- precision Ω = |∪E ∩ ∪H| / |∪H ∪ ∪E|   (H = chunks of q's document intersecting or touching E)

Beside these, :func:`score_retrieval` gives containment (|∪ excerpts lying wholly inside one
counted chunk of R'| / Σ|e|) and DCG (nDCG's numerator), and :func:`score_chunking` each
question's relevant chunks as knapsack items (:class:`RelevantGains`) for an oracle bound.

Σ|e| and Σ_e are sums over the excerpts as given, like the reference; they equal the union
forms whenever a question's excerpts do not overlap each other (true of every question in the
Chroma general benchmark).

:func:`score_retrieval` also takes the options that :mod:`chunkmark.metrics.scoring` names
(``union=True``: Σ|r| becomes |∪R|; ``copies``: identical copies of an excerpt's text count as
the excerpt; ``last_end``: a last chunk cut short). Spans are in whatever unit the tables are in:
characters as read, or tokens after :class:`~chunkmark.metrics.scoring.TokenUnits` converts them.

Everything is computed on padded ``(questions, k)`` arrays: no Python loop runs over
chunks x questions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from chunkmark.spans import IntArray, union

T = TypeVar("T", bound=np.generic)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ChunkTable:
    """All chunks of a cell, over every document: ``doc[i]`` is a document index."""

    doc: IntArray
    start: IntArray
    end: IntArray

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[int, int, int]]) -> ChunkTable:
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        return cls(arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy())

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def length(self) -> IntArray:
        return self.end - self.start


@dataclass(frozen=True)
class QuestionTable:
    """Questions as padded arrays: ``excerpts[q, j]`` valid where ``mask[q, j]``.

    ``merged`` holds each question's excerpts merged into disjoint spans (same padding rules).
    """

    doc: IntArray
    excerpts: IntArray  # (n_q, m, 2)
    mask: BoolArray  # (n_q, m)
    merged: IntArray  # (n_q, m2, 2)
    merged_mask: BoolArray

    @classmethod
    def from_lists(
        cls, doc: Sequence[int], excerpts: Sequence[Sequence[tuple[int, int]]]
    ) -> QuestionTable:
        ex, mask = _pad([np.asarray(e, dtype=np.int64).reshape(-1, 2) for e in excerpts])
        mg, mmask = _pad([union(np.asarray(e, dtype=np.int64).reshape(-1, 2)) for e in excerpts])
        return cls(np.asarray(doc, dtype=np.int64), ex, mask, mg, mmask)

    @classmethod
    def from_padded(cls, doc: IntArray, excerpts: IntArray, mask: BoolArray) -> QuestionTable:
        """A table from padded excerpts (``(n_q, m, 2)`` valid where ``mask``), merging each
        question's excerpts anew (one loop over questions)."""
        groups = [union(excerpts[q][mask[q]]) for q in range(len(doc))]
        merged, merged_mask = _pad(groups)
        return cls(np.asarray(doc, dtype=np.int64), excerpts, mask, merged, merged_mask)

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def merged_total(self) -> IntArray:
        """|∪E| per question."""
        lengths = (self.merged[..., 1] - self.merged[..., 0]) * self.merged_mask
        return np.asarray(lengths.sum(axis=1), dtype=np.int64)

    @property
    def excerpt_total(self) -> IntArray:
        """Σ|e| per question (the reference's recall denominator)."""
        lengths = (self.excerpts[..., 1] - self.excerpts[..., 0]) * self.mask
        return np.asarray(lengths.sum(axis=1), dtype=np.int64)


@dataclass(frozen=True)
class ExcerptCopies:
    """Other places where each question's excerpt texts occur in its document, padded:
    ``spans[q, c]`` is an identical copy of the text of excerpt ``owner[q, c]`` (an index into
    ``QuestionTable.excerpts[q]``), valid where ``mask[q, c]``. Rows follow the questions of
    the :class:`QuestionTable` the copies were found for; spans are in that table's unit.
    ``chunkmark.metrics.scoring.find_excerpt_copies`` builds it from the document texts."""

    spans: IntArray  # (n_q, c, 2)
    owner: IntArray  # (n_q, c)
    mask: BoolArray  # (n_q, c)

    @classmethod
    def from_lists(cls, copies: Sequence[Sequence[tuple[int, int, int]]]) -> ExcerptCopies:
        """Copies per question as ``(start, end, excerpt index)`` triples."""
        rows = [np.asarray(c, dtype=np.int64).reshape(-1, 3) for c in copies]
        spans, mask = _pad([r[:, :2] for r in rows])
        owner = np.zeros(mask.shape, dtype=np.int64)
        for q, r in enumerate(rows):
            owner[q, : len(r)] = r[:, 2]
        return cls(spans, owner, mask)

    def __len__(self) -> int:
        return len(self.mask)


def _pad(groups: list[IntArray]) -> tuple[IntArray, BoolArray]:
    width = max((len(g) for g in groups), default=0) or 1
    out = np.zeros((len(groups), width, 2), dtype=np.int64)
    mask = np.zeros((len(groups), width), dtype=bool)
    for i, g in enumerate(groups):
        out[i, : len(g)] = g
        mask[i, : len(g)] = True
    return out, mask


# The pairwise steps below hold a few (questions, spans, excerpts) arrays at once: questions are
# taken a block at a time so that each holds at most this many entries (about 130 MB of int64).
# A full set's deep rankings (CUAD: 6,643 questions, up to 812 chunks for a 2,048-token budget,
# dozens of excerpts a question) would otherwise need tens of GB in one go.
SWEEP_BLOCK = 1 << 24


def _in_blocks(n: int, per_row: int, compute: Callable[[slice], npt.NDArray[T]]) -> npt.NDArray[T]:
    """``compute`` over all ``n`` rows, a block of rows at a time (:data:`SWEEP_BLOCK` entries
    at most, ``per_row`` a row); each row is computed on its own, so blocks change nothing."""
    rows = max(1, SWEEP_BLOCK // max(per_row, 1))
    if n <= rows:
        return compute(slice(0, n))
    return np.concatenate([compute(slice(i, i + rows)) for i in range(0, n, rows)])


def covered_lengths(
    targets: IntArray, tmask: BoolArray, spans: IntArray, smask: BoolArray
) -> IntArray:
    """``|target[q, j] ∩ ∪ spans[q, :]|`` for every target, over valid entries only.

    targets ``(n, m, 2)``, spans ``(n, k, 2)``. The spans are clipped to each target, sorted by
    start, and the union length is a running-max sweep, all along a trailing axis (a block of
    questions at a time).
    """
    if targets.shape[1] == 0 or spans.shape[1] == 0:
        return np.zeros(targets.shape[:2], dtype=np.int64)
    return _in_blocks(
        len(targets),
        targets.shape[1] * spans.shape[1],
        lambda b: _covered_block(targets[b], tmask[b], spans[b], smask[b]),
    )


def _covered_block(
    targets: IntArray, tmask: BoolArray, spans: IntArray, smask: BoolArray
) -> IntArray:
    """:func:`covered_lengths` of one block of questions, in one sweep."""
    ts = targets[:, :, None, 0]
    te = targets[:, :, None, 1]
    s = np.maximum(spans[:, None, :, 0], ts)
    e = np.minimum(spans[:, None, :, 1], te)
    valid = smask[:, None, :] & (e > s)
    s = np.where(valid, s, ts)
    e = np.where(valid, e, ts)
    order = np.argsort(s, axis=2, kind="stable")
    s = np.take_along_axis(s, order, axis=2)
    e = np.take_along_axis(e, order, axis=2)
    reach = np.maximum.accumulate(e, axis=2)
    prev = np.concatenate([ts, reach[:, :, :-1]], axis=2)
    gain = np.clip(e - np.maximum(s, prev), 0, None)
    return np.asarray(gain.sum(axis=2) * tmask, dtype=np.int64)


@dataclass(frozen=True)
class RetrievalScores:
    """Per-question metrics for one retrieval depth."""

    k: IntArray  # chunks actually scored per question
    recall: FloatArray
    precision: FloatArray
    iou: FloatArray
    f1: FloatArray
    hit: FloatArray
    mrr: FloatArray
    ndcg: FloatArray
    containment: FloatArray  # |∪ excerpts wholly inside one counted chunk| / Σ|e|
    dcg: FloatArray  # nDCG's numerator: Σ relevant / log2(rank + 1), ranks from 1


def share(num: npt.ArrayLike, den: npt.ArrayLike) -> FloatArray:
    """``num / den``, 0 where ``den`` is 0."""
    num_f = np.asarray(num, dtype=np.float64)
    den_f = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast_shapes(num_f.shape, den_f.shape))
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def score_retrieval(
    questions: QuestionTable,
    chunks: ChunkTable,
    ranking: IntArray,
    k: int | IntArray,
    n_relevant: IntArray | None = None,
    *,
    last_end: IntArray | None = None,
    copies: ExcerptCopies | None = None,
    union: bool = False,
) -> RetrievalScores:
    """Score the top ``k`` of ``ranking`` (``(n_q, K)`` chunk indices, best first).

    ``k`` is one depth for all questions or one per question (the reference's ``retrieve=-1``).
    ``n_relevant`` (chunks of the question's document relevant to it, as
    :func:`score_chunking` counts them with the same ``copies``) feeds nDCG's ideal ranking;
    without it the ideal assumes every scored slot could be relevant.

    The keywords leave the reference's definitions when given (all in the tables' unit):

    - ``last_end`` ``(n_q,)``: the end of each question's last counted chunk (rank ``k - 1``),
      which replaces that chunk's end in every span computation, for a retrieval that keeps
      only a prefix of its last chunk. It must lie within the chunk; ignored where ``k`` is 0.
    - ``copies``: an excerpt with a copy lying wholly inside a counted chunk of its document
      counts as covered (its own span joins ∪R' for the overlap and the missed part, adding no
      retrieved length), and a chunk holding such a copy is relevant for hit, MRR and nDCG.
    - ``union``: precision = overlap / |∪R| and IoU = overlap / (|∪R| + |∪E| - overlap), with
      ∪R the union of the counted chunks, each document apart.
    """
    n_q, width = ranking.shape
    ks = np.broadcast_to(np.minimum(np.asarray(k, dtype=np.int64), width), (n_q,))
    cols = np.arange(width)
    take = cols[None, :] < ks[:, None]
    r_doc = chunks.doc[ranking]
    r_spans = _retrieved_spans(chunks, ranking, ks, last_end)
    same = take & (r_doc == questions.doc[:, None])
    relevant = _overlaps_any(questions, r_spans) & same

    cover, cover_mask = r_spans, same
    contained = _contained(questions, r_spans, same)
    if copies is not None:
        covered, holds_copy = _copy_coverage(questions, copies, r_spans, same)
        relevant |= holds_copy
        contained |= covered
        cover = np.concatenate([r_spans, questions.excerpts], axis=1)
        cover_mask = np.concatenate([same, covered], axis=1)

    per_span = covered_lengths(questions.merged, questions.merged_mask, cover, cover_mask)
    overlap = per_span.sum(axis=1)
    if union:
        retrieved_len = _union_retrieved(r_doc, r_spans, take)
        unused = questions.merged_total - overlap
    else:
        covered_raw = covered_lengths(questions.excerpts, questions.mask, cover, cover_mask)
        ex_len = (questions.excerpts[..., 1] - questions.excerpts[..., 0]) * questions.mask
        unused = (ex_len - covered_raw).sum(axis=1)
        retrieved_len = ((r_spans[..., 1] - r_spans[..., 0]) * take).sum(axis=1)

    recall = share(overlap, questions.excerpt_total)
    precision = share(overlap, retrieved_len)
    iou = share(overlap, retrieved_len + unused)
    f1 = share(2 * precision * recall, precision + recall)
    containment = share(
        union_lengths(questions.excerpts, questions.mask & contained), questions.excerpt_total
    )
    hit, mrr, ndcg, dcg = _rank_scores(relevant, ks, n_relevant)
    return RetrievalScores(ks.copy(), recall, precision, iou, f1, hit, mrr, ndcg, containment, dcg)


def _rank_scores(
    relevant: BoolArray, ks: IntArray, n_relevant: IntArray | None
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """hit, MRR, nDCG and DCG from the ``(n_q, K)`` relevance of the counted ranks."""
    width = relevant.shape[1]
    cols = np.arange(width)
    hit = np.asarray(relevant.any(axis=1), dtype=np.float64)
    first = np.where(relevant.any(axis=1), relevant.argmax(axis=1), -1)
    mrr: FloatArray = np.where(first >= 0, 1.0 / np.maximum(first + 1.0, 1.0), 0.0)
    discounts = 1.0 / np.log2(cols + 2.0)
    dcg = (relevant * discounts[None, :]).sum(axis=1)
    ideal_n = ks if n_relevant is None else np.minimum(ks, n_relevant)
    ideal = np.concatenate([[0.0], np.cumsum(discounts)])[np.minimum(ideal_n, width)]
    return hit, mrr, share(dcg, ideal), np.asarray(dcg, dtype=np.float64)


def _retrieved_spans(
    chunks: ChunkTable, ranking: IntArray, ks: IntArray, last_end: IntArray | None
) -> IntArray:
    """``(n_q, K, 2)`` spans of the ranked chunks, the last counted one cut at ``last_end``."""
    spans = np.stack([chunks.start[ranking], chunks.end[ranking]], axis=2)
    if last_end is None:
        return spans
    ends = np.asarray(last_end, dtype=np.int64)
    if ends.shape != ks.shape:
        raise ValueError(
            f"last_end has shape {ends.shape}; it needs one end per question {ks.shape}"
        )
    rows = np.flatnonzero(ks > 0)
    last = ks[rows] - 1
    lo, hi, cut = spans[rows, last, 0], spans[rows, last, 1], ends[rows]
    bad = np.flatnonzero((cut < lo) | (cut > hi))
    if len(bad):
        q = int(rows[bad[0]])
        raise ValueError(
            f"last_end[{q}] = {int(cut[bad[0]])} is outside its last counted chunk "
            f"[{int(lo[bad[0]])}, {int(hi[bad[0]])}): a cut may only shorten that chunk."
        )
    spans[rows, last, 1] = cut
    return spans


def _union_retrieved(r_doc: IntArray, r_spans: IntArray, take: BoolArray) -> IntArray:
    """|∪R| per question over the counted chunks, each document on its own stretch of line."""
    stride = int(r_spans[..., 1].max(initial=0)) + 1
    return union_lengths(r_spans + (r_doc * stride)[..., None], take)


def _copy_coverage(
    questions: QuestionTable, copies: ExcerptCopies, spans: IntArray, counted: BoolArray
) -> tuple[BoolArray, BoolArray]:
    """Which excerpts have a copy wholly inside a counted span (``(n_q, m)``), and which spans
    hold such a copy (``(n_q, K)``). ``spans`` ``(n_q, K, 2)`` must all be of the question's
    document where ``counted``; empty copies never count.

    Works on the valid (question, copy) pairs, ``(pairs, K)`` at a time: no padding to the
    largest number of copies.
    """
    if len(copies) != len(questions):
        raise ValueError(
            f"copies has {len(copies)} rows for {len(questions)} questions: find the copies "
            "for the same question table."
        )
    qi, ci = np.nonzero(copies.mask)
    c = copies.spans[qi, ci]
    inside = (
        counted[qi]
        & (spans[qi, :, 0] <= c[:, None, 0])
        & (c[:, None, 1] <= spans[qi, :, 1])
        & (c[:, None, 1] > c[:, None, 0])
    )
    covered = np.zeros(questions.mask.shape, dtype=bool)
    found = inside.any(axis=1)
    covered[qi[found], copies.owner[qi[found], ci[found]]] = True
    return covered & questions.mask, _or_rows(inside, qi, counted.shape)


def _or_rows(values: BoolArray, rows: IntArray, shape: tuple[int, ...]) -> BoolArray:
    """``out[r] = OR of values[i] with rows[i] == r`` (``rows`` sorted), other rows False."""
    out = np.zeros(shape, dtype=bool)
    if len(rows):
        first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        out[rows[first]] = np.logical_or.reduceat(values, first, axis=0)
    return out


def _contained(questions: QuestionTable, spans: IntArray, counted: BoolArray) -> BoolArray:
    """``(n_q, m)``: excerpt lies wholly inside one counted span (``start <= e.start`` and
    ``e.end <= end``); padding excerpts are never contained."""
    excerpts, mask = questions.excerpts, questions.mask

    def block(b: slice) -> BoolArray:
        inside = (
            counted[b, :, None]
            & (spans[b, :, None, 0] <= excerpts[b, None, :, 0])
            & (excerpts[b, None, :, 1] <= spans[b, :, None, 1])
        )
        return np.asarray(inside.any(axis=1) & mask[b])

    return _in_blocks(len(spans), spans.shape[1] * excerpts.shape[1], block)


def _overlaps_any(questions: QuestionTable, spans: IntArray) -> BoolArray:
    """``(n_q, k)``: span overlaps (positive length) some excerpt of its question."""
    excerpts, mask = questions.excerpts, questions.mask

    def block(b: slice) -> BoolArray:
        lo = np.maximum(spans[b, :, None, 0], excerpts[b, None, :, 0])
        hi = np.minimum(spans[b, :, None, 1], excerpts[b, None, :, 1])
        return np.asarray(((hi > lo) & mask[b, None, :]).any(axis=2))

    return _in_blocks(len(spans), spans.shape[1] * excerpts.shape[1], block)


@dataclass(frozen=True)
class RelevantGains:
    """Each question's relevant chunks (those ``n_relevant`` counts) as knapsack items, padded
    ``(n_q, w)`` with zeros: ``length[q, i]`` is a chunk's length and ``gain[q, i]`` how much of
    ∪E it covers on its own (its overlap with ∪E, plus, with excerpt copies, the rest of each
    excerpt whose copy it wholly holds). Each row runs by gain per unit of length, highest
    first. Every relevant chunk has a positive gain and length; padding has both 0.

    Coverage is subadditive: a set of chunks covers at most the sum of their gains, since
    every covered character of ∪E is counted in the gain of a chunk that covers it.
    """

    length: IntArray
    gain: IntArray

    def best_cover(self, budget: IntArray) -> FloatArray:
        """Per question, the fractional-knapsack optimum: the most gain a selection of its
        relevant chunks, each taken whole or in part (a part of a chunk yielding that share of
        its gain), can collect with ``budget`` units of length. Filling by gain per unit, as the
        rows run, is optimal for this relaxation, so the value bounds the covered part of ∪E of
        every set of whole chunks whose lengths sum to at most ``budget``."""
        used_before = np.cumsum(self.length, axis=1) - self.length
        room = np.asarray(budget, dtype=np.float64)[:, None] - used_before
        share = np.clip(room / np.maximum(self.length, 1), 0.0, 1.0)
        return np.asarray((share * self.gain).sum(axis=1), dtype=np.float64)


@dataclass(frozen=True)
class OmegaScores:
    """Retrieval-free scores of a chunking: precision Ω and the chunk counts around excerpts."""

    precision_omega: FloatArray
    n_touching: IntArray  # chunks intersecting or touching an excerpt (reference's min_k)
    n_relevant: IntArray  # chunks overlapping an excerpt by at least one character
    gains: RelevantGains


def score_chunking(
    questions: QuestionTable,
    chunks: ChunkTable,
    block: int = 256,
    *,
    copies: ExcerptCopies | None = None,
) -> OmegaScores:
    """Precision Ω and per-question chunk counts, one document at a time, in blocks of questions.

    With ``copies``, ``n_relevant`` also counts the chunks that wholly hold a copy of an
    excerpt (the relevance :func:`score_retrieval` uses with the same copies); precision Ω and
    ``n_touching`` stay positional.
    """
    if copies is not None and len(copies) != len(questions):
        raise ValueError(f"copies has {len(copies)} rows for {len(questions)} questions.")
    n_q = len(questions)
    omega = np.zeros(n_q)
    n_touch = np.zeros(n_q, dtype=np.int64)
    n_rel = np.zeros(n_q, dtype=np.int64)
    pair_q: list[IntArray] = [np.zeros(0, dtype=np.int64)]
    pair_c: list[IntArray] = [np.zeros(0, dtype=np.int64)]
    for d in np.unique(questions.doc):
        c_idx = np.flatnonzero(chunks.doc == d)
        cs, ce = chunks.start[c_idx], chunks.end[c_idx]
        for lo in range(0, n_q, block):
            q_idx = lo + np.flatnonzero(questions.doc[lo : lo + block] == d)
            if len(q_idx) == 0:
                continue
            ex = questions.excerpts[q_idx]
            em = questions.mask[q_idx]
            a = np.maximum(cs[None, :, None], ex[:, None, :, 0])
            b = np.minimum(ce[None, :, None], ex[:, None, :, 1])
            touch: BoolArray = np.asarray(((a <= b) & em[:, None, :]).any(axis=2))  # (q, chunks)
            n_touch[q_idx] = touch.sum(axis=1)
            rel = ((a < b) & em[:, None, :]).any(axis=2)
            if copies is not None:
                rel |= _holds_copy(copies.spans[q_idx], copies.mask[q_idx], cs, ce)
            n_rel[q_idx] = rel.sum(axis=1)
            qi, ci = np.nonzero(rel)
            pair_q.append(q_idx[qi])
            pair_c.append(c_idx[ci])
            omega[q_idx] = _omega_block(
                questions.merged[q_idx], questions.merged_mask[q_idx], cs, ce, touch
            )
    q, c = np.concatenate(pair_q), np.concatenate(pair_c)
    gains = _relevant_gains(questions, chunks, q, c, copies)
    return OmegaScores(omega, n_touch, n_rel, gains)


def _relevant_gains(
    questions: QuestionTable,
    chunks: ChunkTable,
    q: IntArray,
    c: IntArray,
    copies: ExcerptCopies | None,
) -> RelevantGains:
    """The knapsack items of the relevant (question ``q[i]``, chunk ``c[i]``) pairs, gathered
    into rows per question, highest gain per unit first."""
    spans = np.stack([chunks.start[c], chunks.end[c]], axis=-1)[:, None, :]
    held = np.ones((len(q), 1), dtype=bool)
    if copies is not None:
        spans = np.concatenate([spans, questions.excerpts[q]], axis=1)
        held = np.concatenate([held, _copies_held(questions, copies, chunks, q, c)], axis=1)
    gain = covered_lengths(questions.merged[q], questions.merged_mask[q], spans, held).sum(axis=1)
    length = chunks.length[c]
    density = gain / np.maximum(length, 1)
    order = np.lexsort((-density, q))
    q, gain, length = q[order], gain[order], length[order]
    counts = np.bincount(q, minlength=len(questions))
    slot = np.arange(len(q)) - (np.cumsum(counts) - counts)[q]
    width = int(counts.max(initial=0))
    out_length = np.zeros((len(questions), width), dtype=np.int64)
    out_gain = np.zeros((len(questions), width), dtype=np.int64)
    out_length[q, slot] = length
    out_gain[q, slot] = gain
    return RelevantGains(out_length, out_gain)


def _copies_held(
    questions: QuestionTable, copies: ExcerptCopies, chunks: ChunkTable, q: IntArray, c: IntArray
) -> BoolArray:
    """``(pairs, m)``: chunk ``c[i]`` wholly holds a non-empty copy of excerpt ``j`` of question
    ``q[i]``."""
    cs, ce = copies.spans[q, :, 0], copies.spans[q, :, 1]
    inside = (
        copies.mask[q]
        & (ce > cs)
        & (chunks.start[c][:, None] <= cs)
        & (ce <= chunks.end[c][:, None])
    )
    held = np.zeros((len(q), questions.mask.shape[1]), dtype=bool)
    pi, ki = np.nonzero(inside)
    held[pi, copies.owner[q][pi, ki]] = True
    return held


def _holds_copy(spans: IntArray, mask: BoolArray, cs: IntArray, ce: IntArray) -> BoolArray:
    """``(questions, chunks)``: chunk ``[cs, ce)`` wholly holds one of the question's non-empty
    copies; the valid (question, copy) pairs go through in blocks of about 4M comparisons."""
    out = np.zeros((len(spans), len(cs)), dtype=bool)
    qi, ci = np.nonzero(mask & (spans[..., 1] > spans[..., 0]))
    step = max(1, (1 << 22) // max(len(cs), 1))
    for lo in range(0, len(qi), step):
        rows, c = qi[lo : lo + step], spans[qi[lo : lo + step], ci[lo : lo + step]]
        inside = (cs[None, :] <= c[:, 0, None]) & (c[:, 1, None] <= ce[None, :])
        out |= _or_rows(inside, rows, out.shape)
    return out


def _omega_block(
    merged: IntArray, merged_mask: BoolArray, cs: IntArray, ce: IntArray, touch: BoolArray
) -> FloatArray:
    """Precision Ω for a block of questions: |∪E ∩ H| / |H ∪ ∪E|, H = union of touching chunks.

    Only the touching chunks matter, so each question's are gathered into a padded
    ``(questions, max touching)`` array first; |H ∪ ∪E| = |H| + |∪E| - |∪E ∩ H|.
    """
    width = int(touch.sum(axis=1).max(initial=0))
    if width == 0:
        return np.zeros(len(touch))
    order = np.argsort(~touch, axis=1, kind="stable")[:, :width]
    valid = np.take_along_axis(touch, order, axis=1)
    spans = np.stack([cs[order], ce[order]], axis=-1)
    hit_len = union_lengths(spans, valid)
    excerpt_len = ((merged[..., 1] - merged[..., 0]) * merged_mask).sum(axis=1)
    num = covered_lengths(merged, merged_mask, spans, valid).sum(axis=1)
    den = hit_len + excerpt_len - num
    out: FloatArray = np.where(den > 0, num / np.maximum(den, 1), 0.0)
    return np.where(valid.any(axis=1), out, 0.0)


def union_lengths(spans: IntArray, mask: BoolArray) -> IntArray:
    """``|∪ spans[q, :]|`` over the valid entries of each row (spans ``(n, k, 2)``)."""
    s = np.where(mask, spans[..., 0], -1)
    e = np.where(mask, spans[..., 1], -1)
    order = np.argsort(s, axis=1, kind="stable")
    s = np.take_along_axis(s, order, axis=1)
    e = np.take_along_axis(e, order, axis=1)
    reach = np.maximum.accumulate(e, axis=1)
    prev = np.concatenate([np.full((len(s), 1), -1), reach[:, :-1]], axis=1)
    gain = np.clip(e - np.maximum(s, prev), 0, None)
    return np.asarray(gain.sum(axis=1), dtype=np.int64)


def min_k_depth(n_touching: IntArray, cap: int = 20) -> IntArray:
    """The reference's ``retrieve=-1``: per question its touching-chunk count, capped by
    ``min(cap, max over questions)``."""
    if len(n_touching) == 0:
        return n_touching
    return np.minimum(n_touching, min(cap, int(n_touching.max())))
