"""Retrieval backends. The default is exact cosine search."""

from chunkbench.retrieval.exact import ExactIndex

__all__ = ["ExactIndex"]
