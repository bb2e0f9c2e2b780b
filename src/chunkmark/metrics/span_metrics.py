"""Character-level retrieval metrics, as docs/design.md defines them (reference-compatible).

Per question q with excerpts E and retrieved chunks R = r1..rk:

- recall    = |∪E ∩ ∪R'| / Σ|e|         (R' = retrieved chunks of q's own document)
- precision = |∪E ∩ ∪R'| / Σ|r|         (every retrieved chunk, any document; a sum, not a union)
- IoU       = |∪E ∩ ∪R'| / (Σ|r| + Σ_e |e \\ ∪R'|)
- precision Ω = |∪E ∩ ∪H| / |∪H ∪ ∪E|   (H = chunks of q's document intersecting or touching E)

Σ|e| and Σ_e are sums over the excerpts as given, like the reference; they equal the union
forms whenever a question's excerpts do not overlap each other (true of every question in the
Chroma general benchmark). The ``unit="tokens"`` and union-denominator variants are later work.

Everything is computed on padded ``(questions, k)`` arrays: no Python loop runs over
chunks x questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chunkmark.spans import IntArray, union

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

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def excerpt_total(self) -> IntArray:
        """Σ|e| per question (the reference's recall denominator)."""
        lengths = (self.excerpts[..., 1] - self.excerpts[..., 0]) * self.mask
        return np.asarray(lengths.sum(axis=1), dtype=np.int64)


def _pad(groups: list[IntArray]) -> tuple[IntArray, BoolArray]:
    width = max((len(g) for g in groups), default=0) or 1
    out = np.zeros((len(groups), width, 2), dtype=np.int64)
    mask = np.zeros((len(groups), width), dtype=bool)
    for i, g in enumerate(groups):
        out[i, : len(g)] = g
        mask[i, : len(g)] = True
    return out, mask


def covered_lengths(
    targets: IntArray, tmask: BoolArray, spans: IntArray, smask: BoolArray
) -> IntArray:
    """``|target[q, j] ∩ ∪ spans[q, :]|`` for every target, over valid entries only.

    targets ``(n, m, 2)``, spans ``(n, k, 2)``. The spans are clipped to each target, sorted by
    start, and the union length is a running-max sweep, all along a trailing axis.
    """
    if targets.shape[1] == 0 or spans.shape[1] == 0:
        return np.zeros(targets.shape[:2], dtype=np.int64)
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


def _ratio(num: npt.NDArray[np.generic], den: npt.NDArray[np.generic]) -> FloatArray:
    num_f = np.asarray(num, dtype=np.float64)
    den_f = np.asarray(den, dtype=np.float64)
    out = np.zeros_like(num_f)
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def score_retrieval(
    questions: QuestionTable,
    chunks: ChunkTable,
    ranking: IntArray,
    k: int | IntArray,
    n_relevant: IntArray | None = None,
) -> RetrievalScores:
    """Score the top ``k`` of ``ranking`` (``(n_q, K)`` chunk indices, best first).

    ``k`` is one depth for all questions or one per question (the reference's ``retrieve=-1``).
    ``n_relevant`` (chunks of the question's document overlapping an excerpt) feeds nDCG's ideal
    ranking; without it the ideal assumes every scored slot could be relevant.
    """
    n_q, width = ranking.shape
    ks = np.broadcast_to(np.minimum(np.asarray(k, dtype=np.int64), width), (n_q,))
    cols = np.arange(width)
    take = cols[None, :] < ks[:, None]
    r_doc = chunks.doc[ranking]
    r_spans = np.stack([chunks.start[ranking], chunks.end[ranking]], axis=2)
    same = take & (r_doc == questions.doc[:, None])

    overlap = covered_lengths(questions.merged, questions.merged_mask, r_spans, same).sum(axis=1)
    covered_raw = covered_lengths(questions.excerpts, questions.mask, r_spans, same)
    ex_len = (questions.excerpts[..., 1] - questions.excerpts[..., 0]) * questions.mask
    unused = (ex_len - covered_raw).sum(axis=1)
    retrieved_len = ((r_spans[..., 1] - r_spans[..., 0]) * take).sum(axis=1)

    recall = _ratio(overlap, questions.excerpt_total)
    precision = _ratio(overlap, retrieved_len)
    iou = _ratio(overlap, retrieved_len + unused)
    f1 = _ratio(2 * precision * recall, precision + recall)

    relevant = _overlaps_any(questions, r_spans) & same
    hit = relevant.any(axis=1).astype(np.float64)
    first = np.where(relevant.any(axis=1), relevant.argmax(axis=1), -1)
    mrr = np.where(first >= 0, 1.0 / np.maximum(first + 1.0, 1.0), 0.0)
    discounts = 1.0 / np.log2(cols + 2.0)
    dcg = (relevant * discounts[None, :]).sum(axis=1)
    ideal_n = ks if n_relevant is None else np.minimum(ks, n_relevant)
    ideal = np.concatenate([[0.0], np.cumsum(discounts)])[np.minimum(ideal_n, width)]
    ndcg = _ratio(dcg, ideal)
    return RetrievalScores(ks.copy(), recall, precision, iou, f1, hit, mrr, ndcg)


def _overlaps_any(questions: QuestionTable, spans: IntArray) -> BoolArray:
    """``(n_q, k)``: span overlaps (positive length) some excerpt of its question."""
    lo = np.maximum(spans[:, :, None, 0], questions.excerpts[:, None, :, 0])
    hi = np.minimum(spans[:, :, None, 1], questions.excerpts[:, None, :, 1])
    return np.asarray(((hi > lo) & questions.mask[:, None, :]).any(axis=2))


@dataclass(frozen=True)
class OmegaScores:
    """Retrieval-free scores of a chunking: precision Ω and the chunk counts around excerpts."""

    precision_omega: FloatArray
    n_touching: IntArray  # chunks intersecting or touching an excerpt (reference's min_k)
    n_relevant: IntArray  # chunks overlapping an excerpt by at least one character


def score_chunking(questions: QuestionTable, chunks: ChunkTable, block: int = 256) -> OmegaScores:
    """Precision Ω and per-question chunk counts, one document at a time, in blocks of questions."""
    n_q = len(questions)
    omega = np.zeros(n_q)
    n_touch = np.zeros(n_q, dtype=np.int64)
    n_rel = np.zeros(n_q, dtype=np.int64)
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
            n_rel[q_idx] = (((a < b) & em[:, None, :]).any(axis=2)).sum(axis=1)
            omega[q_idx] = _omega_block(
                questions.merged[q_idx], questions.merged_mask[q_idx], cs, ce, touch
            )
    return OmegaScores(omega, n_touch, n_rel)


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
