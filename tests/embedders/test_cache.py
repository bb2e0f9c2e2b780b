from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.counters import EmbedderStats
from chunkmark.embedders import CachedEmbedder, Embedder, EmbeddingCache, resolve_cache_dir
from chunkmark.embedders.cache import DB_NAME, cache_keys
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import ConfigError, EmbeddingError

TEXTS = ["alpha beta", "gamma delta", "alpha beta", "epsilon", "gamma delta", "zeta eta"]


def test_second_embed_is_all_hits(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path))
    first = cached.embed(TEXTS)
    assert (inner.stats().requests, inner.stats().inputs) == (1, 4)  # duplicates embedded once
    second = cached.embed(TEXTS)
    assert (inner.stats().requests, inner.stats().inputs) == (1, 4)  # nothing new embedded
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, FakeEmbedder().embed(TEXTS))
    stats = cached.stats().cache
    assert stats is not None
    assert (stats.requested, stats.distinct, stats.hits, stats.embedded) == (
        12,
        8,
        4,
        4,
    )
    assert isinstance(cached, Embedder)
    assert cached.identity() == inner.identity()


def test_partial_hits_keep_input_order(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path))
    cached.embed(["b", "d"])
    texts = ["a", "b", "c", "d", "a"]
    out = cached.embed(texts)
    assert inner.stats().inputs == 4  # b, d, then only a, c
    np.testing.assert_array_equal(out, FakeEmbedder().embed(texts))


def test_different_identity_misses(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    CachedEmbedder(FakeEmbedder(seed=0), cache).embed(TEXTS)
    other = FakeEmbedder(seed=1)
    out = CachedEmbedder(other, cache).embed(TEXTS)
    assert other.stats().inputs == 4
    np.testing.assert_array_equal(out, FakeEmbedder(seed=1).embed(TEXTS))
    assert sorted(n for _, n in cache.summary()) == [4, 4]


def test_query_and_document_are_separate_keys(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path))
    cached.embed(["same text"], kind="document")
    cached.embed(["same text"], kind="query")
    assert (inner.stats().requests, inner.stats().inputs) == (2, 2)
    identity = inner.identity()
    assert cache_keys(identity, "query", ["x"]) != cache_keys(identity, "document", ["x"])


def test_round_trip_across_instances(tmp_path: Path) -> None:
    vectors = FakeEmbedder(dimension=8).embed(TEXTS[:2])
    identity = {"embedder": "test", "name": "m"}
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many(identity, "document", TEXTS[:2], vectors)
    reopened = EmbeddingCache(tmp_path)
    mask, hits = reopened.get_many(identity, "document", ["nope", TEXTS[1], TEXTS[0]])
    assert mask.tolist() == [False, True, True]
    np.testing.assert_array_equal(hits, vectors[[1, 0]])
    assert hits.dtype == np.float32
    assert len(reopened) == 2
    assert (tmp_path / DB_NAME).exists()


def test_key_format_is_stable() -> None:
    """Keys of existing caches must keep matching: these digests were written by format 1."""
    keys = cache_keys({"embedder": "fake", "dim": 8}, "document", ["alpha", b"\x01\x02"])
    assert [k.hex() for k in keys] == [
        "5c9fd96623e04291ec84bb0ace6382ce78f8074314185b972c34c1159db1ebe9",
        "49df53c593cd39c635be4a6bbf72cba6867aabfc2777d701a8bc2047d73590bc",
    ]


def test_identity_that_is_not_json_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"Embedder identity .* cannot be written as JSON"):
        cache_keys({"dim": float("inf")}, "document", ["x"])
    vectors = np.ones((1, 2), dtype=np.float32)
    with pytest.raises(EmbeddingError, match="cannot be written as JSON"):
        EmbeddingCache(tmp_path).put_many({"m": object()}, "document", ["x"], vectors)


def test_no_hits_returns_empty(tmp_path: Path) -> None:
    mask, hits = EmbeddingCache(tmp_path).get_many({"a": 1}, "document", ["x", "y"])
    assert mask.tolist() == [False, False]
    assert hits.shape == (0, 0)


def test_without_cache_still_dedupes() -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, None)
    out = cached.embed(TEXTS)
    assert (inner.stats().requests, inner.stats().inputs) == (1, 4)
    np.testing.assert_array_equal(out, FakeEmbedder().embed(TEXTS))
    cached.embed(TEXTS)
    assert inner.stats().inputs == 8
    assert cached.stats().cache.hits == 0


def test_empty_input(tmp_path: Path) -> None:
    out = CachedEmbedder(FakeEmbedder(dimension=8), EmbeddingCache(tmp_path)).embed([])
    assert out.shape == (0, 8)


class _Exploding:
    """An embedder whose model must never be touched."""

    name = "exploding"

    def identity(self) -> dict[str, Any]:
        return FakeEmbedder().identity()

    def embed(self, texts: Any, kind: Any = "document") -> Any:
        raise AssertionError("the inner model was used although everything was cached")

    def stats(self) -> EmbedderStats:
        return EmbedderStats()


