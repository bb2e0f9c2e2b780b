"""On-disk results: one parquet file per finished cell (written atomically), then the combined
``results.parquet``, ``summary.csv`` and ``manifest.json``."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from chunkmark.errors import ConfigError
from chunkmark.files import read_parquet, write_bytes_atomic

CELL_META_KEY = b"chunkmark.cell"


def parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue())


def write_cell(
    path: Path, table: pa.Table, facts: dict[str, Any], chunks: pa.Table, rankings: pa.Table
) -> None:
    """A finished cell's chunks and rankings beside ``path``, then its rows with ``facts`` in
    their metadata at ``path`` (last: that file marks the cell done), each written atomically."""
    meta = dict(table.schema.metadata or {})
    meta[CELL_META_KEY] = json.dumps(facts).encode()
    write_bytes_atomic(path.with_suffix(".chunks.parquet"), parquet_bytes(chunks))
    write_bytes_atomic(path.with_suffix(".ranking.parquet"), parquet_bytes(rankings))
    write_bytes_atomic(path, parquet_bytes(table.replace_schema_metadata(meta)))


def read_cell(path: Path) -> tuple[pa.Table, dict[str, Any]] | None:
    """A finished cell, or None when the file is missing or unreadable (it is then recomputed)."""
    if not path.is_file():
        return None
    try:
        table = read_parquet(path)
    except (OSError, pa.ArrowInvalid):
        return None
    raw = (table.schema.metadata or {}).get(CELL_META_KEY)
    if raw is None:
        return None
    facts: dict[str, Any] = json.loads(raw)
    return table, facts


def write_run(
    out: Path,
    tables: Sequence[pa.Table],
    summary: list[dict[str, Any]],
    files: dict[str, bytes],
    manifest: dict[str, Any],
) -> dict[str, Path]:
    """A run's files in ``out``, each written atomically: ``results.parquet`` (``tables`` as
    one, without their metadata), ``summary.csv`` (``summary``), ``files`` (name: bytes) and
    ``manifest.json`` last. Returns their paths by stem (``results``, ``summary``...)."""
    tables = [t.replace_schema_metadata(None) for t in tables]
    combined = pa.concat_tables(tables) if tables else pa.table({})
    named = {
        "results.parquet": parquet_bytes(combined),
        "summary.csv": csv_bytes(summary),
        **files,
        "manifest.json": json_bytes(manifest),
    }
    for name, data in named.items():
        write_bytes_atomic(out / name, data)
    return {Path(name).stem: out / name for name in named}


def csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    """``rows`` as CSV (the first row's keys are the header; empty without rows)."""
    import io

    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue().encode()


def json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, default=str) + "\n").encode()


def write_json(path: Path, data: Any) -> None:
    write_bytes_atomic(path, json_bytes(data))


_ELSEWHERE = "choose another results folder (--out, or out: in the experiment file)."


def prepare_out_dir(path: Path) -> Path:
    """Create the results folder ``path`` (and its parents) and check, by writing and removing
    a small file, that results can be written in it; else a ConfigError naming the path."""
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"The results path {path} exists and is not a folder.",
            f"Move that file away, or {_ELSEWHERE}",
        )
    blocker = _file_ancestor(path)
    if blocker is not None:
        raise ConfigError(
            f"Cannot create the results folder {path}: {blocker} is a file, not a folder.",
            f"Rename that file, or {_ELSEWHERE}",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        _probe_write(path)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write results in {path}: {_reason(exc)}.",
            f"Make the folder writable, or {_ELSEWHERE}",
        ) from None
    return path


def _file_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a folder, else None."""
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def _probe_write(folder: Path) -> None:
    """Write a small file in ``folder`` and remove it again (raises OSError when that fails)."""
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".chunkmark-probe-", suffix=".tmp")
    try:
        os.write(fd, b"ok")
    finally:
        os.close(fd)
        Path(probe).unlink(missing_ok=True)


def _reason(exc: OSError) -> str:
    """The operating system's words for ``exc`` (without the path), lower-case."""
    reason = exc.strerror or type(exc).__name__
    return reason[:1].lower() + reason[1:]
