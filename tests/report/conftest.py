"""Synthetic results folders for the report's tests, written without the runner.

``make_run(path)`` writes what ``chunkmark run --out`` writes in the current schema (several
datasets in one run, retrieval settings and scoring options as columns, a ``ranker`` column in
the ranking files, failed cells in the manifest); ``make_run(path, old=True)`` writes a folder of
the earlier schema (one dataset object, no retrieval, scoring or retrieved-token columns, ranking
files without ``ranker``). The per-question values are seeded random numbers: the tests compare
what the report reads and computes with what these folders hold.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import Dataset, Document, Question, load_dataset, write_jsonl
from chunkmark.embedders import EMBEDDERS
from chunkmark.metrics import METRICS
from chunkmark.spans import Span

CHUNKER_SPECS = ("fixed_tokens(size=50, overlap=0)", "fixed_tokens(size=100, overlap=0)")
FAILED_CHUNKER = "recursive(size=200)"
DENSE = "exact(block_rows=1024)"
BM25_RANKER = "bm25(method='lucene', k1=1.5, b=0.75)"
BUDGET = "token_budget(tokens=200)"
SETTINGS = ("top_k(k=1)", "top_k(k=5)", BUDGET, "bm25(k=5, method='lucene', k1=1.5, b=0.75)")
OLD_KS = ("1", "5", "min")
DEFAULT = ("position", "chars", "sum")
TOKENS = ("position", "tokens", "sum")  # a second scoring, only for top_k(k=5)
CHUNK_CHARS = 60
DEPTH = 10


@dataclass
class SyntheticRun:
    """A written folder and what it holds."""

    path: Path
    datasets: list[Dataset]
    chunkers: list[str]
    embedder: str
    # (dataset name, chunker) -> the cell's id
    cells: dict[tuple[str, str], str] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)

    def summary(self) -> list[dict[str, str]]:
        with (self.path / "summary.csv").open(newline="", encoding="utf-8") as handle:
            return [r for r in csv.DictReader(handle) if r["scope"] == "all"]


def _words(rng: np.random.Generator, n: int) -> str:
    vocab = ["alpha", "beta", "gamma", "delta", "chunk", "token", "river", "stone", "light"]
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), n))


def make_dataset(folder: Path, name: str, docs: int, questions: int, seed: int) -> Dataset:
    """A small dataset written as JSONL under ``folder/name`` and read back (so its recorded
    source loads with the same fingerprint)."""
    rng = np.random.default_rng(seed)
    documents = tuple(Document(f"{name}-d{i}", _words(rng, 120)) for i in range(docs))
    qs = []
    for i in range(questions):
        doc = documents[i % docs]
        start = int(rng.integers(0, len(doc.text) - 80))
        qs.append(Question(f"{name}-q{i}", f"question {i}?", doc.id, (Span(start, start + 40),)))
    write_jsonl(Dataset(name, documents, tuple(qs)), folder / name)
    return load_dataset(folder / name)


def _chunks(dataset: Dataset) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {"doc_id": [], "start": [], "end": [], "tokens": []}
    for d in dataset.documents:
        for start in range(0, len(d.text), CHUNK_CHARS):
            end = min(len(d.text), start + CHUNK_CHARS)
            cols["doc_id"].append(d.id)
            cols["start"].append(start)
            cols["end"].append(end)
            cols["tokens"].append((end - start) // 4 + 1)
    cols["embed_text"] = [None] * len(cols["doc_id"])
    return cols


def _rankings(rng: np.random.Generator, n_chunks: int, n_questions: int) -> list[list[int]]:
    return [rng.permutation(n_chunks)[:DEPTH].tolist() for _ in range(n_questions)]


def _depths(setting: str, ranking: list[int], tokens: list[int]) -> int:
    if setting.startswith("top_k(k=1)"):
        return 1
    if setting == BUDGET:
        used = total = 0
        for i in ranking:
            if total + tokens[i] > 200:
                break
            total += tokens[i]
            used += 1
        return used
    return 5


def _k_of(setting: str) -> str:
    if setting.startswith("top_k(k=1)"):
        return "1"
    return "" if setting == BUDGET else "5"


def _stats(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std())


def _summary_row(
    base: dict[str, Any], values: dict[str, np.ndarray], extra: dict[str, Any]
) -> dict[str, Any]:
    row = dict(base)
    row.update(extra)
    for m, v in values.items():
        row[f"{m}_mean"], row[f"{m}_std"] = _stats(v)
    for m in METRICS.with_interval():
        mean = float(values[m].mean())
        row[f"{m}_ci_low"], row[f"{m}_ci_high"] = mean - 0.05, mean + 0.05
    return row


def write_run(path: Path, folder: Path, *, old: bool = False, seed: int = 0) -> SyntheticRun:
    """Write a results folder at ``path`` (datasets under ``folder``); see the module doc."""
    rng = np.random.default_rng(seed)
    datasets = [make_dataset(folder, "alpha", 3, 12, seed)]
    if not old:
        datasets.append(make_dataset(folder, "beta", 2, 8, seed + 1))
    chunkers = [str(CHUNKERS.resolve(c)) for c in CHUNKER_SPECS]
    embedder = str(EMBEDDERS.resolve("fake()"))
    run = SyntheticRun(path, datasets, chunkers, embedder)
    (path / "cells").mkdir(parents=True)
    results: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    settings = [f"top_k(k={k})" if k.isdigit() else "top_k(k='min')" for k in OLD_KS]
    for dataset in datasets:
        for n, chunker in enumerate(chunkers):
            cell_id = f"{dataset.name}{n}"
            run.cells[(dataset.name, chunker)] = cell_id
            chunks = _chunks(dataset)
            pq.write_table(pa.table(chunks), path / "cells" / f"{cell_id}.chunks.parquet")
            qids = [q.id for q in dataset.questions]
            dense = _rankings(rng, len(chunks["doc_id"]), len(qids))
            bm25 = _rankings(rng, len(chunks["doc_id"]), len(qids))
            _write_ranking(path / "cells" / f"{cell_id}.ranking.parquet", qids, dense, bm25, old)
            facts = {
                "id": cell_id,
                "dataset": dataset.name,
                "chunker": chunker,
                "embedder": embedder,
                "n_chunks": len(chunks["doc_id"]),
                "chunk_tokens": int(sum(chunks["tokens"])),
                "timings": {"chunk": 0.01, "embed_documents": 0.02},
            }
            if not old:
                facts["fingerprint"] = dataset.fingerprint
                facts["retrieval"] = {DENSE: {"seconds": 0.001}, BM25_RANKER: {"seconds": 0.002}}
            cells.append(facts)
            quality = 0.2 + 0.3 * n  # the larger chunker is better on every metric
            for setting in settings if old else SETTINGS:
                scorings = [DEFAULT] if old or setting != "top_k(k=5)" else [DEFAULT, TOKENS]
                for scoring in scorings:
                    ranking = bm25 if setting.startswith("bm25") else dense
                    k_used = [_depths(setting, r, chunks["tokens"]) for r in ranking]
                    if setting == "top_k(k='min')":
                        k_used = [int(x) for x in rng.integers(1, 4, len(qids))]
                    retrieved = [
                        sum(chunks["tokens"][i] for i in r[:u])
                        for r, u in zip(ranking, k_used, strict=True)
                    ]
                    values = {
                        m: np.clip(quality + rng.uniform(-0.2, 0.2, len(qids)), 0, 1)
                        for m in METRICS.names()
                    }
                    k = _k_of(setting) if not old else OLD_KS[settings.index(setting)]
                    base: dict[str, Any] = {"dataset": dataset.name, "chunker": chunker}
                    base["embedder"] = embedder
                    if not old:
                        base["retrieval"] = setting
                        base.update(zip(("excerpts", "unit", "denominator"), scoring, strict=True))
                    base["k"] = k
                    for i, q in enumerate(dataset.questions):
                        row = dict(base, question_id=q.id, doc_id=q.doc_id, k_used=k_used[i])
                        if not old:
                            row["retrieved_tokens"] = retrieved[i]
                        row.update({m: float(v[i]) for m, v in values.items()})
                        results.append(row)
                    extra: dict[str, Any] = {
                        "scope": "all",
                        "n_questions": len(qids),
                        "n_chunks": facts["n_chunks"],
                        "mean_chunk_tokens": facts["chunk_tokens"] / facts["n_chunks"],
                    }
                    if not old:
                        extra["mean_k_used"] = float(np.mean(k_used))
                        extra["mean_retrieved_tokens"] = float(np.mean(retrieved))
                    summary.append(_summary_row(base, values, extra))
                    doc = dataset.documents[0].id  # a per-document scope the report skips
                    mask = np.array([q.doc_id == doc for q in dataset.questions])
                    per_doc = {m: v[mask] for m, v in values.items()}
                    summary.append(_summary_row(base, per_doc, dict(extra, scope=doc)))
    pq.write_table(pa.Table.from_pylist(results), path / "results.parquet")
    _write_csv(path / "summary.csv", summary)
    infos = [
        {
            "name": d.name,
            "source": d.source,
            "fingerprint": d.fingerprint,
            "documents": len(d.documents),
            "questions": len(d.questions),
        }
        for d in datasets
    ]
    manifest: dict[str, Any] = {
        "created": "2025-01-01T00:00:00+00:00",
        "versions": {"chunkmark": "test"},
        "timings": {"wall": 1.0},
        "embedding": {},
        "cells": cells,
    }
    if old:
        manifest["dataset"] = infos[0]
    else:
        manifest["datasets"] = infos
        failure = {
            "id": "failed0",
            "dataset": "alpha",
            "chunker": str(CHUNKERS.resolve(FAILED_CHUNKER)),
            "embedder": embedder,
            "error": "EmbeddingError: the model could not be loaded.",
        }
        manifest["failures"] = [failure]
        run.failures.append(failure)
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return run


def _write_ranking(
    path: Path, qids: list[str], dense: list[list[int]], bm25: list[list[int]], old: bool
) -> None:
    scores = [[1.0 - 0.05 * j for j in range(DEPTH)] for _ in qids]
    if old:
        table = {"question_id": qids, "chunks": dense, "scores": scores}
    else:
        table = {
            "ranker": [BM25_RANKER] * len(qids) + [DENSE] * len(qids),  # bm25 first, on purpose
            "question_id": qids + qids,
            "chunks": bm25 + dense,
            "scores": [[10.0 - j for j in range(DEPTH)] for _ in qids] + scores,
        }
    pq.write_table(pa.table(table), path)


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    names: list[str] = []
    for row in rows:
        names += [k for k in row if k not in names]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture(scope="module")
def make_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., SyntheticRun]:
    """``make_run(name, old=False, seed=0)``: a synthetic results folder (see the module doc)."""

    def make(name: str, *, old: bool = False, seed: int = 0) -> SyntheticRun:
        root = tmp_path_factory.mktemp(name)
        return write_run(root / "run", root / "datasets", old=old, seed=seed)

    return make
