"""Embedders: open (sentence-transformers), closed (OpenAI-compatible), fake; plus the cache.

Importing this package registers every embedder; none imports torch or openai until it is used.
"""

from chunkmark.embedders import fake, model2vec, openai, sentence_transformers
from chunkmark.embedders.base import EMBEDDERS, Embedder, Kind, l2_normalise
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache, resolve_cache_dir

__all__ = [
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "Kind",
    "fake",
    "l2_normalise",
    "model2vec",
    "openai",
    "resolve_cache_dir",
    "sentence_transformers",
]
