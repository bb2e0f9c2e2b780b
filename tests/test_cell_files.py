"""Each computed cell leaves its chunks and its rankings beside its results (for the report's
inspector), and they agree with the scored metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

import chunkmark


def test_chunks_and_rankings_are_written_and_agree_with_the_metrics(tmp_path: Path) -> None:
    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=["fixed_tokens(size=100, overlap=0)"],
        embedders=["fake()"],
        k=[1, 3],
        out=tmp_path,
        no_cache=True,
    )
    (cell,) = results.manifest["cells"]
    base = tmp_path / "cells" / cell["id"]
    chunks = pq.read_table(f"{base}.chunks.parquet").to_pydict()
    ranking = pq.read_table(f"{base}.ranking.parquet").to_pydict()
    assert len(chunks["start"]) == cell["n_chunks"] == json.loads(json.dumps(cell))["n_chunks"]
    assert sum(chunks["tokens"]) == cell["chunk_tokens"]
    dataset = chunkmark.load_dataset("demo")
    questions = {q.id: q for q in dataset.questions}
    assert ranking["question_id"] == [q.id for q in dataset.questions]
    scored = pq.read_table(tmp_path / "results.parquet").to_pydict()
    hits = {
        q: h
        for q, k, h in zip(scored["question_id"], scored["k"], scored["hit"], strict=True)
        if k == "1"
    }
    for qid, ids, scores in zip(
        ranking["question_id"], ranking["chunks"], ranking["scores"], strict=True
    ):
        assert len(ids) == 3 and scores == sorted(scores, reverse=True)
        top = ids[0]
        q = questions[qid]
        same_doc = chunks["doc_id"][top] == q.doc_id
        overlaps = any(
            chunks["start"][top] < e.end and e.start < chunks["end"][top] for e in q.excerpts
        )
        assert hits[qid] == float(same_doc and overlaps)
    # The cell's boundary diagnostics, recomputed by hand from its chunk file.
    diagnostics = cell["diagnostics"]
    assert diagnostics["chunks"] == len(chunks["start"])
    excerpts = [(q.doc_id, e.start, e.end) for q in dataset.questions for e in q.excerpts]
    spans = list(zip(chunks["doc_id"], chunks["start"], chunks["end"], strict=True))
    cut = sum(
        not any(d == doc and s <= lo and hi <= e for d, s, e in spans) for doc, lo, hi in excerpts
    )
    assert (diagnostics["excerpts"]["excerpts"], diagnostics["excerpts"]["cut"]) == (
        len(excerpts),
        cut,
    )
    assert diagnostics["tokens"]["count"] == len(chunks["tokens"])
    assert diagnostics["tokens"]["max"] == max(chunks["tokens"])


def test_the_run_writes_its_report_unless_told_not_to(tmp_path: Path) -> None:
    options = {"dataset": "demo", "chunkers": ["fixed_tokens(size=200)"], "embedders": ["fake()"]}
    with_report = chunkmark.evaluate(out=tmp_path / "a", k=[1], no_cache=True, **options)
    assert with_report.files["report"] == tmp_path / "a" / "report.html"
    assert (tmp_path / "a" / "report.html").stat().st_size > 0
    without = chunkmark.evaluate(out=tmp_path / "b", k=[1], no_cache=True, report=False, **options)
    assert "report" not in without.files and not (tmp_path / "b" / "report.html").exists()
