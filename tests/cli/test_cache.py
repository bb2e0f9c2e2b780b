"""``chunkmark cache``: info against counts taken from the files themselves, clear, prune, the
confirmation, errors for folders that are not caches, and a writer running meanwhile."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.embedders.cache import EmbeddingCache
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.runner import evaluate
from chunkmark.llm.fake import FakeLLM
from cli.app_runner import error_line, invoke

SPECS = ["fixed_tokens(size=100, overlap=20)", "kamradt()"]
OTHER = {"embedder": "sentence_transformers", "name": "org/other-model", "dimension": 3}
DAY = 86_400


def fill(root: Path, out: Path) -> None:
    """A cache used by a real small run, plus two LLM clients' answers and a second model's
    vectors."""
    evaluate(dataset="demo", chunkers=SPECS, embedders=["fake()"], k=[1], cache_dir=root, out=out)
    for model, prompts in (("writer", 3), ("judge", 2)):
        llm = FakeLLM(["an answer"], model=model, cache_dir=root)
        for i in range(prompts):
            llm.complete("system", f"question {i}")
        assert llm.cache is not None
        llm.cache.close()
    with EmbeddingCache(root) as cache:
        cache.put_many(OTHER, "document", ["a", "b"], np.ones((2, 3), dtype=np.float32))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    fill(folder, tmp_path / "run")
    return folder


def query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows read with sqlite3 directly, not through chunkmark."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def on_disk(path: Path) -> int:
    return sum(
        os.stat(f"{path}{suffix}").st_size
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(f"{path}{suffix}")
    )


def info(root: Path) -> dict[str, Any]:
    result = invoke("cache", "info", "--cache-dir", str(root), "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def vectors_by_name(root: Path) -> Counter[str]:
    rows = query(
        root / "embeddings.sqlite3",
        "SELECT i.identity, COUNT(*) FROM vectors v JOIN identities i ON v.identity_id = i.id "
        "GROUP BY i.id",
    )
    counts: Counter[str] = Counter()
    for text, n in rows:
        identity = json.loads(text)
        counts[identity.get("name") or identity["embedder"]] += n
    return counts


def answers_by_model(root: Path) -> Counter[str]:
    rows = query(root / "llm.sqlite3", "SELECT identity FROM answers")
    return Counter(json.loads(text)["model"] for (text,) in rows)


def test_info_json_agrees_with_the_files(root: Path) -> None:
    data = info(root)
    emb, llm, chunks = (data["caches"][name] for name in ("embeddings", "llm", "chunks"))

    db = root / "embeddings.sqlite3"
    ((vectors, vector_bytes),) = query(db, "SELECT COUNT(*), SUM(LENGTH(vector)) FROM vectors")
    assert emb["entries"] == vectors > 0
    assert sum(m["bytes"] for m in emb["models"]) == vector_bytes
    assert {m["name"]: m["vectors"] for m in emb["models"]} == vectors_by_name(root)
    assert {m["name"]: m["dimension"] for m in emb["models"]} == {"fake": 64, "org/other-model": 3}
    assert emb["format"] == 1
    assert emb["bytes_on_disk"] == on_disk(db)

    assert llm["entries"] == 5
    assert {m["model"]: m["answers"] for m in llm["models"]} == answers_by_model(root)
    assert {m["provider"] for m in llm["models"]} == {"fake"}
    assert llm["bytes_on_disk"] == on_disk(root / "llm.sqlite3")

    files = sorted((root / "chunks").glob("*.parquet"))
    assert chunks["entries"] == len(files) == len(SPECS)
    rows = {pq.read_metadata(f).num_rows for f in files}
    assert {g["chunks"] for g in chunks["chunkers"]} == rows
    by_chunker = {g["chunker"]: g for g in chunks["chunkers"]}
    fixed, semantic = (str(CHUNKERS.resolve(spec)) for spec in SPECS)
    assert set(by_chunker) == {fixed, semantic}
    assert by_chunker[fixed]["embedder"] is None
    assert by_chunker[semantic]["embedder"] == "fake"
    fingerprint = load_dataset("demo").fingerprint
    assert {g["dataset"] for g in chunks["chunkers"]} == {fingerprint}
    assert all(g["current"] for g in chunks["chunkers"])
    assert chunks["bytes_on_disk"] == sum(f.stat().st_size for f in (root / "chunks").iterdir())
    assert data["bytes_on_disk"] == sum(c["bytes_on_disk"] for c in data["caches"].values())


def test_info_prints_each_cache(root: Path) -> None:
    result = invoke("cache", "info", "--cache-dir", str(root))
    assert result.exit_code == 0, result.output
    for text in ("Embeddings", "org/other-model", "LLM answers", "writer", "judge", "Chunks"):
        assert text in result.output
    assert "fixed_tokens(size=100, overlap=20)" in result.output


def test_info_of_a_cache_without_llm_answers(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    evaluate(
        dataset="demo",
        chunkers=SPECS[:1],
        embedders=["fake()"],
        k=[1],
        cache_dir=root,
        out=tmp_path / "run",
    )
    llm = info(root)["caches"]["llm"]
    assert llm["exists"] is False and llm["entries"] == 0
    assert not (root / "llm.sqlite3").exists()  # looking did not create it


def test_clear_one_model_keeps_the_others(root: Path) -> None:
    before = vectors_by_name(root)
    result = invoke(
        "cache", "clear", "embeddings", "--model", "other-model", "--yes", "--cache-dir", str(root)
    )
    assert result.exit_code == 0, result.output
    assert "Removed 2 vectors" in result.output
    assert vectors_by_name(root) == Counter({"fake": before["fake"]})

    result = invoke("cache", "clear", "llm", "--model", "judge", "--yes", "--cache-dir", str(root))
    assert "Removed 2 LLM answers" in result.output
    assert answers_by_model(root) == Counter({"writer": 3})

    # --model on chunks: only chunkings made with that embedder (the semantic chunker's)
    result = invoke(
        "cache", "clear", "chunks", "--model", "fake", "--yes", "--cache-dir", str(root)
    )
    assert "Removed 1 chunkings" in result.output
    (left,) = info(root)["caches"]["chunks"]["chunkers"]
    assert left["chunker"].startswith("fixed_tokens") and left["embedder"] is None


def test_clear_asks_first(root: Path) -> None:
    vectors = vectors_by_name(root)
    result = _clear_all(root, answer="n\n")
    assert result.exit_code == 1
    assert "Remove " in result.output and "Nothing removed." in result.output
    assert vectors_by_name(root) == vectors
    assert len(list((root / "chunks").glob("*.parquet"))) == len(SPECS)

    result = _clear_all(root, answer="y\n")
    assert result.exit_code == 0, result.output
    total = sum(vectors.values())
    assert f"Removed {total:,} vectors, 5 LLM answers, 2 chunkings" in result.output
    data = info(root)
    assert [c["entries"] for c in data["caches"].values()] == [0, 0, 0]
    assert query(root / "embeddings.sqlite3", "PRAGMA integrity_check") == [("ok",)]
    assert not list((root / "chunks").iterdir())  # no trash left behind

    again = invoke("cache", "clear", "--yes", "--cache-dir", str(root))
    assert "Nothing to remove" in again.output


def _clear_all(root: Path, answer: str) -> Any:
    from typer.testing import CliRunner

    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    return CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(root)], input=answer)


def test_clear_with_vacuum_shrinks_the_file(root: Path) -> None:
    db = root / "embeddings.sqlite3"
    result = invoke("cache", "clear", "embeddings", "--yes", "--vacuum", "--cache-dir", str(root))
    assert result.exit_code == 0, result.output
    assert "embeddings: compacted" in result.output
    assert on_disk(db) == info(root)["caches"]["embeddings"]["bytes_on_disk"]
    assert query(db, "PRAGMA freelist_count") == [(0,)]


def test_prune_by_age(root: Path) -> None:
    old = time.time() - 40 * DAY
    conn = sqlite3.connect(root / "llm.sqlite3")
    with conn:
        conn.execute("UPDATE answers SET created = ? WHERE identity LIKE '%writer%'", (old,))
    conn.close()
    files = sorted((root / "chunks").glob("*.parquet"))
    os.utime(files[0], (old, old))
    vectors = vectors_by_name(root)

    result = invoke("cache", "prune", "--older-than", "30", "--yes", "--cache-dir", str(root))
    assert result.exit_code == 0, result.output
    assert "Removed 3 LLM answers, 1 chunkings" in result.output
    assert "embeddings: not pruned by age" in result.stderr
    assert answers_by_model(root) == Counter({"judge": 2})
    assert sorted((root / "chunks").glob("*.parquet")) == files[1:]
    assert vectors_by_name(root) == vectors


def test_prune_removes_chunks_of_another_version(root: Path) -> None:
    store = ChunkStore(root)
    current = sorted(store.folder.glob("*.parquet"))
    key = chunk_key("fixed_tokens(size=7)", "fp", None)
    key.about["chunkmark"] = "0.0.1"
    store.put(key, [], np.zeros(0, dtype=np.int64))
    stale = [e for e in store.entries() if e.key == key]
    assert [e.current() for e in stale] == [False]

    result = invoke("cache", "prune", "--yes", "--cache-dir", str(root))
    assert result.exit_code == 0, result.output
    assert "Removed 1 chunkings" in result.output
    assert sorted(store.folder.glob("*.parquet")) == current
    assert sum(answers_by_model(root).values()) == 5  # no criterion: no answer is pruned


def test_a_removed_chunking_is_read_as_missing(tmp_path: Path) -> None:
    store = ChunkStore(tmp_path)
    key = chunk_key("fixed_tokens(size=7)", "fp", None)
    store.put(key, [], np.zeros(0, dtype=np.int64))
    (entry,) = store.entries()
    assert entry.chunker == "fixed_tokens(size=7)" and entry.chunks == 0
    assert store.remove([entry]) == 1
    assert store.remove([entry]) == 0  # already gone
    assert store.get(key) is None
    assert os.listdir(store.folder) == []


def test_a_missing_or_foreign_folder_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = invoke("cache", "info", "--cache-dir", str(missing))
    assert error_line(result).startswith(f"error: There is no cache folder at {missing}.")

    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"meow")
    for args in (("info",), ("clear", "--yes"), ("prune", "--yes")):
        result = invoke("cache", *args, "--cache-dir", str(foreign))
        line = error_line(result)
        assert f"{foreign} is not a chunkmark cache folder" in line
        assert "--cache-dir" in line and "\n" not in line
    assert os.listdir(foreign) == ["cat.jpg"]


def test_an_unknown_cache_name_is_a_usage_error(root: Path) -> None:
    result = invoke("cache", "clear", "vectors", "--yes", "--cache-dir", str(root))
    assert result.exit_code == 2


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from chunkmark.embedders.cache import EmbeddingCache

    root, stop = Path(sys.argv[1]), Path(sys.argv[2])
    cache = EmbeddingCache(root)
    keeper = {"embedder": "sentence_transformers", "name": "keeper", "dimension": 4}
    batch = 0
    while True:
        stopping = stop.exists()  # one more batch after the stop file appears
        texts = [f"w{batch}-{i}" for i in range(50)]
        vectors = np.full((50, 4), batch, dtype=np.float32)
        cache.put_many(keeper, "document", texts, vectors)
        mask, _ = cache.get_many(keeper, "document", texts)
        assert mask.all()
        batch += 1
        if batch == 1:
            print("ready", flush=True)
        if stopping:
            break
    print(batch, flush=True)
    """
)


