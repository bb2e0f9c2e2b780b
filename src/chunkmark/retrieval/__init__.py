"""Retrieval: rankers (``RETRIEVERS``: exact dense, bm25, hybrid, rerank, faiss, in_document,
and a vector store's own search, ``store``, which only ``chunkmark audit`` can ask) order the
chunks for each question; settings (``RETRIEVAL``: top_k, token_budget, threshold, bm25, hybrid,
rerank, faiss, in_document, store) decide how much of one ranking each question gets."""

from chunkmark.retrieval import ann, bm25, dense, hybrid, rerank, scoped, store
from chunkmark.retrieval.ann import FaissRetriever
from chunkmark.retrieval.base import RETRIEVERS, RankerStats, Retriever, ranker_stats
from chunkmark.retrieval.bm25 import BM25Retriever
from chunkmark.retrieval.dense import ExactRetriever
from chunkmark.retrieval.exact import ExactIndex
from chunkmark.retrieval.hybrid import HybridRetriever, fuse
from chunkmark.retrieval.ranking import rank
from chunkmark.retrieval.rerank import (
    FakeCrossEncoder,
    RerankerError,
    RerankRetriever,
    SentenceTransformersCrossEncoder,
)
from chunkmark.retrieval.scoped import InDocumentRetriever
from chunkmark.retrieval.settings import (
    RETRIEVAL,
    RankContext,
    RetrievalSetting,
    Selection,
    Threshold,
    TokenBudget,
    TopK,
    top_k_selection,
)
from chunkmark.retrieval.store import StoreRetriever

__all__ = [
    "RETRIEVAL",
    "RETRIEVERS",
    "BM25Retriever",
    "ExactIndex",
    "ExactRetriever",
    "FaissRetriever",
    "FakeCrossEncoder",
    "HybridRetriever",
    "InDocumentRetriever",
    "RankContext",
    "RankerStats",
    "RerankRetriever",
    "RerankerError",
    "RetrievalSetting",
    "Retriever",
    "Selection",
    "SentenceTransformersCrossEncoder",
    "StoreRetriever",
    "Threshold",
    "TokenBudget",
    "TopK",
    "ann",
    "bm25",
    "dense",
    "fuse",
    "hybrid",
    "rank",
    "ranker_stats",
    "rerank",
    "scoped",
    "store",
    "top_k_selection",
]
