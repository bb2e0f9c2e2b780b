"""A rerun with a new results folder reads chunks and token counts back from the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkmark.chunkers import Chunk
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.runner import evaluate

SPECS = ["fixed_tokens(size=100, overlap=20)", "recursive(size=80)"]


def test_round_trip_keeps_spans_embed_texts_and_tokens(tmp_path: Path) -> None:
    store = ChunkStore(tmp_path)
    chunks = [Chunk("a", 0, 5), Chunk("a", 3, 9, "# Title\n\nbody"), Chunk("b", 0, 1)]
    tokens = np.array([2, 3, 1], dtype=np.int64)
    store.put("k", chunks, tokens)
    got = store.get("k")
    assert got is not None
    assert got[0] == chunks
    np.testing.assert_array_equal(got[1], tokens)
    assert store.get("missing") is None


def test_a_damaged_file_is_recomputed_not_trusted(tmp_path: Path) -> None:
    store = ChunkStore(tmp_path)
    store.folder.mkdir(parents=True)
    (store.folder / "k.parquet").write_bytes(b"not parquet")
    assert store.get("k") is None


def test_key_depends_on_spec_data_and_embedder() -> None:
    base = chunk_key("fixed_tokens(size=1)", "fp", None)
    assert base == chunk_key("fixed_tokens(size=1)", "fp", None)
    assert base != chunk_key("fixed_tokens(size=2)", "fp", None)
    assert base != chunk_key("fixed_tokens(size=1)", "other", None)
    assert base != chunk_key("fixed_tokens(size=1)", "fp", {"name": "m"})


@pytest.mark.parametrize("no_cache", [False, True])
def test_rerun_reads_chunks_back(tmp_path: Path, no_cache: bool) -> None:
    options = dict(
        dataset="demo",
        chunkers=SPECS,
        embedders=["fake"],
        k=[1, 3],
        cache_dir=tmp_path / "cache",
        no_cache=no_cache,
    )
    cold = evaluate(out=tmp_path / "cold", **options)  # type: ignore[arg-type]
    warm = evaluate(out=tmp_path / "warm", **options)  # type: ignore[arg-type]
    assert warm.summary == cold.summary
    for cell in warm.manifest["cells"]:
        if no_cache:
            assert "count_tokens" in cell["timings"]
        else:
            assert "count_tokens" not in cell["timings"]  # counts came from the store
    stored = list((tmp_path / "cache" / "chunks").glob("*.parquet"))
    assert len(stored) == (0 if no_cache else len(SPECS))
