"""Chunks computed once per (chunker, dataset): an on-disk store under the cache folder.

A grid rerun with a new results folder, or another grid sharing chunker specs, reads each
chunker's spans and token counts back instead of chunking and counting again. The key hashes
the store format, the package version, the canonical chunker spec, the dataset fingerprint and,
for chunkers that embed while chunking (semantic chunkers using the cell's embedder), that
embedder's identity. Files are parquet, written atomically; an unreadable file is recomputed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from chunkmark.chunkers.base import Chunk
from chunkmark.files import write_bytes_atomic

STORE_FORMAT = 1
FOLDER = "chunks"


def chunk_key(chunker_spec: str, dataset_fingerprint: str, embedder: dict[str, Any] | None) -> str:
    """The store key of one chunker's output on one dataset."""
    from chunkmark.version import __version__

    payload = json.dumps(
        [STORE_FORMAT, __version__, chunker_spec, dataset_fingerprint, embedder],
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


class ChunkStore:
    """Chunk spans, embedded texts and token counts by key, as parquet files in ``root/chunks``."""

    def __init__(self, root: Path) -> None:
        self.folder = Path(root) / FOLDER

    def get(self, key: str) -> tuple[list[Chunk], npt.NDArray[np.int64]] | None:
        try:
            table = pq.read_table(self.folder / f"{key}.parquet")
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
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        try:
            write_bytes_atomic(self.folder / f"{key}.parquet", sink.getvalue().to_pybytes())
        except OSError:
            return  # a store that cannot be written only costs a recomputation next time
