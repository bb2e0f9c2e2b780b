"""Kendall's tau between two question sets' orderings of the same cells, checked against taus
counted by hand, taus and p-values from their definitions (every pair counted, every permutation
enumerated, Kendall's variance with ties written out) and resampling distributions enumerated by
hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from chunkmark.metrics.agreement import kendall_tau, kendall_tau_b, kendall_taus, ranking_agreement


def test_tau_b_counted_by_hand() -> None:
    # three cells, no ties: every pair discordant
    assert kendall_tau_b([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]) == pytest.approx(-1.0)
    # x ties cells 0 and 1; pairs (0,2) and (1,2) concordant, (0,1) tied in x only:
    # (C - D) / sqrt((n0 - n1) (n0 - n2)) = 2 / sqrt((3 - 1) * (3 - 0))
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    # four cells: pairs (0,1) C, (0,2) C, (0,3) C, (1,2) D, (1,3) C, (2,3) C -> (5 - 1) / 6
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    assert math.isnan(kendall_tau_b([1], [1]))
    with pytest.raises(ValueError, match="differ in length"):
        kendall_tau_b([1, 2], [1, 2, 3])


def tau_b_by_pairs(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b from its definition: every pair counted as concordant, discordant or tied
    (C - D) / sqrt((pairs untied in x) (pairs untied in y))."""
    concordant = discordant = tied_x_only = tied_y_only = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tied_x_only += 1
        elif dy == 0:
            tied_y_only += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    untied_x = concordant + discordant + tied_y_only
    untied_y = concordant + discordant + tied_x_only
    return (concordant - discordant) / math.sqrt(untied_x * untied_y)


def test_tau_b_with_ties_is_every_pair_counted() -> None:
    rng = np.random.default_rng(11)
    rows = []
    for _ in range(60):
        n = int(rng.integers(3, 25))
        x = rng.integers(0, 5, size=n).astype(float).tolist()  # small integers: many ties
        y = rng.integers(0, 5, size=n).astype(float).tolist()
        if len(set(x)) > 1 and len(set(y)) > 1:
            assert kendall_tau(x, y).tau == pytest.approx(tau_b_by_pairs(x, y), abs=1e-12)
            assert kendall_tau(x, y).n == n
            rows.append((x, y))
    # the bootstrap's rows: each row's own tau
    same = [r for r in rows if len(r[0]) == len(rows[0][0])]
    x = np.array([r[0] for r in same])
    y = np.array([r[1] for r in same])
    expected = [tau_b_by_pairs(a, b) for a, b in zip(x.tolist(), y.tolist(), strict=True)]
    assert kendall_taus(x, y) == pytest.approx(expected, abs=1e-12)


def test_p_value_without_ties_is_the_share_of_permutations_as_extreme() -> None:
    # n = 7 without ties: the exact two-sided p-value is the share of the 7! orderings of y
    # whose |tau| is at least the observed one.
    x = list(range(7))
    for y in ([0, 2, 1, 4, 3, 6, 5], [3, 0, 6, 1, 5, 2, 4], [6, 5, 4, 3, 2, 0, 1]):
        found = kendall_tau(x, y)
        observed = abs(tau_b_by_pairs(x, y))
        taus = [abs(tau_b_by_pairs(x, list(p))) for p in itertools.permutations(range(7))]
        share = sum(t >= observed - 1e-12 for t in taus) / len(taus)
        assert found.p == pytest.approx(share, rel=1e-9)


def test_p_value_with_ties_is_kendalls_normal_approximation() -> None:
    # Kendall's variance of S = C - D with ties in both sequences (Kendall and Gibbons 1990):
    # [n(n-1)(2n+5) - sum t(t-1)(2t+5) - sum u(u-1)(2u+5)] / 18
    # + [sum t(t-1)][sum u(u-1)] / (2n(n-1)) + [sum t(t-1)(t-2)][sum u(u-1)(u-2)] / (9n(n-1)(n-2))
    # over the sizes t of x's tied groups and u of y's; p = erfc(|S| / sqrt(2 var)).
    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, size=40).astype(float).tolist()
    y = [v + float(rng.integers(0, 4)) for v in x]
    n = len(x)
    t = [x.count(v) for v in set(x)]
    u = [y.count(v) for v in set(y)]
    s = sum(
        np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i, j in itertools.combinations(range(n), 2)
    )
    var = (
        n * (n - 1) * (2 * n + 5)
        - sum(a * (a - 1) * (2 * a + 5) for a in t)
        - sum(b * (b - 1) * (2 * b + 5) for b in u)
    ) / 18
    var += sum(a * (a - 1) for a in t) * sum(b * (b - 1) for b in u) / (2 * n * (n - 1))
    var += (
        sum(a * (a - 1) * (a - 2) for a in t)
        * sum(b * (b - 1) * (b - 2) for b in u)
        / (9 * n * (n - 1) * (n - 2))
    )
    found = kendall_tau(x, y)
    assert found.tau == pytest.approx(tau_b_by_pairs(x, y), abs=1e-12)
    assert found.p == pytest.approx(math.erfc(abs(s) / math.sqrt(2 * var)), rel=1e-9)
    assert found.p < 1e-6  # y follows x: a strong, real agreement


