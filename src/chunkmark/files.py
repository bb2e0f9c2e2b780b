"""File helpers shared by every writer."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so
    ``path`` is either untouched or complete (parent folders are created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_parquet(path: Path, columns: list[str] | None = None) -> Any:
    """One parquet file as a ``pyarrow.Table`` (``columns``: only those), read by pyarrow's
    file reader. ``pyarrow.parquet.read_table`` given a path goes through ``pyarrow.dataset``,
    whose import also imports pandas: more time than a fully cached run spends on its work.
    Raises OSError for a missing or unreadable file and ``pyarrow.ArrowInvalid`` for one that
    is not parquet, as ``read_table`` does."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as reader:
        return reader.read(columns=columns)
