"""What the tools of ``chunkmark mcp`` answer, as small JSON-able dicts, from the library's own
functions (no printing): the component catalogs, a chunking of one file, the plan of a grid and
its cost, runs in a background thread polled by id, the report's recommendation with its
intervals and cost, a paired comparison of two cells, and the report's path.

Every reply is kept under :data:`REPLY_LIMIT` bytes by :func:`fit`: lists are cut from the end,
and the reply's ``truncated`` says what was cut. Bad input raises
:class:`~chunkmark.errors.ChunkmarkError` (the server turns it into a structured error);
nothing here imports the MCP SDK (:mod:`chunkmark.cli.mcp_server` does).
"""

from __future__ import annotations

import copy
import json
import math
import re
import statistics
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkmark.errors import ChunkmarkError, ConfigError

if TYPE_CHECKING:
    from chunkmark.experiments.config import ExperimentConfig
    from chunkmark.experiments.plan_model import Plan
    from chunkmark.report.comparisons import Pick
    from chunkmark.report.data import ReportData
    from chunkmark.specs import Entry

Payload = dict[str, Any]
REPLY_LIMIT = 8192  # bytes of a whole tools/call result as the client receives it
SUMMARY_CHARS = 100  # a component's summary in a listing, cut to this many characters
KINDS = ("chunkers", "embedders", "retrieval", "rankers", "metrics")


# --- replies --------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """``value`` as JSON holds it: NaN and infinities as null, floats to 6 significant digits,
    paths and other objects as text, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return None if not math.isfinite(value) else float(f"{value:.6g}")
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return jsonable(item())
    return str(value)


