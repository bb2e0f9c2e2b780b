"""What every vector store offers the audit and the export, and how a store is addressed.

A store is named by one URI (``chunkmark audit --help``, docs/audit.md):

- ``chroma:FOLDER?collection=NAME`` (a persistent Chroma folder), ``chroma+http://HOST:PORT?
  collection=NAME`` (a Chroma server; ``chroma+https://``; ``tenant=``, ``database=``);
- ``qdrant:FOLDER?collection=NAME`` (Qdrant's local mode), ``qdrant+http://HOST:6333?
  collection=NAME`` (a server; ``qdrant+https://``; the API key from ``$QDRANT_API_KEY``;
  ``vector=NAME`` for a named vector);
- ``lancedb:FOLDER?table=NAME`` (``vector=COLUMN``, ``text=COLUMN``);
- ``postgresql://USER@HOST:PORT/DB?table=NAME`` (``postgres://`` too; with LangChain's
  ``langchain_pg_embedding`` table, ``collection=NAME`` picks its collection; ``vector=``, ``text=``, ``metadata=``,
  ``id=`` columns; ``metric=cosine|l2|ip`` when the table has no vector index; the password
  from ``$PGPASSWORD`` or the URI, never printed).

For Chroma, Qdrant and LanceDB ``collection=`` and ``table=`` are the same parameter. A FOLDER may be relative
(``chroma:./db?collection=docs``) or absolute (``chroma:///srv/db?collection=docs``).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt

from chunkmark.errors import ChunkmarkError, MissingDependencyError

FloatArray = npt.NDArray[np.float32]
Kind = Literal["chroma", "qdrant", "lancedb", "pgvector"]
KINDS: tuple[Kind, ...] = ("chroma", "qdrant", "lancedb", "pgvector")
EXTRAS: dict[Kind, tuple[str, str]] = {  # the module to import, the package and extra
    "chroma": ("chromadb", "audit-chroma"),
    "qdrant": ("qdrant-client", "audit-qdrant"),
    "lancedb": ("lancedb", "audit-lancedb"),
    "pgvector": ("psycopg", "audit-pgvector"),
}
_OPTIONS = {
    "chroma": {"tenant", "database"},
    "qdrant": {"vector"},
    "lancedb": {"vector", "text", "id"},
    "pgvector": {"vector", "text", "metadata", "id", "metric", "collection"},
}
URI_HELP = (
    "chroma:FOLDER?collection=NAME, chroma+http://HOST:PORT?collection=NAME, "
    "qdrant:FOLDER?collection=NAME, qdrant+http://HOST:6333?collection=NAME, "
    "lancedb:FOLDER?table=NAME, postgresql://USER@HOST:PORT/DB?table=NAME"
)


class StoreError(ChunkmarkError):
    """A vector store cannot be reached, or holds something the audit cannot use."""


@dataclass(frozen=True)
class StoreAddress:
    """A parsed store URI: the kind of store, where it is (a folder, or a server URL / libpq
    connection string), the collection (or table), and the store's own options."""

    kind: Kind
    location: str
    collection: str
    remote: bool
    options: dict[str, str] = field(default_factory=dict)

    def label(self) -> str:
        """The store and collection for messages, without any password."""
        where = self.location
        if self.remote:
            parts = urlsplit(where)
            host = parts.hostname or ""
            if parts.port:
                host = f"{host}:{parts.port}"
            user = f"{parts.username}@" if parts.username else ""
            where = urlunsplit((parts.scheme, user + host, parts.path, "", ""))
        return f"{self.kind} collection {self.collection!r} at {where}"


def parse_address(uri: str) -> StoreAddress:
    """A :class:`StoreAddress` from a URI (module docstring); StoreError naming the fix."""
    scheme, sep, rest = uri.partition(":")
    if not sep:
        raise _bad_uri(uri, "it has no scheme")
    scheme = scheme.lower()
    base, kind_name = scheme.split("+", 1)[0], scheme
    if base in ("postgresql", "postgres", "pgvector"):
        return _postgres(uri)
    if base not in ("chroma", "qdrant", "lancedb"):
        raise _bad_uri(uri, f"{scheme!r} names no supported store")
    kind: Kind = base  # type: ignore[assignment]
    location, _, query = rest.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    collection = _collection(uri, params)
    remote = "+" in kind_name
    if remote:
        protocol = kind_name.split("+", 1)[1]
        if protocol not in ("http", "https") or not location.startswith("//"):
            raise _bad_uri(uri, f"a server is addressed as {base}+http://HOST:PORT?...")
        if kind == "lancedb":
            raise _bad_uri(uri, "LanceDB is addressed as lancedb:FOLDER?table=NAME")
        location = f"{protocol}:{location}".rstrip("/")
    else:
        if location.startswith("//"):
            location = location[2:]  # chroma:///abs -> /abs; chroma://rel -> rel
        if not location:
            raise _bad_uri(uri, "it names no folder")
    _check_options(uri, kind, params)
    return StoreAddress(kind, location, collection, remote, params)


