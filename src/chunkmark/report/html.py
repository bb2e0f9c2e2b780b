"""Rendering the report: one self-contained HTML file.

The page is the template ``templates/report.html`` with its CSS and JavaScript inlined, the data
embedded as JSON in a ``<script type="application/json">`` element (every ``<``, ``>`` and ``&``
written as a JSON escape, so no string in it can end the element), and plotly.js from the
installed ``plotly`` package, gzip-compressed and base64-encoded (a third of its 4.8 MB; the
page inflates it with the browser's ``DecompressionStream`` before drawing the plots): it opens
from disk with no network. The page's script writes every data string with ``textContent``.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from chunkmark.datasets import Dataset
from chunkmark.files import write_bytes_atomic
from chunkmark.optional import import_optional
from chunkmark.report.answers import answers_payload
from chunkmark.report.comparisons import (
    Comparisons,
    Recommendation,
    StatsOptions,
    analyse,
    check_metric,
    resolve,
)
from chunkmark.report.data import ReportData, load_prices, load_runs
from chunkmark.report.inspector import build_inspector, load_report_dataset
from chunkmark.report.payload import (
    cell_payload,
    comparisons_payload,
    failure_payload,
    fronts,
    leaderboard_metrics,
    metrics_payload,
    num,
    per_document,
    recommendation_payload,
    retrievals_payload,
    row_payload,
    scorings_payload,
    similarity,
)
from chunkmark.report.relations import relations_payload
from chunkmark.report.settings import Scoring
from chunkmark.report.sources import source_lines
from chunkmark.timing import PhaseTimer

_SLOT = re.compile(r"\{\{([A-Z_]+)\}\}")


@dataclass(frozen=True)
class ReportOptions(StatsOptions):
    """How the report is built: the tests' settings (:class:`StatsOptions`: the metric,
    retrieval setting and scoring of the recommendation and comparisons, the token budget,
    ``min_p_best``: the P(best) a single winner needs, ...), the price file and the title.

    ``retrieval`` is a setting spec (``top_k(k=5)``, ``bm25(k=5)``, ``token_budget(tokens=1024)``)
    matched against the runs' settings; without it, ``k`` means ``top_k(k=<k>)``; without
    either, the first ``token_budget`` setting the runs hold (read by recall when ``metric`` is
    left out), else ``top_k(k=5)`` when the runs hold it (read by IoU). ``scoring`` is a :attr:`Scoring.key`
    (``position/chars/sum``); without it, the defaults when the runs hold them, else the first.
    """

    prices: Path | None = None
    title: str | None = None

    def stats(self) -> StatsOptions:
        """The tests' settings: each field of these options that :class:`StatsOptions` has."""
        return StatsOptions(**{f.name: getattr(self, f.name) for f in fields(StatsOptions)})


@dataclass(frozen=True)
class Report:
    """A written report: where it is, how large, how long it took, and what it recommends."""

    path: Path
    bytes: int
    seconds: float
    phases: dict[str, float]
    recommendations: list[Recommendation]
    comparisons: Comparisons
    data: ReportData


def plotly_js() -> str:
    """plotly.js from the installed ``plotly`` package (a MissingDependencyError without it)."""
    offline = import_optional("plotly.offline", "plotly", "report", "The HTML report")
    script: str = offline.get_plotlyjs()
    return script


def build_report(
    runs: Sequence[str | Path],
    out: str | Path,
    options: ReportOptions | None = None,
    datasets: Mapping[str, Dataset] | None = None,
) -> Report:
    """Read the results folders ``runs`` and write the report to ``out``.

    ``datasets`` maps fingerprints to datasets already in memory (the inspector loads the
    others from the source their manifest records).
    """
    started = time.perf_counter()
    timer = PhaseTimer()
    opts = options or ReportOptions()
    if opts.metric is not None:
        check_metric(opts.metric)
    with timer("plotly"):
        script = plotly_js()
    with timer("read"):
        data = load_runs(runs, load_prices(opts.prices))
    stats = resolve(data, opts.stats())
    scoring = str(stats.scoring)
    with timer("tests"):
        recommendations, comparisons = analyse(data, stats)
        data.notes.extend(source_lines(data, recommendations, datasets))  # questions by source
    with timer("inspector"):
        inspector = [_inspector(data, d, datasets or {}) for d in data.datasets]
    with timer("relations"):
        relations = relations_payload(data, scoring)
    with timer("answers"):
        answers = answers_payload(data)
    with timer("payload"):
        payload = _payload(data, opts, stats, recommendations, comparisons, inspector, relations)
        payload["answers"] = answers
    with timer("write"):
        page = render(payload, script).encode("utf-8")
        path = Path(out)
        write_bytes_atomic(path, page)
    return Report(
        path=path,
        bytes=len(page),
        seconds=time.perf_counter() - started,
        phases=dict(timer.seconds),
        recommendations=recommendations,
        comparisons=comparisons,
        data=data,
    )