def test_a_constant_side_or_one_pair_has_no_tau() -> None:
    for x, y in (([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [2, 2, 2]), ([1], [2])):
        found = kendall_tau(x, y)
        assert math.isnan(found.tau) and math.isnan(found.p) and found.n == len(x)


def test_observed_tau_is_of_the_cell_means() -> None:
    # set a (2 questions): cell means 0.5, 0.25, 0.75; set b (3 questions): 1/3, 2/3, 1
    a = [[0.0, 1.0], [0.5, 0.0], [1.0, 0.5]]
    b = [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    # a orders 1 < 0 < 2, b orders 0 < 1 < 2: pairs (0,1) D, (0,2) C, (1,2) C -> 1/3
    found = ranking_agreement(a, b, resamples=50)
    assert found.tau == pytest.approx(1 / 3)
    assert (found.cells, found.questions_a, found.questions_b) == (3, 2, 3)


def test_constant_questions_give_a_point_interval() -> None:
    # every question scores each cell the same: every resample has the observed means
    a = np.array([[0.2] * 4, [0.4] * 4, [0.6] * 4])
    b = np.array([[0.6] * 7, [0.5] * 7, [0.9] * 7])
    found = ranking_agreement(a, b, resamples=200)
    # pairs (0,1) D, (0,2) C, (1,2) C -> 1/3
    assert found.tau == pytest.approx(1 / 3)
    assert found.ci_low == pytest.approx(1 / 3) and found.ci_high == pytest.approx(1 / 3)
    assert found.resamples == 200


def test_sets_are_resampled_independently() -> None:
    # Set a: two questions that order the two cells opposite ways. A draw of two questions is
    # (q0, q0) with probability 1/4 (cell 1 ahead), (q1, q1) 1/4 (cell 0 ahead), mixed 1/2 (a
    # tie: no tau). Set b always puts cell 1 ahead. So a usable resample has tau +1 or -1 with
    # probability 1/2 each, and half the resamples are usable.
    a = [[0.0, 1.0], [1.0, 0.0]]
    b = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    resamples = 4000
    found = ranking_agreement(a, b, resamples=resamples, seed=3)
    assert math.isnan(found.tau)  # a's full means tie
    assert found.resamples / resamples == pytest.approx(0.5, abs=0.04)  # sd 0.008
    assert (found.ci_low, found.ci_high) == (-1.0, 1.0)
    # Two copies of a: drawn jointly they would always agree (tau 1); drawn independently, a
    # resample is usable when both draws are pure, (1/2)^2, and then the orders agree half the
    # time.
    twin = ranking_agreement(a, a, resamples=resamples, seed=3)
    assert twin.resamples / resamples == pytest.approx(0.25, abs=0.03)
    assert (twin.ci_low, twin.ci_high) == (-1.0, 1.0)


def test_nan_questions_are_left_out_and_seed_repeats() -> None:
    a = [[0.1, math.nan, 0.3], [0.2, 0.5, 0.4], [0.9, 0.1, 0.8]]
    b = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
    found = ranking_agreement(a, b, resamples=100, seed=7)
    assert found.questions_a == 2
    # a's two complete questions: means 0.2, 0.3, 0.85 -> same order as b: tau 1
    assert found.tau == pytest.approx(1.0)
    assert ranking_agreement(a, b, resamples=100, seed=7) == found


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="cells"):
        ranking_agreement([[1.0, 2.0]], [[1.0], [2.0]])
    with pytest.raises(ValueError, match="resamples"):
        ranking_agreement([[1.0], [2.0]], [[1.0], [2.0]], resamples=0)
    empty = ranking_agreement(np.zeros((3, 0)), np.ones((3, 2)))
    assert math.isnan(empty.tau) and empty.resamples == 0
