"""Exact cosine top-k search over L2-normalised vectors (numpy, blocked matmul).

The search holds at most ``block_rows x block_chunks`` similarities at a time: questions are
scored ``block_rows`` at a time against ``block_chunks`` chunks at a time, and each chunk
block's top k is merged into the question block's running top k. The chunk matrix may be
memory-mapped (``np.memmap``, ``np.load(path, mmap_mode="r")``): the index keeps the array it
was given (no copy) and reads one block of its rows per matrix product.

Rankings are ordered by score, ties broken by lower chunk index (the top k of each block and
their merge follow that one order, so the merged ranking is the exact top k of all chunks), and
a ranking ``k`` deep is a prefix of a deeper one. Scores are float32 matrix products; BLAS may
round a product's last bit differently for matrices of different shapes, so an index of more
than ``block_chunks`` chunks can differ in a score's last bit from one product over all of
them. An index of at most ``block_chunks`` chunks computes exactly that one product (on one
BLAS thread).

The scores do not depend on how many threads BLAS may use. A multithreaded matrix product
splits the matrices among its threads, and the tiles a score falls in decide how its sum is
rounded, so the same product gives other last bits with another thread count (a Ray task runs
with one BLAS thread, a local run with every core). Each block product therefore runs on one
BLAS thread, and the blocks run in parallel on a pool of as many threads as BLAS had, whose
top-k lists are merged in block order: the same vectors give the same scores, bit for bit,
on any number of threads. The search then holds one block of similarities per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.retrieval.topk import top_k

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

DEFAULT_BLOCK_ROWS = 1024
# 1024 questions x 16384 chunks: 64 MB of float32 similarities per product.
DEFAULT_BLOCK_CHUNKS = 16_384


class ExactIndex:
    """Brute-force inner-product index. With normalised rows, inner product is cosine.

    Results are ordered by score, ties broken by insertion order (lower chunk index first), so
    the same inputs always give the same ranking. A single float32, C-contiguous array passed to
    :meth:`add` (a memory map included) is searched in place, not copied; several are joined
    into one array on the first search.
    """

    def __init__(
        self,
        dimension: int | None = None,
        block_rows: int = DEFAULT_BLOCK_ROWS,
        block_chunks: int = DEFAULT_BLOCK_CHUNKS,
    ) -> None:
        if block_rows < 1 or block_chunks < 1:
            raise ValueError(
                f"block_rows and block_chunks must be at least 1, got {block_rows} and "
                f"{block_chunks}"
            )
        self._parts: list[FloatArray] = []
        self._matrix: FloatArray | None = None
        self.dimension = dimension
        self.block_rows = block_rows
        self.block_chunks = block_chunks

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts)

    def add(self, vectors: npt.ArrayLike) -> None:
        """Add rows; a float32, C-contiguous array (or memory map) is kept as it is."""
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
            if len(self._parts) == 1:
                self._matrix = self._parts[0]
            elif self._parts:
                self._matrix = np.concatenate(self._parts)
            else:
                self._matrix = np.zeros((0, self.dimension or 0), np.float32)
        return self._matrix

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[IntArray, FloatArray]:
        """Top ``k`` (capped at the index size) ids and scores per query row, best first."""
        data = self._data()
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = max(0, min(k, len(data)))
        ids = np.zeros((len(q), k), dtype=np.int64)
        scores = np.zeros((len(q), k), dtype=np.float32)
        if k == 0:
            return ids, scores
        rows = range(0, len(q), self.block_rows)
        starts = range(0, len(data), self.block_chunks)

        def product(block: tuple[int, int]) -> tuple[IntArray, FloatArray]:
            lo, start = block
            part = q[lo : lo + self.block_rows] @ data[start : start + self.block_chunks].T
            found, best = top_k(part, k)
            return found + start, best

        with single_threaded_blas() as threads:
            blocks = [(lo, start) for lo in rows for start in starts]
            if threads > 1 and len(blocks) > 1:
                with ThreadPoolExecutor(min(threads, len(blocks))) as pool:
                    tops = list(pool.map(product, blocks))
            else:
                tops = [product(block) for block in blocks]
        for i, lo in enumerate(rows):
            row_tops = tops[i * len(starts) : (i + 1) * len(starts)]
            best_ids, best_scores = row_tops[0]
            for more_ids, more_scores in row_tops[1:]:
                best_ids, best_scores = merge_top_k(best_ids, best_scores, more_ids, more_scores, k)
            ids[lo : lo + len(best_ids)], scores[lo : lo + len(best_ids)] = best_ids, best_scores
        return ids, scores


def merge_top_k(
    ids_a: IntArray, scores_a: FloatArray, ids_b: IntArray, scores_b: FloatArray, k: int
) -> tuple[IntArray, FloatArray]:
    """The best ``k`` per row of two top-k lists over disjoint chunks: higher score first,
    then the lower chunk index (so the merge of two blocks' top k is the top k of both)."""
    ids = np.concatenate((ids_a, ids_b), axis=1)
    scores = np.concatenate((scores_a, scores_b), axis=1)
    order = np.lexsort((ids, -scores), axis=1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)


_blas_lock = threading.Lock()
_blas_users = 0
_blas_threads = 1
_blas_limiter: Any = None


@contextmanager
def single_threaded_blas() -> Iterator[int]:
    """BLAS limited to one thread while the block is running (in every thread of the process:
    the limit is the BLAS library's own setting); yields how many threads BLAS had before.

    Searches running at the same time share one limit, lifted when the last one ends.
    """
    global _blas_users, _blas_threads, _blas_limiter
    from threadpoolctl import ThreadpoolController

    with _blas_lock:
        if _blas_users == 0:
            controller = ThreadpoolController().select(user_api="blas")
            _blas_threads = max([int(lib["num_threads"]) for lib in controller.info()] or [1])
            _blas_limiter = controller.limit(limits=1)
        _blas_users += 1
        threads = _blas_threads
    try:
        yield threads
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
