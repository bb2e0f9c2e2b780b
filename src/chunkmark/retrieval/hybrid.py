"""Hybrid ranking: the exact dense ranking and the BM25 ranking, each cut to its top
``candidates``, fused into one.

- ``fusion="rrf"`` (reciprocal rank fusion): a chunk scores ``sum 1 / (rrf_k + rank)`` over the
  lists it is in, ``rank`` starting at 1 (ranx's ``fuse(method="rrf")``).

  **Ties.** A rank is a position: within each list the entries are ordered by score, higher
  first, and equal scores by chunk index, lower first (the tie rule of every chunkmark ranker,
  :func:`chunkmark.retrieval.topk.top_k`); ``rank`` is the position in that order. :func:`fuse`
  applies this order itself, so the fused result depends only on each list's (chunk, score)
  entries, never on how a caller ordered equal scores. Tied chunks therefore get different
  ranks (a list of 10 BM25 zeros gives ranks 1 to 10 by chunk index), not a shared one: every
  list keeps the rank mass ``sum 1 / (rrf_k + i)`` of an untied list of its length, and the
  result is what a positional RRF (Elasticsearch, OpenSearch, ranx) gives once its ties are
  ordered this way. ranx given raw tied scores orders a tie by its own sort, numba's unstable
  ``argsort`` of the negated scores over the entries as inserted, which is no documented rule:
  it agrees with chunkmark on every list without ties and may differ on any list with them
  (tests/retrieval/test_hybrid.py counts how often). The cost of the rule: among tied entries,
  the earlier chunk of the corpus gets the larger share.
- ``fusion="convex"``: each list's scores are min-max normalised per question over that list
  (``(s - min) / max(max - min, 1e-9)``, ranx's ``norm="min-max"``: a list of equal scores
  normalises to 0), then ``alpha * dense + (1 - alpha) * bm25``, a chunk absent from a list
  getting 0 from it (ranx's ``method="wsum"`` with weights ``[alpha, 1 - alpha]``).

Fused scores are computed in float64 in ranx's order of operations, sorted descending, equal
scores by chunk index, and returned as float32. The chunks in neither list follow, in index
order, with score 0, so a ranking deeper than the fused lists is still a full-length ranking
whose prefix does not depend on how deep it was asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from chunkmark.retrieval.base import FloatArray, IntArray
from chunkmark.retrieval.bm25 import Bm25Method, BM25Retriever, check_bm25
from chunkmark.retrieval.dense import ExactRetriever
from chunkmark.retrieval.settings import ranker
from chunkmark.retrieval.topk import top_k
from chunkmark.specs import class_factory

Fusion = Literal["rrf", "convex"]
F64 = npt.NDArray[np.float64]

# Cells held at once while fusing (rows of questions x chunks), about 32 MB of float64.
_BLOCK_CELLS = 4_000_000
MIN_MAX_FLOOR = 1e-9  # ranx's smallest min-max denominator


class HybridRetriever:
    """Exact dense search and BM25, each cut to its top candidates, fused by reciprocal rank
    (``rrf``) or a convex combination of min-max normalised scores (``convex``).

    Args:
        fusion: ``'rrf'`` or ``'convex'``.
        alpha: the dense list's weight in ``convex`` fusion (0 to 1; BM25 gets ``1 - alpha``).
        rrf_k: the rank offset of ``rrf`` fusion (greater than 0).
        candidates: how many of each list are fused (at least 1).
        method: the BM25 variant, as bm25s names it.
        k1: BM25 term-frequency saturation (at least 0).
        b: BM25 length normalisation (0 to 1).
    """

    def __init__(
        self,
        fusion: Fusion = "rrf",
        alpha: float = 0.5,
        rrf_k: int = 60,
        candidates: int = 100,
        method: Bm25Method = "lucene",
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        check_hybrid(fusion, alpha, rrf_k, candidates)
        check_bm25(k1, b)
        self.fusion: Fusion = fusion
        self.alpha = float(alpha)
        self.rrf_k = rrf_k
        self.candidates = candidates
        self._dense = ExactRetriever()
        self._bm25 = BM25Retriever(method, float(k1), float(b))
        self._n_chunks = 0

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        if len(vectors) != len(texts):
            raise ValueError(f"{len(vectors)} chunk vectors for {len(texts)} chunk texts")
        self._n_chunks = len(texts)
        self._dense.index(vectors, texts)
        self._bm25.index(vectors, texts)

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        if len(vectors) != len(texts):
            raise ValueError(f"{len(vectors)} query vectors for {len(texts)} query texts")
        depth = min(self.candidates, self._n_chunks)
        dense_ids, dense_scores = self._dense.search(vectors, texts, depth)
        bm25_ids, bm25_scores = self._bm25.search(vectors, texts, depth)
        return fuse(
            (dense_ids, dense_scores),
            (bm25_ids, bm25_scores),
            n_chunks=self._n_chunks,
            k=k,
            fusion=self.fusion,
            alpha=self.alpha,
            rrf_k=self.rrf_k,
        )

    def stats(self) -> dict[str, int | float]:
        """The BM25 side's facts (see :meth:`BM25Retriever.stats`)."""
        return self._bm25.stats()