@pytest.mark.parametrize(
    "command",
    [
        ["clear", "embeddings", "--model", "doomed", "--yes", "--vacuum"],
        ["prune", "--model", "doomed", "--yes", "--vacuum"],
    ],
)
def test_a_writer_running_meanwhile_keeps_its_rows(tmp_path: Path, command: list[str]) -> None:
    root = tmp_path / "cache"
    doomed = {"embedder": "sentence_transformers", "name": "doomed", "dimension": 4}
    keeper = {"embedder": "sentence_transformers", "name": "keeper", "dimension": 4}
    before = [f"k{i}" for i in range(300)]
    with EmbeddingCache(root) as cache:
        cache.put_many(doomed, "document", [f"d{i}" for i in range(600)], np.ones((600, 4)))
        cache.put_many(keeper, "document", before, np.full((300, 4), -1.0))
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(root), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"  # the writer is in its loop
        result = invoke("cache", *command, "--cache-dir", str(root))
    finally:
        stop.touch()  # the writer was writing all along: it stops only now
        out, _ = writer.communicate(timeout=300)
    assert writer.returncode == 0
    assert result.exit_code == 0, result.output
    assert "Removed 600 vectors" in result.output
    batches = int(out.split()[-1])
    assert batches >= 2

    assert query(root / "embeddings.sqlite3", "PRAGMA integrity_check") == [("ok",)]
    with EmbeddingCache(root) as cache:
        mask, _ = cache.get_many(doomed, "document", [f"d{i}" for i in range(600)])
        assert not mask.any()
        mask, hits = cache.get_many(keeper, "document", before)
        assert mask.all() and (hits == -1).all()
        for batch in range(batches):
            mask, hits = cache.get_many(keeper, "document", [f"w{batch}-{i}" for i in range(50)])
            assert mask.all() and (hits == batch).all()
        assert len(cache) == 300 + 50 * batches


