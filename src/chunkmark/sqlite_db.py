"""SQLite files shared safely by threads and processes: how the caches open them and key them.

A database is opened in WAL mode with a long busy timeout (writers wait for each other instead
of failing), autocommit (callers open their own transactions), and a format version in a
``meta`` table that must match the code's.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from chunkmark.errors import ConfigError

BUSY_TIMEOUT_MS = 120_000
META_SCHEMA = "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);"


def open_versioned(
    path: Path,
    schema: str,
    version: int,
    *,
    what: str,
    fix: str,
    page_size: int | None = None,
) -> sqlite3.Connection:
    """Open (creating if needed) the database at ``path`` with ``schema`` and format ``version``.

    ``what`` names it in errors ("the embedding cache"); ``fix`` says what to do when it cannot
    be opened. A file of another format is a :class:`ConfigError`, never silently rewritten.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            conn, found = _open_once(path, schema, version, page_size)
            break
        except sqlite3.OperationalError as exc:
            # Switching a new file to WAL takes an exclusive lock for which SQLite does not
            # always wait (its busy handler is skipped where waiting could deadlock): when
            # several processes open a new cache at once, one of them retries here.
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise ConfigError(f"Cannot open {what} at {path}: {exc}.", fix) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.25)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"Cannot open {what} at {path}: {exc}.", fix) from None
    if found != str(version):
        conn.close()
        raise ConfigError(
            f"{what[0].upper() + what[1:]} at {path} has format {found}, "
            f"this chunkmark writes format {version}.",
            "Use another --cache-dir or delete that cache file.",
        )
    return conn


def _open_once(
    path: Path, schema: str, version: int, page_size: int | None
) -> tuple[sqlite3.Connection, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if page_size is not None:
            conn.execute(f"PRAGMA page_size = {int(page_size)}")  # new databases only
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(META_SCHEMA + schema)
        conn.execute(
            "INSERT OR IGNORE INTO meta (name, value) VALUES ('format_version', ?)", (str(version),)
        )
        (found,) = conn.execute("SELECT value FROM meta WHERE name = 'format_version'").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn, str(found)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON for cache keys (sorted keys, no whitespace); raises
    ValueError or TypeError for values JSON cannot hold."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
