"""Dense retrieval: exact cosine search over the chunk vectors (the default retriever).

The chunk vectors may be a memory map (a cell too large to embed at once searches its vector
file in place, see :mod:`chunkmark.retrieval.vectors`); the search is blocked over questions and
chunks (see :mod:`chunkmark.retrieval.exact`)."""

from __future__ import annotations

from collections.abc import Sequence

from chunkmark.retrieval.base import RETRIEVERS, FloatArray, IntArray
from chunkmark.retrieval.exact import ExactIndex


class ExactRetriever:
    """Exact top-k by cosine similarity; ties broken by chunk order (see :class:`ExactIndex`)."""

    def __init__(self, block_rows: int = 1024) -> None:
        self._index = ExactIndex(block_rows=block_rows)

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        self._index.clear()
        if len(vectors):
            self._index.add(vectors)

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        return self._index.search(vectors, k)


@RETRIEVERS.register("exact")
def exact(block_rows: int = 1024) -> ExactRetriever:
    """Exact cosine search (blocked matrix product, ties broken by chunk order).

    Args:
        block_rows: questions scored per matrix product (memory vs. speed). Rankings follow
            one rule whatever the block; BLAS may round a score's last bit differently for
            another block shape.
    """
    if block_rows < 1:
        raise ValueError(f"block_rows must be at least 1, got {block_rows}")
    return ExactRetriever(block_rows)
