"""On-disk results: one parquet file per finished cell (written atomically), then the combined
``results.parquet``, ``summary.csv`` and ``manifest.json``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from chunkmark.files import write_bytes_atomic

CELL_META_KEY = b"chunkmark.cell"


def write_cell(path: Path, table: pa.Table, facts: dict[str, Any]) -> None:
    meta = dict(table.schema.metadata or {})
    meta[CELL_META_KEY] = json.dumps(facts).encode()
    table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def read_cell(path: Path) -> tuple[pa.Table, dict[str, Any]] | None:
    """A finished cell, or None when the file is missing or unreadable (it is then recomputed)."""
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid):
        return None
    raw = (table.schema.metadata or {}).get(CELL_META_KEY)
    if raw is None:
        return None
    facts: dict[str, Any] = json.loads(raw)
    return table, facts


def write_results(path: Path, tables: Iterable[pa.Table]) -> None:
    tables = [t.replace_schema_metadata(None) for t in tables]
    combined = pa.concat_tables(tables) if tables else pa.table({})
    sink = pa.BufferOutputStream()
    pq.write_table(combined, sink)
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    import io

    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    write_bytes_atomic(path, buf.getvalue().encode())


def write_json(path: Path, data: Any) -> None:
    write_bytes_atomic(path, (json.dumps(data, indent=2, default=str) + "\n").encode())
