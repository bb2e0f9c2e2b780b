"""Approximate dense ranking with faiss (the ``ann`` extra): an HNSW graph or an IVF-flat index
over the chunk vectors, by inner product (cosine on L2-normalised rows).

An approximate index may miss chunks that exact search finds, so this ranker always measures
how many: after each search it ranks a seeded sample of the questions exactly
(:class:`~chunkmark.retrieval.exact.ExactIndex`) and reports, in :meth:`FaissRetriever.stats`
(and so in the manifest), the share of the exact top k that the approximate top k holds, over
that sample (``recall_vs_exact_at_k``, ``sample``, ``k``).

Rankings are deterministic: faiss builds and searches on one thread (the HNSW level draws and
the IVF k-means use faiss's fixed seeds), and the index is always asked for the same number of
neighbours, ``candidates``, whatever depth the caller wants. Those candidates are ordered by
score, equal scores by chunk index; when fewer than the depth asked for are found (the depth is
above ``candidates``, or the index returned fewer), the remaining chunks follow in index order
with score ``-inf``. So a shallower ranking is a prefix of a deeper one, as for every ranker.
Scores are faiss's own inner products, which may differ from exact search's in the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np

from chunkmark.optional import import_optional
from chunkmark.retrieval.base import FloatArray, IntArray
from chunkmark.retrieval.exact import ExactIndex
from chunkmark.retrieval.settings import ranker
from chunkmark.specs import class_factory

AnnIndex = Literal["hnsw", "ivf_flat"]
_ADD_ROWS = 65_536  # vectors handed to faiss per call (a memory map is read a slice at a time)
_MIN_POINTS_PER_LIST = 39  # faiss's k-means wants this many training points per list


class FaissRetriever:
    """Approximate dense search with faiss (the ``ann`` extra), reporting its recall against
    exact search on a sample of the questions.

    Args:
        index: ``'hnsw'`` (a graph) or ``'ivf_flat'`` (inverted lists of full vectors).
        m: HNSW links per node.
        ef_construction: HNSW candidate list while building.
        ef_search: HNSW candidate list while searching (at least ``candidates`` is used).
        nlist: IVF lists (at most the number of chunks); ``None`` for about 4 * sqrt(chunks).
        nprobe: IVF lists searched per question.
        candidates: neighbours asked of the index per question; deeper rankings continue with
            the other chunks in index order, score ``-inf``.
        sample: questions ranked exactly too, to measure recall (0 for none).
        seed: picks the sampled questions.
    """

    def __init__(
        self,
        index: AnnIndex = "hnsw",
        m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 128,
        nlist: int | None = None,
        nprobe: int = 8,
        candidates: int = 100,
        sample: int = 100,
        seed: int = 0,
    ) -> None:
        check_faiss(m, ef_construction, ef_search, nlist, nprobe, candidates, sample)
        self.kind: AnnIndex = index
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.nlist = nlist
        self.nprobe = nprobe
        self.candidates = candidates
        self.sample = sample
        self.seed = seed
        self._index: Any = None
        self._vectors: FloatArray = np.zeros((0, 0), np.float32)
        self._stats: dict[str, int | float] = {}

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        faiss = _faiss()
        self._vectors = vectors
        self._stats = {}
        self._index = None
        if len(vectors) == 0:
            return
        with _one_thread(faiss):
            self._index = self._build(faiss, vectors)

    def _build(self, faiss: Any, vectors: FloatArray) -> Any:
        n, dim = vectors.shape
        if self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            index.hnsw.efSearch = self.ef_search
        else:
            lists = self.nlist if self.nlist is not None else default_nlist(n)
            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, min(lists, n), faiss.METRIC_INNER_PRODUCT)
            index.train(np.ascontiguousarray(vectors, dtype=np.float32))
            index.nprobe = self.nprobe
        for lo in range(0, n, _ADD_ROWS):
            index.add(np.ascontiguousarray(vectors[lo : lo + _ADD_ROWS], dtype=np.float32))
        return index

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        n = len(self._vectors)
        k = max(0, min(k, n))
        queries = np.ascontiguousarray(vectors, dtype=np.float32)
        pool = min(self.candidates, n)
        if self._index is None or pool == 0 or len(queries) == 0:
            found_ids = np.full((len(queries), 0), -1, dtype=np.int64)
            found_scores = np.zeros((len(queries), 0), dtype=np.float32)
        else:
            with _one_thread(_faiss()):
                found_scores, found_ids = self._index.search(queries, pool)
        ranking, scores = complete_ranking(found_ids, found_scores, k, n)
        self._stats = self._recall(queries, ranking, k)
        return ranking, scores

    def _recall(self, queries: FloatArray, ranking: IntArray, k: int) -> dict[str, int | float]:
        """Recall of the exact top k over a seeded sample of the questions."""
        rows = sample_rows(len(queries), self.sample, self.seed)
        if k == 0 or len(rows) == 0:
            return {"recall_vs_exact_at_k": 1.0, "sample": len(rows), "k": k}
        exact = ExactIndex()
        exact.add(self._vectors)
        truth, _ = exact.search(queries[rows], k)
        return {
            "recall_vs_exact_at_k": round(recall_at_k(ranking[rows], truth), 6),
            "sample": len(rows),
            "k": k,
        }

    def stats(self) -> dict[str, int | float]:
        """The last search's recall against exact search: ``recall_vs_exact_at_k`` (the mean,
        over ``sample`` seeded questions, of the share of the exact top ``k`` found in the
        approximate top ``k``); empty before any search."""
        return dict(self._stats)


def default_nlist(n: int) -> int:
    """IVF lists for ``n`` chunks: about ``4 * sqrt(n)``, with at least 39 training points a
    list (faiss's k-means minimum), and at least one list."""
    return max(1, min(round(4 * math.sqrt(n)), n // _MIN_POINTS_PER_LIST))


def sample_rows(n: int, sample: int, seed: int) -> IntArray:
    """A seeded sample of ``min(sample, n)`` row indices out of ``n``, ascending."""
    if sample >= n:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=sample, replace=False)).astype(np.int64)


def recall_at_k(found: IntArray, truth: IntArray) -> float:
    """Mean over rows of the share of ``truth``'s ids (one row per question, ``k`` wide) that
    the same row of ``found`` holds."""
    if truth.size == 0:
        return 1.0
    hits = [np.isin(row, got).sum() for row, got in zip(truth, found, strict=True)]
    return float(np.sum(hits) / truth.size)


def complete_ranking(
    ids: IntArray, scores: FloatArray, k: int, n: int
) -> tuple[IntArray, FloatArray]:
    """A full ``(questions, k)`` ranking from an index's neighbours (``-1`` where it found
    none): the neighbours by score, equal scores by chunk index, then the other chunks in index
    order with score ``-inf``."""
    rows, width = ids.shape
    valid = ids >= 0
    keyed_ids = np.where(valid, ids, n + np.arange(width)).astype(np.int64)
    keyed_scores = np.where(valid, scores, -np.inf).astype(np.float32)
    order = np.lexsort((keyed_ids, -keyed_scores), axis=1)
    keyed_ids = np.take_along_axis(keyed_ids, order, axis=1)
    keyed_scores = np.take_along_axis(keyed_scores, order, axis=1)
    out_ids = np.zeros((rows, k), dtype=np.int64)
    out_scores = np.full((rows, k), -np.inf, dtype=np.float32)
    head = min(k, width)
    out_ids[:, :head] = keyed_ids[:, :head]
    out_scores[:, :head] = keyed_scores[:, :head]
    found = valid.sum(axis=1)
    for r in np.flatnonzero(found < k):
        got = int(found[r])
        out_ids[r, got:] = first_absent(keyed_ids[r, :got], k - got, n)
        out_scores[r, got:] = -np.inf
    return out_ids, out_scores


def first_absent(taken: IntArray, count: int, n: int) -> IntArray:
    """The ``count`` lowest indices below ``n`` that are not in ``taken``."""
    pool = np.arange(min(n, count + len(taken)), dtype=np.int64)
    return pool[~np.isin(pool, taken)][:count]


@contextmanager
def _one_thread(faiss: Any) -> Iterator[None]:
    """faiss on one OpenMP thread (a multi-threaded HNSW build is not reproducible)."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _faiss() -> Any:
    return import_optional("faiss", "faiss-cpu", "ann", "The faiss ranker")


def check_faiss(
    m: int,
    ef_construction: int,
    ef_search: int,
    nlist: int | None,
    nprobe: int,
    candidates: int,
    sample: int,
) -> None:
    """Raise ValueError for faiss ranker parameters outside their ranges."""
    at_least_one = {
        "m": m,
        "ef_construction": ef_construction,
        "ef_search": ef_search,
        "nprobe": nprobe,
        "candidates": candidates,
    }
    if nlist is not None:
        at_least_one["nlist"] = nlist
    for name, value in at_least_one.items():
        if isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be at least 1, got {value!r}")
    if isinstance(sample, bool) or sample < 0:
        raise ValueError(f"sample must be at least 0, got {sample!r}")


ranker(
    "faiss",
    setting="The top k chunks by approximate dense search with faiss (the ``ann`` extra); its "
    "recall against exact search is in the manifest.",
)(class_factory(FaissRetriever))
