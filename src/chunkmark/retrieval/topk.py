"""Top-k of score rows with the one tie rule every ranker follows: higher score first, then the
lower chunk index. Works on any float dtype, so fused float64 scores are ordered exactly."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from chunkmark.retrieval.base import IntArray

S = TypeVar("S", bound=np.floating)


# Rows selected at a time: the selection's temporaries (negated scores, argpartition's int64
# indices) take 12 bytes per float32 score, three times the scores themselves; a group of rows
# keeps them to a slice (64 rows x 16,384 chunks: 12 MB beside a 64 MB block of scores).
GROUP_ROWS = 64


def top_k(
    scores: npt.NDArray[S], k: int, group_rows: int = GROUP_ROWS
) -> tuple[IntArray, npt.NDArray[S]]:
    """Per row of ``scores`` (``(rows, n)``): the ``min(k, n)`` best column indices and their
    scores, best first; equal scores in column order. NaN is not allowed. Rows are selected
    ``group_rows`` at a time (each row's result is its own)."""
    rows, n = scores.shape
    k = max(0, min(k, n))
    if k == 0:
        return np.zeros((rows, 0), dtype=np.int64), np.zeros((rows, 0), dtype=scores.dtype)
    if rows > group_rows:
        ids = np.empty((rows, k), dtype=np.int64)
        top = np.empty((rows, k), dtype=scores.dtype)
        for lo in range(0, rows, group_rows):
            ids[lo : lo + group_rows], top[lo : lo + group_rows] = _top_k(
                scores[lo : lo + group_rows], k
            )
        return ids, top
    return _top_k(scores, k)


def _top_k(scores: npt.NDArray[S], k: int) -> tuple[IntArray, npt.NDArray[S]]:
    """:func:`top_k` of all rows at once (``0 < k <= n``)."""
    n = scores.shape[1]
    if k < n:
        cand = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        cand = np.broadcast_to(np.arange(n), scores.shape).copy()
    cand_scores = np.take_along_axis(scores, cand, axis=1)
    order = np.lexsort((cand, -cand_scores), axis=1)  # by -score, then index
    ids = np.take_along_axis(cand, order, axis=1).astype(np.int64)
    top = np.take_along_axis(cand_scores, order, axis=1)
    if k < n:
        # argpartition may have kept a later chunk among equal k-th scores: redo those rows.
        tied = np.flatnonzero((scores >= top[:, -1:]).sum(axis=1) > k)
        for r in tied:
            full = np.lexsort((np.arange(n), -scores[r]))[:k]
            ids[r] = full
            top[r] = scores[r, full]
    return ids, top
