"""A vector store's own search as a ranker: ``store()``, and its top-k setting ``store(k=5)``.

``chunkmark audit`` scores a collection that already lives in a vector store (Chroma, Qdrant,
LanceDB, pgvector) twice: with exact search over the vectors it stores (the ``top_k`` settings,
as ``chunkmark run`` scores a cell) and with the store's own search, its approximate index as
deployed (these ``store`` settings). Only the audit can build a :class:`StoreRetriever` that
searches: it hands the ranker a function that asks the store, since the store is not something
a spec string can carry. Built from its spec alone (``chunkmark run --retrieval store``), the
ranker refuses to search, with a line saying what to run instead.

The store's order is kept as it answers (its ties are its own). A store may answer fewer than
``k`` chunks (an IVF index whose probed lists hold fewer): the ranking then ends in ``-1``
entries with score ``-inf``, which every setting skips (as for a document-scoped ranking,
:func:`~chunkmark.retrieval.settings.valid_depth`), so the audit scores what the store returned
and nothing more, and a shallower ranking is still a prefix of a deeper one. After each search the ranker reports, in :meth:`StoreRetriever.stats`
(the manifest), the share of the exact top ``k`` that the store's top ``k`` holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from chunkmark.errors import ConfigError
from chunkmark.retrieval.ann import recall_at_k
from chunkmark.retrieval.base import FloatArray, IntArray
from chunkmark.retrieval.exact import ExactIndex
from chunkmark.retrieval.settings import ranker

StoreSearch = Callable[[FloatArray, int], tuple[list[list[int]], list[list[float]]]]
"""``search(query_vectors, k)``: per question, the chunk indices the store returned (best
first, at most ``k``) and their scores (higher is better)."""


class StoreRetriever:
    """Rankings from a vector store's own search (see the module docstring)."""

    def __init__(self, search: StoreSearch | None = None) -> None:
        self._search = search
        self._vectors: FloatArray = np.zeros((0, 0), np.float32)
        self._stats: dict[str, int | float] = {}

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        self._vectors = vectors  # kept to measure the store's recall against exact search

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        if self._search is None:
            raise ConfigError(
                "The store ranker reads a vector store's own search, which only `chunkmark "
                "audit` can ask.",
                "Audit the collection with `chunkmark audit STORE_URI --dataset ...`; in a "
                "run, use top_k or faiss.",
            )
        n = len(self._vectors)
        k = max(0, min(k, n))
        found, found_scores = self._search(vectors, k)
        ranking, scores = complete_store_ranking(found, found_scores, k, n)
        exact = ExactIndex()
        if n and k and len(vectors):
            exact.add(self._vectors)
            truth, _ = exact.search(vectors, k)
            recall = recall_at_k(ranking, truth)
        else:
            recall = 1.0
        self._stats = {"recall_vs_exact_at_k": round(recall, 6), "k": k, "questions": len(vectors)}
        return ranking, scores

    def stats(self) -> dict[str, int | float]:
        """The last search's recall against exact search (``recall_vs_exact_at_k``: the share
        of the exact top ``k`` that the store's top ``k`` holds, over every question)."""
        return dict(self._stats)


def complete_store_ranking(
    found: Sequence[Sequence[int]], scores: Sequence[Sequence[float]], k: int, n: int
) -> tuple[IntArray, FloatArray]:
    """A ``(questions, k)`` ranking: the store's answers in its order (repeats and indices
    outside ``0..n-1`` dropped), then ``-1`` entries with score ``-inf`` up to ``k``: what it
    did not return is not retrieved."""
    out_ids = np.full((len(found), k), -1, dtype=np.int64)
    out_scores = np.full((len(found), k), -np.inf, dtype=np.float32)
    for row, (ids, row_scores) in enumerate(zip(found, scores, strict=True)):
        kept: list[int] = []
        kept_scores: list[float] = []
        for i, s in zip(ids, row_scores, strict=True):
            if 0 <= i < n and i not in kept and len(kept) < k:
                kept.append(int(i))
                kept_scores.append(float(s))
        got = len(kept)
        out_ids[row, :got] = kept
        out_scores[row, :got] = kept_scores
    return out_ids, out_scores


@ranker(
    "store",
    setting="The top k chunks by the vector store's own search (its index as deployed); "
    "`chunkmark audit` only.",
)
def store_ranker() -> StoreRetriever:
    """A vector store's own search, as deployed (its approximate index and settings): the
    rankings ``chunkmark audit`` reads from the store it audits, beside exact search over the
    same stored vectors. Only the audit can search with it."""
    return StoreRetriever()
