"""File helpers shared by every writer."""

from __future__ import annotations

import os
import secrets
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so
    ``path`` is either untouched or complete (parent folders are created).

    The file gets the mode any new file gets, ``0o666`` less the process's umask (a CI artifact,
    a shared folder or a web server reads it as the user expects): the temporary file is created
    with that mode, not with :func:`tempfile.mkstemp`'s private ``0o600``, which the rename
    would keep."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file beside ``path`` with an unused name, opened for writing with mode
    ``0o666`` (the kernel applies the umask, as for any new file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # another writer's temporary file took the name
            continue


def read_parquet(path: Path, columns: list[str] | None = None) -> Any:
    """One parquet file as a ``pyarrow.Table`` (``columns``: only those), read by pyarrow's
    file reader. ``pyarrow.parquet.read_table`` given a path goes through ``pyarrow.dataset``,
    whose import also imports pandas: more time than a fully cached run spends on its work.
    Raises OSError for a missing or unreadable file and ``pyarrow.ArrowInvalid`` for one that
    is not parquet, as ``read_table`` does."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as reader:
        return reader.read(columns=columns)


def read_text(path: Path) -> str:
    """The text of a UTF-8 file, exactly as stored (no newline translation)."""
    from chunkmark.errors import DatasetError

    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DatasetError(f"Cannot read {path}: {reason}.", "Check the path.") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{path} is not UTF-8 text (invalid byte at offset {exc.start}).",
            "Convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8`.",
        ) from None


@cache
def shipped_prompt(package: str, file: str) -> str:
    """The text of ``prompts/<file>`` shipped in the package ``chunkmark.<package>`` (the
    chunkers', the answers'...), without leading and trailing newlines; read once."""
    path = resources.files(f"chunkmark.{package}").joinpath("prompts").joinpath(file)
    return path.read_text(encoding="utf-8").strip("\n")
