"""A content-addressed, on-disk embedding cache and the embedder wrapper that uses it.

A vector is stored under ``sha256(format version, canonical JSON of the embedder identity, kind,
exact text)``: only what changes the output is hashed, so a changed model revision, prompt,
precision or normalisation misses, and the same text is never embedded twice by the same model.

Embedders that can say what their model actually reads (:class:`InputAwareEmbedder`: token ids
after the prompt and truncation) get a second key per vector, on that model input (kind
``"document:input"``/``"query:input"``). A text missing from the cache is tokenised, and its
model input looked up before anything is embedded: texts that differ only past the model's
window cost one embedding. A warm run finds every text under its text key and never tokenises.

Storage is one SQLite database per cache root (``embeddings.sqlite3``) in WAL mode, vectors as
float32 blobs. Every ``put_many`` is a single transaction, so concurrent processes sharing the
cache see either all of a batch or none of it; writers wait for each other (busy timeout) instead
of failing, and a key written twice keeps its first vector.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from chunkmark.counters import CacheStats, EmbedderStats
from chunkmark.embedders.base import (
    DocSpan,
    Embedder,
    FloatArray,
    InputAwareEmbedder,
    Kind,
    SliceEmbedder,
    SpanEmbedder,
    Wrapper,
    embeds_spans,
)
from chunkmark.errors import EmbeddingError
from chunkmark.paths import resolve_cache_dir as resolve_cache_dir  # re-exported
from chunkmark.sqlite_db import SQLiteStore, canonical_identity

CACHE_FORMAT_VERSION = 1
DB_NAME = "embeddings.sqlite3"

_QUERY_BATCH = 900  # stays under SQLite's smallest limit on bound parameters (999)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS identities (
    id INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    identity TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY,  -- the key's first 8 bytes: a rowid lookup, the fastest SQLite has
    key BLOB NOT NULL,       -- the full 32-byte key, checked on every read
    identity_id INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL
);
"""


def _rowid(key: bytes) -> int:
    return int.from_bytes(key[:8], "little", signed=True)


