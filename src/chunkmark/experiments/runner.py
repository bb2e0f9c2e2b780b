"""Run an experiment grid: datasets x chunkers x embedders, every retrieval setting and scoring
option of a cell from one search per ranker.

Each finished cell is written to ``OUT/cells/`` at once; a rerun with the same ``OUT`` skips
finished cells. A cell that fails (an API error after retries, a chunker exception) is a result
too: its error goes to ``OUT/cells/<id>.failed.json`` and the manifest, the other cells go on,
and a rerun retries only the failed ones. Question embeddings are computed once per (dataset,
embedder) and cached on disk.

:func:`evaluate` runs a whole grid; :class:`Session` runs cells on demand (``chunkmark tune``
asks for one cell per trial) and writes the combined files at the end.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
from chunkmark.errors import ConfigError
from chunkmark.experiments.analysis import (
    Analysis,
    AnalysisOutput,
    FinishedCell,
    FinishedRun,
    check_handed,
)
from chunkmark.experiments.cell import Cell, CellEnv, CellResult
from chunkmark.experiments.chunk_store import ChunkStore
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.outcome import CellOutcome, CellTask, chunker_name
from chunkmark.experiments.store import (
    prepare_out_dir,
    read_cell,
    write_cell,
    write_json,
    write_run,
)
from chunkmark.files import read_parquet
from chunkmark.metrics import METRICS, Scoring, bootstrap_ci, mean_std_rows
from chunkmark.paths import resolve_cache_dir
from chunkmark.retrieval import RETRIEVAL
from chunkmark.specs import Spec
from chunkmark.timing import PhaseTimer

CELL_FORMAT = 3
Progress = Callable[[str], None]
EmbedProgress = Callable[[str, int, int], None]
# Columns that name a summary row's group, in order, before its scope.
GROUP_COLUMNS = (
    "dataset",
    "chunker",
    "embedder",
    "retrieval",
    "excerpts",
    "unit",
    "denominator",
    "k",
)


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
    failures: list[dict[str, Any]] = field(default_factory=list)
    # Why report.html was not written when it was asked for (the other files are complete).
    report_error: str | None = None
    # What each analysis the run carried added, by name.
    analyses: dict[str, AnalysisOutput] = field(default_factory=dict)

    def overall(self) -> list[dict[str, Any]]:
        """Summary rows of scope ``all``."""
        return [r for r in self.summary if r["scope"] == "all"]


class WrittenReport(Protocol):
    """What a report writer did: the page it wrote, or why it wrote none."""

    @property
    def path(self) -> Path | None: ...

    @property
    def error(self) -> str | None: ...


class ReportWriter(Protocol):
    """Writes ``out/report.html`` for a finished run of ``datasets`` and never raises (a report
    that cannot be built is returned as ``error``). The runner is handed one from above
    (:func:`chunkmark.evaluate`, ``chunkmark run``): it imports no report code itself."""

    def __call__(
        self, out: Path, datasets: Sequence[Dataset], progress: Progress | None = None
    ) -> WrittenReport: ...


def default_out_dir() -> Path:
    return Path("results") / datetime.now().strftime("run-%Y%m%d-%H%M%S")


def evaluate(
    config: ExperimentConfig | None = None,
    progress: Progress | None = None,
    embed_progress: EmbedProgress | None = None,
    *,
    analyses: Sequence[Analysis] = (),
    report_writer: ReportWriter | None = None,
    **options: Any,
) -> Results:
    """Run a grid and write ``results.parquet``, ``summary.csv`` and ``manifest.json``.

    ``evaluate(datasets=["demo"], chunkers=["fixed_tokens(size=[200, 400])"],
    retrieval=["top_k(k=[1, 5])", "token_budget(tokens=1024)"])`` or
    ``evaluate(ExperimentConfig(...))``. Every spec is validated, and with ``max_cost`` the
    cost estimated, before any work starts. ``progress(message)`` hears each step,
    ``embed_progress(what, done, total)`` each slice of texts embedded. Failed cells are in
    ``Results.failures`` (and the manifest); the other cells' results are complete.

    ``analyses`` hear every finished cell and add their files and manifest sections
    (:mod:`chunkmark.experiments.analysis`); ``report_writer`` writes ``report.html`` when the
    config asks for it (:func:`chunkmark.evaluate` passes the report's; without one no page
    is written).
    """
    from chunkmark.experiments.config import run_config

    config = run_config(config, options)
    session = Session(config, progress, embed_progress, analyses, report_writer)
    try:
        return session.finish(session.run_cells())
    finally:
        session.close()


class Session:
    """A run's shared state: its datasets, embedders, caches and results folder.

    :meth:`run_cells` computes (or resumes) cells; :meth:`finish` writes the combined files.
    Embedders are built once per session and kept, so asking for more cells later costs no
    second model load. Each of ``analyses`` hears every finished cell and adds its files and
    manifest section at :meth:`finish`; ``report_writer`` writes the report there.
    """

    def __init__(
        self,
        config: ExperimentConfig,
        progress: Progress | None = None,
        embed_progress: EmbedProgress | None = None,
        analyses: Sequence[Analysis] = (),
        report_writer: ReportWriter | None = None,
    ) -> None:
        self.config = config
        check_handed(config, analyses)
        self.analyses = tuple(analyses)
        self.report_writer = report_writer
        self.say: Progress = progress or (lambda _msg: None)
        self.embed_progress = embed_progress
        self.started = time.perf_counter()
        self.totals = PhaseTimer()
        self.out = config.out or default_out_dir()
        with self.totals("load_dataset"):
            self.datasets = [load_dataset(name) for name in config.datasets]
        _check_unique_names(self.datasets)
        if config.max_cost is not None:
            from chunkmark.experiments.plan import check_budget, plan_grid

            check_budget(plan_grid(config, self.analyses, self.datasets), config.max_cost)
        prepare_out_dir(self.out)
        for dataset in self.datasets:
            self.say(
                f"dataset {dataset.name}: {len(dataset.documents)} documents, "
                f"{len(dataset.questions)} questions"
            )
        self.embedder_specs = [EMBEDDERS.resolve(s) for s in config.embedders]
        self.retrieval = tuple(RETRIEVAL.resolve(s) for s in config.retrieval_specs())
        self.scoring = tuple(config.scoring.scorings())
        self.cache_dir = None if config.no_cache else resolve_cache_dir(config.cache_dir)
        self.cache = None if self.cache_dir is None else EmbeddingCache(self.cache_dir)
        self.chunk_store = None if self.cache_dir is None else ChunkStore(self.cache_dir)
        self._envs: dict[tuple[str, Spec], CellEnv] = {}
        self._embedders = {  # a missing extra stops the run here, not per cell
            e_spec: self._embedder(e_spec) for e_spec in dict.fromkeys(self.embedder_specs)
        }

    def close(self) -> None:
        """Close this process's connection to the embedding cache (a later use reopens it), so
        a finished run leaves no SQLite connection open behind it."""
        if self.cache is not None:
            self.cache.close()

    def run_cells(self, chunkers: Sequence[str] | None = None) -> list[CellOutcome]:
        """Every (dataset, chunker, embedder) for ``chunkers`` (default: the config's), computed,
        or resumed from ``OUT/cells/``; a failing cell is recorded and the others go on.

        With ``executor: ray`` the cells run on a Ray cluster
        (:mod:`chunkmark.experiments.ray_executor`); the rows are the same."""
        specs = [CHUNKERS.resolve(s) for s in (chunkers or self.config.chunkers)]
        todo = [
            CellTask(dataset, c_spec, e_spec)
            for e_spec in self.embedder_specs
            for dataset in self.datasets
            for c_spec in specs
        ]
        if self.config.executor == "ray":
            from chunkmark.experiments.ray_executor import run_on_ray

            return run_on_ray(self, todo)
        return [self._outcome(task) for task in todo]

    def finish(self, outcomes: Sequence[CellOutcome]) -> Results:
        """Write ``results.parquet``, ``summary.csv``, the analyses' files, ``manifest.json``
        (with the analyses' sections) and the report for ``outcomes``, and return them."""
        done = [o for o in outcomes if not o.failed]
        failures = [_failure(o) for o in outcomes if o.failed]
        with self.totals("summarise"):
            summary = summary_rows(done, self.config.seed)
        added: dict[str, AnalysisOutput] = {}
        try:
            added = self._finish_analyses(outcomes)
        finally:  # an analysis that fails still leaves the grid's files and manifest
            manifest = self._manifest(outcomes, failures)
            manifest.update({name: output.section for name, output in added.items()})
            tables = [o.table for o in done if o.table is not None]
            extra = {name: data for output in added.values() for name, data in output.files.items()}
            files = write_run(self.out, tables, summary, extra, manifest)
        report_error: str | None = None
        if self.config.report and done and self.report_writer is not None:
            report = self.report_writer(self.out, self.datasets, self.say)
            if report.path is not None:
                files["report"] = report.path
            if report.error is not None:
                report_error = manifest["report_error"] = report.error
                write_json(files["manifest"], manifest)
        resumed = sum(o.resumed for o in outcomes)
        computed = sum(not o.resumed and not o.failed for o in outcomes)
        return Results(
            self.config,
            self.out,
            summary,
            manifest,
            resumed,
            computed,
            files,
            failures,
            report_error,
            added,
        )

    def _finish_analyses(self, outcomes: Sequence[CellOutcome]) -> dict[str, AnalysisOutput]:
        run = FinishedRun(self.config, self.out, self.datasets, outcomes, self.say, self.cache_dir)
        added: dict[str, AnalysisOutput] = {}
        for analysis in self.analyses:
            with self.totals(f"analysis_{analysis.name}"):
                added[analysis.name] = analysis.finish(run)
        return added

    def _embedder(self, e_spec: Spec) -> tuple[CachedEmbedder, dict[str, Any]]:
        from chunkmark.experiments.plan_embedding import setup_needed

        inner, _ = EMBEDDERS.build(e_spec)
        needed = setup_needed(inner)
        if needed is not None:  # built or downloaded now, by its identity or first use
            self.say(f"set-up   {EMBEDDERS.short(e_spec)}: {needed}")
        identity = _safe_identity(inner)
        if self.config.executor == "ray":  # misses are embedded by the cluster's actors
            from chunkmark.experiments.ray_executor import ClusterEmbedder

            inner = ClusterEmbedder(inner, e_spec, self.config.ray)
        return CachedEmbedder(inner, self.cache), identity

    def env(self, dataset: Dataset, e_spec: Spec) -> CellEnv:
        """What the cells of ``dataset`` x ``e_spec`` share (built once)."""
        key = (dataset.fingerprint, e_spec)
        if key not in self._envs:
            embedder, identity = self._embedders[e_spec]
            short_e = EMBEDDERS.short(e_spec)

            def embed_queries() -> Any:
                self.say(
                    f"embedding {len(dataset.questions)} {dataset.name} questions with {short_e}"
                )
                self.track(embedder, f"{dataset.name} questions x {short_e}")
                with self.totals("embed_queries"):
                    return embedder.embed([q.text for q in dataset.questions], kind="query")

            self._envs[key] = CellEnv(
                embedder=embedder,
                identity=identity,
                embed_queries=embed_queries,
                chunk_store=self.chunk_store,
                cache_dir=self.cache_dir,
                seed=self.config.seed,
                scratch_dir=self.out,  # a large cell's vector file sits beside its results
            )
        return self._envs[key]

    def cell_id(self, task: CellTask) -> str:
        return cell_key(task.dataset, task.chunker, task.embedder, self.retrieval, self.scoring)

    def label(self, task: CellTask) -> str:
        short = f"{CHUNKERS.short(task.chunker)} x {EMBEDDERS.short(task.embedder)}"
        return f"{task.dataset.name}: {short}"

    def resumed(self, task: CellTask) -> CellOutcome | None:
        """The cell's outcome from ``OUT/cells/`` when a run already finished it (with
        analyses, its chunks and rankings are read too and handed to them; a cell whose files
        cannot be read is computed again)."""
        cell_id = self.cell_id(task)
        path = self._cell_path(cell_id)
        done = read_cell(path)
        if done is None:
            return None
        outcome = CellOutcome(cell_id, *task.names, done[0], done[1], resumed=True)
        if self.analyses:
            chunks = _read_table(path.with_suffix(".chunks.parquet"))
            rankings = _read_table(path.with_suffix(".ranking.parquet"))
            if chunks is None or rankings is None:
                return None
            self._tell(FinishedCell(outcome, chunks, rankings))
        self.say(f"resumed  {self.label(task)}")
        return outcome

    def failed(self, task: CellTask, exc: BaseException) -> CellOutcome:
        """Record a cell that failed (``OUT/cells/<id>.failed.json``); the run goes on."""
        cell_id = self.cell_id(task)
        facts = _failure_facts(cell_id, task.dataset, task.chunker, task.embedder, exc)
        write_json(self._cell_path(cell_id).with_suffix(".failed.json"), facts)
        self.say(f"[red]failed[/]   {self.label(task)}: {facts['error']}")
        return CellOutcome(cell_id, *task.names, None, facts, resumed=False)

    def record(
        self,
        task: CellTask,
        result: CellResult,
        timer: PhaseTimer,
        ray_node: str | None = None,
    ) -> CellOutcome:
        """Write a finished cell to ``OUT/cells/`` (this marks it done) and return its outcome;
        ``ray_node``, the Ray node that scored it, goes into its facts."""
        cell_id = self.cell_id(task)
        path = self._cell_path(cell_id)
        self.totals.merge(timer)
        table, facts = result.table(), result.facts(cell_id)
        if ray_node is not None:
            facts["ray_node"] = ray_node
        if facts.get("query_check") and facts["query_check"]["flagged"]:
            check = facts["query_check"]
            self.say(
                f"[yellow]warning:[/] {self.label(task)}: questions are no closer to their "
                f"answers than shuffled questions (answer similarity "
                f"{check['answer_similarity']:.3f} vs {check['shuffled_similarity']:.3f}, "
                f"p={check['p_value']:.2g}); is the query embedder real?"
            )
        chunks, rankings = result.chunks_table(), result.ranking_table()
        with self.totals("write"):
            write_cell(path, table, facts, chunks, rankings)
        path.with_suffix(".failed.json").unlink(missing_ok=True)
        outcome = CellOutcome(cell_id, *task.names, table, facts, resumed=False)
        self._tell(FinishedCell(outcome, chunks, rankings, result))
        return outcome

    def _tell(self, cell: FinishedCell) -> None:
        """Hand a finished cell to every analysis."""
        for analysis in self.analyses:
            with self.totals(f"analysis_{analysis.name}"):
                analysis.cell(cell)

    def _cell_path(self, cell_id: str) -> Path:
        return self.out / "cells" / f"{cell_id}.parquet"

    def _outcome(self, task: CellTask) -> CellOutcome:
        done = self.resumed(task)
        if done is not None:
            return done
        try:
            env = self.env(task.dataset, task.embedder)
            env.query_vectors()
            self.say(f"cell     {self.label(task)}")
            self.track(env.embedder, self.label(task))
            timer = PhaseTimer()
            cell = Cell(task.dataset, task.chunker, task.embedder, self.retrieval, self.scoring)
            result = cell.run(env, timer)
        except Exception as exc:  # a failing cell is a result: recorded, the run goes on
            return self.failed(task, exc)
        return self.record(task, result, timer)

    def track(self, embedder: Any, what: str) -> None:
        report = self.embed_progress
        embedder.progress = (
            None if report is None else (lambda done, total: report(what, done, total))
        )

    def _manifest(
        self, outcomes: Sequence[CellOutcome], failures: list[dict[str, Any]]
    ) -> dict[str, Any]:
        embedding = {
            str(spec): {"identity": identity, "stats": embedder.stats().to_dict()}
            for spec, (embedder, identity) in self._embedders.items()
        }
        wall = time.perf_counter() - self.started
        ran = tuple(dict.fromkeys(o.chunker for o in outcomes)) or self.config.chunkers
        answers = None if self.config.answers is None else self.config.answers.named()
        config = self.config.model_copy(  # what ran (tune asks per trial), as results name it
            update={"chunkers": ran, "answers": answers}
        )
        return {
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": _versions(),
            "config": config.model_dump(mode="json"),
            "datasets": [
                {
                    "name": d.name,
                    "source": d.source,
                    "fingerprint": d.fingerprint,
                    "documents": len(d.documents),
                    "questions": len(d.questions),
                }
                for d in self.datasets
            ],
            "chunkers": list(dict.fromkeys(o.chunker for o in outcomes)),
            "embedders": [str(s) for s in self.embedder_specs],
            "retrieval": [str(s) for s in self.retrieval],
            "scoring": [s.columns() for s in self.scoring],
            "seed": config.seed,
            "cache_dir": None if self.cache is None else str(self.cache.root),
            "timings": {"wall": wall, **self.totals.seconds},
            "embedding": embedding,
            "cells": [{**o.facts, "resumed": o.resumed} for o in outcomes if not o.failed],
            "failures": failures,
        }


def _read_table(path: Path) -> pa.Table | None:
    """A cell's chunks or rankings file, or None when missing or unreadable."""
    try:
        return read_parquet(path)
    except (OSError, pa.ArrowInvalid):
        return None


def _check_unique_names(datasets: list[Dataset]) -> None:
    seen: dict[str, Dataset] = {}
    for d in datasets:
        other = seen.get(d.name)
        if other is not None and other.fingerprint != d.fingerprint:
            raise ConfigError(
                f"Two datasets of the grid are both named {d.name!r} ({other.source} and "
                f"{d.source}).",
                "Rename one (its folder name, or the name in its metadata) so results can "
                "tell them apart.",
            )
        seen[d.name] = d


def _failure_facts(
    cell_id: str, dataset: Dataset, c_spec: Spec, e_spec: Spec, exc: BaseException
) -> dict[str, Any]:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return {
        "id": cell_id,
        "dataset": dataset.name,
        "fingerprint": dataset.fingerprint,
        "chunker": chunker_name(c_spec),
        "embedder": str(e_spec),
        "error": f"{type(exc).__name__}: {message}" if message else type(exc).__name__,
        "traceback": "".join(traceback.format_exception(exc)),
        "failed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _failure(outcome: CellOutcome) -> dict[str, Any]:
    keys = ("id", "dataset", "chunker", "embedder", "error", "failed_at")
    return {k: outcome.facts.get(k) for k in keys}


def cell_key(
    dataset: Dataset,
    c_spec: Spec,
    e_spec: Spec,
    retrieval: Sequence[Spec],
    scoring: Sequence[Scoring],
) -> str:
    """A cell's id: what changes its rows (data, specs, settings, metrics, code version); the
    chunker by :func:`~chunkmark.experiments.outcome.chunker_name`, so settings that cannot
    change a result (an LLM's timeout, retries, concurrency) do not make a new cell."""
    from chunkmark.version import __version__

    key = json.dumps(
        [
            CELL_FORMAT,
            __version__,
            dataset.fingerprint,
            chunker_name(c_spec),
            str(e_spec),
            [str(r) for r in retrieval],
            [s.columns() for s in scoring],
            METRICS.names(),
        ]
    )
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def summary_rows(outcomes: Sequence[CellOutcome], seed: int) -> list[dict[str, Any]]:
    """Summary rows (as in ``summary.csv``) of the finished ``outcomes``: per cell, retrieval
    setting and scoring option, one row for all questions and one per document."""
    rows: list[dict[str, Any]] = []
    names = METRICS.names()
    with_ci = METRICS.with_interval()
    for outcome in outcomes:
        if outcome.table is None:
            continue
        facts = outcome.facts
        data = outcome.table.to_pydict()
        doc_col = np.asarray(data["doc_id"])
        group_keys = list(zip(*(data[c] for c in GROUP_COLUMNS[3:]), strict=True))
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, key in enumerate(group_keys):
            groups.setdefault(key, []).append(i)
        metric_cols = {m: np.asarray(data[m], dtype=np.float64) for m in names}
        metric_rows = np.stack([metric_cols[m] for m in names]) if names else None
        k_used = np.asarray(data["k_used"], dtype=np.float64)
        tokens = np.asarray(data["retrieved_tokens"], dtype=np.float64)
        for key, index in groups.items():
            at = np.zeros(len(doc_col), dtype=bool)
            at[index] = True
            scopes = [("all", at)] + [(d, at & (doc_col == d)) for d in facts["chunks_per_doc"]]
            for scope, mask in scopes:
                everything = scope == "all"
                n_chunks = facts["n_chunks"] if everything else facts["chunks_per_doc"][scope]
                chunk_tokens = (
                    facts["chunk_tokens"] if everything else facts["chunk_tokens_per_doc"][scope]
                )
                row: dict[str, Any] = {
                    "dataset": facts["dataset"],
                    "chunker": facts["chunker"],
                    "embedder": facts["embedder"],
                    **dict(zip(GROUP_COLUMNS[3:], key, strict=True)),
                    "scope": scope,
                    "n_questions": int(mask.sum()),
                    "n_chunks": n_chunks,
                    "mean_chunk_tokens": chunk_tokens / n_chunks if n_chunks else float("nan"),
                    "mean_k_used": float(k_used[mask].mean()) if mask.any() else float("nan"),
                    "mean_retrieved_tokens": (
                        float(tokens[mask].mean()) if mask.any() else float("nan")
                    ),
                }
                if metric_rows is not None:  # every metric's mean and std at once
                    means, stds = mean_std_rows(metric_rows[:, mask])
                    for i, m in enumerate(names):
                        row[f"{m}_mean"], row[f"{m}_std"] = float(means[i]), float(stds[i])
                ci = bootstrap_ci({m: metric_cols[m][mask] for m in with_ci}, seed=seed)
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
