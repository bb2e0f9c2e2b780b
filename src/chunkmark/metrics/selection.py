"""Picking a winner from many cells: the chance each is best, and how many questions would
separate two; and :func:`select`, every statistic of one pick in one call.

- **P(best)** (:func:`p_best`): the questions are resampled with replacement (one set of
  resampled question ids shared by every cell, so the cells stay paired), each cell's mean is
  taken on every resample, and a cell's P(best) is the share of resamples in which it is best.
  Picking the top of a field inflates its lead; P(best) says how often the same data, drawn
  again, would pick it again.
- **Questions needed** (:func:`questions_needed`): from the paired differences between two
  cells, the number of questions at which a two-sided paired t-test at ``alpha`` detects their
  observed mean difference with the stated power, taking the observed mean and standard
  deviation of the differences as the truth. The power is computed exactly for the t-test from
  the noncentral t distribution (the normal approximation only gives the starting guess). When
  the difference is below a floor, or the number would exceed a ceiling, the answer is "no
  realistic number" (:attr:`QuestionsNeeded.n` is ``None``).
- **One pick** (:func:`select`, :func:`rank`): the options tested against the best
  (:func:`~chunkmark.metrics.paired.tied_with_best`), the best against the runner-up, the
  cheapest tied option against the best, P(best), the single-winner rule and the questions
  needed to separate the top two and the cheapest from the best.

Same inputs and seed, same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from chunkmark.metrics.paired import (
    BOOTSTRAP,
    DECIMALS,
    PERMUTATIONS,
    PairedComparison,
    compare_paired,
    tied_with_best,
)

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]
K = TypeVar("K", bound=Hashable)  # what the options of a pick are named by
RESAMPLES = 10_000
# A winner is named only when its P(best) reaches this (and the paired tests agree).
MIN_P_BEST = 0.9
POWER = 0.8
ALPHA = 0.05
# Below this absolute mean difference (in metric units: 0.005 is half a point of a percentage
# metric), no number of questions is called realistic.
MIN_DIFFERENCE = 0.005
# Above this many questions, neither.
MAX_QUESTIONS = 100_000
_CELLS_X_QUESTIONS = 4_000_000  # values held at once while resampling


def p_best(
    cells: Mapping[K, npt.ArrayLike],
    *,
    direction: Direction = "higher",
    tolerance: float = 0.0,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[K, float]:
    """Each cell's share of joint bootstrap resamples of the questions in which it is best.

    ``cells`` maps names to per-question values, all over the same questions in the same order.
    Every resample draws ``n`` question positions with replacement (seeded), the same positions
    for every cell, and compares the cells' means on them (``direction`` says whether higher or
    lower is better).

    With ``tolerance`` 0, a resample's best is the cell with the best mean; cells whose means
    are equal there (to :data:`~chunkmark.metrics.paired.DECIMALS` places) split that resample
    equally, so the shares add up to 1 and two identical cells get one half each. With a
    positive ``tolerance``, a cell counts in every resample where its mean is within
    ``tolerance`` of the best mean (the shares then add up to 1 or more).

    A cell with a NaN among its values is never best (its share is 0).
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if tolerance < 0:
        raise ValueError(f"tolerance must be at least 0, got {tolerance}")
    if not cells:
        return {}
    names = list(cells)
    values = np.vstack([np.asarray(cells[name], dtype=np.float64) for name in names])
    if values.ndim != 2:
        raise ValueError("each cell's values must be 1-D")
    n = values.shape[1]
    if n == 0:
        raise ValueError("no questions to resample")
    sign = 1.0 if direction == "higher" else -1.0
    values = sign * values
    broken = np.isnan(values).any(axis=1)
    values[broken] = 0.0  # replaced below by -inf means
    rng = np.random.default_rng(seed)
    shares = np.zeros(len(names))
    block = max(1, min(resamples, _CELLS_X_QUESTIONS // (len(names) * n)))
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        means = np.round(values[:, idx].mean(axis=2), DECIMALS)  # (cells, rows)
        means[broken] = -np.inf
        top = means.max(axis=0)
        if tolerance > 0:
            shares += (means >= top - tolerance).sum(axis=1)
        else:
            best = means == top
            shares += (best / best.sum(axis=0)).sum(axis=1)
    return {name: float(s / resamples) for name, s in zip(names, shares, strict=True)}


def names_single_winner(share: float, tied: int, min_p_best: float = MIN_P_BEST) -> bool:
    """The rule for naming one winner: the best cell's P(best) is at least ``min_p_best`` and
    the paired tests tie no other cell with it (``tied`` counts the group, the best included:
    :func:`~chunkmark.metrics.paired.tied_with_best`)."""
    return tied == 1 and share >= min_p_best


@dataclass(frozen=True)
class QuestionsNeeded:
    """How many paired questions a two-sided paired t-test at ``alpha`` needs to detect
    ``difference`` (the observed mean of the differences, with ``sd`` their sample standard
    deviation) with probability ``power``.

    ``n`` is ``None`` when no realistic number would: ``reason`` says why (the difference is
    below ``min_difference``, the number exceeds ``max_questions``, or it cannot be computed).
    """

    n: int | None
    difference: float
    sd: float
    power: float
    alpha: float
    min_difference: float
    max_questions: int
    reason: str | None = None
    method: str = "paired t-test, power from the noncentral t"

    @property
    def realistic(self) -> bool:
        return self.n is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def t_test_power(n: int, effect: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided one-sample (paired) t-test with ``n`` questions at ``alpha`` when
    the true standardised mean difference is ``effect`` (mean / sd): ``P(|T| > t_crit)`` with
    ``T`` noncentral t on ``n - 1`` degrees of freedom, noncentrality ``effect * sqrt(n)``."""
    from scipy import stats

    if n < 2:
        return 0.0
    df = n - 1
    critical = float(stats.t.isf(alpha / 2.0, df))
    nc = abs(effect) * math.sqrt(n)
    return float(stats.nct.sf(critical, df, nc) + stats.nct.cdf(-critical, df, nc))


def questions_needed(
    a: npt.ArrayLike,
    b: npt.ArrayLike | None = None,
    *,
    power: float = POWER,
    alpha: float = ALPHA,
    min_difference: float = MIN_DIFFERENCE,
    max_questions: int = MAX_QUESTIONS,
) -> QuestionsNeeded:
    """The questions a paired comparison of ``a`` and ``b`` needs: the smallest ``n`` at which
    the two-sided paired t-test at ``alpha`` has at least ``power`` to detect the observed mean
    difference, taking the observed mean and sample standard deviation of ``d = a - b`` as the
    truth (``b`` left out: ``a`` holds the differences).

    The normal approximation ``n = ((z(1 - alpha/2) + z(power)) * sd / |mean|)^2`` is the
    starting guess; the answer is the exact t-test power from the noncentral t
    (:func:`t_test_power`), which needs a few more questions than the normal approximation
    when ``n`` is small. "No realistic number" (``n`` is ``None``) when ``|mean| <
    min_difference``, when ``n`` would exceed ``max_questions``, or when the values hold a NaN.
    Differences that are all equal and not zero give ``n = 2``, the smallest t-test.
    """
    x = np.asarray(a, dtype=np.float64)
    d = x if b is None else x - np.asarray(b, dtype=np.float64)
    if d.ndim != 1 or len(d) < 2:
        raise ValueError(f"need at least two paired differences, got shape {d.shape}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha} and {power}")
    d = np.round(d, DECIMALS) + 0.0
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    return questions_for(
        mean,
        sd,
        power=power,
        alpha=alpha,
        min_difference=min_difference,
        max_questions=max_questions,
    )


def questions_for(
    mean: float,
    sd: float,
    *,
    power: float = POWER,
    alpha: float = ALPHA,
    min_difference: float = MIN_DIFFERENCE,
    max_questions: int = MAX_QUESTIONS,
) -> QuestionsNeeded:
    """:func:`questions_needed` from a mean difference and the standard deviation of the
    paired differences (the gate asks how many questions a drop of ``--max-drop`` needs)."""
    from scipy import stats

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha} and {power}")

    def answer(n: int | None, reason: str | None = None) -> QuestionsNeeded:
        return QuestionsNeeded(n, mean, sd, power, alpha, min_difference, max_questions, reason)

    if math.isnan(mean) or math.isnan(sd):
        return answer(None, "a value is missing (NaN)")
    if abs(mean) < min_difference:
        return answer(None, f"the difference is below {min_difference:g}")
    if sd == 0.0:
        return answer(2)
    effect = abs(mean) / sd
    z = float(stats.norm.isf(alpha / 2.0) + stats.norm.ppf(power))
    guess = (z / effect) ** 2
    if guess > max_questions:
        return answer(None, f"more than {max_questions:,} questions")
    # The t-test needs at least the normal approximation's n; search up from just below it.
    low = max(1, math.floor(guess) - 1)  # power(low) < target, or low == 1
    while t_test_power(low, effect, alpha) >= power and low > 1:
        low = max(1, low // 2)
    high = max(low + 1, math.ceil(guess))
    while t_test_power(high, effect, alpha) < power:
        high *= 2
        if high > 2 * max_questions:
            return answer(None, f"more than {max_questions:,} questions")
    while high - low > 1:  # power(low) < target <= power(high)
        mid = (low + high) // 2
        if t_test_power(mid, effect, alpha) >= power:
            high = mid
        else:
            low = mid
    if high > max_questions:
        return answer(None, f"more than {max_questions:,} questions")
    return answer(high)


def min_detectable_difference(
    n: int, sd: float, *, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest true mean difference that ``n`` paired questions detect with probability
    ``power`` when the differences have standard deviation ``sd``: the ``delta`` at which the
    two-sided paired t-test at ``alpha`` has exactly ``power`` (:func:`t_test_power` at the
    standardised effect ``delta / sd``, solved for the effect). None when it cannot be said:
    fewer than two questions, or an ``sd`` that is 0 or NaN (differences that never vary say
    nothing about the noise of a real change)."""
    from scipy import stats
    from scipy.optimize import brentq

    if n < 2 or not sd > 0 or math.isnan(sd):
        return None
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha} and {power}")
    # The z-test's effect is a lower bound; the t-test's lies above it (far above at tiny n).
    z = float(stats.norm.isf(alpha / 2.0) + stats.norm.ppf(power)) / math.sqrt(n)
    high = 1.5 * z
    while t_test_power(n, high, alpha) < power:
        high *= 2.0
    effect = float(brentq(lambda e: t_test_power(n, e, alpha) - power, z, high, xtol=1e-12))
    return effect * sd


Verdict = Literal["significant", "inconclusive", "tied", "untestable"]


def verdict_of(
    p_value: float | None,
    ci_low: float,
    ci_high: float,
    n: int,
    needed: QuestionsNeeded | None,
    alpha: float = ALPHA,
) -> Verdict:
    """What a paired comparison of ``n`` questions can say, from its test's p-value, its
    interval of the mean difference and the questions needed to detect that difference:

    - ``"untestable"``: no p-value (a NaN among the values);
    - ``"significant"``: ``p < alpha``;
    - ``"inconclusive"``: the test cannot reject, but the interval excludes zero, or more
      questions are needed than there are (``needed.n > n``): too few questions, not a tie;
    - ``"tied"``: the test cannot reject, the interval holds zero, and no realistic number of
      questions would separate the two (``needed.n`` is None: a difference below the floor,
      or beyond the ceiling of questions), or the ones there are would (``needed.n <= n``)."""
    if p_value is None or math.isnan(p_value):
        return "untestable"
    if p_value < alpha:
        return "significant"
    excludes_zero = ci_low > 0 or ci_high < 0
    short = needed is not None and needed.n is not None and needed.n > n
    return "inconclusive" if excludes_zero or short else "tied"


@dataclass(frozen=True)
class SelectionOptions:
    """The settings of a pick's tests: ``alpha`` and ``permutations`` of the paired tests (and
    of :func:`questions_needed`), ``bootstrap`` resamples of the intervals and of P(best), the
    ``seed`` of every draw, the P(best) a single winner needs, and the ``power``,
    ``min_difference`` and ``max_questions`` of :func:`questions_needed`."""

    alpha: float = ALPHA
    permutations: int = PERMUTATIONS
    bootstrap: int = BOOTSTRAP
    seed: int = 0
    min_p_best: float = MIN_P_BEST
    power: float = POWER
    min_difference: float = MIN_DIFFERENCE
    max_questions: int = MAX_QUESTIONS


@dataclass(frozen=True)
class Pitted(Generic[K]):
    """``option`` tested against ``versus`` (None: nothing to test it against); ``comparison``
    is the best minus the other of the two, ``p_adjusted`` the other's Holm-adjusted p-value."""

    option: K
    versus: K | None = None
    comparison: PairedComparison | None = None
    p_adjusted: float | None = None


@dataclass(frozen=True)
class Separation(Generic[K]):
    """How many questions would separate two options: ``a`` (the best) against ``b``."""

    a: K
    b: K
    needed: QuestionsNeeded


@dataclass(frozen=True)
class Selection(Generic[K]):
    """Options tested against the best over ``n`` questions: ``order`` best first, each one's
    Holm-adjusted p-value against the best (1 for the best itself), the options ``tied`` with
    it (the best included) and the ``best`` against the runner-up (:func:`rank`). Then
    (:func:`select`; else the best, empty and None) the ``cheapest`` tied option against the
    best, every option's P(best), best first, the ``winner`` when one is named, and the
    questions needed to separate the best from the runner-up (``top_two``) and from the
    cheapest (``separate_cheapest``)."""

    order: tuple[K, ...]
    p_adjusted: dict[K, float]
    tied: tuple[K, ...]
    best: Pitted[K]
    n: int
    cheapest: Pitted[K]
    p_best: dict[K, float] = field(default_factory=dict)
    winner: K | None = None
    top_two: Separation[K] | None = None
    separate_cheapest: Separation[K] | None = None


# The tie test reads only the randomisation p-values; the intervals of the pairs a pick shows
# are recomputed in full (compare_paired, same seed: the same p-value).
_TIE_BOOTSTRAP = 1


def rank(
    values: Mapping[K, npt.ArrayLike], direction: Direction, options: SelectionOptions
) -> Selection[K]:
    """The options (per-question values over the same questions in one order; at least one)
    tested against the best (:func:`~chunkmark.metrics.paired.tied_with_best`, which names
    them by their places, ``"0"``, ``"1"``, ...: of two exactly equal means, the greater name
    ranks first), and the best against the runner-up."""
    keys = list(values)
    ties = tied_with_best(
        {str(i): values[k] for i, k in enumerate(keys)},
        direction=direction,
        alpha=options.alpha,
        permutations=options.permutations,
        bootstrap=_TIE_BOOTSTRAP,
        seed=options.seed,
    )
    order = tuple(keys[int(t.cell)] for t in ties)
    p_adjusted = {keys[int(t.cell)]: t.p_adjusted for t in ties}
    best = _pitted(values, order, p_adjusted, order[0], options)
    tied = tuple(keys[int(t.cell)] for t in ties if t.tied)
    return Selection(order, p_adjusted, tied, best, len(np.asarray(values[order[0]])), best)


def _pitted(
    values: Mapping[K, npt.ArrayLike],
    order: tuple[K, ...],
    p_adjusted: Mapping[K, float],
    option: K,
    options: SelectionOptions,
) -> Pitted[K]:
    """``option`` tested against the best, or the best (``order[0]``) against the runner-up."""
    best = order[0]
    if option == best and len(order) < 2:
        return Pitted(best)
    other = order[1] if option == best else option
    pair = values[best], values[other]
    comparison = compare_paired(
        *pair, permutations=options.permutations, bootstrap=options.bootstrap, seed=options.seed
    )
    return Pitted(option, other if option == best else best, comparison, p_adjusted[other])


def select(
    values: Mapping[K, npt.ArrayLike],
    direction: Direction,
    costs: Mapping[K, tuple[float, ...]],
    options: SelectionOptions,
) -> Selection[K]:
    """Every statistic of one pick in one call: :func:`rank`, the cheapest option tied with
    the best (the least ``costs``, compared as tuples; then the best placed) against the best,
    P(best) (:func:`p_best`, ``options.bootstrap`` resamples), whether the best is a single
    winner (:func:`names_single_winner`) and :func:`questions_needed` for the top two and for
    the best against the cheapest (with at least two questions)."""
    ranked = rank(values, direction, options)
    order, top = ranked.order, ranked.order[0]
    cheapest = min(ranked.tied, key=lambda o: (costs[o], order.index(o)))
    if cheapest != top:
        pitted = _pitted(values, order, ranked.p_adjusted, cheapest, options)
        ranked = replace(ranked, cheapest=pitted)
    if ranked.n == 0:
        return ranked
    shares = p_best(
        {o: values[o] for o in order},
        direction=direction,
        resamples=options.bootstrap,
        seed=options.seed,
    )

    def apart(other: K | None) -> Separation[K] | None:
        if ranked.n < 2 or other is None or other == top:
            return None
        needed = questions_needed(
            values[top],
            values[other],
            power=options.power,
            alpha=options.alpha,
            min_difference=options.min_difference,
            max_questions=options.max_questions,
        )
        return Separation(top, other, needed)

    single = names_single_winner(shares[top], len(ranked.tied), options.min_p_best)
    return replace(
        ranked,
        p_best=shares,
        winner=top if single else None,
        top_two=apart(ranked.best.versus),
        separate_cheapest=apart(cheapest),
    )
