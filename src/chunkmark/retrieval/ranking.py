"""One search per ranker: build it from its spec, index the chunks, rank every question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from chunkmark.retrieval.base import (
    RETRIEVERS,
    FloatArray,
    IntArray,
    RankerStats,
    Retriever,
    ranker_stats,
)
from chunkmark.specs import Spec


@runtime_checkable
class DocumentScoped(Protocol):
    """A ranker that searches each question's own document (``in_document``)."""

    def set_documents(self, chunk_docs: Sequence[str], query_docs: Sequence[str]) -> None: ...


def rank(
    ranker: str | Spec | Retriever,
    vectors: FloatArray,
    texts: Sequence[str],
    query_vectors: FloatArray,
    query_texts: Sequence[str],
    depth: int,
    *,
    chunk_docs: Sequence[str] | None = None,
    query_docs: Sequence[str] | None = None,
) -> tuple[IntArray, FloatArray, RankerStats]:
    """The ranking, scores and stats of a ranker, ``depth`` deep (capped at the number of
    chunks): the ranker a spec names, or one already built (one whose search a spec cannot
    carry, such as a vector store's own search for ``chunkmark audit``).

    ``vectors``/``texts`` are the chunks' (L2-normalised) vectors and the texts that were
    embedded, ``query_vectors``/``query_texts`` the questions'. Call it once per distinct ranker
    (settings' :attr:`~chunkmark.retrieval.settings.RetrievalSetting.ranker`), at the largest
    depth its settings need: every ranker's ranking at a smaller depth is a prefix of it.
    ``chunk_docs``/``query_docs`` are the documents of the chunks and questions, handed to a
    ranker that scopes its search by document (``in_document``); a ranking it returns ends in
    ``-1`` entries where a question's document has no more chunks.
    Raises :class:`~chunkmark.errors.SpecError` for a bad spec.
    """
    if isinstance(ranker, str | Spec):
        ranker, _ = RETRIEVERS.build(ranker)
    if depth < 0:
        raise ValueError(f"depth must be at least 0, got {depth}")
    if len(vectors) != len(texts):
        raise ValueError(f"{len(vectors)} chunk vectors for {len(texts)} chunk texts")
    if len(query_vectors) != len(query_texts):
        raise ValueError(f"{len(query_vectors)} query vectors for {len(query_texts)} query texts")
    if isinstance(ranker, DocumentScoped):
        if chunk_docs is None or query_docs is None:
            raise ValueError("an in_document ranker needs chunk_docs and query_docs")
        ranker.set_documents(chunk_docs, query_docs)
    ranker.index(vectors, texts)
    ranking, scores = ranker.search(query_vectors, query_texts, depth)
    return ranking, scores, ranker_stats(ranker)
