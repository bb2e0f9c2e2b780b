"""LLM answers on disk: ``llm.sqlite3`` in the cache folder, safe across processes and threads.

An answer is keyed by the sha256 of the cache format version, the client's identity (provider,
model, API, host; never the key), the system and user prompts, ``max_tokens``, the temperature,
the seed and, when one is asked for, the JSON schema of the answer. A rerun with the same inputs
asks the endpoint nothing. Only answers are stored, never failures. The database is in WAL mode
with a long busy timeout, like the embedding cache, so parallel workers can share one folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkmark.errors import LLMError
from chunkmark.sqlite_db import SQLiteStore, canonical_identity

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


def _identity_json(identity: dict[str, Any]) -> str:
    return canonical_identity(identity, what="LLM identity", error=LLMError)


def cache_key(
    identity: dict[str, Any],
    system: str,
    user: str,
    *,
    max_tokens: int,
    temperature: float | None,
    seed: int,
    json_schema: dict[str, Any] | None = None,
) -> bytes:
    """The 32-byte key of one request: every part length-prefixed, so no two requests collide.

    A request without ``json_schema`` has the key it had before schemas existed; a schema adds
    one more part (its canonical JSON), so the same prompt with and without one differ.
    """
    h = hashlib.sha256()
    parts: tuple[str, ...] = (
        str(CACHE_FORMAT_VERSION),
        _identity_json(identity),
        system,
        user,
        str(max_tokens),
        repr(None if temperature is None else float(temperature)),
        str(seed),
    )
    if json_schema is not None:
        schema = canonical_identity(json_schema, what="JSON schema", error=LLMError)
        parts += ("json_schema", schema)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


@dataclasses.dataclass(frozen=True)
class ClientUsage:
    """One client identity in the cache: its answers, their bytes (UTF-8) and when the
    oldest and newest were written (seconds since the epoch; None without answers)."""

    identity: dict[str, Any]
    answers: int
    bytes: int
    oldest: float | None
    newest: float | None

    @property
    def provider(self) -> str:
        return str(self.identity.get("provider") or "?")

    @property
    def model(self) -> str:
        return str(self.identity.get("model") or "?")


class LLMCache(SQLiteStore):
    """Answers keyed by :func:`cache_key`; one SQLite file, one connection per process."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        super().__init__(
            self.root / DB_NAME,
            schema=_SCHEMA,
            version=CACHE_FORMAT_VERSION,
            what="the LLM answer cache",
            fix="Pass a writable folder with --cache-dir (or CHUNKMARK_CACHE_DIR), "
            "delete a damaged llm.sqlite3, or run with --no-cache.",
            damaged_fix="Delete that file (it only holds answers that can be asked again, "
            "at a cost), pass another --cache-dir, or run with --no-cache.",
        )

    def get(self, key: bytes) -> str | None:
        """The cached answer for ``key``, or None."""
        with self.connection() as conn:
            row = conn.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: bytes, identity: dict[str, Any], answer: str) -> None:
        """Store an answer; an answer already stored under ``key`` is kept."""
        text = _identity_json(identity)
        with self.connection() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO answers (key, identity, answer, created) "
                "VALUES (?, ?, ?, ?)",
                (key, text, answer, time.time()),
            )

    def __len__(self) -> int:
        with self.connection() as conn:
            (count,) = conn.execute("SELECT COUNT(*) FROM answers").fetchone()
        return int(count)

    def usage(self) -> list[ClientUsage]:
        """Each client identity in the cache with its answers, oldest first."""
        with self.connection() as conn:
            rows = conn.execute(
                "SELECT identity, COUNT(*), SUM(LENGTH(CAST(answer AS BLOB))), "
                "MIN(created), MAX(created) FROM answers GROUP BY identity ORDER BY MIN(created)"
            ).fetchall()
        return [
            ClientUsage(json.loads(text), int(n), int(size or 0), oldest, newest)
            for text, n, size, oldest, newest in rows
        ]

    def count(
        self,
        match: Callable[[dict[str, Any]], bool] | None = None,
        *,
        before: float | None = None,
    ) -> int:
        """How many answers :meth:`delete` with the same arguments would delete now."""
        with self.connection() as conn:
            return self._apply(conn, "SELECT COUNT(*)", match, before)

    def delete(
        self,
        match: Callable[[dict[str, Any]], bool] | None = None,
        *,
        before: float | None = None,
    ) -> int:
        """Delete the answers of every client identity ``match`` accepts (all with None) that
        were written before ``before`` (seconds since the epoch; any time with None), in one
        write transaction. Returns how many answers were deleted."""
        with self.transaction() as conn:
            return self._apply(conn, "DELETE", match, before)

    @staticmethod
    def _apply(
        conn: sqlite3.Connection,
        verb: str,
        match: Callable[[dict[str, Any]], bool] | None,
        before: float | None,
    ) -> int:
        """Run ``verb`` (``SELECT COUNT(*)`` or ``DELETE``) on the chosen answers; the count."""
        where, args = ("1", []) if before is None else ("created < ?", [before])
        if match is None:
            return _affected(conn.execute(f"{verb} FROM answers WHERE {where}", args), verb)
        texts = [t for (t,) in conn.execute("SELECT DISTINCT identity FROM answers")]
        total = 0
        for text in texts:
            if match(json.loads(text)):
                cursor = conn.execute(
                    f"{verb} FROM answers WHERE identity = ? AND {where}", [text, *args]
                )
                total += _affected(cursor, verb)
        return total


def _affected(cursor: sqlite3.Cursor, verb: str) -> int:
    return int(cursor.rowcount if verb == "DELETE" else cursor.fetchone()[0])
