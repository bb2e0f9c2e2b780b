"""Vector stores the audit reads and the export writes: Chroma, Qdrant, LanceDB, pgvector.

Each kind of store is one module of this package that declares itself at its end with
``STORES.add(StoreKind(...))`` (its URI schemes, options, extra and help: a
:class:`~chunkmark.audit.stores.base.StoreKind`); a plugin package adds one the same way.
Every module here is imported with the package; each store's client is an optional extra
(``pip install 'chunkmark[audit-chroma]'``, ``audit-qdrant``, ``audit-lancedb``,
``audit-pgvector``), imported only when its kind is opened. :func:`open_store` opens a
collection for reading; :func:`create_collection` makes a new one for ``chunkmark export`` and
refuses one that exists.
"""

from __future__ import annotations

import importlib
import pkgutil

from chunkmark.audit.stores.base import (
    STORES,
    CollectionWriter,
    StoreAddress,
    StoredChunks,
    StoreError,
    StoreKind,
    VectorStore,
    parse_address,
    require_store,
    uri_forms,
)

__all__ = [
    "STORES",
    "CollectionWriter",
    "StoreAddress",
    "StoreError",
    "StoreKind",
    "StoredChunks",
    "VectorStore",
    "create_collection",
    "open_store",
    "parse_address",
    "store_help",
    "uri_forms",
]

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def open_store(address: StoreAddress | str) -> VectorStore:
    """The collection ``address`` names, opened for reading (StoreError when it cannot be)."""
    address = _client_for(address)
    return STORES[address.kind].opens[0](address)


def create_collection(address: StoreAddress | str, dim: int) -> CollectionWriter:
    """A new collection of ``dim``-dimensional vectors (cosine) at ``address``."""
    address = _client_for(address)
    return STORES[address.kind].opens[1](address, dim)


def _client_for(address: StoreAddress | str) -> StoreAddress:
    """``address`` parsed, once its store's client is importable (else the error naming the
    pip install that provides it)."""
    if isinstance(address, str):
        address = parse_address(address)
    require_store(address.kind)
    return address


def store_help() -> str:
    """Every store's URI forms with what each addresses, plugins' included (``--help``)."""
    return ", ".join(kind.help() for kind in STORES.values())