def test_all_hits_never_touch_inner(tmp_path: Path) -> None:
    CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path)).embed(TEXTS)
    out = CachedEmbedder(_Exploding(), EmbeddingCache(tmp_path)).embed(TEXTS)
    np.testing.assert_array_equal(out, FakeEmbedder().embed(TEXTS))


def test_many_vectors_round_trip(tmp_path: Path) -> None:
    n = 5000
    texts = [f"text number {i}" for i in range(n)]
    vectors = np.random.default_rng(0).standard_normal((n, 16)).astype(np.float32)
    cache = EmbeddingCache(tmp_path)
    cache.put_many({"m": 1}, "document", texts, vectors)
    mask, hits = cache.get_many({"m": 1}, "document", texts[::-1])
    assert mask.all()
    np.testing.assert_array_equal(hits, vectors[::-1])


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from chunkmark.embedders.cache import EmbeddingCache
    root, worker = sys.argv[1], int(sys.argv[2])
    cache = EmbeddingCache(root)
    for batch in range(20):
        # Overlapping keys across workers: text i always gets the vector [i, i, i, i].
        ids = range(batch * 10 + worker * 5, batch * 10 + worker * 5 + 30)
        texts = [f"t{i}" for i in ids]
        vectors = np.array([[i] * 4 for i in ids], dtype=np.float32)
        cache.put_many({"m": "shared"}, "document", texts, vectors)
        cache.get_many({"m": "shared"}, "document", texts)
    """
)


def test_concurrent_writers(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(w)]) for w in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    cache = EmbeddingCache(tmp_path)
    ids = list(range(0, 19 * 10 + 3 * 5 + 30))
    mask, hits = cache.get_many({"m": "shared"}, "document", [f"t{i}" for i in ids])
    assert mask.all()
    np.testing.assert_array_equal(hits, np.array([[i] * 4 for i in ids], dtype=np.float32))
    assert len(cache) == len(ids)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["a", "b c", "", "d e f", "b c "]), max_size=12))
def test_cached_equals_inner(texts: list[str]) -> None:
    cached = CachedEmbedder(FakeEmbedder(dimension=8), None)
    out = cached.embed(texts)
    assert out.shape == (len(texts), 8)
    if texts:
        np.testing.assert_array_equal(out, FakeEmbedder(dimension=8).embed(texts))


def test_resolve_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(tmp_path / "env"))
    assert resolve_cache_dir(tmp_path / "explicit") == tmp_path / "explicit"
    assert resolve_cache_dir(str(tmp_path / "s")) == tmp_path / "s"
    assert resolve_cache_dir(None) == tmp_path / "env"
    monkeypatch.delenv("CHUNKMARK_CACHE_DIR")
    import platformdirs

    assert resolve_cache_dir() == Path(platformdirs.user_cache_dir("chunkmark"))


def test_unwritable_cache_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="--no-cache"):
        EmbeddingCache(blocker / "cache").get_many({}, "document", ["x"])


class _FailsOnSecondCall(FakeEmbedder):
    def embed(self, texts: Any, kind: Any = "document") -> Any:
        if self.calls == 1:
            raise RuntimeError("endpoint down")
        return super().embed(texts, kind)


def test_interrupted_run_keeps_finished_slices(tmp_path: Path) -> None:
    texts = [f"text {i}" for i in range(10)]
    with pytest.raises(RuntimeError):
        CachedEmbedder(_FailsOnSecondCall(), EmbeddingCache(tmp_path), flush_every=4).embed(texts)
    inner = FakeEmbedder()
    out = CachedEmbedder(inner, EmbeddingCache(tmp_path), flush_every=4).embed(texts)
    assert inner.stats().inputs == 6  # the first 4 were stored before the failure
    np.testing.assert_array_equal(out, FakeEmbedder().embed(texts))


def test_slices_report_progress_and_keep_input_order(tmp_path: Path) -> None:
    from chunkmark.embedders.fake import FakeEmbedder

    texts = [("word " * n).strip() + f" {n}" for n in (5, 1, 9, 3, 7, 2, 8, 4, 6, 10)]
    seen: list[tuple[int, int]] = []
    cached = CachedEmbedder(
        FakeEmbedder(),
        EmbeddingCache(tmp_path),
        flush_every=3,
        progress=lambda d, t: seen.append((d, t)),
    )
    out = cached.embed(texts)
    assert np.array_equal(out, FakeEmbedder().embed(texts))
    assert seen == [(3, 10), (6, 10), (9, 10), (10, 10)]


def test_a_damaged_cache_is_a_clear_error(tmp_path: Path) -> None:
    import sqlite3

    from chunkmark.embedders.fake import FakeEmbedder
    from chunkmark.errors import ConfigError

    cache = EmbeddingCache(tmp_path)
    cache.put_many({"m": 1}, "document", ["a"], np.ones((1, 2), dtype=np.float32))
    cache.close()
    conn = sqlite3.connect(tmp_path / "embeddings.sqlite3")
    conn.execute("DROP TABLE vectors")
    conn.execute("CREATE TABLE vectors (key BLOB PRIMARY KEY)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match=r"embedding cache.*Delete that cache folder"):
        CachedEmbedder(FakeEmbedder(), EmbeddingCache(tmp_path)).embed(["a"])
