"""What the report computes from the runs: Pareto fronts, the recommendation and comparisons.

Every test here is one of :mod:`chunkmark.metrics.paired`: cells are compared on the same
questions (paired), with the sign-flip randomisation test; groups tied with the best are
:func:`~chunkmark.metrics.paired.tied_with_best` (Holm-adjusted p-values), and shown as a group,
not an order. Cells are compared at one retrieval setting and one scoring (see
:func:`choose_setting`), so every comparison pairs like with like.

A single winner is named only when two things agree: the best cell's P(best) (its share of joint
bootstrap resamples of the questions in which it is best, :func:`~chunkmark.metrics.selection.p_best`)
is at least ``min_p_best``, and no cell is tied with it. Otherwise the recommendation is the
group (the best and the cells tied with it), to be chosen from on cost, with the questions it
would take to separate the top two (:func:`~chunkmark.metrics.selection.questions_needed`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Literal

import numpy as np

from chunkmark.metrics import METRICS
from chunkmark.metrics.paired import PairedComparison, compare_pairs
from chunkmark.metrics.selection import (
    MIN_P_BEST,
    Pitted,
    Selection,
    SelectionOptions,
    Separation,
    rank,
    select,
    verdict_of,
)
from chunkmark.report.data import ReportData, RowKey, paired_values
from chunkmark.report.errors import ReportError
from chunkmark.report.settings import choose_retrieval, choose_scoring

Direction = Literal["higher", "lower"]
RANDOMISATION = "paired sign-flip randomisation test"
Option = RowKey  # (cell index, retrieval setting, scoring key)
DEFAULT_METRIC = "iou"
BUDGET_METRIC = "recall"  # what a fixed number of context tokens is read by


@dataclass(frozen=True)
class StatsOptions(SelectionOptions):
    """The settings of every test in the report: the metric, the retrieval setting
    (``retrieval``, else ``top_k(k=<k>)``, else the default of :func:`choose_retrieval`), the
    scoring (a :attr:`Scoring.key`; None: the defaults when present) and the tests' own
    (:class:`~chunkmark.metrics.selection.SelectionOptions`).

    Left out (None), the metric and setting are those the runs ask for (:func:`resolve`): with
    token budgets in the runs, recall at the first budget (the fair comparison: every cell
    hands over as many tokens); else IoU at ``top_k(k=5)``. A metric left out under a picked
    ``token_budget`` setting is recall too.

    ``min_p_best`` is the P(best) a single winner needs (resampled ``bootstrap`` times);
    ``power``, ``min_difference`` and ``max_questions`` are those of the questions needed to
    separate two cells (:func:`~chunkmark.metrics.selection.questions_needed`, at ``alpha``)."""

    metric: str | None = None
    retrieval: str | None = None
    k: str | None = None
    scoring: str | None = None
    max_context_tokens: float = 1000.0

    @property
    def metric_name(self) -> str:
        """The metric analysed (after :func:`resolve`; IoU when still left out)."""
        return self.metric or DEFAULT_METRIC


def pareto_front(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    x: Direction = "lower",
    y: Direction = "higher",
) -> list[int]:
    """Indices of the points no other point beats on both axes, in order of x (best x first).

    A point is dominated when another is at least as good on both axes and better on one;
    identical points are all on the front; points with a NaN coordinate are left out.
    """
    sx = 1.0 if x == "higher" else -1.0
    sy = 1.0 if y == "higher" else -1.0
    points = [
        (i, sx * float(a), sy * float(b))
        for i, (a, b) in enumerate(zip(xs, ys, strict=True))
        if not (math.isnan(float(a)) or math.isnan(float(b)))
    ]
    front = [
        i
        for i, a, b in points
        if not any((c >= a and d >= b) and (c > a or d > b) for _, c, d in points)
    ]
    return sorted(front, key=lambda i: (-sx * float(xs[i]), i))


@dataclass(frozen=True)
class Pick:
    """One recommended cell (at the recommendation's retrieval setting and scoring) with its
    interval, and the test that puts it there.

    ``versus`` is the option it was tested against (the runner-up, or the best for the cheapest
    tied cell), ``comparison`` that paired comparison and ``p_adjusted`` its Holm-adjusted
    p-value over all the pairs of the group's test. ``tied`` lists the options the data cannot
    tell from the best (the pick included).
    """

    cell: int
    retrieval: str
    scoring: str
    metric: str
    mean: float
    ci_low: float
    ci_high: float
    versus: Option | None
    comparison: PairedComparison | None
    p_adjusted: float | None
    tied: tuple[Option, ...]
    retrieved_tokens: float
    compared: int  # comparisons with the best in the group's test (Holm adjusts over these)
    is_best: bool

    @property
    def option(self) -> Option:
        return (self.cell, self.retrieval, self.scoring)


@dataclass(frozen=True)
class Recommendation:
    """The recommendation for one dataset at the chosen metric, retrieval setting and
    scoring.

    ``p_best`` holds every option's P(best), best first; ``winner`` is the best option when it
    is a single winner (P(best) at least ``min_p_best`` and nothing tied with it), else None:
    then the group ``best.tied`` is the answer, chosen from on cost (``cheapest_tied``).
    ``top_two`` is the questions needed to separate the best from the runner-up by mean,
    ``cheapest`` those to separate the best from the cheapest tied option (None when it is the
    best)."""

    dataset: str
    metric: str
    retrieval: str
    scoring: str
    n_questions: int
    best: Pick | None
    cheapest_tied: Pick | None
    budget: Pick | None
    max_context_tokens: float
    smallest_retrieval: Option | None  # when nothing fits the budget
    test: str = RANDOMISATION
    p_best: tuple[tuple[Option, float], ...] = ()
    min_p_best: float = MIN_P_BEST
    winner: Option | None = None
    top_two: Separation[Option] | None = None
    cheapest: Separation[Option] | None = None

    def p_best_of(self, option: Option) -> float:
        """An option's P(best) (NaN for one not compared)."""
        return dict(self.p_best).get(option, math.nan)

    @property
    def verdict(self) -> str:
        """``winner``; else ``inconclusive`` when more questions are needed to separate the top
        two than the run has (or the paired interval of the top two excludes zero while the
        tests tie them); else ``tied`` (no realistic number of questions would separate them,
        or they are separated and P(best) alone falls short); ``single`` with one cell."""
        if self.best is None or self.best.versus is None:
            return "single"
        if self.winner is not None:
            return "winner"
        needed = None if self.top_two is None else self.top_two.needed
        comparison = self.best.comparison
        kind = verdict_of(
            1.0,  # the group's test did not name a winner: read as "cannot reject"
            math.nan if comparison is None else comparison.ci_low,
            math.nan if comparison is None else comparison.ci_high,
            self.n_questions,
            needed,
        )
        tied = len(self.best.tied) > 1
        return "inconclusive" if kind == "inconclusive" and tied else "tied"

    @property
    def reason(self) -> str:
        """Why no single winner is named, the real reason first (empty for a winner)."""
        if self.best is None or self.winner is not None or self.best.versus is None:
            return ""
        others = len(self.best.tied) - 1
        share = self.p_best_of(self.best.option)
        needed = None if self.top_two is None else self.top_two.needed
        if others > 0:
            why = (
                f"{others} other cell{'s are' if others > 1 else ' is'} tied with it (the "
                "paired tests cannot tell them apart)"
            )
            if self.verdict == "inconclusive" and needed is not None and needed.n is not None:
                why += (
                    f"; inconclusive, not a tie: about {needed.n:,} questions would separate "
                    f"the top two, and this run has {self.n_questions}"
                )
            elif needed is not None and needed.n is None:
                why += "; no realistic number of questions would separate the top two"
            return why
        return (
            f"no cell is tied with it after Holm, but it is best in only {100 * share:.0f}% of "
            f"bootstrap resamples (P(best) = {share:.2f}, below the {self.min_p_best:g} a "
            "winner needs)"
        )


@dataclass(frozen=True)
class EmbedderPair:
    """Two embedders on the same chunking: ``comparison`` is ``a`` minus ``b``."""

    chunker: str
    a: int
    b: int
    comparison: PairedComparison
    p_adjusted: float


@dataclass(frozen=True)
class Agreement:
    """Kendall's tau between two datasets' orderings of the cells they share."""

    a: str
    b: str
    n_cells: int
    tau: float
    p_value: float


@dataclass(frozen=True)
class Comparisons:
    """Per dataset: the best cell per embedder and the paired embedder differences; between
    datasets: how alike their cell orderings are."""

    best_per_embedder: dict[str, list[Option]]
    embedder_pairs: dict[str, list[EmbedderPair]]
    agreements: list[Agreement] = field(default_factory=list)


def resolve(data: ReportData, options: StatsOptions) -> StatsOptions:
    """``options`` with the metric, retrieval setting and scoring analysed filled in: those
    asked for, else recall at the runs' first ``token_budget`` setting (in display order: the
    smallest) scored with that scoring when they hold one, else IoU at :func:`choose_retrieval`'s default (a
    ReportError when the runs lack what was asked for)."""
    from chunkmark.report.settings import name_of, ordered

    retrieval = options.retrieval
    if retrieval is None and options.k is None:
        _, scoring = choose_setting(data, options)
        scored = {r.retrieval for r in data.rows if r.scoring == scoring}
        budgets = [s for s in ordered(scored) if name_of(s) == "token_budget"]
        retrieval = budgets[0] if budgets else None
    chosen = replace(options, retrieval=retrieval)
    setting, scoring = choose_setting(data, chosen)
    metric = options.metric
    if metric is None:
        metric = BUDGET_METRIC if name_of(setting) == "token_budget" else DEFAULT_METRIC
    return replace(chosen, metric=check_metric(metric), retrieval=setting, scoring=scoring)


def choose_setting(data: ReportData, options: StatsOptions) -> tuple[str, str]:
    """The retrieval setting and scoring key analysed (a ReportError when the runs lack the
    setting or scoring asked for)."""
    retrieval = choose_retrieval(data.retrievals, options.retrieval, options.k)
    present = data.scorings
    if options.scoring is None:
        return retrieval, choose_scoring(present).key
    if options.scoring not in {s.key for s in present}:
        raise ReportError(
            f"The scoring {options.scoring} is not in the runs.",
            f"Use one of: {', '.join(s.key for s in present)}.",
        )
    return retrieval, options.scoring


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ReportError(
            f"Unknown metric {metric!r}.", f"Use one of: {', '.join(METRICS.names())}."
        )
    return metric


def _options(data: ReportData, dataset: str, retrieval: str, scoring: str) -> list[Option]:
    """Every scored cell of the dataset at the retrieval setting and scoring."""
    return [
        (c.index, retrieval, scoring)
        for c in data.cells_of(dataset)
        if (c.index, retrieval, scoring) in data.scores
    ]


def _row_tokens(data: ReportData, option: Option) -> float:
    row = data.row(*option)
    return math.inf if row is None or math.isnan(row.retrieved_tokens) else row.retrieved_tokens


def _pick(data: ReportData, found: Selection[Option], pitted: Pitted[Option], metric: str) -> Pick:
    """The pick of ``pitted`` (the best against the runner-up, or an option against the
    best), its interval read from its summary row."""
    row = data.row(*pitted.option)
    if row is None:
        raise ReportError(f"No summary row for cell {pitted.option}.", "Rerun `chunkmark run`.")
    low, high = row.ci.get(metric, (math.nan, math.nan))
    return Pick(
        *pitted.option,
        metric=metric,
        mean=row.mean[metric],
        ci_low=low,
        ci_high=high,
        versus=pitted.versus,
        comparison=pitted.comparison,
        p_adjusted=pitted.p_adjusted,
        tied=found.tied,
        retrieved_tokens=row.retrieved_tokens,
        compared=len(found.order) - 1,
        is_best=pitted.option == found.order[0],
    )


def _recommendation(
    data: ReportData, dataset: str, setting: tuple[str, str], options: StatsOptions
) -> Recommendation:
    """The dataset's cells at the setting tested on the chosen metric (:func:`select`; the
    cheapest tied cell has the fewest tokens embedded, then the fewest chunks), and those whose
    mean retrieved tokens per question fit the budget tested on recall (:func:`rank`)."""
    metric = options.metric_name
    every = _options(data, dataset, *setting)
    fitting = [o for o in every if _row_tokens(data, o) <= options.max_context_tokens]
    recall = paired_values(data, fitting, BUDGET_METRIC)
    budget = rank(recall, METRICS[BUDGET_METRIC].direction, options) if recall else None
    out = Recommendation(
        dataset,
        metric,
        *setting,
        0,
        None,
        None,
        None if budget is None else _pick(data, budget, budget.best, BUDGET_METRIC),
        options.max_context_tokens,
        None if budget or not every else min(every, key=lambda o: _row_tokens(data, o)),
        min_p_best=options.min_p_best,
    )
    values = paired_values(data, every, metric)
    if not values:
        return out
    costs = {o: (data.cells[o[0]].tokens_embedded, data.cells[o[0]].n_chunks) for o in values}
    found = select(values, METRICS[metric].direction, costs, options)
    return replace(
        out,
        n_questions=found.n,
        best=_pick(data, found, found.best, metric),
        cheapest_tied=_pick(data, found, found.cheapest, metric),
        p_best=tuple(found.p_best.items()),
        winner=found.winner,
        top_two=found.top_two,
        cheapest=found.separate_cheapest,
    )


def _pairs_of(
    data: ReportData, dataset: str, setting: tuple[str, str]
) -> list[tuple[str, int, int]]:
    """(chunker, cell a, cell b) for every two embedders run with one chunking."""
    by_chunker: dict[str, list[int]] = {}
    for c in data.cells_of(dataset):
        if (c.index, *setting) in data.scores:
            by_chunker.setdefault(c.chunker, []).append(c.index)
    return [(ch, a, b) for ch, cells in by_chunker.items() for a, b in combinations(cells, 2)]


def _embedder_pairs(
    data: ReportData, dataset: str, setting: tuple[str, str], options: StatsOptions
) -> list[EmbedderPair]:
    """The embedder pairs of one dataset, compared on the chosen metric and Holm-adjusted
    together (:func:`compare_pairs`)."""
    found = _pairs_of(data, dataset, setting)
    pairs = [((a, *setting), (b, *setting)) for _, a, b in found]
    values = [paired_values(data, pair, options.metric_name) for pair in pairs]
    tested = compare_pairs(
        [(v[a], v[b]) for v, (a, b) in zip(values, pairs, strict=True)],
        permutations=options.permutations,
        bootstrap=options.bootstrap,
        seed=options.seed,
    )
    return [EmbedderPair(*pair, c, p) for pair, (c, p) in zip(found, tested, strict=True)]


def _best_per_embedder(
    data: ReportData, dataset: str, setting: tuple[str, str], metric: str
) -> list[Option]:
    sign = 1.0 if METRICS[metric].direction == "higher" else -1.0
    by_embedder: dict[str, list[Option]] = {}
    for r in data.rows:
        if (r.retrieval, r.scoring) == setting and data.cells[r.cell].dataset == dataset:
            by_embedder.setdefault(data.cells[r.cell].embedder, []).append(r.key)
    return [
        max(opts, key=lambda o: _mean_or_worst(data, o, metric, sign))
        for opts in by_embedder.values()
    ]


def _mean_or_worst(data: ReportData, option: Option, metric: str, sign: float) -> float:
    row = data.row(*option)
    value = math.nan if row is None else row.mean[metric]
    return -math.inf if math.isnan(value) else sign * value


def analyse(data: ReportData, options: StatsOptions) -> tuple[list[Recommendation], Comparisons]:
    """The recommendation for every dataset, and the comparisons, at the chosen metric,
    retrieval setting and scoring."""
    options = resolve(data, options)
    metric = check_metric(options.metric_name)
    setting = (str(options.retrieval), str(options.scoring))
    keys = [d.key for d in data.datasets]
    recommendations = [_recommendation(data, d, setting, options) for d in keys]
    comparisons = Comparisons(
        best_per_embedder={d: _best_per_embedder(data, d, setting, metric) for d in keys},
        embedder_pairs={d: _embedder_pairs(data, d, setting, options) for d in keys},
        agreements=_agreements(data, setting, metric),
    )
    return recommendations, comparisons


def _agreements(data: ReportData, setting: tuple[str, str], metric: str) -> list[Agreement]:
    """Kendall's tau of the shared cells' means between every two datasets (scipy.stats, which
    takes a noticeable share of a cached run's second to import, only where there is a pair)."""
    means: dict[str, dict[tuple[str, str], float]] = {}
    for r in data.rows:
        if (r.retrieval, r.scoring) != setting:
            continue
        cell = data.cells[r.cell]
        means.setdefault(cell.dataset, {})[(cell.chunker, cell.embedder)] = r.mean[metric]
    out = []
    for a, b in combinations([d.key for d in data.datasets], 2):
        shared = sorted(set(means.get(a, {})) & set(means.get(b, {})))
        if len(shared) < 2:
            out.append(Agreement(a, b, len(shared), math.nan, math.nan))
            continue
        from scipy.stats import kendalltau

        x = np.array([means[a][c] for c in shared])
        y = np.array([means[b][c] for c in shared])
        result = kendalltau(x, y)
        out.append(Agreement(a, b, len(shared), float(result.statistic), float(result.pvalue)))
    return out
