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
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np

from chunkmark.metrics import METRICS
from chunkmark.metrics.paired import (
    PairedComparison,
    compare_paired,
    holm,
    tied_with_best,
)
from chunkmark.metrics.selection import (
    MAX_QUESTIONS,
    MIN_DIFFERENCE,
    MIN_P_BEST,
    POWER,
    QuestionsNeeded,
    names_single_winner,
    p_best,
    questions_needed,
    verdict_of,
)
from chunkmark.report.data import FloatArray, ReportData, RowKey
from chunkmark.report.errors import ReportError
from chunkmark.report.settings import choose_retrieval, choose_scoring

Direction = Literal["higher", "lower"]
RANDOMISATION = "paired sign-flip randomisation test"
Option = RowKey  # (cell index, retrieval setting, scoring key)
DEFAULT_METRIC = "iou"
BUDGET_METRIC = "recall"  # what a fixed number of context tokens is read by


@dataclass(frozen=True)
class StatsOptions:
    """The settings of every test in the report: the metric, the retrieval setting
    (``retrieval``, else ``top_k(k=<k>)``, else the default of :func:`choose_retrieval`), the
    scoring (a :attr:`Scoring.key`; None: the defaults when present) and the tests' own.

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
    alpha: float = 0.05
    permutations: int = 10_000
    bootstrap: int = 10_000
    seed: int = 0
    min_p_best: float = MIN_P_BEST
    power: float = POWER
    min_difference: float = MIN_DIFFERENCE
    max_questions: int = MAX_QUESTIONS

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
class Separation:
    """How many questions would separate two options: ``a`` (the best) against ``b``."""

    a: Option
    b: Option
    needed: QuestionsNeeded


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
    top_two: Separation | None = None
    cheapest: Separation | None = None

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
    from dataclasses import replace

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


def paired_values(
    data: ReportData, options: Sequence[Option], metric: str
) -> dict[Option, FloatArray]:
    """Each option's per-question values of ``metric`` over the questions all of them share,
    in one order."""
    scored = [o for o in options if o in data.scores]
    if not scored:
        return {}
    common = set(data.scores[scored[0]].question_ids)
    for o in scored[1:]:
        common &= set(data.scores[o].question_ids)
    order = [q for q in data.scores[scored[0]].question_ids if q in common]
    out: dict[Option, FloatArray] = {}
    for o in scored:
        s = data.scores[o]
        position = {q: i for i, q in enumerate(s.question_ids)}
        out[o] = s.values[metric][[position[q] for q in order]]
    return out


@dataclass(frozen=True)
class _Group:
    """tied_with_best's answer for some options, best first, with their paired values."""

    metric: str
    values: dict[Option, FloatArray]
    order: list[Option]
    p_adjusted: dict[Option, float]
    tied: tuple[Option, ...]


# The tie test reads only the randomisation p-values; the intervals the page shows are
# recomputed in full (compare_paired, same seed: the same p-value) for the pairs it shows.
_TIE_BOOTSTRAP = 1


def _tied(values: dict[Option, FloatArray], metric: str, options: StatsOptions) -> _Group | None:
    """The options tied with the best on ``metric`` (None when there are none)."""
    if not values:
        return None
    names = {str(i): o for i, o in enumerate(values)}
    ties = tied_with_best(
        {name: values[o] for name, o in names.items()},
        direction=METRICS[metric].direction,
        alpha=options.alpha,
        permutations=options.permutations,
        bootstrap=_TIE_BOOTSTRAP,
        seed=options.seed,
    )
    return _Group(
        metric=metric,
        values=values,
        order=[names[t.cell] for t in ties],
        p_adjusted={names[t.cell]: t.p_adjusted for t in ties},
        tied=tuple(names[t.cell] for t in ties if t.tied),
    )


def _options(data: ReportData, dataset: str, retrieval: str, scoring: str) -> list[Option]:
    """Every scored cell of the dataset at the retrieval setting and scoring."""
    return [
        (c.index, retrieval, scoring)
        for c in data.cells_of(dataset)
        if (c.index, retrieval, scoring) in data.scores
    ]


def _best_group(
    data: ReportData, dataset: str, retrieval: str, scoring: str, options: StatsOptions
) -> _Group | None:
    """The dataset's cells at the setting, tested against the best on the chosen metric."""
    cells = _options(data, dataset, retrieval, scoring)
    metric = options.metric_name
    return _tied(paired_values(data, cells, metric), metric, options)


def _budget_group(
    data: ReportData, dataset: str, retrieval: str, scoring: str, options: StatsOptions
) -> _Group | None:
    """The cells at the setting whose mean retrieved tokens per question fit the budget, tested
    against the best on recall."""
    fitting = [
        o
        for o in _options(data, dataset, retrieval, scoring)
        if _row_tokens(data, o) <= options.max_context_tokens
    ]
    return _tied(paired_values(data, fitting, "recall"), "recall", options)


def _row_tokens(data: ReportData, option: Option) -> float:
    row = data.row(*option)
    return math.inf if row is None or math.isnan(row.retrieved_tokens) else row.retrieved_tokens


