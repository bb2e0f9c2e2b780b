"""Retrieval: a retriever protocol and registry (``exact`` is the default), exact search."""

from chunkmark.retrieval import dense
from chunkmark.retrieval.base import RETRIEVERS, Retriever
from chunkmark.retrieval.dense import ExactRetriever
from chunkmark.retrieval.exact import ExactIndex

__all__ = ["RETRIEVERS", "ExactIndex", "ExactRetriever", "Retriever", "dense"]
