"""``chunkmark.evaluate`` from Python, with a counting fake embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkmark
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import ConfigError, SpecError

CREATED: list[FakeEmbedder] = []


@EMBEDDERS.register("counting_fake")
def counting_fake(dimension: int = 32) -> FakeEmbedder:
    """Fake embedder that keeps a handle on every instance, for counting model calls."""
    embedder = FakeEmbedder(dimension=dimension)
    CREATED.append(embedder)
    return embedder


CHUNKERS_ = ["fixed_tokens(size=100)", "fixed_tokens(size=100, overlap=50)", "words(n=60)"]


def _run(tmp_path: Path, out: str, **extra: Any) -> chunkmark.Results:
    options: dict[str, Any] = {
        "dataset": "demo",
        "chunkers": CHUNKERS_,
        "embedders": ["counting_fake()"],
        "k": [1, 3, 5, "min"],
        "cache_dir": tmp_path / "cache",
    }
    options.update(extra)
    return chunkmark.evaluate(out=tmp_path / out, **options)


def test_questions_embedded_once_and_warm_run_embeds_nothing(tmp_path: Path) -> None:
    CREATED.clear()
    cold = _run(tmp_path, "cold")
    (fake,) = CREATED
    n_questions = cold.manifest["datasets"][0]["questions"]
    # One query call, one call per cell; the shared windows of the two fixed_tokens cells
    # (same start, same text) are embedded once.
    assert fake.calls == 1 + len(CHUNKERS_)
    n_chunks = sum(c["n_chunks"] for c in cold.manifest["cells"])
    assert n_questions < fake.texts_embedded < n_questions + n_chunks

    CREATED.clear()
    warm = _run(tmp_path, "warm")
    (fake_warm,) = CREATED
    assert fake_warm.calls == 0 and fake_warm.texts_embedded == 0
    assert warm.summary == cold.summary


def test_all_k_come_from_one_ranking(tmp_path: Path) -> None:
    res = _run(tmp_path, "out", no_cache=True)
    rows = {(r["chunker"], r["k"]): r for r in res.overall()}
    for chunker in {r["chunker"] for r in res.overall()}:
        recalls = [rows[(chunker, k)]["recall_mean"] for k in ("1", "3", "5")]
        assert recalls == sorted(recalls)  # deeper retrieval never loses recall
        hits = [rows[(chunker, k)]["hit_mean"] for k in ("1", "3", "5")]
        assert hits == sorted(hits)
        assert rows[(chunker, "1")]["mrr_mean"] == pytest.approx(rows[(chunker, "1")]["hit_mean"])


def test_per_document_scopes_partition_the_questions(tmp_path: Path) -> None:
    res = _run(tmp_path, "out", no_cache=True, chunkers=["words(n=60)"], k=[3])
    rows = [r for r in res.summary if r["k"] == "3"]
    overall = next(r for r in rows if r["scope"] == "all")
    per_doc = [r for r in rows if r["scope"] != "all"]
    assert sum(r["n_questions"] for r in per_doc) == overall["n_questions"]
    assert sum(r["n_chunks"] for r in per_doc) == overall["n_chunks"]
    weighted = sum(r["recall_mean"] * r["n_questions"] for r in per_doc) / overall["n_questions"]
    assert weighted == pytest.approx(overall["recall_mean"])
    assert overall["recall_ci_low"] <= overall["recall_mean"] <= overall["recall_ci_high"]


def test_same_seed_same_numbers(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", no_cache=True, seed=7, chunkers=["words(n=60)"])
    b = _run(tmp_path, "b", no_cache=True, seed=7, chunkers=["words(n=60)"])
    assert a.summary == b.summary
    assert not np.isnan(a.summary[0]["recall_ci_low"])


def test_specs_are_validated_before_any_work(tmp_path: Path) -> None:
    CREATED.clear()
    with pytest.raises(SpecError, match="Unknown chunker"):
        _run(tmp_path, "bad", chunkers=["words(n=60)", "nope()"])
    with pytest.raises(ConfigError, match="Invalid k"):
        _run(tmp_path, "bad", k=[0])
    assert CREATED == []
    assert not (tmp_path / "bad" / "cells").exists()
