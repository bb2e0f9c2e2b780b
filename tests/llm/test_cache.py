"""The LLM answer cache: keys, storage, WAL mode, several processes, clear errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from chunkmark.errors import ConfigError, LLMError
from chunkmark.llm.cache import DB_NAME, LLMCache, cache_key

IDENTITY = {"provider": "openai", "model": "m", "api": "chat.completions", "host": "h"}


def key(
    identity: dict[str, Any] = IDENTITY,
    system: str = "s",
    user: str = "u",
    max_tokens: int = 10,
    temperature: float | None = 0.0,
    seed: int = 0,
) -> bytes:
    return cache_key(
        identity, system, user, max_tokens=max_tokens, temperature=temperature, seed=seed
    )


def test_key_covers_every_input() -> None:
    base = key()
    assert len(base) == 32
    variants = [
        key(identity={**IDENTITY, "model": "n"}),
        key(identity={**IDENTITY, "host": "other"}),
        key(system="s2"),
        key(user="u2"),
        key(max_tokens=11),
        key(temperature=0.2),
        key(temperature=None),
        key(seed=1),
        key(system="su", user=""),  # same concatenation, different split
    ]
    assert all(v != base for v in variants)
    assert len(set(variants)) == len(variants)


def test_key_ignores_identity_order_and_int_vs_float_temperature() -> None:
    reordered = dict(reversed(list(IDENTITY.items())))
    assert key(identity=reordered) == key()
    assert key(temperature=0) == key(temperature=0.0)


def test_put_get_and_first_answer_wins(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    k = key()
    assert cache.get(k) is None
    cache.put(k, IDENTITY, "first")
    cache.put(k, IDENTITY, "second")
    assert cache.get(k) == "first"
    assert len(cache) == 1
    cache.close()
    assert LLMCache(tmp_path).get(k) == "first"  # on disk


def test_database_is_in_wal_mode(tmp_path: Path) -> None:
    LLMCache(tmp_path).put(key(), IDENTITY, "x")
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_processes_write_concurrently(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from chunkmark.llm.cache import LLMCache, cache_key
        root, tag = sys.argv[1], sys.argv[2]
        cache = LLMCache(root)
        identity = {"provider": "fake"}
        for i in range(150):
            k = cache_key(identity, "s", f"{tag}-{i}", max_tokens=5, temperature=0.0, seed=0)
            cache.put(k, identity, f"answer {tag} {i}")
            assert cache.get(k) == f"answer {tag} {i}"
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), tag]) for tag in "ab"]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    cache = LLMCache(tmp_path)
    assert len(cache) == 300
    k = cache_key({"provider": "fake"}, "s", "b-149", max_tokens=5, temperature=0.0, seed=0)
    assert cache.get(k) == "answer b 149"


def test_other_format_version_is_a_clear_error(tmp_path: Path) -> None:
    LLMCache(tmp_path).put(key(), IDENTITY, "x")
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE name = 'format_version'")
    with pytest.raises(ConfigError, match="format 999"):
        LLMCache(tmp_path).get(key())


def test_unusable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="Cannot open the LLM answer cache"):
        LLMCache(blocker).get(key())


def test_key_format_is_stable() -> None:
    """Keys of existing caches must keep matching: this digest was written by format 1."""
    k = cache_key(
        {"provider": "openai", "model": "m"},
        "sys",
        "user é",
        max_tokens=10,
        temperature=0.0,
        seed=3,
    )
    assert k.hex() == "cd033529e5f29309db321a49e43dbcbe2b14ee4642c597efc5b49b94fdfc6e57"


def test_identity_that_is_not_json_is_an_llm_error(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match=r"LLM identity .* cannot be written as JSON"):
        key(identity={"model": float("nan")})
    with pytest.raises(LLMError, match="cannot be written as JSON"):
        LLMCache(tmp_path).put(key(), {"model": object()}, "x")


def test_a_damaged_cache_is_a_clear_error(tmp_path: Path) -> None:
    LLMCache(tmp_path).put(key(), IDENTITY, "x")
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("DROP TABLE answers")
        conn.execute("CREATE TABLE answers (key BLOB PRIMARY KEY)")
    with pytest.raises(ConfigError, match=r"The LLM answer cache at .* cannot be used") as info:
        LLMCache(tmp_path).get(key())
    assert info.value.fix is not None and "Delete that file" in info.value.fix
