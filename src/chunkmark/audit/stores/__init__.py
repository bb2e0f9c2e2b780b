"""Vector stores the audit reads and the export writes: Chroma, Qdrant, LanceDB, pgvector.

Each store is one module, imported only when its kind is asked for (its client is an optional
extra: ``pip install 'chunkmark[audit-chroma]'``, ``audit-qdrant``, ``audit-lancedb``,
``audit-pgvector``). :func:`open_store` opens a collection for reading; :func:`create_collection`
makes a new one for ``chunkmark export`` and refuses one that exists.
"""

from __future__ import annotations

import importlib

from chunkmark.audit.stores.base import (
    URI_HELP,
    CollectionWriter,
    StoreAddress,
    StoredChunks,
    StoreError,
    VectorStore,
    parse_address,
)

_MODULES = {
    "chroma": ("chroma", "ChromaStore", "ChromaWriter"),
    "qdrant": ("qdrant", "QdrantStore", "QdrantWriter"),
    "lancedb": ("lance", "LanceStore", "LanceWriter"),
    "pgvector": ("pgvector", "PgvectorStore", "PgvectorWriter"),
}

__all__ = [
    "URI_HELP",
    "CollectionWriter",
    "StoreAddress",
    "StoreError",
    "StoredChunks",
    "VectorStore",
    "create_collection",
    "open_store",
    "parse_address",
]


def open_store(address: StoreAddress | str) -> VectorStore:
    """The collection ``address`` names, opened for reading (StoreError when it cannot be)."""
    if isinstance(address, str):
        address = parse_address(address)
    module, reader, _ = _MODULES[address.kind]
    cls = getattr(importlib.import_module(f"chunkmark.audit.stores.{module}"), reader)
    store: VectorStore = cls(address)
    return store


def create_collection(address: StoreAddress | str, dim: int) -> CollectionWriter:
    """A new collection of ``dim``-dimensional vectors (cosine) at ``address``."""
    if isinstance(address, str):
        address = parse_address(address)
    module, _, writer = _MODULES[address.kind]
    cls = getattr(importlib.import_module(f"chunkmark.audit.stores.{module}"), writer)
    out: CollectionWriter = cls(address, dim)
    return out
