"""Chroma (``chromadb``, the ``audit-chroma`` extra): a persistent folder or an HTTP server."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkmark.audit.stores.base import (
    FloatArray,
    StoreAddress,
    StoredChunks,
    StoreError,
    float_rows,
    llama_index_fields,
    require_store,
)

PAGE = 1000  # chunks read per request


def _client(address: StoreAddress, create: bool) -> Any:
    chromadb = require_store("chroma", "chromadb")
    config = require_store("chroma", "chromadb.config")
    settings = config.Settings(anonymized_telemetry=False)
    extra = {k: address.options[k] for k in ("tenant", "database") if k in address.options}
    if not address.remote:
        if not create and not (Path(address.location) / "chroma.sqlite3").exists():
            raise StoreError(
                f"No Chroma database in the folder {address.location} ({address.label()}).",
                "Give the folder a PersistentClient was opened on (it holds chroma.sqlite3), "
                "e.g. chroma:./chroma_db?collection=NAME.",
            )
        return chromadb.PersistentClient(path=address.location, settings=settings, **extra)
    url = address.location
    scheme, _, hostport = url.partition("://")
    host, _, port = hostport.partition(":")
    try:
        return chromadb.HttpClient(
            host=host,
            port=int(port or 8000),
            ssl=scheme == "https",
            settings=settings,
            **extra,
        )
    except (ValueError, ConnectionError, OSError) as exc:
        raise StoreError(
            f"Cannot reach the Chroma server of {address.label()}: {exc}",
            "Start the server (chroma run --path FOLDER) or fix HOST:PORT in the address.",
        ) from None


def _missing(address: StoreAddress, client: Any) -> StoreError:
    try:
        names = sorted(c if isinstance(c, str) else c.name for c in client.list_collections())
    except Exception:  # listing is only a hint
        names = []
    have = ", ".join(names) if names else "none"
    return StoreError(
        f"There is no {address.label()} (collections there: {have}).",
        "Name an existing collection with ?collection=NAME.",
    )


class ChromaStore:
    """A Chroma collection opened for reading."""

    def __init__(self, address: StoreAddress) -> None:
        self.address = address
        self._client = _client(address, create=False)
        errors = require_store("chroma", "chromadb.errors")
        try:
            self._collection = self._client.get_collection(address.collection)
        except (errors.NotFoundError, ValueError):
            raise _missing(address, self._client) from None

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
                metadata.append(llama_index_fields(None, dict(meta or {})))
            embeddings = got["embeddings"]
            rows.extend([] if embeddings is None else list(embeddings))
        return StoredChunks(ids, texts, metadata, float_rows(rows))

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
        errors = require_store("chroma", "chromadb.errors")
        try:
            self._client.get_collection(address.collection)
        except (errors.NotFoundError, ValueError):
            pass
        else:
            raise StoreError(
                f"The {address.label()} already exists; export writes a new collection.",
                "Name a new collection with ?collection=NAME, or delete the old one first.",
            )
        self._collection = self._client.create_collection(
            address.collection,
            configuration={"hnsw": {"space": "cosine"}},
            embedding_function=None,
        )

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadata: Sequence[dict[str, Any]],
        vectors: FloatArray,
    ) -> None:
        for lo in range(0, len(ids), PAGE):
            hi = lo + PAGE
            self._collection.add(
                ids=list(ids[lo:hi]),
                documents=list(texts[lo:hi]),
                metadatas=list(metadata[lo:hi]),
                embeddings=np.asarray(vectors[lo:hi], dtype=np.float32),
            )

    def close(self) -> None:
        self._collection = None
        self._client = None
