"""The recommendation of a finished run, as a library: the run read as the report reads it and
the report's own analysis (:func:`~chunkmark.report.comparisons.analyse`, which needs no plotly), and
the same answer as a typed record (:class:`RunRecommendation`) with the fields ``chunkmark run``
prints in its last lines.

    from chunkmark.report.recommendation import recommendations

    (advice,) = recommendations("results/demo")
    advice.best.name, advice.mean, advice.single_winner, advice.questions_needed

``chunkmark run`` (:mod:`chunkmark.report.recommendation_text`), the MCP server and
:meth:`chunkmark.Results.recommendation` all call :func:`recommend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from chunkmark.metrics import METRICS
from chunkmark.report.comparisons import (
    Option,
    Recommendation,
    StatsOptions,
    analyse,
    check_metric,
    resolve,
)
from chunkmark.report.data import ReportData, load_runs
from chunkmark.report.html import ReportOptions


def recommend(
    out: Path, options: StatsOptions | None = None
) -> tuple[ReportData, list[Recommendation]]:
    """The run in ``out`` read as the report reads it, and the report's recommendation for
    each of its datasets under ``options`` (default: those report.html is built with); a
    ChunkmarkError when the run cannot be read or lacks the setting asked for."""
    data = load_runs([out])
    stats = options or ReportOptions().stats()  # the defaults the run's report.html is built with
    found, _ = analyse(data, resolve(data, stats))
    return data, found


@dataclass(frozen=True)
class RecommendedCell:
    """One cell named in a recommendation: ``name`` as ``chunkmark run`` prints it (the chunker
    alone when every cell of the dataset has one embedder, else chunker x embedder), its
    canonical specs, its P(best) and the cl100k_base tokens indexing the corpus embeds."""

    name: str
    chunker: str
    embedder: str
    p_best: float
    tokens_embedded: int


@dataclass(frozen=True)
class RunRecommendation:
    """What the report recommends for one dataset, with the fields ``chunkmark run`` prints.

    Values are fractions (0.4567 is the 45.67% the report shows). ``best`` is the best cell by
    mean (None when no cell was scored), with ``mean`` and its 95% interval; ``single_winner``
    says whether it is named a winner (P(best) >= ``min_p_best`` and no cell tied with it).
    ``tied`` lists the other cells the paired tests cannot tell from it and ``cheapest`` the
    cheapest of the group to index (``best`` itself when it is); ``runner_up``, ``difference``
    (best minus runner-up) and ``p_adjusted`` (Holm-adjusted) are the test against the
    runner-up. ``separating`` names the two cells the questions needed are for (the best and the
    next by mean), ``questions_needed`` that number (None when no realistic number would) at
    ``power`` and ``alpha``; ``embedder`` is the one embedder's short name when every cell
    shares it."""

    dataset: str
    metric: str
    metric_label: str
    retrieval: str
    retrieval_short: str
    scoring: str
    n_questions: int
    test: str
    min_p_best: float
    embedder: str | None = None
    best: RecommendedCell | None = None
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    single_winner: bool = False
    runner_up: RecommendedCell | None = None
    difference: float | None = None
    p_adjusted: float | None = None
    tied: tuple[RecommendedCell, ...] = ()
    cheapest: RecommendedCell | None = None
    separating: tuple[str, str] | None = None
    separation_difference: float | None = None
    questions_needed: int | None = None
    power: float | None = None
    alpha: float | None = None
    no_separation_reason: str | None = None


def recommendations(
    out: str | Path,
    *,
    metric: str | None = None,
    retrieval: str | None = None,
    k: str | None = None,
    min_p_best: float | None = None,
) -> list[RunRecommendation]:
    """The recommendation of the run in ``out`` for each of its datasets, as ``chunkmark run``
    prints it: the report's defaults, with ``metric``, ``retrieval`` (a setting spec), ``k``
    and ``min_p_best`` replacing them where given."""
    stats = ReportOptions().stats()
    given = {"metric": metric, "retrieval": retrieval, "k": k, "min_p_best": min_p_best}
    stats = replace(stats, **{key: v for key, v in given.items() if v is not None})  # type: ignore[arg-type]
    if stats.metric is not None:
        check_metric(stats.metric)
    data, found = recommend(Path(out), stats)
    return [recommendation_of(data, r) for r in found]


def recommendation_of(data: ReportData, r: Recommendation) -> RunRecommendation:
    """``r`` (of :func:`recommend`) as a :class:`RunRecommendation`."""
    shared = len({c.embedder for c in data.cells_of(r.dataset)}) == 1
    base = RunRecommendation(
        dataset=r.dataset,
        metric=r.metric,
        metric_label=METRICS[r.metric].label,
        retrieval=r.retrieval,
        retrieval_short=data.short_retrievals()[r.retrieval],
        scoring=r.scoring,
        n_questions=r.n_questions,
        test=r.test,
        min_p_best=r.min_p_best,
    )
    best = r.best
    if best is None:
        return base

    def cell(option: Option) -> RecommendedCell:
        info = data.cells[option[0]]
        return RecommendedCell(
            name=info.chunker_short if shared else info.label,
            chunker=info.chunker,
            embedder=info.embedder,
            p_best=r.p_best_of(option),
            tokens_embedded=info.tokens_embedded,
        )

    comparison = best.comparison
    others = tuple(cell(o) for o in best.tied if o != best.option)
    cheapest = r.cheapest_tied
    top_two = r.top_two
    return replace(
        base,
        embedder=data.cells[best.cell].embedder_short if shared else None,
        best=cell(best.option),
        mean=best.mean,
        ci_low=best.ci_low,
        ci_high=best.ci_high,
        single_winner=r.winner is not None,
        runner_up=None if best.versus is None else cell(best.versus),
        difference=None if comparison is None else comparison.difference,
        p_adjusted=best.p_adjusted,
        tied=others if comparison is not None else (),
        cheapest=cell(cheapest.option) if cheapest is not None and others else None,
        separating=None if top_two is None else (cell(top_two.a).name, cell(top_two.b).name),
        separation_difference=None if top_two is None else top_two.needed.difference,
        questions_needed=None if top_two is None else top_two.needed.n,
        power=None if top_two is None else top_two.needed.power,
        alpha=None if top_two is None else top_two.needed.alpha,
        no_separation_reason=None
        if top_two is None or top_two.needed.n is not None
        else top_two.needed.reason,
    )


def summary_lines(recs: Sequence[RunRecommendation]) -> list[str]:
    """One short line per dataset (for a notebook's display): the best cell, its interval, and
    whether it is a single winner or the best of a tied group."""
    lines = []
    for r in recs:
        if r.best is None or r.mean is None or r.ci_low is None or r.ci_high is None:
            lines.append(f"{r.dataset}: no cell was scored.")
            continue
        verdict = (
            "a single winner"
            if r.single_winner
            else f"no single winner ({len(r.tied)} {'cell' if len(r.tied) == 1 else 'cells'} "
            "tied with it)"
            if r.tied
            else "no single winner"
        )
        lines.append(
            f"{r.dataset}: {r.best.name}, {r.metric_label} {100 * r.mean:.2f}% "
            f"[{100 * r.ci_low:.2f}, {100 * r.ci_high:.2f}] with {r.retrieval_short}, "
            f"{r.n_questions} questions, P(best) = {r.best.p_best:.2f}: {verdict}."
        )
    return lines
