"""Grids as the command line and the MCP tools take them: the experiment config from a file
and the grid options (:func:`experiment`), what running one would do and cost
(:func:`plan_payload`), and runs in a background thread polled by id (:class:`Runs`)."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkmark.errors import ConfigError
from chunkmark.experiments.config import ExperimentConfig, load_config, make_config, parse_k
from chunkmark.service.replies import Payload, cut, error_payload

if TYPE_CHECKING:
    from chunkmark.experiments.plan_model import Plan
    from chunkmark.experiments.runner import EmbedProgress, Progress, Results
    from chunkmark.report import ReportOptions


def top_k_spec(k: str) -> str:
    """The ``top_k`` retrieval spec of ``--k`` values, to write in single quotes on a command
    line: ``5`` -> ``top_k(k=5)``, ``1,min`` -> ``top_k(k=[1, "min"])``."""
    values = [f'"{v}"' if isinstance(v, str) else str(v) for v in parse_k(k)]
    return f"top_k(k={values[0]})" if len(values) == 1 else f"top_k(k=[{', '.join(values)}])"


def run_grid(
    config: ExperimentConfig,
    progress: Progress | None,
    embed_progress: EmbedProgress | None,
    *,
    metric: str | None,
    retrieval: str | None,
    min_p_best: float,
) -> tuple[Results, ReportOptions]:
    """Run ``config`` as ``chunkmark run`` does: with the answers analysis (``answers:``), the
    report recommending by ``--metric``, ``--pick-retrieval`` (None: the file's ``recommend:``)
    and ``--min-p-best``, checked before any work (else a ConfigError naming the choices).
    Returns the results and the options the recommendation read."""
    from chunkmark.answers.analysis import answer_analyses
    from chunkmark.experiments.runner import evaluate
    from chunkmark.metrics import METRICS
    from chunkmark.report import ReportOptions, write_run_report
    from chunkmark.report.settings import match_retrieval

    analyses = answer_analyses(config)
    if metric is not None and metric not in METRICS:
        raise ConfigError(
            f"--metric {metric!r} is not a metric.", f"Use one of: {', '.join(METRICS.names())}."
        )
    if retrieval is not None:
        settings = config.retrieval_specs()
        try:
            retrieval = match_retrieval(retrieval, settings, ConfigError)
        except ConfigError:
            raise ConfigError(
                f"--pick-retrieval {retrieval!r} is not one of the grid's retrieval settings: "
                f"{', '.join(settings)}.",
                "Pick one of them, or add it to the grid with --retrieval.",
            ) from None
    asked = ReportOptions(
        metric=config.recommend.metric if metric is None else metric,
        retrieval=config.recommend.retrieval if retrieval is None else retrieval,
        min_p_best=min_p_best,
    )
    writer = partial(write_run_report, options=asked)
    results = evaluate(config, progress, embed_progress, analyses=analyses, report_writer=writer)
    return results, asked


WAIT_LIMIT = 600.0  # seconds a tool call may wait for a run
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Grid:
    """A grid as the tools take it: an experiment file and/or datasets, chunkers, embedders,
    retrieval settings or depths (what ``chunkmark plan`` and ``run`` take)."""

    datasets: Sequence[str] | None = None
    chunkers: Sequence[str] | None = None
    embedders: Sequence[str] | None = None
    retrieval: Sequence[str] | None = None
    k: str | None = None
    experiment: str | Path | None = None

    def config(self, no_cache: bool = False, **settings: Any) -> ExperimentConfig:
        """The experiment file (or the defaults) with the grid and ``settings`` given (such as
        ``max_cost``, ``out``, ``cache_dir``): a ``None`` or empty value leaves the file's.
        Validated: a SpecError or ConfigError names what to change."""
        lists = (self.datasets, self.chunkers, self.embedders, self.retrieval)
        grid = dict(zip(("datasets", "chunkers", "embedders", "retrieval"), lists, strict=True))
        given: dict[str, Any] = {key: list(v) for key, v in grid.items() if v}
        given |= {"k": self.k, **settings}
        given = {key: v for key, v in given.items() if v is not None and v != [] and v != {}}
        if "k" in given and "retrieval" in given:
            raise ConfigError(
                "--k cannot be combined with --retrieval: --k sets the depths of the default "
                "top_k retrieval, and --retrieval replaces that default.",
                f"Give the depths as one more --retrieval: --retrieval '{top_k_spec(given['k'])}'.",
            )
        if no_cache:
            given["no_cache"] = True
        path = Path(self.experiment).expanduser() if self.experiment else None
        return load_config(path, given) if path else make_config(given)


def plan(grid: Grid, max_cost: float | None = None, cache_dir: Path | None = None) -> Payload:
    """What running ``grid`` would do and cost (:func:`chunkmark.experiments.plan.plan_grid`),
    and whether it fits ``max_cost``."""
    from chunkmark.experiments.plan import plan_grid

    config = grid.config(cache_dir=cache_dir)
    return plan_payload(plan_grid(config), max_cost)


def plan_payload(plan: Plan, max_cost: float | None = None) -> Payload:
    """The plan in brief: the grid's size, per embedder and LLM chunker the work and dollars,
    and the total."""
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS

    found: Payload = {
        "cells": plan.n_cells,
        "datasets": [
            {
                "name": d.name,
                "documents": d.documents,
                "questions": d.questions,
                "document_tokens": d.document_tokens,
            }
            for d in plan.datasets
        ],
        "chunkers": [CHUNKERS.short(s) for s in plan.chunkers],
        "embedders": [EMBEDDERS.short(s) for s in plan.embedders],
        "retrieval": list(plan.retrieval),
        "scoring_options": len(plan.scoring),
        "embedding": [
            {
                "embedder": EMBEDDERS.short(e.spec),
                "texts": e.document_texts + e.query_texts,
                "tokens": e.document_tokens + e.query_tokens,
                "cached_texts": e.cached_texts,
                "tokens_to_embed": e.tokens_to_embed,
                "usd_per_million": e.usd_per_million,
                "usd": e.usd,
            }
            for e in plan.embedding
        ],
        "total_usd": plan.total_usd,
        "total_usd_max": plan.total_usd_max,
    }
    if plan.llm_chunkers:
        found["llm_chunkers"] = [
            {
                "chunker": CHUNKERS.short(p.chunker),
                "dataset": p.dataset,
                "model": p.model,
                "calls": [p.calls, p.calls_max],
                "usd": [p.usd, p.usd_max],
            }
            for p in plan.llm_chunkers
        ]
    if plan.unknown:
        found["unknown"] = list(plan.unknown)
    if plan.setup:  # built or downloaded by the run, not by the plan
        found["setup"] = [
            {"embedder": EMBEDDERS.short(s.component), "needed": s.needed} for s in plan.setup
        ]
    if max_cost is not None:
        found["max_cost"] = max_cost
        found["within_max_cost"] = plan.total_usd is not None and plan.total_usd <= max_cost
    return found


_MARKUP = re.compile(r"\[/?[a-z ]*\]")


@dataclass
class Job:
    """One run in a background thread: its grid, plan, progress and outcome."""

    id: str
    out: Path
    cells: int
    planned_usd: float | None
    max_cost: float
    started: float = field(default_factory=time.monotonic)
    state: str = "running"  # running, done, failed
    started_cells: int = 0
    resumed_cells: int = 0
    failed_cells: int = 0
    computed_cells: int | None = None  # known when the run is done
    embedding: Payload | None = None
    messages: deque[str] = field(default_factory=lambda: deque(maxlen=3))
    result: Payload | None = None
    error: Payload | None = None
    finished: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def wait(
        self, seconds: float, report: Callable[[int, int, str], Awaitable[None]]
    ) -> None:
        """Wait until the run ends or ``seconds`` pass (at most :data:`WAIT_LIMIT`), telling
        ``report`` the cells started, of all, and the last progress line whenever they change."""
        import anyio

        deadline = time.monotonic() + min(seconds, WAIT_LIMIT)
        said = -1
        while not self.finished.is_set() and time.monotonic() < deadline:
            if self.started_cells != said:
                said = self.started_cells
                await report(said, self.cells, self.messages[-1] if self.messages else "starting")
            await anyio.sleep(POLL_SECONDS)

    def hear(self, message: str) -> None:
        """A progress line of the runner (``cell ...``, ``resumed ...``, ``failed ...``)."""
        plain = " ".join(_MARKUP.sub("", message).split())
        with self.lock:
            self.messages.append(cut(plain, 160))
            word = plain.split(" ", 1)[0]
            if word in ("cell", "resumed", "failed"):
                self.started_cells += word != "failed"  # a failed cell was started already
                self.resumed_cells += word == "resumed"
                self.failed_cells += word == "failed"

    def hear_embedding(self, what: str, done: int, total: int) -> None:
        with self.lock:
            self.embedding = {"cell": what, "texts_done": done, "texts": total}

    def status(self) -> Payload:
        with self.lock:
            found: Payload = {
                "run_id": self.id,
                "state": self.state,
                "out": str(self.out),
                "seconds": time.monotonic() - self.started,
                "cells": {
                    "total": self.cells,
                    "started": self.started_cells,
                    "resumed": self.resumed_cells,
                    "failed": self.failed_cells,
                },
                "planned_usd": self.planned_usd,
                "max_cost": self.max_cost,
            }
            if self.computed_cells is not None:
                found["cells"]["computed"] = self.computed_cells
            if self.state == "running":
                found["last"] = list(self.messages)
                if self.embedding is not None:
                    found["embedding"] = dict(self.embedding)
            if self.result is not None:
                found.update(self.result)
            if self.error is not None:
                found.update(self.error)
            return found


class Runs:
    """The runs started by this server, by id; one runs at a time."""

    def __init__(self, runs_dir: Path, cache_dir: Path | None = None) -> None:
        self.runs_dir = runs_dir
        self.cache_dir = cache_dir
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, grid: Grid, max_cost: float, out: str | None = None) -> Job:
        """Plan ``grid``, refuse it when the estimate exceeds ``max_cost`` (a CostLimitError,
        before any work), then run it in a background thread."""
        from chunkmark.experiments.plan import check_budget, plan_grid

        with self._lock:
            running = [j.id for j in self.jobs.values() if j.state == "running"]
            if running:
                raise ConfigError(
                    f"Run {running[0]} is still running.",
                    "Poll it with run_status(wait_seconds=...) and start the next when it is done.",
                )
            run_id = uuid.uuid4().hex[:8]
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            folder = Path(out).expanduser() if out else self.runs_dir / f"run-{stamp}-{run_id}"
            config = grid.config(max_cost=max_cost, out=folder.resolve(), cache_dir=self.cache_dir)
            planned = plan_grid(config)
            check_budget(planned, max_cost)
            job = Job(run_id, folder.resolve(), planned.n_cells, planned.total_usd, max_cost)
            self.jobs[run_id] = job
        thread = threading.Thread(target=self._run, args=(job, config), daemon=True)
        thread.start()
        return job

    def _run(self, job: Job, config: ExperimentConfig) -> None:
        from chunkmark.experiments.runner import evaluate
        from chunkmark.report import write_run_report

        try:
            results = evaluate(config, job.hear, job.hear_embedding, report_writer=write_run_report)
        except Exception as exc:  # reported to the client: the server goes on
            with job.lock:
                job.state, job.error = "failed", error_payload(exc)
            job.finished.set()
            return
        report = results.files.get("report")
        found: Payload = {
            "report": None if report is None else str(report),
            "wall_seconds": results.manifest["timings"]["wall"],
        }
        if results.failures:
            found["failures"] = [
                {"chunker": f["chunker"], "embedder": f["embedder"], "error": f["error"]}
                for f in results.failures
            ]
        if results.report_error:
            found["report_error"] = results.report_error
        found["next"] = f"recommend(run={job.id!r})"
        with job.lock:
            job.state, job.result = "done", found
            job.computed_cells = results.cells_computed
            job.resumed_cells = results.cells_resumed
            job.failed_cells = len(results.failures)
        job.finished.set()

    def get(self, run_id: str) -> Job:
        job = self.jobs.get(run_id)
        if job is None:
            known = ", ".join(self.jobs) or "none yet"
            raise ConfigError(
                f"No run has the id {run_id!r} (runs of this server: {known}).",
                "Use the run_id start_run returned, or a results folder's path.",
            )
        return job

    def folder(self, run: str) -> Path:
        """The results folder ``run`` names: a run id of this server, else a folder path."""
        if run in self.jobs:
            job = self.jobs[run]
            if job.state != "done":
                raise ConfigError(
                    f"Run {run} is {job.state}, not done.",
                    "Poll it with run_status(wait_seconds=...) until its state is done.",
                )
            return job.out
        folder = Path(run).expanduser()
        if not (folder / "results.parquet").is_file():
            raise ConfigError(
                f"{run!r} is neither a run id of this server nor a results folder.",
                "Give the run_id start_run returned, or a folder `chunkmark run` wrote (its --out).",
            )
        return folder.resolve()
