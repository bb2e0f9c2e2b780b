"""Retrieval backends. The default is exact cosine search."""

from chunkmark.retrieval.exact import ExactIndex

__all__ = ["ExactIndex"]