def dumps(payload: Payload) -> str:
    """The compact JSON text of a reply."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def fit(payload: Payload, measure: Callable[[Payload], int], limit: int = REPLY_LIMIT) -> Payload:
    """``payload``, cut until ``measure(payload)`` (its size in bytes as sent) is at most
    ``limit``: the longest list is cut from its end, one item at a time, and
    ``truncated[<path>] = {"shown": n, "of": total}`` says so; long texts are cut last. A
    ``ConfigError`` when even that cannot make it fit."""
    if measure(payload) <= limit:
        return payload
    out = copy.deepcopy(payload)
    totals: dict[str, int] = {}
    while measure(out) > limit:
        found = _longest_list(out)
        if found is None:
            if not _cut_longest_text(out):
                raise ConfigError(
                    f"The reply would exceed {limit:,} bytes.",
                    "Ask for less: fewer datasets, chunkers or embedders, or one kind at a time.",
                )
            continue
        where, items = found
        totals.setdefault(where, len(items))
        items.pop()
        out["truncated"] = {
            path: {"shown": len(_at(out, path)), "of": total} for path, total in totals.items()
        }
    return out


def _lists(value: Any, path: str) -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "truncated":
                found += _lists(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        if len(value) > 1:
            found.append((path, value))
        for i, item in enumerate(value):
            found += _lists(item, f"{path}[{i}]")
    return found


def _longest_list(payload: Payload) -> tuple[str, list[Any]] | None:
    lists = _lists(payload, "")
    if not lists:
        return None
    return max(lists, key=lambda found: len(dumps({"x": found[1]})))


def _at(payload: Payload, path: str) -> list[Any]:
    value: Any = payload
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return list(value)


def _cut_longest_text(payload: Any) -> bool:
    """Halve the longest string in ``payload`` (over 40 characters); False when none is."""
    best: tuple[int, Any, Any] | None = None
    stack: list[Any] = [payload]
    while stack:
        node = stack.pop()
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in pairs:
            if isinstance(item, str) and len(item) > 40 and (best is None or len(item) > best[0]):
                best = (len(item), node, key)
            elif isinstance(item, dict | list):
                stack.append(item)
    if best is None:
        return False
    _, node, key = best
    node[key] = node[key][: len(node[key]) // 2] + "…"
    return True


def error_payload(exc: BaseException) -> Payload:
    """An error as a reply: a ChunkmarkError's kind, the one line it prints, its problem and
    fix; anything else as ``unexpected``, its traceback saved in a log file it names."""
    if not isinstance(exc, ChunkmarkError):
        return _unexpected(exc)
    message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return {
        "error": {
            "kind": type(exc).__name__,
            "message": message,
            "problem": exc.problem,
            "fix": exc.fix,
        }
    }


def _unexpected(exc: BaseException) -> Payload:
    """A fault (not bad input): one scrubbed line for the client, the traceback on the
    server's stderr, which MCP clients keep as the server's log."""
    from chunkmark.retry import scrub

    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    detail = scrub(str(exc)).rstrip(".")
    message = (
        f"unexpected {type(exc).__name__}: {detail}. The traceback is in the server's log "
        "(its stderr); please include it when you report this."
    )
    return {"error": {"kind": "unexpected", "message": message}}


# --- components -----------------------------------------------------------------------------


def components(kind: str | None = None, name: str | None = None) -> Payload:
    """The component catalogs: with no ``kind`` every kind's names; with a ``kind`` each
    entry's summary; with a ``name`` too, that entry in full (its signature: the spec's
    parameters and their defaults)."""
    if kind is None:
        if name is not None:
            raise ConfigError("`name` needs a `kind`.", f"Give kind, one of: {', '.join(KINDS)}.")
        from chunkmark.datasets import BUILTIN_NAMES

        found: Payload = {k: [row["name"] for row in _rows(k)] for k in KINDS}
        found["datasets"] = [*BUILTIN_NAMES, "or a folder (JSONL or Chroma layout)"]
        found["next"] = (
            "list_components(kind=...) gives summaries; with name=..., one component in full "
            "(its parameters and defaults)."
        )
        return found
    rows = _rows(kind)
    if name is None:
        return {
            "kind": kind,
            "entries": [_short_row(row) for row in rows],
            "next": f"list_components(kind={kind!r}, name=...) for one entry's parameters.",
        }
    for row in rows:
        if row["name"] == name:
            return {"kind": kind, "entry": row}
    names = ", ".join(row["name"] for row in rows)
    raise ConfigError(f"No {kind} entry is named {name!r}.", f"Use one of: {names}.")


def _rows(kind: str) -> list[Payload]:
    if kind == "metrics":
        from chunkmark.metrics import METRICS

        return [
            {
                "name": m.name,
                "label": m.label,
                "better": m.direction,
                "interval": m.interval,
                "summary": m.description,
            }
            for m in METRICS
        ]
    registry = _registry(kind)
    return [_entry_row(entry) for entry in registry]


def _registry(kind: str) -> Any:
    if kind == "chunkers":
        from chunkmark.chunkers import CHUNKERS

        return CHUNKERS
    if kind == "embedders":
        from chunkmark.embedders import EMBEDDERS

        return EMBEDDERS
    if kind == "retrieval":
        from chunkmark.retrieval import RETRIEVAL

        return RETRIEVAL
    if kind == "rankers":
        from chunkmark.retrieval import RETRIEVERS

        return RETRIEVERS
    raise ConfigError(f"Unknown component kind {kind!r}.", f"Use one of: {', '.join(KINDS)}.")


def _entry_row(entry: Entry[Any]) -> Payload:
    from chunkmark.cli.listing import _parameter

    row: Payload = {
        "name": entry.name,
        "signature": _signature(entry),
        "summary": entry.summary,
        "parameters": [_parameter(p) for p in entry.parameters()],
        "traits": entry.traits.labels(),
    }
    if entry.origin:
        row["origin"] = entry.origin
    return row


def _signature(entry: Entry[Any]) -> str:
    """``name(p=default, q)``: the spec an entry takes, its defaults written in."""
    import inspect

    parts = [
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        for p in entry.parameters()
    ]
    return f"{entry.name}({', '.join(parts)})"


def _short_row(row: Payload) -> Payload:
    """An entry in a kind's listing: its name and summary (traits in brackets), and for
    metrics which way is better and whether it has an interval; the signature is asked by
    name."""
    labels = row.get("traits") or []
    traits = f" [{', '.join(labels)}]" if labels else ""
    short: Payload = {
        "name": row["name"],
        "summary": _cut(str(row["summary"]), SUMMARY_CHARS - len(traits)) + traits,
    }
    short.update({k: row[k] for k in ("better", "interval") if k in row})
    return short


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- one file's chunks ----------------------------------------------------------------------


def preview(
    file: str,
    chunker: str,
    embedder: str = "sentence_transformers",
    show: int = 3,
    chars: int = 160,
    cache_dir: Path | None = None,
) -> Payload:
    """``chunker`` on one UTF-8 file: how many chunks, their spans' coverage and overlap, their
    token counts (cl100k_base), and the first ``show`` chunks (text cut to ``chars``)."""
    from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document
    from chunkmark.cli.chunkers import read_text
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache, resolve_cache_dir
    from chunkmark.tokenizers import count_tokens

    path = Path(file).expanduser()
    text = read_text(path)
    folder = resolve_cache_dir(cache_dir)
    context_embedder = None
    if CHUNKERS.traits(chunker).embeds:  # only chunkers that embed build an embedder
        inner, _ = EMBEDDERS.build(embedder)  # models load on first use
        context_embedder = CachedEmbedder(inner, EmbeddingCache(folder))
    fn, spec = CHUNKERS.build(chunker, context=ChunkerContext(context_embedder, folder))
    chunks = chunk_document(fn, path.name, text)
    texts = [c.text(text) for c in chunks]
    tokens = count_tokens(texts, "cl100k_base") if texts else []
    covered = _union_length([(c.start, c.end) for c in chunks])
    spanned = sum(c.end - c.start for c in chunks)
    found: Payload = {
        "file": str(path.resolve()),
        "chunker": str(spec),
        "short": CHUNKERS.short(spec),
        "characters": len(text),
        "chunks": len(chunks),
        "coverage": covered / len(text) if text else 0.0,
        "overlap_characters": spanned - covered,
        "tokens": _token_stats(tokens),
        "first": [
            {
                "i": i,
                "start": c.start,
                "end": c.end,
                "tokens": tokens[i],
                "text": _cut(texts[i], chars),
            }
            for i, c in enumerate(chunks[: max(0, show)])
        ],
    }
    return found


def _union_length(spans: Sequence[tuple[int, int]]) -> int:
    total, reach = 0, 0
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _token_stats(tokens: Sequence[int]) -> Payload:
    if not tokens:
        return {"encoding": "cl100k_base", "total": 0}
    return {
        "encoding": "cl100k_base",
        "total": sum(tokens),
        "min": min(tokens),
        "median": statistics.median(tokens),
        "mean": sum(tokens) / len(tokens),
        "max": max(tokens),
    }


# --- grids, plans and runs ------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """A grid as the tools take it: an experiment file and/or datasets, chunkers, embedders,
    retrieval settings or depths (what ``chunkmark plan`` and ``run`` take)."""

    datasets: Sequence[str] | None = None
    chunkers: Sequence[str] | None = None
    embedders: Sequence[str] | None = None
    retrieval: Sequence[str] | None = None
    k: str | None = None
    experiment: str | None = None

    def config(self, **settings: Any) -> ExperimentConfig:
        """The experiment config (``settings`` such as ``max_cost``, ``out``, ``cache_dir``
        added), validated: a SpecError or ConfigError names what to change."""
        from chunkmark.cli.options import experiment

        return experiment(
            Path(self.experiment).expanduser() if self.experiment else None,
            datasets=list(self.datasets or []),
            chunkers=list(self.chunkers or []),
            embedders=list(self.embedders or []),
            k=self.k,
            retrieval=list(self.retrieval or []),
            **settings,
        )


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

    def hear(self, message: str) -> None:
        """A progress line of the runner (``cell ...``, ``resumed ...``, ``failed ...``)."""
        plain = " ".join(_MARKUP.sub("", message).split())
        with self.lock:
            self.messages.append(_cut(plain, 160))
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


# --- what the runs say ----------------------------------------------------------------------


def recommendation(
    out: Path,
    metric: str | None = None,
    retrieval: str | None = None,
    k: str | None = None,
    max_context_tokens: float = 1000.0,
) -> Payload:
    """The report's recommendation for each dataset of the run in ``out``: the best cell with
    its 95% interval and indexing cost, the test that separates it from the runner-up or the
    cells tied with it, the cheapest tied cell, and the cell with the best recall among those
    retrieving at most ``max_context_tokens`` tokens per question (as the report's budget pick)."""
    from chunkmark.metrics import METRICS
    from chunkmark.report import ReportOptions
    from chunkmark.report.recommendation import recommend
    from chunkmark.report.settings import Scoring

    options = ReportOptions(
        metric=metric, retrieval=retrieval, k=k, max_context_tokens=max_context_tokens
    )
    data, found = recommend(out, options.stats())
    first = found[0] if found else None
    # Left out, the metric is the one the report reads (recall at a token budget, else IoU).
    metric = first.metric if first else (metric or "iou")
    report = out / "report.html"
    payload: Payload = {
        "run": str(out),
        "metric": metric,
        "metric_label": METRICS[metric].label,
        "better": METRICS[metric].direction,
        "retrieval": first.retrieval if first else None,
        "scoring": Scoring.from_key(first.scoring).label if first else None,
        "test": first.test if first else None,
        "recommendations": [],
        "report": str(report) if report.is_file() else None,
    }
    for r in found:
        entry: Payload = {"dataset": r.dataset, "questions": r.n_questions}
        if r.best is None:
            entry["best"] = None
            payload["recommendations"].append(entry)
            continue
        entry["best"] = _pick(data, r.best)
        if r.best.comparison is not None and r.best.versus is not None and not _tied(r.best):
            c = r.best.comparison
            entry["runner_up"] = {
                "cell": data.cells[r.best.versus[0]].label,
                "difference": c.difference,
                "ci95": [c.ci_low, c.ci_high],
                "p_holm": r.best.p_adjusted,
            }
        tied = [data.cells[o[0]].label for o in r.best.tied if o != r.best.option]
        entry["tied_with_best"] = tied
        entry["verdict"] = r.verdict
        entry["reason"] = r.reason
        if r.cheapest_tied is not None and r.cheapest_tied.cell != r.best.cell:
            entry["cheapest_tied"] = _pick(data, r.cheapest_tied)
        entry["max_context_tokens"] = r.max_context_tokens
        entry["best_within_budget"] = None if r.budget is None else _pick(data, r.budget)
        payload["recommendations"].append(entry)
    return payload


def _tied(pick: Pick) -> bool:
    return any(o != pick.option for o in pick.tied)


def _pick(data: ReportData, pick: Pick) -> Payload:
    cell = data.cells[pick.cell]
    return {
        "cell": cell.label,
        "metric": pick.metric,
        "chunker": cell.chunker_short,  # a spec that resolves to the cell's own
        "embedder": cell.embedder_short,
        "retrieval": pick.retrieval,
        "mean": pick.mean,
        "ci95": [pick.ci_low, pick.ci_high],
        "retrieved_tokens": pick.retrieved_tokens,
        "chunks": cell.n_chunks,
        "tokens_embedded": cell.tokens_embedded,
        "usd_per_million": cell.price_per_million,
        "index_usd": cell.cost,
    }


def comparison(
    runs: Sequence[Path],
    a: str,
    b: str,
    metric: str = "iou",
    retrieval: str | None = None,
    k: str | None = None,
    pick_chunker: str | None = None,
    pick_embedder: str | None = None,
    dataset: str | None = None,
) -> Payload:
    """``chunkmark compare --json``'s answer (the paired difference of two cells, its 95%
    interval, the p-values and the verdict)."""
    from chunkmark.cli.compare import compare_cells

    found = compare_cells(
        runs,
        a,
        b,
        metric=metric,
        retrieval=retrieval,
        k=k,
        chunker=pick_chunker,
        embedder=pick_embedder,
        dataset=dataset,
    )
    return found.to_dict()


def report_files(out: Path) -> Payload:
    """Where the run's report and files are; why the report is missing when it is."""
    files = {
        name: str(out / name)
        for name in ("report.html", "summary.csv", "results.parquet", "manifest.json")
        if (out / name).is_file()
    }
    found: Payload = {"run": str(out), "report": files.pop("report.html", None), "files": files}
    if found["report"] is None:
        manifest = out / "manifest.json"
        reason = None
        if manifest.is_file():
            reason = json.loads(manifest.read_text(encoding="utf-8")).get("report_error")
        found["why_no_report"] = reason or (
            f"The run was made without a report; build it with: chunkmark report {out}"
        )
    return found
