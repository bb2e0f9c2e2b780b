"""P(best) and questions needed, against independent references: exact enumeration of every
bootstrap resample, hand cases, the noncentral-t power written out here, and simulated t-tests."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from chunkmark.metrics.paired import PairedComparison, compare_paired
from chunkmark.metrics.selection import (
    Pitted,
    SelectionOptions,
    Separation,
    min_detectable_difference,
    p_best,
    questions_needed,
    rank,
    select,
    verdict_of,
)


def exact_p_best(cells: dict[str, list[float]]) -> dict[str, float]:
    """Every one of the n^n equally likely resamples, ties at the top split equally."""
    names = list(cells)
    values = np.array([cells[k] for k in names], dtype=np.float64)
    n = values.shape[1]
    shares = dict.fromkeys(names, 0.0)
    total = 0
    for draw in itertools.product(range(n), repeat=n):
        means = [round(sum(row[i] for i in draw) / n, 9) for row in values]
        top = max(means)
        winners = [name for name, m in zip(names, means, strict=True) if m == top]
        for name in winners:
            shares[name] += 1.0 / len(winners)
        total += 1
    return {k: v / total for k, v in shares.items()}


def test_p_best_matches_exact_enumeration_of_every_resample() -> None:
    cells = {
        "a": [0.9, 0.1, 0.5, 0.4, 0.3],
        "b": [0.2, 0.6, 0.5, 0.5, 0.5],
        "c": [0.5, 0.5, 0.0, 0.6, 0.2],
    }
    exact = exact_p_best(cells)  # 3,125 resamples
    got = p_best(cells, resamples=40_000, seed=3)
    for name in cells:
        # binomial standard error of a share from 40,000 draws is at most 0.0025
        assert got[name] == pytest.approx(exact[name], abs=0.01), (name, got, exact)
    assert sum(got.values()) == pytest.approx(1.0)
    assert min(exact.values()) > 0.05  # the case is not trivial: every cell wins sometimes


def test_a_dominating_cell_is_always_best_and_identical_cells_split() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, 60)
    got = p_best({"low": base, "high": base + 0.01, "lower": base - 0.2}, resamples=2_000)
    assert got == {"low": 0.0, "high": 1.0, "lower": 0.0}
    twins = p_best({"x": base, "y": base.copy(), "z": base - 0.5}, resamples=2_000)
    assert twins == {"x": 0.5, "y": 0.5, "z": 0.0}


def test_lower_is_better_tolerance_and_nan() -> None:
    rng = np.random.default_rng(2)
    base = rng.uniform(0, 1, 80)
    low = p_best({"a": base, "b": base + 0.1}, direction="lower", resamples=500)
    assert low == {"a": 1.0, "b": 0.0}
    # b is behind by 0.002 on every question: never best, always within 0.01 of the best.
    near = {"a": base, "b": base - 0.002}
    assert p_best(near, resamples=500)["b"] == 0.0
    assert p_best(near, tolerance=0.01, resamples=500) == {"a": 1.0, "b": 1.0}
    broken = base + 1.0
    broken[3] = math.nan
    assert p_best({"a": base, "nan": broken}, resamples=500) == {"a": 1.0, "nan": 0.0}


def test_p_best_is_seeded() -> None:
    rng = np.random.default_rng(4)
    cells = {str(i): rng.uniform(0, 1, 30) for i in range(4)}
    assert p_best(cells, seed=7, resamples=3_000) == p_best(cells, seed=7, resamples=3_000)


def power_by_noncentral_t(n: int, mean: float, sd: float, alpha: float = 0.05) -> float:
    """The textbook power of the two-sided one-sample t-test, written out independently."""
    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    delta = mean / (sd / math.sqrt(n))
    return float(1 - stats.nct.cdf(crit, df, delta) + stats.nct.cdf(-crit, df, delta))


def differences(mean: float, sd: float, n: int = 300, seed: int = 0) -> np.ndarray:
    """Paired differences whose sample mean and sd (ddof=1) are exactly ``mean`` and ``sd``."""
    z = np.random.default_rng(seed).normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)
    out: np.ndarray = mean + sd * z
    return out


@pytest.mark.parametrize(("mean", "sd"), [(0.02, 0.1), (0.05, 0.1), (0.3, 0.4), (-0.01, 0.2)])
def test_questions_needed_is_the_smallest_n_with_80_percent_power(mean: float, sd: float) -> None:
    result = questions_needed(differences(mean, sd))
    assert result.n is not None and result.realistic
    assert result.difference == pytest.approx(mean) and result.sd == pytest.approx(sd)
    assert power_by_noncentral_t(result.n, abs(mean), sd) >= 0.8
    assert power_by_noncentral_t(result.n - 1, abs(mean), sd) < 0.8
    # The normal approximation (z-test formula) is a lower bound, close for all but tiny n.
    normal = ((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * sd / abs(mean)) ** 2
    assert normal <= result.n <= normal + 3


def test_questions_needed_by_simulation() -> None:
    """At the n returned, simulated paired t-tests on normal differences with that mean and sd
    reject about 80% of the time; at half of it, far less often."""
    mean, sd = 0.03, 0.12
    n = questions_needed(differences(mean, sd)).n
    assert n is not None
    rng = np.random.default_rng(5)

    def rejection_rate(size: int) -> float:
        draws = rng.normal(mean, sd, size=(4_000, size))
        return float((stats.ttest_1samp(draws, 0.0, axis=1).pvalue < 0.05).mean())

    assert rejection_rate(n) == pytest.approx(0.8, abs=0.025)  # sd of the rate: 0.0063
    assert rejection_rate(n // 2) < 0.6


def test_no_realistic_number() -> None:
    rng = np.random.default_rng(6)
    a = rng.uniform(0, 1, 100)
    tiny = questions_needed(a + 0.001, a + rng.normal(0, 0.0001, 100))
    assert tiny.n is None and not tiny.realistic and tiny.reason is not None
    assert "below 0.005" in tiny.reason
    # Above the floor, but the differences are so noisy that it would take millions.
    noisy = questions_needed(differences(0.006, 2.0))
    assert noisy.n is None and "more than 100,000" in (noisy.reason or "")
    # The floor and ceiling are settings.
    assert questions_needed(differences(0.006, 2.0), max_questions=10**9).n is not None
    assert questions_needed(differences(0.001, 0.01), min_difference=0.0).n is not None
    assert questions_needed(np.array([0.1, np.nan, 0.2])).n is None
    assert questions_needed(np.full(10, 0.2)).n == 2  # constant differences: the smallest test


@pytest.mark.parametrize(
    ("n", "sd", "alpha"), [(15, 0.488, 0.05), (15, 0.488, 0.0125), (236, 0.3, 0.05)]
)
def test_the_smallest_detectable_difference_has_exactly_80_percent_power(
    n: int, sd: float, alpha: float
) -> None:
    found = min_detectable_difference(n, sd, alpha=alpha)
    assert found is not None
    assert power_by_noncentral_t(n, found, sd, alpha) == pytest.approx(0.8, abs=1e-6)
    # A z-test needs less: (z(1 - alpha/2) + z(0.8)) * sd / sqrt(n) is a lower bound.
    normal = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(0.8)) * sd / math.sqrt(n)
    assert normal < found < 1.25 * normal


def test_the_smallest_detectable_difference_by_simulation() -> None:
    """Normal differences of that mean and sd, 15 at a time: t-tests reject about 80% of the
    time; at half the difference, far less often."""
    sd = 0.488
    found = min_detectable_difference(15, sd)
    assert found is not None
    rng = np.random.default_rng(11)

    def rejection_rate(mean: float) -> float:
        draws = rng.normal(mean, sd, size=(8_000, 15))
        return float((stats.ttest_1samp(draws, 0.0, axis=1).pvalue < 0.05).mean())

    assert rejection_rate(found) == pytest.approx(0.8, abs=0.02)  # sd of the rate: 0.0045
    assert rejection_rate(found / 2) < 0.4


def test_no_detectable_difference_without_noise_or_questions() -> None:
    assert min_detectable_difference(1, 0.3) is None
    assert min_detectable_difference(15, 0.0) is None
    assert min_detectable_difference(15, math.nan) is None


def test_the_verdict_names_too_few_questions_inconclusive() -> None:
    five = np.array([1.0] * 5 + [0.0] * 10)  # A won 5-0 on 15 questions: exact p = 2/32
    needed = questions_needed(five)
    assert needed.n is not None and needed.n > 15
    assert verdict_of(0.0625, 0.1333, 0.60, 15, needed) == "inconclusive"  # interval > 0
    assert verdict_of(0.0625, -0.1, 0.60, 15, needed) == "inconclusive"  # needs more than 15
    assert verdict_of(0.01, 0.1333, 0.60, 15, needed) == "significant"
    assert verdict_of(None, 0.1, 0.6, 15, needed) == "untestable"
    same = questions_needed(np.zeros(15))
    assert same.n is None and verdict_of(1.0, 0.0, 0.0, 15, same) == "tied"
    # Enough questions for the observed difference, interval across zero: a tie.
    enough = questions_needed(differences(0.3, 0.4))
    assert enough.n is not None and enough.n < 300
    assert verdict_of(0.2, -0.01, 0.05, 300, enough) == "tied"


FAST = SelectionOptions(permutations=2_000, bootstrap=1_000, seed=3)


def test_select_tests_the_best_and_the_cheapest_tied_option_against_it() -> None:
    rng = np.random.default_rng(8)
    base = rng.uniform(0, 0.6, size=60)
    values = {
        "a": base + 0.100,
        "b": base + 0.101 + rng.normal(0, 0.02, 60),
        "c": base + 0.099 + rng.normal(0, 0.02, 60),
        "d": base - 0.2,  # far behind: not tied, though it costs least
    }
    costs = {"a": (3.0, 1.0), "b": (1.0, 9.0), "c": (1.0, 5.0), "d": (0.0, 0.0)}
    found = select(values, "higher", costs, FAST)
    order = tuple(sorted(values, key=lambda o: -float(np.mean(values[o]))))
    best, runner = order[0], order[1]
    assert found.order == order and found.n == 60
    assert set(found.tied) == {"a", "b", "c"} and found.winner is None
    assert found.p_adjusted["d"] < 0.05 <= min(found.p_adjusted[o] for o in "abc")

    def against_best(other: str) -> PairedComparison:
        return compare_paired(
            values[best], values[other], permutations=2_000, bootstrap=1_000, seed=3
        )

    assert found.best == Pitted(best, runner, against_best(runner), found.p_adjusted[runner])
    # Of the tied, c and b embed least (1.0); c has fewer chunks. d is cheaper but not tied.
    assert found.cheapest == Pitted("c", best, against_best("c"), found.p_adjusted["c"])
    assert found.p_best == p_best({o: values[o] for o in order}, resamples=1_000, seed=3)
    assert list(found.p_best) == list(order)
    assert found.top_two == Separation(best, runner, questions_needed(values[best], values[runner]))
    assert found.separate_cheapest == Separation(
        best, "c", questions_needed(values[best], values["c"])
    )
    # The budget's test (rank) is the same test without the pick's extras.
    ranked = rank(values, "higher", FAST)
    assert (ranked.order, ranked.tied, ranked.best) == (found.order, found.tied, found.best)
    assert ranked.cheapest == ranked.best and ranked.p_best == {} and ranked.top_two is None


def test_select_names_a_clear_winner_and_reads_the_direction() -> None:
    rng = np.random.default_rng(9)
    base = rng.uniform(0, 0.5, size=50)
    values = {"low": base, "mid": base + 0.3, "high": base + 0.6}
    costs = {"low": (9.0,), "mid": (1.0,), "high": (1.0,)}
    top = select(values, "higher", costs, FAST)
    assert top.order == ("high", "mid", "low") and top.tied == ("high",)
    assert top.winner == "high" and top.p_best["high"] == 1.0
    assert top.cheapest == top.best and top.separate_cheapest is None
    bottom = select(values, "lower", costs, FAST)
    assert bottom.order == ("low", "mid", "high") and bottom.winner == "low"
    # A P(best) below the bar names no winner, though nothing is tied.
    assert select(values, "higher", costs, replace(FAST, min_p_best=1.01)).winner is None


def test_select_with_equal_costs_picks_the_best_placed_and_one_question_separates_nothing() -> None:
    values = {"x": np.array([0.5, 0.5, 0.6]), "y": np.array([0.5, 0.5, 0.5])}
    found = select(values, "higher", {"x": (1.0,), "y": (1.0,)}, FAST)
    assert found.order == ("x", "y") and found.tied == ("x", "y")
    assert found.cheapest == found.best and found.separate_cheapest is None
    one = select({"x": [0.4], "y": [0.2]}, "higher", {"x": (1.0,), "y": (2.0,)}, FAST)
    assert one.n == 1 and one.p_best == {"x": 1.0, "y": 0.0}
    assert one.top_two is None and one.best.comparison is not None
    alone = select({"only": [0.3, 0.4]}, "higher", {"only": (1.0,)}, FAST)
    assert alone.best == Pitted("only") and alone.cheapest == Pitted("only")
    assert alone.winner == "only" and alone.top_two is None


def test_rank_breaks_an_exact_tie_of_means_by_place_as_the_report_always_has() -> None:
    # The tests name the options "0", "1", ... by place, and of two equal means the greater
    # name ranks first: "1" over "0", and "9" over "10" (names compare as text).
    same = np.array([0.2, 0.4, 0.6])
    assert rank({"x": same, "y": same.copy()}, "higher", FAST).order[:2] == ("y", "x")
    eleven = {i: same - 0.1 for i in range(9)} | {9: same, 10: same.copy()}
    assert rank(eleven, "higher", FAST).order[:2] == (9, 10)
