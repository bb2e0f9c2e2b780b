"""Exact cosine top-k search over L2-normalised vectors (numpy, blocked matmul)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


class ExactIndex:
    """Brute-force inner-product index. With normalised rows, inner product is cosine.

    Results are ordered by score, ties broken by insertion order (lower chunk index first), so
    the same inputs always give the same ranking.
    """

    def __init__(self, dimension: int | None = None, block_rows: int = 1024) -> None:
        self._parts: list[FloatArray] = []
        self._matrix: FloatArray | None = None
        self.dimension = dimension
        self.block_rows = block_rows

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts)

    def add(self, vectors: npt.ArrayLike) -> None:
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2:
            raise ValueError("vectors must be a 2-D array")
        if self.dimension is None:
            self.dimension = arr.shape[1]
        elif arr.shape[1] != self.dimension:
            raise ValueError(f"vectors have dimension {arr.shape[1]}, index has {self.dimension}")
        self._parts.append(arr)
        self._matrix = None

    def clear(self) -> None:
        self._parts.clear()
        self._matrix = None

    def _data(self) -> FloatArray:
        if self._matrix is None:
            dim = self.dimension or 0
            self._matrix = (
                np.concatenate(self._parts) if self._parts else np.zeros((0, dim), np.float32)
            )
        return self._matrix

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[IntArray, FloatArray]:
        """Top ``k`` (capped at the index size) ids and scores per query row, best first."""
        data = self._data()
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, len(data))
        ids = np.zeros((len(q), k), dtype=np.int64)
        scores = np.zeros((len(q), k), dtype=np.float32)
        if k == 0:
            return ids, scores
        for lo in range(0, len(q), self.block_rows):
            sims = q[lo : lo + self.block_rows] @ data.T
            ids[lo : lo + len(sims)], scores[lo : lo + len(sims)] = _top_k(sims, k)
        return ids, scores


def _top_k(sims: FloatArray, k: int) -> tuple[IntArray, FloatArray]:
    n = sims.shape[1]
    if k < n:
        cand = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    else:
        cand = np.broadcast_to(np.arange(n), sims.shape).copy()
    cand_scores = np.take_along_axis(sims, cand, axis=1)
    # Order candidates by (-score, id): lexsort sorts by the last key first.
    order = np.lexsort((cand, -cand_scores), axis=1)
    ids = np.take_along_axis(cand, order, axis=1).astype(np.int64)
    top = np.take_along_axis(cand_scores, order, axis=1)
    if k < n:
        # Rows where the k-th score ties with a score left out: redo them with a full stable sort.
        kth = top[:, -1:]
        tied = np.flatnonzero((sims >= kth).sum(axis=1) > k)
        for r in tied:
            full = np.lexsort((np.arange(n), -sims[r]))[:k]
            ids[r] = full
            top[r] = sims[r, full]
    return ids, top
