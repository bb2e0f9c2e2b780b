"""Chroma (``chromadb``, the ``audit-chroma`` extra): a persistent folder or an HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from chunkmark.audit.stores import base
from chunkmark.audit.stores.base import FloatArray, StoreAddress, StoredChunks

PAGE = 1000  # chunks read per request


def _client(address: StoreAddress, create: bool) -> Any:
    chromadb = base.require_store("chroma")
    config = base.require_store("chroma", "chromadb.config")
    settings = config.Settings(anonymized_telemetry=False)
    extra = {k: address.options[k] for k in ("tenant", "database") if k in address.options}
    if not address.remote:
        if not create and not (Path(address.location) / "chroma.sqlite3").exists():
            where = "chromadb.PersistentClient(path=...) (it holds chroma.sqlite3)"
            raise base.folder_missing(address, where, "chroma:./chroma_db?collection=NAME")
        return chromadb.PersistentClient(path=address.location, settings=settings, **extra)
    scheme, _, hostport = address.location.partition("://")
    host, _, port = hostport.partition(":")
    fix = "Start the server (chroma run --path FOLDER) or fix HOST:PORT in the address."
    with base.reaching(address, fix, ValueError, ConnectionError, OSError):
        return chromadb.HttpClient(
            host=host, port=int(port or 8000), ssl=scheme == "https", settings=settings, **extra
        )


def _collection(client: Any, address: StoreAddress) -> Any:
    """The collection ``address`` names, or None when there is none."""
    errors = base.require_store("chroma", "chromadb.errors")
    try:
        return client.get_collection(address.collection)
    except (errors.NotFoundError, ValueError):
        return None


def _names(client: Any) -> list[str]:
    try:
        return sorted(c if isinstance(c, str) else c.name for c in client.list_collections())
    except Exception:  # listing is only a hint
        return []


class ChromaStore:
    """A Chroma collection opened for reading."""

    def __init__(self, address: StoreAddress) -> None:
        self.address = address
        self._client = _client(address, create=False)
        self._collection = _collection(self._client, address)
        if self._collection is None:
            raise base.no_collection(address, _names(self._client))

    def read(self) -> StoredChunks:
        ids: list[str] = []
        texts: list[str | None] = []
        metadata: list[dict[str, Any]] = []
        rows: list[Any] = []
        total = self._collection.count()
        for offset in range(0, total, PAGE):
            got = self._collection.get(
                include=["documents", "metadatas", "embeddings"], limit=PAGE, offset=offset
            )
            ids.extend(str(i) for i in got["ids"])
            texts.extend(got["documents"] or [None] * len(got["ids"]))
            for meta in got["metadatas"] or [None] * len(got["ids"]):
                metadata.append(base.llama_index_fields(None, dict(meta or {})))
            embeddings = got["embeddings"]
            rows.extend([] if embeddings is None else list(embeddings))
        return StoredChunks(ids, texts, metadata, base.float_rows(rows))

    def search(self, queries: FloatArray, k: int) -> tuple[list[list[str]], list[list[float]]]:
        if k == 0 or len(queries) == 0:
            return [[] for _ in queries], [[] for _ in queries]
        found = self._collection.query(
            query_embeddings=np.asarray(queries, dtype=np.float32),
            n_results=k,
            include=["distances"],
        )
        ids = [[str(i) for i in row] for row in found["ids"]]
        scores = [[-float(d) for d in row] for row in found["distances"]]
        return ids, scores

    def describe(self) -> dict[str, Any]:
        config = getattr(self._collection, "configuration", None) or {}
        hnsw = config.get("hnsw") if isinstance(config, dict) else None
        meta = self._collection.metadata or {}
        out: dict[str, Any] = {"index": "hnsw"}
        if isinstance(hnsw, dict):
            out.update({k: v for k, v in hnsw.items() if isinstance(v, (int, float, str))})
        out.update({k: v for k, v in meta.items() if str(k).startswith("hnsw:")})
        out["metric"] = out.get("space", meta.get("hnsw:space", "l2"))
        return out

    def close(self) -> None:
        self._collection = None
        self._client = None


class ChromaWriter:
    """A new Chroma collection (cosine HNSW) for ``chunkmark export``."""

    def __init__(self, address: StoreAddress, dim: int) -> None:
        self.address = address
        self._client = _client(address, create=True)
        if _collection(self._client, address) is not None:
            raise base.already_exists(address)
        self._collection = self._client.create_collection(
            address.collection,
            configuration={"hnsw": {"space": "cosine"}},
            embedding_function=None,
        )

    def add(self, chunks: StoredChunks) -> None:
        for lo in range(0, len(chunks.ids), PAGE):
            hi = lo + PAGE
            self._collection.add(
                ids=chunks.ids[lo:hi],
                documents=chunks.texts[lo:hi],
                metadatas=chunks.metadata[lo:hi],
                embeddings=np.asarray(chunks.vectors[lo:hi], dtype=np.float32),
            )

    def close(self) -> None:
        self._collection = None
        self._client = None


base.STORES.add(
    base.StoreKind(
        name="chroma",
        title="Chroma",
        schemes=("chroma",),
        options=frozenset({"tenant", "database"}),
        forms=(
            ("chroma:FOLDER?collection=NAME", "a persistent Chroma folder"),
            ("chroma+http://HOST:PORT?collection=NAME", "a Chroma server"),
        ),
        client=("chromadb", "chromadb", "audit-chroma"),
        opens=(ChromaStore, ChromaWriter),
    )
)
