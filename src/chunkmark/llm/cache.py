"""LLM answers on disk: ``llm.sqlite3`` in the cache folder, safe across processes and threads.

An answer is keyed by the sha256 of the cache format version, the client's identity (provider,
model, API, host; never the key), the system and user prompts, ``max_tokens``, the temperature
and the seed. A rerun with the same inputs asks the endpoint nothing. Only answers are stored,
never failures. The database is in WAL mode with a long busy timeout, like the embedding cache,
so parallel workers can share one folder.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from chunkmark.errors import ConfigError, LLMError
from chunkmark.sqlite_db import canonical_json, open_versioned

CACHE_FORMAT_VERSION = 1
DB_NAME = "llm.sqlite3"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key BLOB PRIMARY KEY,   -- sha256 of everything that changes the answer
    identity TEXT NOT NULL, -- the client identity as JSON, for inspection
    answer TEXT NOT NULL,
    created REAL NOT NULL
);
"""


def canonical_identity(identity: dict[str, Any]) -> str:
    """The identity as canonical JSON (sorted keys, no whitespace); raises for non-JSON values."""
    try:
        return canonical_json(identity)
    except (TypeError, ValueError) as exc:
        raise LLMError(
            f"LLM identity {identity!r} cannot be written as JSON: {exc}.",
            "Identities may hold only strings, numbers, booleans, None, lists and dicts.",
        ) from None


def cache_key(
    identity: dict[str, Any],
    system: str,
    user: str,
    *,
    max_tokens: int,
    temperature: float | None,
    seed: int,
) -> bytes:
    """The 32-byte key of one request: every part length-prefixed, so no two requests collide."""
    h = hashlib.sha256()
    parts = (
        str(CACHE_FORMAT_VERSION),
        canonical_identity(identity),
        system,
        user,
        str(max_tokens),
        repr(None if temperature is None else float(temperature)),
        str(seed),
    )
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


class LLMCache:
    """Answers keyed by :func:`cache_key`; one SQLite file, one connection per process."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        self.path = self.root / DB_NAME
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def get(self, key: bytes) -> str | None:
        """The cached answer for ``key``, or None."""
        with self._lock:
            row = self._run(
                lambda conn: conn.execute("SELECT answer FROM answers WHERE key = ?", (key,))
            ).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: bytes, identity: dict[str, Any], answer: str) -> None:
        """Store an answer; an answer already stored under ``key`` is kept."""
        text = canonical_identity(identity)
        with self._lock:
            self._run(
                lambda conn: conn.execute(
                    "INSERT OR IGNORE INTO answers (key, identity, answer, created) "
                    "VALUES (?, ?, ?, ?)",
                    (key, text, answer, time.time()),
                )
            )

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._run(
                lambda conn: conn.execute("SELECT COUNT(*) FROM answers")
            ).fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> LLMCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, statement: Any) -> sqlite3.Cursor:
        conn = self._open()
        try:
            cursor: sqlite3.Cursor = statement(conn)
        except sqlite3.Error as exc:
            raise ConfigError(
                f"The LLM answer cache at {self.path} cannot be used: {exc}.",
                "Delete that file (it only holds answers that can be asked again, at a cost), "
                "pass another --cache-dir, or run with --no-cache.",
            ) from None
        return cursor

    def _open(self) -> sqlite3.Connection:
        # A connection is never shared across a fork: a child process opens its own.
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = open_versioned(
            self.path,
            _SCHEMA,
            CACHE_FORMAT_VERSION,
            what="the LLM answer cache",
            fix="Pass a writable folder with --cache-dir (or CHUNKMARK_CACHE_DIR), "
            "delete a damaged llm.sqlite3, or run with --no-cache.",
        )
        self._conn, self._pid = conn, os.getpid()
        return conn
