"""The recommendation as plain lines (the last lines of ``chunkmark run``): the cell the report
recommends (a single winner only when its P(best) and the paired tests agree), else the group
tied with the best and its cheapest cell, and where the report is, computed by the report's own analysis
(:func:`chunkmark.report.recommendation.recommend`), which needs no plotly."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkmark.metrics.selection import Separation
    from chunkmark.report import ReportOptions
    from chunkmark.report.comparisons import Option, Recommendation
    from chunkmark.report.data import ReportData


def recommendation_lines(
    out: Path, report: Path | None = None, options: ReportOptions | None = None
) -> list[str]:
    """What the report of the run in ``out`` recommends, per dataset, as plain lines; then
    ``report`` (the page written, if any). ``options``: the metric, retrieval setting and
    P(best) the recommendation reads (default: the report's)."""
    from chunkmark.errors import ChunkmarkError

    try:
        from chunkmark.report.recommendation import recommend
        from chunkmark.report.sources import source_lines

        data, recommendations = recommend(out, None if options is None else options.stats())
    except ChunkmarkError as exc:
        lines = [f"No recommendation: {exc}"]
    else:
        lines = [line for r in recommendations for line in dataset_lines(data, r)]
        lines += source_lines(data, recommendations)  # which questions it rests on, by source
    if report is not None:
        lines.append(f"Report: {report}")
    return lines


def dataset_lines(data: ReportData, r: Recommendation) -> list[str]:
    """A single winner when P(best) and the paired tests agree; else the group tied with the
    best, to be chosen from on cost, and the questions it would take to separate the top two."""
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
    share = r.p_best_of(best.option)
    interval = (
        ""
        if math.isnan(best.ci_low) or math.isnan(best.ci_high)
        else f" [{_pct(best.ci_low)}, {_pct(best.ci_high)}]"
    )
    measured = (
        f"{name(best.cell)}: {label} {_pct(best.mean)}%{interval} with {setting}, "
        f"{r.n_questions} questions."
    )
    if best.versus is None or best.comparison is None:
        return [f"Recommended for {r.dataset}{embedder}: {measured}", "It is the only cell scored."]
    others = [o for o in best.tied if o != best.option]
    if r.winner is not None:
        gap = abs(best.comparison.difference)
        p = "n/a" if best.p_adjusted is None else f"{best.p_adjusted:.2g}"
        return [
            f"Recommended for {r.dataset}{embedder}: {measured} P(best) = {share:.2f} (the share "
            "of bootstrap resamples of the questions in which it is best).",
            f"No cell ties with it: the runner-up, {name(best.versus[0])}, is "
            f"{_pct(gap)} points behind (Holm-adjusted p = {p}).",
        ]
    lines = [
        f"No single winner for {r.dataset}{embedder}"
        f"{' (inconclusive)' if r.verdict == 'inconclusive' else ''}: {r.reason}.",
        f"The best by mean is {measured} P(best) = {share:.2f}.",
    ]
    if others:
        names = ", ".join(f"{name(o[0])} (P(best) = {r.p_best_of(o):.2f})" for o in others)
        lines.append(f"Tied with it (paired tests cannot tell them apart): {names}.")
        cheapest = r.cheapest_tied
        if cheapest is not None:
            lines.append(
                f"Choose on cost within the group: the cheapest to index is "
                f"{_cost(data, cheapest.cell, best.cell, name)}."
            )
    else:
        p = "n/a" if best.p_adjusted is None else f"{best.p_adjusted:.2g}"
        lines.append(f"The runner-up, {name(best.versus[0])}, has Holm-adjusted p = {p}.")
    if r.top_two is not None:
        lines.append(_separation_line(r.top_two, name, r.n_questions))
    return lines


def _cost(data: ReportData, cheap: int, best: int, name: Callable[[int], str]) -> str:
    c, b = data.cells[cheap], data.cells[best]
    if cheap == best:
        return f"{name(cheap)} itself ({c.tokens_embedded:,} tokens embedded)"
    return (
        f"{name(cheap)} ({c.tokens_embedded:,} tokens embedded against "
        f"{b.tokens_embedded:,} for {name(best)})"
    )


def _separation_line(s: Separation[Option], name: Callable[[int], str], n: int) -> str:
    """How many questions would separate the top two (or that no realistic number would)."""
    q = s.needed
    pair = f"{name(s.a[0])} and {name(s.b[0])}"
    gap = f"{_pct(abs(q.difference))} points apart"
    if q.n is None:
        return (
            f"No realistic number of questions would separate {pair} ({gap}; {q.reason}): "
            "decide on cost."
        )
    return (
        f"Separating {pair} ({gap}) would take about {q.n:,} questions for "
        f"{100 * q.power:.0f}% power at alpha {q.alpha:g} (paired t-test; this run has {n})."
    )


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"