def _inspector(data: ReportData, info: Any, known: Mapping[str, Dataset]) -> dict[str, Any]:
    dataset = known.get(info.fingerprint)
    message = ""
    if dataset is None:
        dataset, message = load_report_dataset(info)
    return build_inspector(data, info, dataset, message)


def _payload(
    data: ReportData,
    opts: ReportOptions,
    stats: StatsOptions,
    recommendations: list[Recommendation],
    comparisons: Comparisons,
    inspector: list[dict[str, Any]],
    relations: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from chunkmark.version import __version__

    retrieval, scoring = str(stats.retrieval), str(stats.scoring)
    return {
        "meta": {
            "title": opts.title or _title(data),
            "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "version": __version__,
            "runs": [
                {
                    "path": str(r.path),
                    "datasets": list(r.datasets),
                    "created": r.created,
                    "version": r.version,
                    "wallSeconds": num(r.wall_seconds, 4),
                    "cells": r.cells,
                }
                for r in data.runs
            ],
            "notes": data.notes,
            "options": {
                "metric": stats.metric,
                "retrieval": retrieval,
                "retrievalShort": data.short_retrievals()[retrieval],
                "scoring": scoring,
                "scoringLabel": Scoring.from_key(scoring).label,
                "maxContextTokens": num(stats.max_context_tokens),
                "alpha": stats.alpha,
                "permutations": stats.permutations,
                "bootstrap": stats.bootstrap,
                "seed": stats.seed,
                "minPBest": stats.min_p_best,
                "power": stats.power,
            },
            "prices": data.prices.to_dict(),
        },
        "metrics": metrics_payload(),
        "leaderMetrics": leaderboard_metrics(),
        "datasets": [
            {
                "key": d.key,
                "name": d.name,
                "source": d.source,
                "fingerprint": d.fingerprint,
                "documents": d.documents,
                "questions": d.questions,
            }
            for d in data.datasets
        ],
        "ks": data.ks,
        "retrievals": retrievals_payload(data),
        "scorings": scorings_payload(data),
        "failures": [failure_payload(f, data) for f in data.failures],
        "cells": [cell_payload(c) for c in data.cells],
        "rows": [row_payload(r) for r in data.rows],
        "fronts": fronts(data, scoring),
        "perDocument": per_document(data, scoring),
        "similarity": similarity(data, scoring),
        "recommendations": [recommendation_payload(r) for r in recommendations],
        "comparisons": comparisons_payload(comparisons),
        "relations": relations,
        "inspector": inspector,
    }


def _title(data: ReportData) -> str:
    names = ", ".join(d.key for d in data.datasets)
    return f"chunkmark report: {names}"


def embed_json(payload: Any) -> str:
    """``payload`` as JSON that is safe inside a ``<script>`` element: ``<``, ``>`` and ``&``
    are written as ``\\u003c``, ``\\u003e`` and ``\\u0026`` (so ``</script>`` cannot appear)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _template(name: str) -> str:
    return (
        resources.files("chunkmark.report").joinpath("templates").joinpath(name).read_text("utf-8")
    )


@functools.lru_cache(maxsize=2)
def packed_script(script: str) -> str:
    """``script`` gzip-compressed (no timestamp: the same script packs to the same text) and
    base64-encoded, as the page's ``#plotly-js`` element carries it."""
    data = gzip.compress(script.encode("utf-8"), compresslevel=9, mtime=0)
    return base64.b64encode(data).decode("ascii")


def render(payload: Any, plotly_script: str) -> str:
    """The page: the template with its slots filled in one pass (inserted text is not scanned
    again); ``plotly_script`` is plotly.js, which the page carries packed (:func:`packed_script`)."""
    values = {
        "CSS": _template("report.css"),
        "DATA": embed_json(payload),
        "PLOTLY": packed_script(plotly_script),
        "SCRIPT": _template("report.js"),
    }
    for name in ("PLOTLY", "SCRIPT"):
        if "</script" in values[name].lower():
            raise ValueError(f"the {name.lower()} script contains '</script'")
    return _SLOT.sub(lambda m: values[m.group(1)], _template("report.html"))
