"""The SQLite store base: format versions, errors, transactions, close, forks, processes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chunkmark.errors import ConfigError, LLMError
from chunkmark.sqlite_db import SQLiteStore, canonical_identity

SCHEMA = "CREATE TABLE IF NOT EXISTS items (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"


def store(path: Path, version: int = 1) -> SQLiteStore:
    return SQLiteStore(
        path,
        schema=SCHEMA,
        version=version,
        what="the test store",
        fix="Open another file.",
        damaged_fix="Delete the test store.",
    )


def put(db: SQLiteStore, name: str, value: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT INTO items (name, value) VALUES (?, ?)", (name, value))


def count(db: SQLiteStore) -> int:
    with db.connection() as conn:
        (n,) = conn.execute("SELECT COUNT(*) FROM items").fetchone()
    return int(n)


def test_opens_lazily_in_wal_mode_with_its_schema(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "store.sqlite3"
    db = store(path)
    assert not path.exists()
    put(db, "a", 1)
    assert count(db) == 1
    with db.connection() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT value FROM meta").fetchone() == ("1",)


def test_other_format_version_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    put(store(path), "a", 1)
    with pytest.raises(ConfigError) as info:
        count(store(path, version=2))
    assert "The test store at" in info.value.problem
    assert "has format 1, this chunkmark writes format 2" in info.value.problem
    assert count(store(path)) == 1  # never rewritten


def test_unopenable_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="Cannot open the test store") as info:
        count(store(blocker / "store.sqlite3"))
    assert info.value.fix == "Open another file."


def test_failing_statement_is_a_clear_error(tmp_path: Path) -> None:
    db = store(tmp_path / "store.sqlite3")
    with (
        pytest.raises(ConfigError, match=r"The test store at .* cannot be used") as info,
        db.connection() as conn,
    ):
        conn.execute("SELECT * FROM missing")
    assert info.value.fix == "Delete the test store."
    assert count(db) == 0  # the lock was released


def test_transaction_is_all_or_nothing(tmp_path: Path) -> None:
    db = store(tmp_path / "store.sqlite3")
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute("INSERT INTO items VALUES ('a', 1)")
        raise RuntimeError("interrupted")
    assert count(db) == 0
    with pytest.raises(ConfigError), db.transaction() as conn:
        conn.execute("INSERT INTO items VALUES ('b', 1)")
        conn.execute("INSERT INTO items VALUES ('b', 2)")  # duplicate key
    assert count(db) == 0
    put(db, "c", 3)
    assert count(db) == 1


def test_close_closes_and_a_later_use_reopens(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    with store(path) as db:
        put(db, "a", 1)
        with db.connection() as first:
            pass
    with pytest.raises(sqlite3.ProgrammingError):
        first.execute("SELECT 1")  # closed by leaving the with block
    db.close()  # closing twice is fine
    assert count(db) == 1
    with db.connection() as second:
        assert second is not first


def test_close_never_closes_an_inherited_connection(tmp_path: Path) -> None:
    db = store(tmp_path / "store.sqlite3")
    put(db, "a", 1)
    with db.connection() as conn:
        pass
    db._pid = -2  # as a forked child sees it: opened by another process
    db.close()
    assert conn.execute("SELECT COUNT(*) FROM items").fetchone() == (1,)
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    db = store(tmp_path / "store.sqlite3")
    put(db, "parent", 1)
    with db.connection() as parent_conn:
        pass
    pid = os.fork()
    if pid == 0:  # the child: exits with 0 only if every check held
        code = 1
        try:
            with db.connection() as conn:
                fresh = conn is not parent_conn
            put(db, "child", 2)
            code = 0 if fresh and count(db) == 2 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with db.connection() as conn:
        assert conn is parent_conn
        assert conn.execute("SELECT name FROM items ORDER BY name").fetchall() == [
            ("child",),
            ("parent",),
        ]
    put(db, "after", 3)
    assert count(db) == 3


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from chunkmark.sqlite_db import SQLiteStore
    path, tag = Path(sys.argv[1]), sys.argv[2]
    db = SQLiteStore(path, schema=sys.argv[3], version=1, what="w", fix="f", damaged_fix="d")
    for i in range(100):
        with db.transaction() as conn:
            conn.execute("INSERT INTO items VALUES (?, ?)", (f"{tag}-{i}", i))
        with db.connection() as conn:
            assert conn.execute("SELECT value FROM items WHERE name = ?", (f"{tag}-{i}",)).fetchone() == (i,)
    db.close()
    """
)


def test_processes_open_a_new_file_and_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "new" / "store.sqlite3"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, SCHEMA]) for tag in "abc"
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert count(store(path)) == 300


def test_canonical_identity_sorts_keys_and_names_bad_values() -> None:
    text = canonical_identity({"b": 1, "a": [1.5, None]}, what="LLM identity", error=LLMError)
    assert text == '{"a":[1.5,null],"b":1}'
    with pytest.raises(LLMError, match=r"LLM identity \{'a': nan\} cannot be written as JSON"):
        canonical_identity({"a": float("nan")}, what="LLM identity", error=LLMError)
    with pytest.raises(LLMError, match="cannot be written as JSON") as info:
        canonical_identity({"a": object()}, what="LLM identity", error=LLMError)
    assert info.value.fix is not None and "strings, numbers" in info.value.fix
