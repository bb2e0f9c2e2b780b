"""Document-scoped ranking: each question searches only the chunks of its own document.

Questions that name no document ("Highlight the parts of this contract related to ...", asked
once per contract) measure nothing when searched over a whole corpus: a deployment answering
them filters by document before it searches. ``in_document(ranker='exact()')`` is that filter:
for every document with questions, the inner ranker (any ranker spec but another
``in_document``) indexes that document's chunks alone and ranks them for that document's
questions. Dense search scores are the same as with a metadata filter on a corpus index; a
keyword ranker's statistics (BM25's IDF) are those of the document's chunks, as in a
per-document index.

A document has fewer chunks than a corpus, so a ranking can be shorter than the depth asked
for. Rankings stay ``(questions, depth)`` arrays: the entries past a question's own chunks are
``-1`` with score ``-inf``, and every setting counts only a ranking's leading valid entries
(:func:`~chunkmark.retrieval.settings.valid_depth`). The ranker needs the documents of the
chunks and questions: :func:`~chunkmark.retrieval.ranking.rank` hands them over through
:meth:`InDocumentRetriever.set_documents`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from chunkmark.retrieval.base import RETRIEVERS, FloatArray, IntArray, RankerStats, ranker_stats
from chunkmark.retrieval.settings import DENSE, omit_dense_ranker, ranker, ranker_spec

NAME = "in_document"


class InDocumentRetriever:
    """The inner ranker, run once per document over that document's chunks."""

    def __init__(self, inner: str) -> None:
        self.inner = inner
        self._vectors: FloatArray | None = None
        self._texts: Sequence[str] = ()
        self._chunk_docs: Sequence[str] | None = None
        self._query_docs: Sequence[str] | None = None
        self._stats: dict[str, float] = {}

    def set_documents(self, chunk_docs: Sequence[str], query_docs: Sequence[str]) -> None:
        """The document of every chunk (in index order) and of every question (in search
        order); call before :meth:`search`."""
        self._chunk_docs = chunk_docs
        self._query_docs = query_docs

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        self._vectors = vectors
        self._texts = texts

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        if self._vectors is None:
            raise ValueError("in_document: index the chunks before searching")
        chunk_docs, query_docs = self._chunk_docs, self._query_docs
        if chunk_docs is None or query_docs is None:
            raise ValueError(
                "in_document needs the document of every chunk and question: call "
                "set_documents() (chunkmark.retrieval.rank does, given chunk_docs and query_docs)"
            )
        if len(chunk_docs) != len(self._vectors) or len(query_docs) != len(vectors):
            raise ValueError(
                f"in_document: {len(chunk_docs)} chunk documents for {len(self._vectors)} chunks "
                f"and {len(query_docs)} question documents for {len(vectors)} questions"
            )
        width = max(0, min(k, len(self._vectors)))
        ranking = np.full((len(vectors), width), -1, dtype=np.int64)
        scores = np.full((len(vectors), width), -np.inf, dtype=np.float32)
        if width == 0:
            return ranking, scores
        chunks_of = _positions(chunk_docs)
        self._stats = {}
        for doc, rows in _positions(query_docs).items():
            own = chunks_of.get(doc)
            if own is None:
                continue
            inner, _ = RETRIEVERS.build(self.inner)
            inner.index(self._vectors[own], [self._texts[int(i)] for i in own])
            local, local_scores = inner.search(
                vectors[rows], [texts[int(i)] for i in rows], min(width, len(own))
            )
            ranking[rows, : local.shape[1]] = own[local]
            scores[rows, : local.shape[1]] = local_scores
            for key, value in ranker_stats(inner).items():
                self._stats[key] = self._stats.get(key, 0) + value
        return ranking, scores

    def stats(self) -> RankerStats:
        """The inner rankers' stats, summed over documents."""
        return dict(self._stats)


def _positions(docs: Sequence[str]) -> dict[str, IntArray]:
    """Each document's positions in ``docs``, in order."""
    out: dict[str, list[int]] = defaultdict(list)
    for i, doc in enumerate(docs):
        out[doc].append(i)
    return {doc: np.asarray(rows, dtype=np.int64) for doc, rows in out.items()}


@ranker(
    NAME,
    setting="The top k chunks of the question's own document, by ``ranker``'s ranking of them.",
    canonical=omit_dense_ranker,
    nested={"ranker": RETRIEVERS},
)
def in_document(ranker: str = DENSE) -> InDocumentRetriever:
    """Search only the chunks of each question's own document (a filter by document), ranked
    by ``ranker`` (BM25 and hybrid rankers index each document's chunks on their own).

    Args:
        ranker: the ranking within a document, a ranker spec (``'exact()'``, ``'bm25'``,
            ``'hybrid(fusion="convex")'``); not another ``in_document``.
    """
    inner = ranker_spec(ranker)
    if inner.name == NAME:
        raise ValueError("in_document(ranker=...) cannot scope another in_document ranker")
    return InDocumentRetriever(str(inner))
