"""The report's plots as plotly ``Figure`` objects, for a notebook: the metric per chunker family
against its size, recall against precision, and the metric against the cost of indexing, each
Pareto front marked. They plot the numbers the page plots (the leaderboard rows of
:mod:`chunkmark.report.data`, the fronts of :func:`chunkmark.report.payload.fronts`) with the
page's traces, titles and hover text.

    from chunkmark.report.figures import run_figures

    figures = run_figures("results/demo", metric="recall")
    figures["recall_precision"].show()

Needs ``plotly`` (the ``report`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chunkmark.metrics import METRICS
from chunkmark.optional import import_optional
from chunkmark.report.comparisons import check_metric, choose_setting
from chunkmark.report.data import LeaderRow, ReportData, load_runs
from chunkmark.report.html import ReportOptions
from chunkmark.report.payload import COSTS, chunker_variant, cost_of, fronts
from chunkmark.report.settings import choose_retrieval

COST_NAMES = {
    "tokens": "tokens embedded",
    "chunks": "number of chunks",
    "dollars": "dollars to embed the corpus",
}
BLUE = "#2f5fb3"
RED = "#d62728"


@dataclass(frozen=True)
class FigureSetting:
    """What the figures show: one dataset, metric, retrieval setting (of every plot but the
    size plots, which show every setting), scoring and cost measure."""

    dataset: str
    metric: str
    retrieval: str
    scoring: str
    cost: str = "tokens"


def plotly_go() -> Any:
    """``plotly.graph_objects`` (a MissingDependencyError naming the extra without it)."""
    return import_optional("plotly.graph_objects", "plotly", "report", "The report's figures")


def run_figures(
    out: str | Path | Sequence[str | Path],
    *,
    dataset: str | None = None,
    metric: str = "iou",
    retrieval: str | None = None,
    cost: str = "tokens",
) -> dict[str, Any]:
    """The report's figures for the run(s) in ``out``: ``size: <family>`` (one per chunker
    family), ``recall_precision`` and ``cost``, as plotly Figures by name. ``dataset``: which
    (default: the first); ``retrieval``: the setting of every plot but the size plots (default:
    the report's, top_k(k=5) when the runs hold it); ``cost``: tokens, chunks or dollars."""
    paths = [out] if isinstance(out, (str, Path)) else list(out)
    data = load_runs(paths)
    options = ReportOptions(metric=check_metric(metric), retrieval=retrieval).stats()
    chosen, scoring = choose_setting(data, replace(options, retrieval=retrieval))
    keys = [d.key for d in data.datasets]
    if dataset is not None and dataset not in keys:
        from chunkmark.report.errors import ReportError

        raise ReportError(f"The runs hold no dataset {dataset!r}.", f"Use one of: {keys}.")
    if cost not in COSTS:
        from chunkmark.report.errors import ReportError

        raise ReportError(f"Unknown cost measure {cost!r}.", f"Use one of: {', '.join(COSTS)}.")
    setting = FigureSetting(dataset or keys[0], metric, chosen, scoring, cost)
    return figures(data, setting)


def figures(data: ReportData, setting: FigureSetting) -> dict[str, Any]:
    """The figures of ``data`` at ``setting`` by name (see :func:`run_figures`)."""
    go = plotly_go()
    choose_retrieval(data.retrievals, setting.retrieval, None)  # a ReportError if not there
    out: dict[str, Any] = {}
    for family, traces, axis in size_plots(data, setting):
        out[f"size: {family}"] = _figure(go, traces, family, axis, _axis_title(setting.metric))
    front = fronts(data, setting.scoring).get(setting.dataset, {}).get(setting.retrieval, {})
    rows = _rows_at(data, setting)
    rp = sorted(
        (data.rows[i] for i in front.get("recallPrecision", [])), key=lambda r: r.mean["recall"]
    )
    out["recall_precision"] = _figure(
        go,
        [
            _cells_trace(
                data,
                rows,
                lambda r: 100 * r.mean["recall"],
                lambda r: 100 * r.mean["precision"],
                "%{text}<br>recall %{x:.1f}%, precision %{y:.2f}%<extra></extra>",
            ),
            _front_trace(
                data, rp, lambda r: 100 * r.mean["recall"], lambda r: 100 * r.mean["precision"]
            ),
        ],
        f"Recall against precision with {_short(data, setting.retrieval)}",
        _axis_title("recall"),
        _axis_title("precision"),
    )
    m, measure = setting.metric, setting.cost

    def cost(r: LeaderRow) -> float:
        return cost_of(data.cells[r.cell], measure)

    priced = [r for r in rows if not math.isnan(cost(r))]
    cheap = sorted(
        (data.rows[i] for i in front.get("cost", {}).get(m, {}).get(measure, [])), key=cost
    )
    out["cost"] = _figure(
        go,
        [
            _cells_trace(
                data,
                priced,
                cost,
                lambda r: 100 * r.mean[m],
                "%{text}<br>%{x}: %{y:.2f}%<extra></extra>",
            ),
            _front_trace(data, cheap, cost, lambda r: 100 * r.mean[m]),
        ],
        f"{METRICS[m].label} with {_short(data, setting.retrieval)} against {COST_NAMES[measure]}",
        COST_NAMES[measure],
        _axis_title(m),
    )
    return out


def size_plots(
    data: ReportData, setting: FigureSetting
) -> list[tuple[str, list[dict[str, Any]], str]]:
    """Per chunker family (sorted): its traces, one per retrieval setting (and other parameter
    setting, and embedder when there are several), the metric against the family's size
    parameter (mean chunk tokens when it has none), and the x axis title."""
    m = setting.metric
    rows = [
        r
        for r in data.rows
        if r.scoring == setting.scoring and data.cells[r.cell].dataset == setting.dataset
    ]
    multi = len({data.cells[r.cell].embedder_short for r in rows}) > 1
    order = {spec: i for i, spec in enumerate(data.retrievals)}
    short = data.short_retrievals()
    plots = []
    for family in sorted({data.cells[r.cell].family for r in rows}):
        own = [r for r in rows if data.cells[r.cell].family == family]
        sized = all(
            data.cells[r.cell].size_param and data.cells[r.cell].size is not None for r in own
        )
        param = data.cells[own[0].cell].size_param if sized else None

        def x(r: LeaderRow, sized: bool = sized) -> float:
            c = data.cells[r.cell]
            return float(c.size) if sized and c.size is not None else c.mean_chunk_tokens

        groups: dict[str, tuple[str, list[LeaderRow]]] = {}
        for r in own:
            c = data.cells[r.cell]
            parts = [short[r.retrieval], chunker_variant(c), c.embedder_short if multi else ""]
            key = " · ".join(p for p in parts if p)
            groups.setdefault(key, (r.retrieval, []))[1].append(r)
        traces = []
        for name, (_, items) in sorted(groups.items(), key=lambda g: (order[g[1][0]], g[0])):
            items = sorted(items, key=x)
            traces.append(
                _scatter(
                    name,
                    "lines+markers",
                    items,
                    x,
                    lambda r: _pct(r.mean.get(m)),
                    error_y=_error_bars(items, m),
                    text=[data.cells[r.cell].label for r in items],
                    hovertemplate="%{text}<br>%{x}: %{y:.2f}%<extra>%{fullData.name}</extra>",
                )
            )
        plots.append((family, traces, param or "mean chunk tokens (no size parameter)"))
    return plots


def _rows_at(data: ReportData, setting: FigureSetting) -> list[LeaderRow]:
    return [
        r
        for r in data.rows
        if (r.retrieval, r.scoring) == (setting.retrieval, setting.scoring)
        and data.cells[r.cell].dataset == setting.dataset
    ]


def _short(data: ReportData, retrieval: str) -> str:
    return data.short_retrievals().get(retrieval, retrieval)


def _axis_title(metric: str) -> str:
    return f"{METRICS[metric].label} (%)"


def _pct(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else 100 * value


def _error_bars(rows: list[LeaderRow], m: str) -> dict[str, Any] | None:
    if not METRICS[m].interval:
        return None

    def side(r: LeaderRow, i: int) -> float:
        bounds = r.ci.get(m)
        if bounds is None or math.isnan(bounds[i]) or math.isnan(r.mean[m]):
            return 0.0
        return 100 * abs(bounds[i] - r.mean[m])

    return {
        "type": "data",
        "symmetric": False,
        "visible": True,
        "thickness": 1,
        "array": [side(r, 1) for r in rows],
        "arrayminus": [side(r, 0) for r in rows],
    }


def _cells_trace(
    data: ReportData,
    rows: list[LeaderRow],
    x: Callable[[LeaderRow], float],
    y: Callable[[LeaderRow], float],
    hover: str,
) -> dict[str, Any]:
    return _scatter(
        "cells",
        "markers",
        rows,
        x,
        y,
        text=[data.cells[r.cell].label for r in rows],
        marker={"size": 8, "color": BLUE, "opacity": 0.75},
        hovertemplate=hover,
    )


def _front_trace(
    data: ReportData,
    rows: list[LeaderRow],
    x: Callable[[LeaderRow], float],
    y: Callable[[LeaderRow], float],
) -> dict[str, Any]:
    short = data.short_retrievals()
    return _scatter(
        "Pareto front",
        "lines+markers",
        rows,
        x,
        y,
        line={"color": RED, "width": 2, "dash": "dot"},
        marker={"color": RED, "size": 11, "symbol": "diamond-open", "line": {"width": 2}},
        text=[f"{data.cells[r.cell].label} ({short[r.retrieval]})" for r in rows],
        hovertemplate="%{text}<extra>Pareto front</extra>",
    )


def _scatter(
    name: str,
    mode: str,
    rows: list[LeaderRow],
    x: Callable[[LeaderRow], float],
    y: Callable[[LeaderRow], float | None],
    **style: Any,
) -> dict[str, Any]:
    """A scatter trace named ``name``: a point per row at (``x``, ``y``), drawn as ``style``
    says."""
    xs, ys = [x(r) for r in rows], [y(r) for r in rows]
    return {"type": "scatter", "mode": mode, "name": name, "x": xs, "y": ys, **style}


def _figure(go: Any, traces: list[dict[str, Any]], title: str, x: str, y: str) -> Any:
    figure = go.Figure(
        data=traces,
        layout={
            "title": {"text": title, "font": {"size": 14}},
            "xaxis": {"title": {"text": x}},
            "yaxis": {"title": {"text": y}},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
            "hovermode": "closest",
            "legend": {"orientation": "h", "y": -0.2},
        },
    )
    return figure
