"""SQLite files shared safely by threads and processes: how the caches open, use and key them.

A database is opened in WAL mode with a long busy timeout (writers wait for each other instead
of failing), autocommit (callers open their own transactions), and a format version in a
``meta`` table that must match the code's. :class:`SQLiteStore` is the base of every cache: one
lazily opened connection per process (a forked child opens its own), used under a thread lock,
with SQLite failures turned into a :class:`ConfigError` that says how to recover.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chunkmark.errors import ChunkmarkError, ConfigError

_Store = TypeVar("_Store", bound="SQLiteStore")

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
            f"{_capitalized(what)} at {path} has format {found}, "
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


@dataclass(eq=False, repr=False)
class SQLiteStore:
    """One SQLite database at ``path``, shared by the threads of a process and by processes.

    The connection is opened by :func:`open_versioned` on first use with ``schema``, format
    ``version`` and ``page_size``; ``what`` names the store in errors ("the embedding cache"),
    ``fix`` says what to do when it cannot be opened and ``damaged_fix`` what to do when a
    statement fails on it. A child process never uses its parent's connection: it opens its own.
    """

    path: Path
    _: KW_ONLY
    schema: str
    version: int
    what: str
    fix: str
    damaged_fix: str
    page_size: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _conn: sqlite3.Connection | None = field(default=None, init=False)
    _pid: int = field(default=-1, init=False)

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """This process's connection, held under the store's thread lock; an SQLite error in
        the block becomes a :class:`ConfigError`."""
        with self._lock:
            conn = self._open()
            try:
                yield conn
            except sqlite3.Error as exc:
                raise ConfigError(
                    f"{_capitalized(self.what)} at {self.path} cannot be used: {exc}.",
                    self.damaged_fix,
                ) from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """:meth:`connection` inside one write transaction: committed when the block ends,
        rolled back when it raises, so other processes see all of it or none."""
        with self.connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def disk_bytes(self) -> int:
        """Bytes the database takes on disk: its file plus the ``-wal`` and ``-shm`` files."""
        return sum(_size(Path(f"{self.path}{suffix}")) for suffix in ("", "-wal", "-shm"))

    def stored_format(self) -> str:
        """The format version written in the database's ``meta`` table."""
        with self.connection() as conn:
            (found,) = conn.execute(
                "SELECT value FROM meta WHERE name = 'format_version'"
            ).fetchone()
        return str(found)

    def compact(self) -> bool:
        """Give freed pages back to the file system (``VACUUM``, then truncate the WAL file),
        only if no other connection is writing right now: with a writer active it does
        nothing and returns False, so a running writer is never kept waiting on it.

        ``VACUUM`` is one write transaction (readers keep their snapshot, the row ids of the
        caches' ``INTEGER PRIMARY KEY`` tables are kept); while it runs, a writer that starts
        waits for it under the busy timeout."""
        with self.connection() as conn:
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                return False
            finally:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return True

    def close(self) -> None:
        """Close this process's connection (a later use reopens it); an inherited one is only
        dropped, never closed, since it belongs to the parent process."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self: _Store) -> _Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _opened(self, conn: sqlite3.Connection) -> None:
        """Called with each newly opened connection; subclasses reset per-connection memos."""

    def _open(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = open_versioned(
            self.path,
            self.schema,
            self.version,
            what=self.what,
            fix=self.fix,
            page_size=self.page_size,
        )
        self._conn, self._pid = conn, os.getpid()
        self._opened(conn)
        return conn


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON for cache keys (sorted keys, no whitespace); raises
    ValueError or TypeError for values JSON cannot hold."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def canonical_identity(identity: dict[str, Any], *, what: str, error: type[ChunkmarkError]) -> str:
    """``identity`` as canonical JSON (:func:`canonical_json`); a value JSON cannot hold raises
    ``error`` naming it as ``what`` ("Embedder identity")."""
    try:
        return canonical_json(identity)
    except (TypeError, ValueError) as exc:
        raise error(
            f"{what} {identity!r} cannot be written as JSON: {exc}.",
            "Identities may hold only strings, numbers, booleans, None, lists and dicts.",
        ) from None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]
