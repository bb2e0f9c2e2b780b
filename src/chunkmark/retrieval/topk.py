"""Top-k of score rows with the one tie rule every ranker follows: higher score first, then the
lower chunk index. Works on any float dtype, so fused float64 scores are ordered exactly."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from chunkmark.retrieval.base import IntArray

S = TypeVar("S", bound=np.floating)


def top_k(scores: npt.NDArray[S], k: int) -> tuple[IntArray, npt.NDArray[S]]:
    """Per row of ``scores`` (``(rows, n)``): the ``min(k, n)`` best column indices and their
    scores, best first; equal scores in column order. NaN is not allowed."""
    rows, n = scores.shape
    k = max(0, min(k, n))
    if k == 0:
        return np.zeros((rows, 0), dtype=np.int64), np.zeros((rows, 0), dtype=scores.dtype)
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
