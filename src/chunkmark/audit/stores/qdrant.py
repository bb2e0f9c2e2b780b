"""Qdrant (``qdrant-client``, the ``audit-qdrant`` extra): local mode (a folder) or a server.

Local mode searches every vector exactly (it has no HNSW index); a server searches its HNSW
index as configured. A server's API key is read from ``$QDRANT_API_KEY``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from chunkmark.audit.stores import base
from chunkmark.audit.stores.base import FloatArray, StoreAddress, StoredChunks, StoreError

PAGE = 256  # points read per scroll request
API_KEY_ENV = "QDRANT_API_KEY"


def _client(address: StoreAddress, create: bool) -> Any:
    qdrant = base.require_store("qdrant")
    if not address.remote:
        if not create and not Path(address.location).is_dir():
            raise base.folder_missing(
                address, "QdrantClient(path=...)", "qdrant:./qdrant_db?collection=NAME"
            )
        return qdrant.QdrantClient(path=address.location)
    return qdrant.QdrantClient(
        url=address.location, api_key=os.environ.get(API_KEY_ENV), timeout=10
    )


def _exists(client: Any, address: StoreAddress) -> bool:
    if not address.remote:
        return bool(client.collection_exists(address.collection))
    fix = (
        "Start the server or fix HOST:PORT in the address (set $QDRANT_API_KEY if it needs a key)."
    )
    # the client raises its own exceptions for transport failures
    with base.reaching(address, fix, Exception):
        return bool(client.collection_exists(address.collection))


class QdrantStore:
    """A Qdrant collection opened for reading."""

    def __init__(self, address: StoreAddress) -> None:
        self.address = address
        self._client = _client(address, create=False)
        if not _exists(self._client, address):
            names = sorted(c.name for c in self._client.get_collections().collections)
            self._client.close()
            raise base.no_collection(address, names)
        info = self._client.get_collection(address.collection)
        self._params = info.config.params.vectors
        self._hnsw = info.config.hnsw_config
        self._vector = self._vector_name()

    def _vector_name(self) -> str | None:
        """The named vector read (``vector=`` option, or the only one); None: unnamed."""
        if not isinstance(self._params, dict):
            return None
        wanted = self.address.options.get("vector")
        names = sorted(self._params)
        if wanted is None and len(names) == 1:
            return str(names[0])
        if wanted in self._params:
            return wanted
        raise StoreError(
            f"The {self.address.label()} has the named vectors {', '.join(names)}.",
            "Pick one with &vector=NAME in the address.",
        )

    def read(self) -> StoredChunks:
        ids: list[str] = []
        texts: list[str | None] = []
        metadata: list[dict[str, Any]] = []
        rows: list[Any] = []
        offset = None
        while True:
            points, offset = self._client.scroll(
                self.address.collection,
                limit=PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=[self._vector] if self._vector else True,
            )
            for point in points:
                text, meta = base.split_payload(dict(point.payload or {}))
                ids.append(str(point.id))
                texts.append(text)
                metadata.append(meta)
                vector = point.vector
                rows.append(vector[self._vector] if isinstance(vector, dict) else vector)
            if offset is None:
                break
        return StoredChunks(ids, texts, metadata, base.float_rows(rows))

    def search(self, queries: FloatArray, k: int) -> tuple[list[list[str]], list[list[float]]]:
        ids: list[list[str]] = []
        scores: list[list[float]] = []
        for query in np.asarray(queries, dtype=np.float32):
            if k == 0:
                ids.append([])
                scores.append([])
                continue
            found = self._client.query_points(
                self.address.collection, query=query.tolist(), using=self._vector, limit=k
            ).points
            ids.append([str(p.id) for p in found])
            scores.append([float(p.score) for p in found])
        return ids, scores

    def describe(self) -> dict[str, Any]:
        params = self._params[self._vector] if isinstance(self._params, dict) else self._params
        out: dict[str, Any] = {
            "index": "hnsw" if self.address.remote else "exact (local mode)",
            "metric": str(getattr(params.distance, "value", params.distance)).lower(),
        }
        if self.address.remote and self._hnsw is not None:
            for key in ("m", "ef_construct", "full_scan_threshold"):
                out[key] = getattr(self._hnsw, key, None)
        return out

    def close(self) -> None:
        self._client.close()


class QdrantWriter:
    """A new Qdrant collection (cosine) for ``chunkmark export``; chunks are stored as
    LangChain stores them: ``{"page_content": text, "metadata": {...}}``."""

    def __init__(self, address: StoreAddress, dim: int) -> None:
        models = base.require_store("qdrant", "qdrant_client.models")
        self.address = address
        self._client = _client(address, create=True)
        if _exists(self._client, address):
            self._client.close()
            raise base.already_exists(address)
        self._models = models
        self._client.create_collection(
            address.collection,
            vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
        )
        self._next = 0

    def add(self, chunks: StoredChunks) -> None:
        points = [
            self._models.PointStruct(
                id=self._next + i,
                vector=np.asarray(vector, dtype=np.float32).tolist(),
                payload={"page_content": text, "metadata": {**meta, "chunk_id": chunk_id}},
            )
            for i, (chunk_id, text, meta, vector) in enumerate(
                zip(chunks.ids, chunks.texts, chunks.metadata, chunks.vectors, strict=True)
            )
        ]
        self._next += len(points)
        for lo in range(0, len(points), PAGE):
            self._client.upsert(self.address.collection, points=points[lo : lo + PAGE])

    def close(self) -> None:
        self._client.close()


base.STORES.add(
    base.StoreKind(
        name="qdrant",
        title="Qdrant",
        schemes=("qdrant",),
        options=frozenset({"vector"}),
        forms=(
            ("qdrant:FOLDER?collection=NAME", "Qdrant local mode"),
            ("qdrant+http://HOST:6333?collection=NAME", f"a Qdrant server; key in ${API_KEY_ENV}"),
        ),
        client=("qdrant_client", "qdrant-client", "audit-qdrant"),
        opens=(QdrantStore, QdrantWriter),
    )
)
