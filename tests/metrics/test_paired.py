"""Paired comparisons: hand-computed cases, scipy on random ones, and determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from chunkmark.metrics.paired import (
    compare_paired,
    holm,
    paired_ttest,
    permutation_test,
    tied_with_best,
    wilcoxon_test,
)


def test_identical_cells_give_p_one_and_a_zero_interval() -> None:
    a = np.array([0.1, 0.5, 0.9, 0.0, 0.3])
    c = compare_paired(a, a.copy(), permutations=2000, bootstrap=500)
    assert c.p_permutation == 1.0 and c.p_ttest == 1.0 and c.p_wilcoxon == 1.0
    assert (c.difference, c.ci_low, c.ci_high) == (0.0, 0.0, 0.0)
    assert (c.wins, c.ties, c.losses) == (0, 5, 0)


def test_clearly_different_cells_give_a_small_p() -> None:
    rng = np.random.default_rng(1)
    b = rng.uniform(0, 0.5, size=80)
    a = b + rng.uniform(0.05, 0.2, size=80)
    c = compare_paired(a, b)
    assert c.p_permutation < 0.01 and c.p_ttest < 0.01 and c.p_wilcoxon < 0.01
    assert c.p_permutation == pytest.approx(1 / 10_001)
    assert 0.05 < c.ci_low < c.difference < c.ci_high < 0.2
    assert (c.wins, c.losses) == (80, 0)


def test_permutation_p_matches_the_exact_enumeration_on_a_tiny_case() -> None:
    # Hand-computable: d = (1, 2, 3). Of the 8 sign vectors, |mean| >= 2 only for (+,+,+) and
    # (-,-,-), so the exact two-sided p is 2/8; the sampled p converges to it.
    d = np.array([1.0, 2.0, 3.0])
    exact = np.mean([abs(np.dot(s, d)) >= 6 for s in itertools.product([-1, 1], repeat=3)])
    assert exact == 0.25
    assert permutation_test(d, permutations=40_000, seed=3) == pytest.approx(0.25, abs=0.01)


def test_ttest_and_wilcoxon_equal_scipy_on_random_inputs() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(5, 200))
        a, b = rng.uniform(size=n), rng.uniform(size=n)
        assert paired_ttest(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=1e-12)
        assert wilcoxon_test(a - b) == pytest.approx(stats.wilcoxon(a - b).pvalue, abs=1e-12)


def test_same_seed_same_numbers() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.uniform(size=50), rng.uniform(size=50)
    assert compare_paired(a, b, seed=5) == compare_paired(a, b, seed=5)
    assert compare_paired(a, b, seed=5) != compare_paired(a, b, seed=6)


def test_holm_by_hand() -> None:
    # Sorted 0.01, 0.02, 0.04 -> 3 * 0.01, 2 * 0.02, max(0.04, 0.04): in input order.
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_tied_with_best_groups_ties_not_an_order() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 0.6, size=120)
    cells = {
        "best": base + 0.2,
        "same": base + 0.2 + rng.normal(0, 0.01, size=120),  # indistinguishable
        "worse": base,
    }
    result = tied_with_best(cells, permutations=2000, bootstrap=500)
    by_name = {r.cell: r for r in result}
    assert result[0].cell in {"best", "same"} and result[0].comparison is None
    assert by_name["worse"].tied is False and by_name["worse"].p_adjusted < 0.01
    other = "same" if result[0].cell == "best" else "best"
    assert by_name[other].tied is True
    lower = tied_with_best({"x": [3.0, 2.0, 4.0], "y": [1.0, 1.0, 1.0]}, direction="lower")
    assert lower[0].cell == "y"


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="paired"):
        compare_paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="no questions"):
        compare_paired([], [])
