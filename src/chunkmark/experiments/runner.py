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

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
from chunkmark.experiments.cell import Cell, CellEnv
from chunkmark.experiments.chunk_store import ChunkStore
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.store import (
    prepare_out_dir,
    read_cell,
    write_cell,
    write_csv,
    write_json,
    write_results,
    write_table,
)
from chunkmark.metrics import METRICS, bootstrap_ci, mean_std
from chunkmark.paths import resolve_cache_dir
from chunkmark.specs import Spec
from chunkmark.timing import PhaseTimer

CELL_FORMAT = 2
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
    prepare_out_dir(out)

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

    for e_spec in embedder_specs:
        inner, _ = EMBEDDERS.build(e_spec)
        embedder = CachedEmbedder(inner, cache)
        short_e = EMBEDDERS.short(e_spec)

        def embed_queries(embedder: CachedEmbedder = embedder, short_e: str = short_e) -> Any:
            say(f"embedding {len(dataset.questions)} questions with {short_e}")
            _track(embedder, embed_progress, f"questions x {short_e}")
            with totals("embed_queries"):
                return embedder.embed([q.text for q in dataset.questions], kind="query")

        env = CellEnv(
            embedder=embedder,
            identity=_safe_identity(inner),
            embed_queries=embed_queries,
            chunk_store=chunk_store,
            cache_dir=cache_dir,
            seed=config.seed,
        )
        for c_spec in chunker_specs:
            cell = Cell(dataset, c_spec, e_spec, tuple(config.k))
            cell_id = _cell_id(dataset, c_spec, e_spec, config)
            path = out / "cells" / f"{cell_id}.parquet"
            done = read_cell(path)
            if done is not None:
                table, facts = done
                resumed += 1
                say(f"resumed  {CHUNKERS.short(c_spec)} x {short_e}")
            else:
                env.query_vectors()
                say(f"cell     {CHUNKERS.short(c_spec)} x {short_e}")
                _track(embedder, embed_progress, f"{CHUNKERS.short(c_spec)} x {short_e}")
                timer = PhaseTimer()
                result = cell.run(env, timer)
                totals.merge(timer)
                table, facts = result.table(), result.facts(cell_id)
                with totals("write"):
                    # Chunks and rankings first: the cell file marks the cell done.
                    write_table(path.with_suffix(".chunks.parquet"), result.chunks_table())
                    write_table(path.with_suffix(".ranking.parquet"), result.ranking_table())
                    write_cell(path, table, facts)
                computed += 1
            tables.append(table)
            cells.append({**facts, "resumed": done is not None})
        embedding_stats[str(e_spec)] = {
            "identity": env.identity,
            "stats": embedder.stats().to_dict(),
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
    if config.report:
        from chunkmark.report import write_run_report

        report = write_run_report(out, dataset, say)  # None, with a note, without plotly
        if report is not None:
            files["report"] = report
    return Results(config, out, summary, manifest, resumed, computed, files)


def _track(embedder: CachedEmbedder, report: EmbedProgress | None, what: str) -> None:
    embedder.progress = None if report is None else (lambda done, total: report(what, done, total))


def _cell_id(dataset: Dataset, c_spec: Spec, e_spec: Spec, config: ExperimentConfig) -> str:
    from chunkmark.version import __version__

    key = json.dumps(
        [
            CELL_FORMAT,
            __version__,
            dataset.fingerprint,
            str(c_spec),
            str(e_spec),
            [str(k) for k in config.k],
            METRICS.names(),
        ]
    )
    return hashlib.sha256(key.encode()).hexdigest()[:20]


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
                names = METRICS.names()
                values = {m: np.asarray(data[m], dtype=np.float64)[mask] for m in names}
                for m in names:
                    row[f"{m}_mean"], row[f"{m}_std"] = mean_std(values[m])
                with_ci = METRICS.with_interval()
                ci = bootstrap_ci({m: values[m] for m in with_ci}, seed=seed)
                for m in with_ci:
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
