"""Chunkers: span-native, registered by name, built from spec strings."""

from chunkmark.chunkers.base import (
    CHUNKERS,
    Chunk,
    ChunkerContext,
    ChunkerFn,
    chunk_document,
    chunk_documents,
)

__all__ = ["CHUNKERS", "Chunk", "ChunkerContext", "ChunkerFn", "chunk_document", "chunk_documents"]

# Importing the chunker modules registers their factories.
from chunkmark.chunkers import (  # noqa: F401
    adapters,
    contextual,
    documentation,
    llm_semantic,
    propositions,
    recursive,
    semantic,
    sentences,
    stored,
    structure,
    tokens,
)
