"""Chunks computed once per (chunker, dataset): an on-disk store under the cache folder.

A grid rerun with a new results folder, or another grid sharing chunker specs, reads each
chunker's spans and token counts back instead of chunking and counting again. The key hashes
the store format, the package version, the canonical chunker spec, the dataset fingerprint and,
for chunkers that embed while chunking (semantic chunkers using the cell's embedder), that
embedder's identity. Files are parquet, written atomically; an unreadable file is recomputed.

Each file also says what it holds (chunker spec, dataset fingerprint, embedder identity,
chunkmark version and store format, in its parquet metadata) so ``chunkmark cache`` can list
and prune the store without recomputing keys. Files are removed by a rename to a hidden trash
name first, then deleted: a reader that opens the file by its name gets all of it or nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from chunkmark.chunkers.base import Chunk
from chunkmark.experiments.store import parquet_bytes
from chunkmark.files import read_parquet, write_bytes_atomic

STORE_FORMAT = 1
FOLDER = "chunks"


_META = b"chunkmark"
_SUFFIX = ".parquet"


class ChunkKey(str):
    """A store key (a plain string to every caller) that remembers what it was made of, so
    :meth:`ChunkStore.put` can write that into the file."""

    about: dict[str, Any]


def chunk_key(
    chunker_spec: str, dataset_fingerprint: str, embedder: dict[str, Any] | None
) -> ChunkKey:
    """The store key of one chunker's output on one dataset."""
    from chunkmark.version import __version__

    parts: list[Any] = [STORE_FORMAT, __version__, chunker_spec, dataset_fingerprint, embedder]
    plugin = _plugin_of(chunker_spec)
    if plugin is not None:  # built-ins keep their keys; a plugin's upgrade chunks again
        parts.append(plugin)
    payload = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    key = ChunkKey(hashlib.sha256(payload.encode()).hexdigest()[:32])
    key.about = {
        "format": STORE_FORMAT,
        "chunkmark": __version__,
        "chunker": chunker_spec,
        "dataset": dataset_fingerprint,
        "embedder": embedder,
    }
    if plugin is not None:
        key.about["plugin"] = plugin
    return key


def _plugin_of(chunker_spec: str) -> str | None:
    """``package version`` of the plugin whose chunker ``chunker_spec`` names, or None for
    chunkmark's own chunkers: the chunkmark version in the key does not cover a plugin's code."""
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.errors import SpecError
    from chunkmark.specs import parse_spec

    try:
        entry = CHUNKERS.entry(parse_spec(chunker_spec)[0])
    except SpecError:
        return None
    if entry.plugin is None:
        return None
    return f"{entry.plugin.origin} {entry.plugin.version or ''}".strip()


@dataclasses.dataclass(frozen=True)
class StoredChunking:
    """One file of the store: its key, size, last change (seconds since the epoch), number of
    chunks and what it holds (None for what a file does not say: files written before the
    store recorded it, or unreadable ones, whose ``chunks`` is None too)."""

    key: str
    path: Path
    bytes: int
    modified: float
    chunks: int | None
    chunker: str | None
    dataset: str | None
    embedder: dict[str, Any] | None
    chunkmark: str | None
    format: int | None

    def current(self) -> bool | None:
        """Whether this chunkmark can read the file back (its keys include the package
        version and store format); None when the file does not say."""
        if self.chunkmark is None or self.format is None:
            return None
        from chunkmark.version import __version__

        return self.chunkmark == __version__ and self.format == STORE_FORMAT


class ChunkStore:
    """Chunk spans, embedded texts and token counts by key, as parquet files in ``root/chunks``."""

    def __init__(self, root: Path) -> None:
        self.folder = Path(root) / FOLDER

    def get(self, key: str) -> tuple[list[Chunk], npt.NDArray[np.int64]] | None:
        try:
            table = read_parquet(self.folder / f"{key}.parquet")
        except (OSError, pa.ArrowInvalid):
            return None
        columns = table.to_pydict()
        chunks = [
            Chunk(d, s, e, t)
            for d, s, e, t in zip(
                columns["doc_id"],
                columns["start"],
                columns["end"],
                columns["embed_text"],
                strict=True,
            )
        ]
        return chunks, np.asarray(columns["tokens"], dtype=np.int64)

    def put(self, key: str, chunks: list[Chunk], tokens: npt.NDArray[np.int64]) -> None:
        table = pa.table(
            {
                "doc_id": pa.array([c.doc_id for c in chunks], pa.string()),
                "start": pa.array([c.start for c in chunks], pa.int64()),
                "end": pa.array([c.end for c in chunks], pa.int64()),
                "embed_text": pa.array([c.embed_text for c in chunks], pa.string()),
                "tokens": pa.array(tokens.tolist(), pa.int64()),
            }
        )
        about = getattr(key, "about", None)
        if about is not None:
            table = table.replace_schema_metadata({_META: json.dumps(about).encode()})
        try:
            write_bytes_atomic(self.folder / f"{key}.parquet", parquet_bytes(table))
        except OSError:
            return  # a store that cannot be written only costs a recomputation next time

    def disk_bytes(self) -> int:
        """Bytes of every file in the store's folder (temporary files of writes included)."""
        return sum(max(_stat(p)[0], 0) for p in self._files(hidden=True))

    def entries(self) -> list[StoredChunking]:
        """Every stored chunking, read from the files' parquet footers (the chunks are not
        read). Files being written or removed (hidden names) are not listed."""
        found = []
        for path in self._files(hidden=False):
            size, modified = _stat(path)
            if size < 0:
                continue  # removed since it was listed
            about: dict[str, Any] = {}
            rows: int | None = None
            try:
                meta = pq.read_metadata(path)
                rows = int(meta.num_rows)
                raw = (meta.metadata or {}).get(_META)
                if raw is not None:
                    about = json.loads(raw)
            except (OSError, pa.ArrowInvalid, ValueError):
                pass
            embedder = about.get("embedder")
            found.append(
                StoredChunking(
                    key=path.name[: -len(_SUFFIX)],
                    path=path,
                    bytes=size,
                    modified=modified,
                    chunks=rows,
                    chunker=about.get("chunker"),
                    dataset=about.get("dataset"),
                    embedder=embedder if isinstance(embedder, dict) else None,
                    chunkmark=about.get("chunkmark"),
                    format=about.get("format"),
                )
            )
        return sorted(found, key=lambda e: (e.chunker or "", e.dataset or "", e.key))

    def remove(self, entries: Iterable[StoredChunking]) -> int:
        """Remove these chunkings; returns how many files this call removed. Each file is
        first renamed to a hidden trash name (atomic: a reader opening it by its key gets the
        whole file or none, and recomputes), then deleted."""
        removed = 0
        for entry in entries:
            trash = entry.path.with_name(f".trash-{entry.key}-{os.getpid()}-{secrets.token_hex(4)}")
            try:
                os.replace(entry.path, trash)
            except FileNotFoundError:
                continue  # removed by someone else meanwhile
            trash.unlink(missing_ok=True)
            removed += 1
        return removed

    def _files(self, *, hidden: bool) -> list[Path]:
        """The store's chunk files; with ``hidden``, every file in its folder."""
        try:
            names = os.listdir(self.folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [
            self.folder / name
            for name in names
            if hidden or (name.endswith(_SUFFIX) and not name.startswith("."))
        ]


def _stat(path: Path) -> tuple[int, float]:
    """Size and last change of ``path``; (-1, 0.0) when it is gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return -1, 0.0
    return st.st_size, st.st_mtime