def test_info_counts_every_folder_and_model2vecs_dimension(tmp_path: Path) -> None:
    from chunkmark.embedders.cache import CachedEmbedder
    from chunkmark.embedders.model2vec import Model2VecEmbedder
    from static_models import write_tiny_static_model

    root = tmp_path / "cache"
    fill(root, tmp_path / "run")
    # a model built into the cache (as model2vec() distils MiniLM there) and its vectors
    folder, _ = write_tiny_static_model(root / "models" / "tiny-static", dimension=8)
    embedder = CachedEmbedder(Model2VecEmbedder(str(folder)), EmbeddingCache(root))
    embedder.embed(["a text", "another text", "a third"], kind="document")
    embedder.cache.close()
    data = info(root)
    on_disk_now = sum(
        os.stat(os.path.join(where, f)).st_size for where, _, files in os.walk(root) for f in files
    )
    assert data["bytes_on_disk"] == on_disk_now  # every file of the folder, models/ included
    (models,) = [o for o in data["others"] if o["path"] == str(root / "models")]
    assert models["files"] == sum(1 for p in (root / "models").rglob("*") if p.is_file()) > 0
    assert models["bytes_on_disk"] == sum(
        p.stat().st_size for p in (root / "models").rglob("*") if p.is_file()
    )
    rows = query(
        root / "embeddings.sqlite3",
        "SELECT DISTINCT v.dim FROM vectors v JOIN identities i ON v.identity_id = i.id "
        "WHERE i.identity LIKE '%model2vec%'",
    )
    (m2v,) = [m for m in data["caches"]["embeddings"]["models"] if m["name"] == "model2vec"]
    assert rows == [(8,)] and m2v["dimension"] == 8 and m2v["vectors"] == 3
    printed = invoke("cache", "info", "--cache-dir", str(root), columns=250)
    assert printed.exit_code == 0, printed.output
    assert str(root / "models") in printed.output and "models built on first use" in printed.output
    assert re.search(r"model2vec\s+8\s+3\s", printed.output)
