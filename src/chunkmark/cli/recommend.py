"""The last lines of ``chunkmark run``: the cell the report recommends, the cells tied with it
and where the report is, computed by the report's own analysis (:mod:`chunkmark.report.stats`),
which needs no plotly."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkmark.report.data import ReportData
    from chunkmark.report.stats import Recommendation, StatsOptions


def recommendation_lines(out: Path, report: Path | None = None) -> list[str]:
    """What the report of the run in ``out`` recommends, per dataset, as plain lines; then
    ``report`` (the page written, if any)."""
    from chunkmark.errors import ChunkmarkError

    try:
        data, recommendations = recommend(out)
    except ChunkmarkError as exc:
        lines = [f"No recommendation: {exc}"]
    else:
        lines = [line for r in recommendations for line in _lines(data, r)]
    if report is not None:
        lines.append(f"Report: {report}")
    return lines


def recommend(
    out: Path, options: StatsOptions | None = None
) -> tuple[ReportData, list[Recommendation]]:
    """The run in ``out`` read as the report reads it, and the report's recommendation for
    each of its datasets under ``options`` (default: those report.html is built with); a
    ChunkmarkError when the run cannot be read or lacks the setting asked for."""
    from chunkmark.report import ReportOptions
    from chunkmark.report.data import load_runs
    from chunkmark.report.stats import analyse, choose_setting

    data = load_runs([out])
    stats = options or ReportOptions().stats()  # the defaults the run's report.html is built with
    retrieval, scoring = choose_setting(data, stats)
    recommendations, _ = analyse(data, replace(stats, retrieval=retrieval, scoring=scoring))
    return data, recommendations


def _lines(data: ReportData, r: Recommendation) -> list[str]:
    from chunkmark.metrics import METRICS

    best = r.best
    if best is None:
        return [f"{r.dataset}: no cell was scored, so there is nothing to recommend."]
    cells = data.cells
    shared = len({c.embedder for c in data.cells_of(r.dataset)}) == 1

    def name(cell: int) -> str:  # the chunker alone when every cell has one embedder
        return cells[cell].chunker_short if shared else cells[cell].label

    label = METRICS[r.metric].label
    setting = data.short_retrievals()[r.retrieval]
    embedder = f" x {cells[best.cell].embedder_short}" if shared else ""
    lines = [
        f"Recommended for {r.dataset}{embedder}: {name(best.cell)}: {label} {_pct(best.mean)}% "
        f"[{_pct(best.ci_low)}, {_pct(best.ci_high)}] with {setting}, {r.n_questions} questions."
    ]
    others = [o for o in best.tied if o != best.option]
    if others:
        names = ", ".join(name(o[0]) for o in others)
        cheapest = r.cheapest_tied
        cheap = (
            f"; the cheapest to index is {name(cheapest.cell)}"
            if cheapest is not None and cheapest.cell != best.cell
            else ""
        )
        lines.append(f"Tied with it (paired tests cannot tell them apart): {names}{cheap}.")
    elif best.versus is not None and best.comparison is not None:
        gap = abs(best.comparison.difference)
        p = "n/a" if best.p_adjusted is None else f"{best.p_adjusted:.2g}"
        lines.append(
            f"No cell ties with it: the runner-up, {name(best.versus[0])}, is "
            f"{_pct(gap)} points behind (Holm-adjusted p = {p})."
        )
    else:
        lines.append("It is the only cell scored.")
    return lines


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"