def _pick(data: ReportData, group: _Group, option: Option, options: StatsOptions) -> Pick:
    """``option`` of the group, tested against the runner-up when it is the best, else against
    the best: the paired comparison (best minus the other) and its Holm-adjusted p-value."""
    best = group.order[0]
    versus = (group.order[1] if len(group.order) > 1 else None) if option == best else best
    comparison = p_adjusted = None
    if versus is not None:
        comparison = compare_paired(
            group.values[best],
            group.values[versus if option == best else option],
            permutations=options.permutations,
            bootstrap=options.bootstrap,
            seed=options.seed,
        )
        p_adjusted = group.p_adjusted[versus if option == best else option]
    row = data.row(*option)
    if row is None:
        raise ReportError(f"No summary row for cell {option}.", "Rerun `chunkmark run`.")
    low, high = row.ci.get(group.metric, (math.nan, math.nan))
    return Pick(
        cell=option[0],
        retrieval=option[1],
        scoring=option[2],
        metric=group.metric,
        mean=row.mean[group.metric],
        ci_low=low,
        ci_high=high,
        versus=versus,
        comparison=comparison,
        p_adjusted=p_adjusted,
        tied=group.tied,
        retrieved_tokens=row.retrieved_tokens,
        compared=len(group.order) - 1,
        is_best=option == best,
    )


def _cheapest(data: ReportData, group: _Group) -> Option:
    """The tied option with the fewest tokens embedded, then the fewest chunks."""
    return min(
        group.tied,
        key=lambda o: (
            data.cells[o[0]].tokens_embedded,
            data.cells[o[0]].n_chunks,
            group.order.index(o),
        ),
    )


def _recommendation(
    data: ReportData,
    dataset: str,
    setting: tuple[str, str],
    options: StatsOptions,
    best: _Group | None,
    budget: _Group | None,
) -> Recommendation:
    best_pick = cheapest = budget_pick = smallest = None
    if best is not None:
        best_pick = _pick(data, best, best.order[0], options)
        cheapest = _pick(data, best, _cheapest(data, best), options)
    if budget is not None:
        budget_pick = _pick(data, budget, budget.order[0], options)
    else:
        every = _options(data, dataset, *setting)
        smallest = min(every, key=lambda o: _row_tokens(data, o)) if every else None
    n = len(next(iter(best.values.values()))) if best is not None else 0
    shares: tuple[tuple[Option, float], ...] = ()
    winner = top_two = separate_cheapest = None
    if best is not None and best_pick is not None and n > 0:
        found = p_best(
            {str(i): best.values[o] for i, o in enumerate(best.order)},
            direction=METRICS[best.metric].direction,
            resamples=options.bootstrap,
            seed=options.seed,
        )
        shares = tuple((o, found[str(i)]) for i, o in enumerate(best.order))
        top = best.order[0]
        if names_single_winner(found["0"], len(best.tied), options.min_p_best):
            winner = top
        if len(best.order) > 1:
            top_two = _separation(best, top, best.order[1], options)
        if cheapest is not None and cheapest.option != top:
            separate_cheapest = _separation(best, top, cheapest.option, options)
    return Recommendation(
        dataset,
        options.metric_name,
        setting[0],
        setting[1],
        n,
        best_pick,
        cheapest,
        budget_pick,
        options.max_context_tokens,
        smallest,
        p_best=shares,
        min_p_best=options.min_p_best,
        winner=winner,
        top_two=top_two,
        cheapest=separate_cheapest,
    )


def _separation(group: _Group, a: Option, b: Option, options: StatsOptions) -> Separation | None:
    """The questions needed to separate ``a`` from ``b`` (None with fewer than two questions)."""
    if len(group.values[a]) < 2:
        return None
    needed = questions_needed(
        group.values[a],
        group.values[b],
        power=options.power,
        alpha=options.alpha,
        min_difference=options.min_difference,
        max_questions=options.max_questions,
    )
    return Separation(a, b, needed)


def _pairs_of(
    data: ReportData, dataset: str, setting: tuple[str, str]
) -> list[tuple[str, int, int]]:
    """(chunker, cell a, cell b) for every two embedders run with one chunking."""
    by_chunker: dict[str, list[int]] = {}
    for c in data.cells_of(dataset):
        if (c.index, *setting) in data.scores:
            by_chunker.setdefault(c.chunker, []).append(c.index)
    return [(ch, a, b) for ch, cells in by_chunker.items() for a, b in combinations(cells, 2)]


def _pair(
    data: ReportData, a: int, b: int, setting: tuple[str, str], options: StatsOptions
) -> PairedComparison:
    oa, ob = (a, *setting), (b, *setting)
    values = paired_values(data, [oa, ob], options.metric_name)
    return compare_paired(
        values[oa],
        values[ob],
        permutations=options.permutations,
        bootstrap=options.bootstrap,
        seed=options.seed,
    )


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
    recommendations = [
        _recommendation(
            data,
            d,
            setting,
            options,
            _best_group(data, d, *setting, options),
            _budget_group(data, d, *setting, options),
        )
        for d in keys
    ]
    pairs = {
        d: _holm_pairs(
            [(p, _pair(data, p[1], p[2], setting, options)) for p in _pairs_of(data, d, setting)]
        )
        for d in keys
    }
    comparisons = Comparisons(
        best_per_embedder={d: _best_per_embedder(data, d, setting, metric) for d in keys},
        embedder_pairs=pairs,
        agreements=_agreements(data, setting, metric),
    )
    return recommendations, comparisons


def _holm_pairs(
    found: list[tuple[tuple[str, int, int], PairedComparison]],
) -> list[EmbedderPair]:
    """The embedder pairs of one dataset, their p-values Holm-adjusted together."""
    adjusted = holm([c.p_permutation for _, c in found])
    return [
        EmbedderPair(chunker, a, b, comparison, p)
        for ((chunker, a, b), comparison), p in zip(found, adjusted, strict=True)
    ]


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
