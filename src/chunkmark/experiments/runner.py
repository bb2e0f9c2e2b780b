"""Run an experiment grid: dataset x chunkers x embedders, every k from one max-k search.

Each finished cell is written to ``OUT/cells/`` at once; a rerun with the same ``OUT`` skips
finished cells. Question embeddings are computed once per embedder (and cached on disk).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from chunkmark.chunkers import CHUNKERS, ChunkerContext
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache, resolve_cache_dir
from chunkmark.evaluation import METRICS, CellResult, evaluate_cell
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.store import read_cell, write_cell, write_csv, write_json, write_results
from chunkmark.metrics.aggregate import bootstrap_ci, mean_std
from chunkmark.specs import Spec
from chunkmark.timing import PhaseTimer

CELL_FORMAT = 1
CI_METRICS = ("recall", "precision", "precision_omega", "iou", "f1")
Progress = Callable[[str], None]
EmbedProgress = Callable[[str, int, int], None]


@dataclass
class Results:
    """What a run produced: summary rows (also in ``summary.csv``) and where files went."""

    config: ExperimentConfig
    out: Path
    summary: list[dict[str, Any]]
    manifest: dict[str, Any]
    cells_resumed: int = 0
    cells_computed: int = 0
    files: dict[str, Path] = field(default_factory=dict)

    def overall(self) -> list[dict[str, Any]]:
        """Summary rows of scope ``all``."""
        return [r for r in self.summary if r["scope"] == "all"]


def default_out_dir() -> Path:
    return Path("results") / datetime.now().strftime("run-%Y%m%d-%H%M%S")


def evaluate(
    config: ExperimentConfig | None = None,
    progress: Progress | None = None,
    embed_progress: EmbedProgress | None = None,
    **options: Any,
) -> Results:
    """Run a grid and write ``results.parquet``, ``summary.csv`` and ``manifest.json``.

    ``evaluate(dataset="demo", chunkers=["fixed_tokens(size=200)"], k=[1, 5, "min"])`` or
    ``evaluate(ExperimentConfig(...))``. Every spec is validated before any work starts.
    ``progress(message)`` hears each step, ``embed_progress(what, done, total)`` each slice of
    texts embedded.
    """
    from chunkmark.experiments.config import make_config

    if config is None:
        config = make_config(options)
    elif options:
        config = make_config({**config.model_dump(exclude_unset=True), **options})
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    totals = PhaseTimer()

    chunker_specs = [CHUNKERS.resolve(s) for s in config.chunkers]
    embedder_specs = [EMBEDDERS.resolve(s) for s in config.embedders]
    out = config.out or default_out_dir()
    out.mkdir(parents=True, exist_ok=True)

    with totals("load_dataset"):
        dataset = load_dataset(config.dataset)
    say(
        f"dataset {dataset.name}: {len(dataset.documents)} documents, {len(dataset.questions)} questions"
    )

    cache_dir = None if config.no_cache else resolve_cache_dir(config.cache_dir)
    cache = None if cache_dir is None else EmbeddingCache(cache_dir)
    chunk_store = None if cache_dir is None else ChunkStore(cache_dir)
    tables: list[pa.Table] = []
    cells: list[dict[str, Any]] = []
    embedding_stats: dict[str, Any] = {}
    resumed = computed = 0
    from chunkmark.tokenizers import count_tokens

    def cl100k(texts: list[str]) -> list[int]:
        return count_tokens(texts, "cl100k_base")

    for e_spec in embedder_specs:
        inner, _ = EMBEDDERS.build(e_spec)
        embedder = CachedEmbedder(inner, cache)
        short_e = EMBEDDERS.short(e_spec)
        query_vectors: np.ndarray[Any, Any] | None = None
        for c_spec in chunker_specs:
            cell_id = _cell_id(dataset, c_spec, e_spec, config)
            path = out / "cells" / f"{cell_id}.parquet"
            done = read_cell(path)
            if done is not None:
                table, facts = done
                resumed += 1
                say(f"resumed  {CHUNKERS.short(c_spec)} x {EMBEDDERS.short(e_spec)}")
            else:
                if query_vectors is None:
                    say(
                        f"embedding {len(dataset.questions)} questions with {EMBEDDERS.short(e_spec)}"
                    )
                    _track(embedder, embed_progress, f"questions x {short_e}")
                    with totals("embed_queries"):
                        query_vectors = embedder.embed(
                            [q.text for q in dataset.questions], kind="query"
                        )
                say(f"cell     {CHUNKERS.short(c_spec)} x {EMBEDDERS.short(e_spec)}")
                context = ChunkerContext(embedder=embedder, cache_dir=cache_dir, seed=config.seed)
                chunker, _ = CHUNKERS.build(c_spec, context=context)
                _track(embedder, embed_progress, f"{CHUNKERS.short(c_spec)} x {short_e}")
                timer = PhaseTimer()
                store = None
                # LLM-based chunkers may fall back when the LLM fails: their answers are
                # cached anyway, so their chunks are recomputed rather than stored.
                if chunk_store is not None and "llm" not in c_spec.kwargs:
                    uses_embedder = "context" in CHUNKERS.entry(c_spec.name).dependencies()
                    identity = _safe_identity(inner) if uses_embedder else None
                    key = chunk_key(str(c_spec), dataset.fingerprint, identity)
                    store = (chunk_store, key)
                result = evaluate_cell(
                    dataset,
                    chunker,
                    str(c_spec),
                    embedder,
                    str(e_spec),
                    query_vectors,
                    config.k,
                    cl100k,
                    timer,
                    store,
                )
                totals.merge(timer)
                table, facts = _cell_table(result), _cell_facts(result, cell_id)
                with totals("write"):
                    write_cell(path, table, facts)
                computed += 1
            tables.append(table)
            cells.append({**facts, "resumed": done is not None})
        embedding_stats[str(e_spec)] = {
            "identity": _safe_identity(inner),
            "stats": embedder.stats(),
        }

    with totals("summarise"):
        summary = _summarise(tables, cells, config.seed)
    wall = time.perf_counter() - started
    manifest = _manifest(
        config, dataset, chunker_specs, embedder_specs, cells, embedding_stats, totals, wall, cache
    )
    files = {
        "results": out / "results.parquet",
        "summary": out / "summary.csv",
        "manifest": out / "manifest.json",
    }
    write_results(files["results"], tables)
    write_csv(files["summary"], summary)
    write_json(files["manifest"], manifest)
    return Results(config, out, summary, manifest, resumed, computed, files)


def _track(embedder: CachedEmbedder, report: EmbedProgress | None, what: str) -> None:
    embedder.progress = None if report is None else (lambda done, total: report(what, done, total))


def _cell_id(dataset: Dataset, c_spec: Spec, e_spec: Spec, config: ExperimentConfig) -> str:
    from chunkmark import __version__

    key = json.dumps(
        [
            CELL_FORMAT,
            __version__,
            dataset.fingerprint,
            str(c_spec),
            str(e_spec),
            [str(k) for k in config.k],
        ]
    )
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def _cell_table(result: CellResult) -> pa.Table:
    n = len(result.columns["question_id"])
    cols: dict[str, Any] = {
        "dataset": [result.dataset] * n,
        "chunker": [result.chunker] * n,
        "embedder": [result.embedder] * n,
    }
    cols.update(result.columns)
    return pa.table(cols)


def _cell_facts(result: CellResult, cell_id: str) -> dict[str, Any]:
    tokens_per_doc: dict[str, int] = {d: 0 for d in result.chunks_per_doc}
    for doc, t in zip(result.chunk_doc, result.chunk_tokens.tolist(), strict=True):
        tokens_per_doc[doc] += int(t)
    return {
        "id": cell_id,
        "dataset": result.dataset,
        "chunker": result.chunker,
        "embedder": result.embedder,
        "n_chunks": result.n_chunks,
        "chunks_per_doc": result.chunks_per_doc,
        "chunk_tokens": int(result.chunk_tokens.sum()),
        "chunk_tokens_per_doc": tokens_per_doc,
        "timings": result.timings,
        "embedding": result.embedding,
    }


def _summarise(
    tables: list[pa.Table], cells: list[dict[str, Any]], seed: int
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for table, facts in zip(tables, cells, strict=True):
        data = table.to_pydict()
        k_col = np.asarray(data["k"])
        doc_col = np.asarray(data["doc_id"])
        for k in dict.fromkeys(data["k"]):
            at_k = k_col == k
            scopes = [("all", at_k)] + [(d, at_k & (doc_col == d)) for d in facts["chunks_per_doc"]]
            for scope, mask in scopes:
                n_chunks = facts["n_chunks"] if scope == "all" else facts["chunks_per_doc"][scope]
                tokens = (
                    facts["chunk_tokens"]
                    if scope == "all"
                    else facts["chunk_tokens_per_doc"][scope]
                )
                row: dict[str, Any] = {
                    "dataset": facts["dataset"],
                    "chunker": facts["chunker"],
                    "embedder": facts["embedder"],
                    "k": k,
                    "scope": scope,
                    "n_questions": int(mask.sum()),
                    "n_chunks": n_chunks,
                    "mean_chunk_tokens": tokens / n_chunks if n_chunks else float("nan"),
                }
                values = {m: np.asarray(data[m], dtype=np.float64)[mask] for m in METRICS}
                for m in METRICS:
                    row[f"{m}_mean"], row[f"{m}_std"] = mean_std(values[m])
                ci = bootstrap_ci({m: values[m] for m in CI_METRICS}, seed=seed)
                for m in CI_METRICS:
                    row[f"{m}_ci_low"], row[f"{m}_ci_high"] = ci[m]
                rows.append(row)
    return rows


def _safe_identity(embedder: Any) -> dict[str, Any]:
    try:
        identity: dict[str, Any] = embedder.identity()
        return identity
    except Exception as exc:  # identity may need the model; record why it is missing
        return {"unavailable": f"{type(exc).__name__}: {exc}"}


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in (
        "chunkmark",
        "numpy",
        "pyarrow",
        "tiktoken",
        "torch",
        "sentence-transformers",
        "transformers",
        "openai",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


def _manifest(
    config: ExperimentConfig,
    dataset: Dataset,
    chunker_specs: list[Spec],
    embedder_specs: list[Spec],
    cells: list[dict[str, Any]],
    embedding_stats: dict[str, Any],
    totals: PhaseTimer,
    wall: float,
    cache: EmbeddingCache | None,
) -> dict[str, Any]:
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(),
        "config": config.model_dump(mode="json"),
        "dataset": {
            "name": dataset.name,
            "source": dataset.source,
            "fingerprint": dataset.fingerprint,
            "documents": len(dataset.documents),
            "questions": len(dataset.questions),
        },
        "chunkers": [str(s) for s in chunker_specs],
        "embedders": [str(s) for s in embedder_specs],
        "k": [str(k) for k in config.k],
        "seed": config.seed,
        "cache_dir": None if cache is None else str(cache.root),
        "timings": {"wall": wall, **totals.seconds},
        "embedding": embedding_stats,
        "cells": cells,
    }