def cache_keys(identity: dict[str, Any], kind: str, texts: Sequence[str | bytes]) -> list[bytes]:
    """The 32-byte cache key of each text (or model input, as bytes) for this identity and kind."""
    prefix = hashlib.sha256()
    for part in (str(CACHE_FORMAT_VERSION), _identity_json(identity), kind):
        data = part.encode()
        prefix.update(len(data).to_bytes(8, "little"))
        prefix.update(data)
    keys = []
    for text in texts:
        h = prefix.copy()
        h.update(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        keys.append(h.digest())
    return keys


def _identity_json(identity: dict[str, Any]) -> str:
    return canonical_identity(identity, what="Embedder identity", error=EmbeddingError)


@dataclasses.dataclass(frozen=True)
class IdentityUsage:
    """One embedder identity in the cache: its vectors and their bytes (vector data only), and
    their dimension (None when it holds no vector, or vectors of different lengths)."""

    identity: dict[str, Any]
    vectors: int
    bytes: int
    dimension: int | None = None

    @property
    def name(self) -> str:
        """The model's name (``name`` in the identity), else the embedder's (``embedder``)."""
        return identity_name(self.identity)


def identity_name(identity: dict[str, Any]) -> str:
    """The model an embedder identity is about: its ``name``, else its ``embedder`` (the fake
    embedder has no model name), else ``"?"``."""
    return str(identity.get("name") or identity.get("embedder") or "?")


class EmbeddingCache(SQLiteStore):
    """Float32 vectors on disk, keyed by (identity, kind, text); safe across processes/threads."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        super().__init__(
            self.root / DB_NAME,
            schema=_SCHEMA,
            version=CACHE_FORMAT_VERSION,
            what="the embedding cache",
            fix="Pass a writable folder with --cache-dir (or CHUNKMARK_CACHE_DIR), "
            "delete a damaged cache folder, or run with --no-cache.",
            damaged_fix="Delete that cache folder (it only holds vectors that can be "
            "recomputed), pass another --cache-dir, or run with --no-cache.",
            page_size=8192,  # packs ~1.5 KB vectors densely
        )
        self._identity_ids: dict[str, int] = {}

    def get_many(
        self, identity: dict[str, Any], kind: str, texts: Sequence[str | bytes]
    ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
        """Look texts up. Returns a hit mask over ``texts`` and the hit vectors, in order.

        The vectors array has one row per ``True`` in the mask (shape ``(0, 0)`` with no hits).
        """
        keys = cache_keys(identity, kind, texts)
        ids = [_rowid(k) for k in keys]
        found: dict[bytes, tuple[int, bytes]] = {}
        with self.connection() as conn:
            for start in range(0, len(ids), _QUERY_BATCH):
                batch = ids[start : start + _QUERY_BATCH]
                marks = ",".join("?" * len(batch))
                rows = conn.execute(
                    f"SELECT key, dim, vector FROM vectors WHERE id IN ({marks})", batch
                )
                for key, dim, blob in rows:
                    found[key] = (dim, blob)  # a different key under the same id stays a miss
        mask = np.array([k in found for k in keys], dtype=bool)
        if not found:
            return mask, np.zeros((0, 0), dtype=np.float32)
        hits = [found[k] for k in keys if k in found]
        dims = {dim for dim, _ in hits}
        if len(dims) != 1:
            raise EmbeddingError(
                f"The embedding cache at {self.path} holds vectors of different sizes "
                f"({sorted(dims)}) for one embedder identity.",
                "Delete the cache folder or run with --no-cache.",
            )
        dim = dims.pop()
        flat = np.frombuffer(b"".join(blob for _, blob in hits), dtype="<f4")
        return mask, flat.reshape(len(hits), dim).astype(np.float32)

    def put_many(
        self,
        identity: dict[str, Any],
        kind: str,
        texts: Sequence[str | bytes],
        vectors: FloatArray,
    ) -> None:
        """Store one vector per text, atomically (all or nothing). Existing keys are kept."""
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingError(
                f"Cannot cache {vectors.shape} vectors for {len(texts)} texts.",
                "The embedder must return one row per text.",
            )
        if not texts:
            return
        keys = cache_keys(identity, kind, texts)
        data = np.ascontiguousarray(vectors, dtype="<f4")
        dim = int(data.shape[1])
        with self.transaction() as conn:
            identity_id = self._identity_id(conn, identity)
            rows = (
                (_rowid(k), k, identity_id, dim, v.tobytes())
                for k, v in zip(keys, data, strict=True)
            )
            conn.executemany(
                "INSERT OR IGNORE INTO vectors (id, key, identity_id, dim, vector) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def __len__(self) -> int:
        with self.connection() as conn:
            (count,) = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()
        return int(count)

    def summary(self) -> list[tuple[dict[str, Any], int]]:
        """Each embedder identity in the cache with its number of vectors."""
        with self.connection() as conn:
            rows = conn.execute(
                "SELECT i.identity, COUNT(v.id) FROM identities i "
                "LEFT JOIN vectors v ON v.identity_id = i.id GROUP BY i.id ORDER BY i.id"
            ).fetchall()
        return [(json.loads(text), int(n)) for text, n in rows]

    def usage(self) -> list[IdentityUsage]:
        """Each embedder identity in the cache with its vectors, their bytes and dimension, in
        the order they were first written (identities whose vectors were all deleted
        included)."""
        with self.connection() as conn:
            rows = conn.execute(
                "SELECT i.identity, COUNT(v.id), COALESCE(SUM(LENGTH(v.vector)), 0), "
                "MIN(v.dim), MAX(v.dim) "
                "FROM identities i LEFT JOIN vectors v ON v.identity_id = i.id "
                "GROUP BY i.id ORDER BY i.id"
            ).fetchall()
        return [
            IdentityUsage(json.loads(text), int(n), int(size), low if low == high else None)
            for text, n, size, low, high in rows
        ]

    def delete(self, match: Callable[[dict[str, Any]], bool] | None = None) -> int:
        """Delete the vectors of every identity ``match`` accepts (all vectors with None), in
        one write transaction: a concurrent writer waits for it (busy timeout) and its own
        batches are kept whole. Returns how many vectors were deleted.

        Identity rows are kept (a few bytes each): another process may hold an identity's row
        id and go on writing under it, so deleting the row could leave vectors that no
        identity names."""
        with self.transaction() as conn:
            if match is None:
                return int(conn.execute("DELETE FROM vectors").rowcount)
            rows = conn.execute("SELECT id, identity FROM identities").fetchall()
            ids = [int(i) for i, text in rows if match(json.loads(text))]
            deleted = 0
            for start in range(0, len(ids), _QUERY_BATCH):
                batch = ids[start : start + _QUERY_BATCH]
                marks = ",".join("?" * len(batch))
                cursor = conn.execute(f"DELETE FROM vectors WHERE identity_id IN ({marks})", batch)
                deleted += int(cursor.rowcount)
        return deleted

    def _identity_id(self, conn: sqlite3.Connection, identity: dict[str, Any]) -> int:
        text = _identity_json(identity)
        digest = hashlib.sha256(text.encode()).hexdigest()
        cached = self._identity_ids.get(digest)
        if cached is not None:
            return cached
        conn.execute(
            "INSERT OR IGNORE INTO identities (digest, identity) VALUES (?, ?)", (digest, text)
        )
        (identity_id,) = conn.execute(
            "SELECT id FROM identities WHERE digest = ?", (digest,)
        ).fetchone()
        self._identity_ids[digest] = int(identity_id)
        return int(identity_id)

    def _opened(self, conn: sqlite3.Connection) -> None:
        self._identity_ids = {}  # row ids are only trusted for the connection that read them


class CachedEmbedder(Wrapper):
    """An embedder that embeds each distinct model input once: deduplicated, cached on disk.

    It has the inner embedder's name and identity. With ``cache=None`` (``--no-cache``) it still
    deduplicates within a call. The inner embedder is only called for misses, so a lazily loaded
    model is never loaded when everything is cached. Texts are looked up first; for an
    :class:`InputAwareEmbedder`, missing texts are tokenised and looked up by model input, and
    only distinct new inputs are embedded. Misses are embedded longest first (similar lengths
    batch well) and stored in slices of ``flush_every``, so an interrupted run keeps what it
    already paid for; ``progress(done, total)`` is called after each slice.

    :meth:`model_seconds_for` tells how much model time the inputs behind some texts cost in
    this process (each slice's time shared by input length), wherever they were embedded.
    """

    def __init__(
        self,
        inner: Embedder,
        cache: EmbeddingCache | None,
        *,
        flush_every: int = 512,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        if flush_every < 1:
            raise ValueError(f"flush_every must be at least 1, got {flush_every}")
        super().__init__(inner)
        self.cache = cache
        self.flush_every = flush_every
        self.progress = progress
        self._counts = dict.fromkeys(
            ("requested", "distinct", "hits", "inputs", "input_hits", "embedded"), 0
        )
        self._model_seconds = 0.0
        # Digests, not the texts, in sorted arrays, not dicts: a million chunks cost tens of
        # megabytes of books, not their texts or half a gigabyte of Python objects.
        self._input_of: dict[str, DigestTable] = {}  # by kind: text -> model input
        self._seconds_of: dict[str, DigestTable] = {}  # by kind: input -> model seconds

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        positions: dict[str, int] = {}
        inverse = np.fromiter(
            (positions.setdefault(t, len(positions)) for t in texts),
            dtype=np.intp,
            count=len(texts),
        )
        distinct = list(positions)
        self._counts["requested"] += len(texts)
        self._counts["distinct"] += len(distinct)
        if not distinct:
            return self.inner.embed([], kind)
        vectors = self._embed_distinct(distinct, kind)
        return vectors[inverse]

    def embeds_spans(self) -> bool:
        return embeds_spans(self.inner)

    def embed_spans(self, spans: Sequence[DocSpan]) -> FloatArray:
        """Vectors of chunks embedded in their documents (late chunking), cached under
        (identity, document digest, start, end): a chunk's vector depends on its whole
        document, so equal chunk texts in two documents are two entries. Misses are embedded a
        few documents at a time (at least ``flush_every`` spans per call) and each call's
        vectors are stored at once."""
        inner = self.inner
        if not embeds_spans(inner):
            raise EmbeddingError(
                f"{self.name} does not embed chunks in their documents.",
                "Embed the chunk texts with embed() instead.",
            )
        assert isinstance(inner, SpanEmbedder)
        digests: dict[str, bytes] = {}
        keys: list[bytes] = []
        for doc, start, end in spans:
            digest = digests.get(doc)
            if digest is None:
                digest = digests[doc] = hashlib.blake2b(
                    doc.encode("utf-8", "surrogatepass"), digest_size=16
                ).digest()
            keys.append(digest + start.to_bytes(8, "little") + end.to_bytes(8, "little"))
        positions: dict[bytes, int] = {}
        inverse = np.fromiter(
            (positions.setdefault(k, len(positions)) for k in keys), dtype=np.intp, count=len(keys)
        )
        distinct_keys = list(positions)
        seen: set[bytes] = set()
        distinct: list[DocSpan] = []
        for key, span in zip(keys, spans, strict=True):
            if key not in seen:
                seen.add(key)
                distinct.append(span)
        self._counts["requested"] += len(spans)
        self._counts["distinct"] += len(distinct)
        if not distinct:
            return np.zeros((0, 0), dtype=np.float32)
        identity = inner.identity() if self.cache is not None else {}
        kind = "document:span"
        mask, hits = self._lookup(identity, kind, distinct_keys)
        self._counts["hits"] += int(mask.sum())
        if mask.all():
            return hits[inverse]
        missing = [i for i, hit in enumerate(mask) if not hit]
        parts: list[FloatArray] = []
        lo = 0
        while lo < len(missing):  # whole documents per call, at least flush_every spans
            hi = min(lo + self.flush_every, len(missing))
            doc = distinct[missing[hi - 1]][0]
            while hi < len(missing) and distinct[missing[hi]][0] == doc:
                hi += 1
            chosen = missing[lo:hi]
            began = time.perf_counter()
            vectors = _checked(inner.embed_spans([distinct[i] for i in chosen]), len(chosen))
            part_keys = [distinct_keys[i] for i in chosen]
            self._account("document", part_keys, time.perf_counter() - began)
            if self.cache is not None:
                self.cache.put_many(identity, kind, part_keys, vectors)
            parts.append(vectors)
            if self.progress is not None:
                self.progress(hi, len(missing))
            lo = hi
        fresh = parts[0] if len(parts) == 1 else np.concatenate(parts)
        vectors = fresh if not mask.any() else _merge(mask, hits, fresh, self.name)
        return vectors[inverse]

    def stats(self) -> EmbedderStats:
        """The inner embedder's stats, with ``cache`` telling what the cache saved: texts
        requested, distinct texts, text-cache hits, distinct model inputs behind the missed
        texts, model-input cache hits, inputs embedded and the model seconds they took."""
        cache = CacheStats(**self._counts, model_seconds=self._model_seconds)
        return dataclasses.replace(self.inner.stats(), cache=cache)

    def model_seconds_for(self, texts: Sequence[str], kind: Kind = "document") -> float:
        """Model seconds this process spent on the distinct inputs behind ``texts``.

        Texts found in the cache from earlier processes count 0: their cost was paid before.
        """
        seconds = self._seconds_of.get(kind)
        if seconds is None or not len(texts):
            return 0.0
        digests = np.array([_digest(t) for t in texts], dtype=DIGEST)
        inputs_of = self._input_of.get(kind)
        if inputs_of is not None:
            found, inputs = inputs_of.get_many(digests)
            digests = np.where(found, inputs, digests)
        found, values = seconds.get_many(np.unique(digests))
        return float(values[found].sum())

    def _uses_inputs(self, kind: Kind) -> bool:
        inner = self.inner
        return isinstance(inner, InputAwareEmbedder) and inner.supports_model_inputs(kind)

    def _embed_distinct(self, texts: list[str], kind: Kind) -> FloatArray:
        identity = self.inner.identity() if self.cache is not None else {}
        mask, hits = self._lookup(identity, kind, texts)
        self._counts["hits"] += int(mask.sum())
        if mask.all():
            return hits
        missing = [t for t, hit in zip(texts, mask, strict=True) if not hit]
        if self._uses_inputs(kind):
            fresh = self._embed_by_input(identity, kind, missing)
        else:
            fresh = self._embed_new(identity, kind, missing)
        if self.cache is not None:
            self.cache.put_many(identity, kind, missing, fresh)
        if not mask.any():
            return fresh
        return _merge(mask, hits, fresh, self.name)

    def _lookup(
        self, identity: dict[str, Any], kind: str, keys: Sequence[str | bytes]
    ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
        if self.cache is None:
            return np.zeros(len(keys), dtype=bool), np.zeros((0, 0), dtype=np.float32)
        return self.cache.get_many(identity, kind, keys)

    def _embed_by_input(self, identity: dict[str, Any], kind: Kind, texts: list[str]) -> FloatArray:
        inner = self.inner
        assert isinstance(inner, InputAwareEmbedder)  # checked by _uses_inputs
        inputs = inner.model_inputs(texts, kind)
        positions: dict[bytes, int] = {}
        inverse = np.fromiter(
            (positions.setdefault(i, len(positions)) for i in inputs), dtype=np.intp
        )
        books = self._input_of.setdefault(kind, DigestTable(DIGEST))
        books.set_many([_digest(t) for t in texts], [_digest(i) for i in inputs])
        distinct = list(positions)
        self._counts["inputs"] += len(distinct)
        input_kind = f"{kind}:input"
        mask, hits = self._lookup(identity, input_kind, distinct)
        self._counts["input_hits"] += int(mask.sum())
        if mask.all():
            return hits[inverse]
        missing = [i for i, hit in zip(distinct, mask, strict=True) if not hit]
        fresh = self._embed_new(identity, input_kind, missing)
        vectors = fresh if not mask.any() else _merge(mask, hits, fresh, self.name)
        return vectors[inverse]

    def _embed_new(
        self,
        identity: dict[str, Any],
        kind: str,
        items: Sequence[str | bytes],
    ) -> FloatArray:
        """Embed items (texts, or model inputs when ``kind`` ends in ``:input``), longest first,
        storing each slice as soon as it is done."""
        base_kind: Kind = "query" if kind.startswith("query") else "document"
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        slices = [order[s : s + self.flush_every] for s in range(0, len(order), self.flush_every)]
        parts = []
        done = 0
        began = time.perf_counter()
        computed = self._slices([[items[i] for i in chosen] for chosen in slices], kind)
        for chosen, raw in zip(slices, computed, strict=True):
            part = [items[i] for i in chosen]
            vectors = _checked(raw, len(chosen))
            now = time.perf_counter()
            self._account(base_kind, part, now - began)
            if self.cache is not None:
                self.cache.put_many(identity, kind, part, vectors)
            parts.append(vectors)
            done += len(chosen)
            if self.progress is not None:
                self.progress(done, len(order))
            began = time.perf_counter()
        stacked = parts[0] if len(parts) == 1 else np.concatenate(parts)
        fresh = np.empty_like(stacked)
        fresh[np.asarray(order, dtype=np.intp)] = stacked
        return fresh

    def _slices(self, parts: list[list[str | bytes]], kind: str) -> Iterator[FloatArray]:
        """Each part's vectors, in order: from the inner embedder's ``embed_slices`` when it has
        one (a :class:`SliceEmbedder`, e.g. a cluster computing every slice at once), else one
        call per part, made when the part is asked for."""
        base_kind: Kind = "query" if kind.startswith("query") else "document"
        inputs = kind.endswith(":input")
        inner = self.inner
        if isinstance(inner, SliceEmbedder):
            yield from inner.embed_slices(parts, base_kind, inputs=inputs)
            return
        for part in parts:
            if inputs:
                assert isinstance(inner, InputAwareEmbedder)
                yield inner.embed_inputs(cast(list[bytes], part), base_kind)
            else:
                yield inner.embed(cast(list[str], part), base_kind)

    def _account(self, kind: Kind, keys: Sequence[str | bytes], seconds: float) -> None:
        """Count the slice and share its seconds among its inputs by length."""
        self._counts["embedded"] += len(keys)
        self._model_seconds += seconds
        raw = [k if isinstance(k, bytes) else k.encode("utf-8", "surrogatepass") for k in keys]
        total = sum(len(k) for k in raw) or 1
        books = self._seconds_of.setdefault(kind, DigestTable(np.float64))
        books.set_many([_digest(k) for k in raw], [seconds * len(k) / total for k in raw])


DIGEST = np.dtype("S16")  # a 16-byte digest (every byte kept: the width is fixed)


class DigestTable:
    """A map from 16-byte digests to values (digests or floats), for millions of keys: a
    sorted array of keys beside their values, and the latest writes in a dict until
    ``merge_every`` of them wait (or a read comes). A key written again takes its latest
    value."""

    def __init__(self, dtype: npt.DTypeLike, merge_every: int = 1 << 16) -> None:
        self.dtype = np.dtype(dtype)
        self.merge_every = merge_every
        self._keys = np.zeros(0, dtype=DIGEST)
        self._values = np.zeros(0, dtype=self.dtype)
        self._pending: dict[bytes, Any] = {}

    def __len__(self) -> int:
        self._merge()
        return len(self._keys)

    def set_many(self, keys: Sequence[bytes], values: Sequence[Any]) -> None:
        self._pending.update(zip(keys, values, strict=True))
        if len(self._pending) >= self.merge_every:
            self._merge()

    def get_many(self, keys: npt.NDArray[Any]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]:
        """A found mask over ``keys`` (an array of :data:`DIGEST`) and the values (arbitrary
        where not found)."""
        self._merge()
        if not len(self._keys):
            return np.zeros(len(keys), dtype=bool), np.zeros(len(keys), dtype=self.dtype)
        at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        return self._keys[at] == keys, self._values[at]

    def _merge(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate([self._keys, np.array(list(self._pending), dtype=DIGEST)])
        values = np.concatenate(
            [self._values, np.array(list(self._pending.values()), dtype=self.dtype)]
        )
        self._pending = {}
        order = np.argsort(keys, kind="stable")  # two sorted runs; the newer of equal keys last
        keys, values = keys[order], values[order]
        last = np.ones(len(keys), dtype=bool)
        last[:-1] = keys[1:] != keys[:-1]
        self._keys, self._values = keys[last], values[last]


def _digest(item: str | bytes) -> bytes:
    """16 bytes naming a text or model input in :class:`CachedEmbedder`'s books (a text and
    its UTF-8 bytes share a digest, as a text without model inputs is its own input)."""
    data = item if isinstance(item, bytes) else item.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


def _merge(
    mask: npt.NDArray[np.bool_], hits: FloatArray, fresh: FloatArray, name: str
) -> FloatArray:
    if hits.shape[1] != fresh.shape[1]:
        raise EmbeddingError(
            f"Cached vectors have {hits.shape[1]} dimensions but {name} now returns "
            f"{fresh.shape[1]}.",
            "The embedder's identity must change when its output size does; "
            "run with --no-cache or delete the cache folder.",
        )
    out = np.empty((len(mask), fresh.shape[1]), dtype=np.float32)
    out[mask] = hits
    out[~mask] = fresh
    return out


def _checked(vectors: FloatArray, n: int) -> FloatArray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != n:
        raise EmbeddingError(
            f"The embedder returned an array of shape {array.shape} for {n} texts.",
            "An embedder must return one row per text.",
        )
    return array