def fuse(
    dense: tuple[IntArray, FloatArray],
    keyword: tuple[IntArray, FloatArray],
    *,
    n_chunks: int,
    k: int,
    fusion: Fusion = "rrf",
    alpha: float = 0.5,
    rrf_k: int = 60,
) -> tuple[IntArray, FloatArray]:
    """Fuse two rankings (ids and scores, ``(questions, width)`` each, no chunk twice in a row)
    into the top ``min(k, n_chunks)`` per question (see the module docstring). For ``rrf`` the
    ranks are read from the scores (higher first, equal scores by chunk index), whatever the
    order of a row's entries."""
    dense_ids, dense_scores = dense
    keyword_ids, keyword_scores = keyword
    if fusion == "rrf":  # ranks are positions in (score desc, chunk index) order
        dense_ids = _tie_ordered(dense_ids, dense_scores)
        keyword_ids = _tie_ordered(keyword_ids, keyword_scores)
    n_q = len(dense_ids)
    if len(keyword_ids) != n_q:
        raise ValueError(f"rankings for {n_q} and {len(keyword_ids)} questions cannot be fused")
    k = max(0, min(k, n_chunks))
    ids = np.zeros((n_q, k), dtype=np.int64)
    scores = np.zeros((n_q, k), dtype=np.float32)
    if k == 0:
        return ids, scores
    parts = [
        (dense_ids, _contributions(dense_scores, fusion, rrf_k), alpha),
        (keyword_ids, _contributions(keyword_scores, fusion, rrf_k), 1.0 - alpha),
    ]
    step = max(1, _BLOCK_CELLS // n_chunks)
    for lo in range(0, n_q, step):
        hi = min(lo + step, n_q)
        fused = np.zeros((hi - lo, n_chunks), dtype=np.float64)
        listed = np.zeros((hi - lo, n_chunks), dtype=bool)
        rows = np.arange(hi - lo)[:, None]
        for part_ids, values, weight in parts:
            block = values[lo:hi] if fusion == "rrf" else weight * values[lo:hi]
            fused[rows, part_ids[lo:hi]] += block
            listed[rows, part_ids[lo:hi]] = True
        key = np.where(listed, fused, -np.inf)
        top_ids, top = top_k(key, k)
        ids[lo:hi] = top_ids
        scores[lo:hi] = np.where(np.isneginf(top), 0.0, top).astype(np.float32)
    return ids, scores


def _tie_ordered(ids: IntArray, scores: FloatArray) -> IntArray:
    """Each row's ids ordered by score (higher first), equal scores by chunk index."""
    if ids.size == 0:
        return ids
    order = np.lexsort((ids, -scores.astype(np.float64)), axis=1)
    ordered: IntArray = np.take_along_axis(ids, order, axis=1)
    return ordered


def _contributions(scores: FloatArray, fusion: Fusion, rrf_k: int) -> F64:
    """What each entry of a ranking adds to its chunk's fused score (before the convex weight)."""
    n_q, width = scores.shape
    if fusion == "rrf":
        ranks = np.arange(1, width + 1, dtype=np.float64)
        return np.broadcast_to(1.0 / (rrf_k + ranks), (n_q, width))
    values = scores.astype(np.float64)
    if width == 0:
        return values
    low = values.min(axis=1, keepdims=True)
    spread = np.maximum(values.max(axis=1, keepdims=True) - low, MIN_MAX_FLOOR)
    normalised: F64 = (values - low) / spread
    return normalised


def check_hybrid(fusion: str, alpha: float, rrf_k: int, candidates: int) -> None:
    """Raise ValueError for hybrid parameters outside their ranges."""
    if fusion not in ("rrf", "convex"):
        raise ValueError(f"fusion must be 'rrf' or 'convex', got {fusion!r}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    if isinstance(rrf_k, bool) or rrf_k <= 0:
        raise ValueError(f"rrf_k must be greater than 0, got {rrf_k!r}")
    if isinstance(candidates, bool) or candidates < 1:
        raise ValueError(f"candidates must be at least 1, got {candidates!r}")


ranker(
    "hybrid",
    setting="The top k chunks of the fused dense and BM25 rankings (see the ``hybrid`` retriever).",
)(class_factory(HybridRetriever))