def _postgres(uri: str) -> StoreAddress:
    parts = urlsplit(uri)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    table = params.pop("table", None)
    if not table:
        raise _bad_uri(uri, "it names no table: add ?table=NAME")
    ours = {k: params.pop(k) for k in list(params) if k in _OPTIONS["pgvector"]}
    location = urlunsplit(("postgresql", parts.netloc, parts.path, _query(params), ""))
    return StoreAddress("pgvector", location, table, True, ours)


def _query(params: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in params.items())


def _collection(uri: str, params: dict[str, str]) -> str:
    names = [params.pop(k) for k in ("collection", "table") if k in params]
    if len(names) != 1 or not names[0]:
        raise _bad_uri(uri, "it names no collection: add ?collection=NAME (or ?table=NAME)")
    return names[0]


def _check_options(uri: str, kind: Kind, params: dict[str, str]) -> None:
    unknown = sorted(set(params) - _OPTIONS[kind])
    if unknown:
        valid = ", ".join(sorted(_OPTIONS[kind] | {"collection"})) or "collection"
        raise _bad_uri(uri, f"{kind} takes no option {unknown[0]!r} (valid: {valid})")


def _bad_uri(uri: str, why: str) -> StoreError:
    return StoreError(
        f"Cannot read the store address {_scrub(uri)!r}: {why}.", f"Write one of: {URI_HELP}."
    )


def _scrub(uri: str) -> str:
    """A URI without its password."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass
class StoredChunks:
    """A collection's chunks as the store holds them: ids, texts (None where none is stored),
    metadata and vectors (float32, one row per chunk, as stored)."""

    ids: list[str]
    texts: list[str | None]
    metadata: list[dict[str, Any]]
    vectors: FloatArray


class VectorStore(Protocol):
    """A collection opened for reading: the audit never writes through it."""

    address: StoreAddress

    def read(self) -> StoredChunks:
        """Every chunk of the collection, with its vector."""
        ...

    def search(self, queries: FloatArray, k: int) -> tuple[list[list[str]], list[list[float]]]:
        """The store's own search: per query, the ids of its top ``k`` (best first) and their
        scores (higher is better)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The metric and index settings the search runs with (JSON-able)."""
        ...

    def close(self) -> None: ...


class CollectionWriter(Protocol):
    """A new collection being filled by ``chunkmark export``."""

    address: StoreAddress

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadata: Sequence[dict[str, Any]],
        vectors: FloatArray,
    ) -> None: ...

    def close(self) -> None: ...


def require(module: str, package: str, extra: str, purpose: str) -> Any:
    """Import an optional dependency, or raise naming the pip install that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(package, extra, purpose) from None


def require_store(kind: Kind, module: str) -> Any:
    package, extra = EXTRAS[kind]
    return require(module, package, extra, f"The {kind} store")


def float_rows(rows: Any, dim: int | None = None) -> FloatArray:
    """Stored vectors as one float32 array (an empty collection: ``(0, dim or 0)``)."""
    if rows is None or len(rows) == 0:
        return np.zeros((0, dim or 0), dtype=np.float32)
    return np.asarray(
        [np.asarray(r.to_numpy() if hasattr(r, "to_numpy") else r, dtype=np.float32) for r in rows],
        dtype=np.float32,
    )


def split_payload(
    payload: dict[str, Any], text_keys: Sequence[str] = ("page_content", "document", "text")
) -> tuple[str | None, dict[str, Any]]:
    """A stored record's text and metadata, as LangChain and LlamaIndex store them.

    LangChain keeps ``{"page_content": ..., "metadata": {...}}``; LlamaIndex keeps the node as
    JSON under ``_node_content`` (its text there unless stored apart, its offsets as
    ``start_char_idx``/``end_char_idx``) beside flat metadata. Other records: the first of
    ``text_keys`` found is the text and the rest is metadata.
    """
    text: str | None = None
    meta: dict[str, Any] = {}
    for key in text_keys:
        value = payload.get(key)
        if isinstance(value, str):
            text = value
            break
    nested = payload.get("metadata")
    if isinstance(nested, dict):
        meta.update(nested)
    meta.update({k: v for k, v in payload.items() if k not in text_keys and k != "metadata"})
    return text, llama_index_fields(text, meta)


def llama_index_fields(text: str | None, meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with the offsets and text of a LlamaIndex node stored under ``_node_content``
    lifted to the top (``start_char_idx``, ``end_char_idx``, ``_node_text``)."""
    raw = meta.get("_node_content")
    if not isinstance(raw, str):
        return meta
    try:
        node = json.loads(raw)
    except json.JSONDecodeError:
        return meta
    if not isinstance(node, dict):
        return meta
    out = dict(meta)
    for key in ("start_char_idx", "end_char_idx"):
        if key not in out and isinstance(node.get(key), int):
            out[key] = node[key]
    if isinstance(node.get("text"), str) and node["text"]:
        out["_node_text"] = node["text"]
    return out
