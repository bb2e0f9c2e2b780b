"""What every vector store offers the audit and the export, and how a store is addressed.

A store is named by one URI, its form declared by its kind in :data:`STORES` (``chunkmark audit
--help``, docs/audit.md):

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

For a kind addressed by folder, ``collection=`` and ``table=`` are the same parameter. A FOLDER may be relative
(``chroma:./db?collection=docs``) or absolute (``chroma:///srv/db?collection=docs``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt

from chunkmark.errors import ChunkmarkError
from chunkmark.optional import import_optional
from chunkmark.specs import Catalog

FloatArray = npt.NDArray[np.float32]


class StoreError(ChunkmarkError):
    """A vector store cannot be reached, or holds something the audit cannot use."""


@dataclass(frozen=True)
class StoreAddress:
    """A parsed store URI: the kind of store, where it is (a folder, or a server URL / libpq
    connection string), the collection (or table), and the store's own options."""

    kind: str
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
        raise bad_uri(uri, "it has no scheme")
    scheme = scheme.lower()
    base = scheme.split("+", 1)[0]
    kind = next((k for k in STORES.values() if base in k.schemes), None)
    if kind is None:
        raise bad_uri(uri, f"{scheme!r} names no supported store")
    if kind.parse is not None:
        return kind.parse(uri)
    location, _, query = rest.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    collection = _collection(uri, params)
    remote = "+" in scheme
    if remote:
        protocol = scheme.split("+", 1)[1]
        if protocol not in ("http", "https") or not location.startswith("//"):
            raise bad_uri(uri, f"a server is addressed as {base}+http://HOST:PORT?...")
        if not kind.servers:
            raise bad_uri(uri, f"{kind.title} is addressed as {kind.forms[0][0]}")
        location = f"{protocol}:{location}".rstrip("/")
    else:
        if location.startswith("//"):
            location = location[2:]  # chroma:///abs -> /abs; chroma://rel -> rel
        if not location:
            raise bad_uri(uri, "it names no folder")
    check_options(uri, kind.name, params)
    return StoreAddress(kind.name, location, collection, remote, params)


def _collection(uri: str, params: dict[str, str]) -> str:
    names = [params.pop(k) for k in ("collection", "table") if k in params]
    if len(names) != 1 or not names[0]:
        raise bad_uri(uri, "it names no collection: add ?collection=NAME (or ?table=NAME)")
    return names[0]


def check_options(uri: str, kind: str, params: dict[str, str]) -> None:
    """StoreError naming the first of ``params`` the store ``kind`` does not take."""
    options = STORES[kind].options
    unknown = sorted(set(params) - options)
    if unknown:
        valid = ", ".join(sorted(options | {"collection"})) or "collection"
        raise bad_uri(uri, f"{kind} takes no option {unknown[0]!r} (valid: {valid})")


def bad_uri(uri: str, why: str) -> StoreError:
    """The error for a store URI that cannot be read: ``why``, and the forms to write."""
    return StoreError(
        f"Cannot read the store address {_scrub(uri)!r}: {why}.", f"Write one of: {uri_forms()}."
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

    def add(self, chunks: StoredChunks) -> None:
        """Write a batch of chunks (every text given) with their vectors."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class StoreKind:
    """One kind of vector store, as :data:`STORES` holds it: what its URIs look like and what
    opens them.

    ``schemes``: the URI schemes naming it (``chroma``, and ``chroma+http`` for a server when
    ``servers``); ``options``: the ``?key=value`` options it takes besides ``collection``;
    ``forms``: each URI form with what it addresses, for ``--help`` and errors; ``client``: its
    client's module, the package that installs it and chunkmark's extra (the error when it is
    missing names them); ``opens``: its :class:`VectorStore` and its
    :class:`CollectionWriter`; ``parse``: its own URI reader, for a kind not addressed as
    ``SCHEME:FOLDER?collection=NAME`` (a PostgreSQL connection URI).
    """

    name: str
    title: str
    schemes: tuple[str, ...]
    options: frozenset[str]
    forms: tuple[tuple[str, str], ...]
    client: tuple[str, str, str]
    opens: tuple[
        Callable[[StoreAddress], VectorStore], Callable[[StoreAddress, int], CollectionWriter]
    ]
    servers: bool = True
    parse: Callable[[str], StoreAddress] | None = None

    def help(self) -> str:
        """Its URI forms, each with what it addresses."""
        return ", ".join(f"{uri} ({what})" if what else uri for uri, what in self.forms)


STORES: Catalog[StoreKind] = Catalog(
    "vector store",
    error=StoreError,
    problem="There is no {kind} {name!r}.",
    fix="Use one of: {known} (chunkmark audit --help).",
)


def uri_forms() -> str:
    """Every store's URI forms, for messages."""
    return ", ".join(uri for kind in STORES.values() for uri, _ in kind.forms)


def require_store(kind: str, module: str | None = None) -> Any:
    """A module of the client of the store ``kind`` (its own module when None), or the error
    naming the pip install that provides it."""
    own, package, extra = STORES[kind].client
    return import_optional(module or own, package, extra, f"The {kind} store")


def folder_missing(address: StoreAddress, opened_on: str, example: str) -> StoreError:
    """No database where a folder-addressed store should have one."""
    return StoreError(
        f"No {STORES[address.kind].title} folder at {address.location} ({address.label()}).",
        f"Give the folder {opened_on} was opened on, e.g. {example}.",
    )


@contextmanager
def reaching(address: StoreAddress, fix: str, *errors: type[BaseException]) -> Iterator[None]:
    """Turn ``errors`` (the client's transport errors) raised inside into the StoreError that
    the server of ``address`` cannot be reached, its first line and ``fix``."""
    try:
        yield
    except errors as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise StoreError(
            f"Cannot reach the {STORES[address.kind].title} server of {address.label()}: {first}",
            fix,
        ) from None


def no_collection(
    address: StoreAddress, names: Sequence[str], what: str = "collection"
) -> StoreError:
    """The collection (or table) ``address`` names is not among ``names``."""
    return StoreError(
        f"There is no {address.label()} ({what}s there: {', '.join(names) or 'none'}).",
        f"Name an existing {what} with ?{what}=NAME.",
    )


def already_exists(address: StoreAddress, what: str = "collection") -> StoreError:
    """Export writes a new collection (or table) and ``address`` names one that exists."""
    drop = "delete" if what == "collection" else "drop"
    return StoreError(
        f"The {address.label()} already exists; export writes a new {what}.",
        f"Name a new {what} with ?{what}=NAME, or {drop} the old one first.",
    )


def pick_column(
    address: StoreAddress, columns: Sequence[str], option: str, found: Sequence[str]
) -> str:
    """The column ``option=`` names (StoreError when the table has none such), else the only
    one of ``found``."""
    wanted = address.options.get(option)
    if wanted is None:
        if len(found) == 1:
            return found[0]
        problem, fix = f"Cannot tell the {option} column of", f"Name it with &{option}=COLUMN."
    elif wanted in columns:
        return wanted
    else:
        problem = f"There is no column {wanted!r} in"
        fix = f"Name its {option} column with &{option}=COLUMN."
    raise StoreError(f"{problem} the {address.label()} (columns: {', '.join(columns)}).", fix)


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
