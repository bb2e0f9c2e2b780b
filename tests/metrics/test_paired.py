"""Paired comparisons against independent references: hand-computed cases, the t statistic from
its formula (Student's density integrated here), Wilcoxon's exact null distribution enumerated
sign vector by sign vector, the tie-corrected normal formula, and determinism."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from chunkmark.metrics.paired import (
    compare_paired,
    compare_pairs,
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


def test_one_sided_p_values_match_the_exact_enumeration() -> None:
    # d = (-1, -2, 3, -4, -0.5): the exact one-sided p of mean(d) < 0 counts the sign vectors
    # whose sum is at most the observed -4.5, and of mean(d) > 0 those at least it.
    d = np.array([-1.0, -2.0, 3.0, -4.0, -0.5])
    sums = [float(np.dot(s, np.abs(d))) for s in itertools.product([-1, 1], repeat=5)]
    less = np.mean([v <= d.sum() + 1e-12 for v in sums])
    greater = np.mean([v >= d.sum() - 1e-12 for v in sums])
    assert (less, greater) == (8 / 32, 26 / 32)
    got_less = permutation_test(d, permutations=100_000, seed=5, alternative="less")
    assert got_less == pytest.approx(less, abs=0.006)
    got_greater = permutation_test(d, permutations=100_000, seed=5, alternative="greater")
    assert got_greater == pytest.approx(greater, abs=0.006)
    # "greater" on -d is "less" on d, flip for flip.
    assert permutation_test(-d, permutations=5_000, seed=2, alternative="greater") == (
        permutation_test(d, permutations=5_000, seed=2, alternative="less")
    )
    with pytest.raises(ValueError, match="alternative"):
        permutation_test(d, alternative="both")  # type: ignore[arg-type]


def _student_t_two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom, by Simpson's rule on the
    density written from its formula (no scipy)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def density(x: float) -> float:
        return c * (1 + x * x / df) ** (-(df + 1) / 2)

    steps = 20_000
    h = abs(t) / steps
    inner = sum((4 if i % 2 else 2) * density(i * h) for i in range(1, steps))
    central = h / 3 * (density(0.0) + inner + density(abs(t)))
    return 1.0 - 2.0 * central


def _ttest_by_formula(d: list[float]) -> float:
    n = len(d)
    mean = sum(d) / n
    s = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return _student_t_two_sided(mean / (s / math.sqrt(n)), n - 1)


def _midranks(values: list[float]) -> list[float]:
    """Rank of each value among all (1-based), tied values sharing the mean of their ranks."""
    return [
        sum(1 for w in values if w < v) + (sum(1 for w in values if w == v) + 1) / 2 for v in values
    ]


def _wilcoxon_by_enumeration(d: list[float]) -> float:
    """Exact two-sided p of W+ over all 2^n sign vectors, zeros dropped, mid-ranks for ties."""
    nonzero = [x for x in d if x != 0]
    ranks = _midranks([abs(x) for x in nonzero])
    observed = sum(r for r, x in zip(ranks, nonzero, strict=True) if x > 0)
    centre = sum(ranks) / 2
    hits = 0
    for signs in itertools.product((0, 1), repeat=len(ranks)):
        w = sum(r for r, s in zip(ranks, signs, strict=True) if s)
        hits += abs(w - centre) >= abs(observed - centre) - 1e-9
    return hits / 2 ** len(ranks)


def _wilcoxon_normal_by_formula(d: list[float]) -> float:
    """The textbook normal approximation: variance n(n+1)(2n+1)/24 - sum(t^3 - t)/48."""
    nonzero = [x for x in d if x != 0]
    n = len(nonzero)
    ranks = _midranks([abs(x) for x in nonzero])
    w = sum(r for r, x in zip(ranks, nonzero, strict=True) if x > 0)
    groups = [sum(1 for y in nonzero if abs(y) == v) for v in {abs(x) for x in nonzero}]
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t**3 - t for t in groups) / 48
    z = (w - n * (n + 1) / 4) / math.sqrt(var)
    return math.erfc(abs(z) / math.sqrt(2))


# Metric differences as runs produce them: mostly zero, few distinct values, many ties.
TIE_VALUES = [-0.5, -0.25, -0.1, 0.0, 0.0, 0.0, 0.1, 0.25, 0.5, 1.0]


def test_ttest_by_hand() -> None:
    # d = (1, 2, 3, 4): mean 2.5, s = sqrt(5/3), t = 2.5 / (s / 2) = 3.873, df = 3.
    assert paired_ttest([1.0, 2.0, 3.0, 4.0], [0.0] * 4) == pytest.approx(0.030466, abs=1e-6)
    assert _ttest_by_formula([1.0, 2.0, 3.0, 4.0]) == pytest.approx(0.030466, abs=1e-6)


@pytest.mark.parametrize("seed", range(8))
def test_ttest_equals_its_formula_with_zeros_and_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    b = rng.uniform(size=n)
    d = rng.choice(TIE_VALUES, size=n)
    if not d.any() or len(set(d)) == 1:
        d[0], d[1] = 0.25, -0.1
    got = paired_ttest(b + d, b)
    assert got is not None
    assert got == pytest.approx(_ttest_by_formula(list(d)), abs=1e-6)


def test_ttest_is_not_computable_rather_than_significant() -> None:
    assert paired_ttest([0.5], [0.3]) is None  # one question
    assert paired_ttest([0.5, 0.6], [0.3, 0.4]) is None  # equal differences (up to rounding)
    assert paired_ttest([0.5, float("nan"), 0.2], [0.3, 0.1, 0.1]) is None
    assert paired_ttest([0.5, 0.6], [0.5, 0.6]) == 1.0


def test_wilcoxon_by_hand() -> None:
    # d = (1, 2, 3): W+ = 6 is reached with |W+ - 3| >= 3 by 2 of the 8 sign vectors.
    assert wilcoxon_test([1.0, 2.0, 3.0]) == 0.25
    # d = (0, 1, -1, 1): zero dropped; ranks 2, 2, 2 (ties); W+ = 4, centre 3: |W - 3| >= 1
    # for W in {0, 2, 4, 6} -> 1 + 3 + 3 + 1 of 8 sign vectors.
    assert wilcoxon_test([0.0, 1.0, -1.0, 1.0]) == 1.0
    assert wilcoxon_test([0.0, 0.0]) == 1.0
    assert wilcoxon_test([0.1, float("nan")]) is None


@pytest.mark.parametrize("seed", range(12))
def test_wilcoxon_equals_the_exact_enumeration_with_zeros_and_ties(seed: int) -> None:
    # Up to 16 non-zero differences: scipy's default switches to its normal approximation with
    # ties well before that (0.374 instead of the exact 0.453 for one such case of 10).
    rng = np.random.default_rng(seed)
    d = list(rng.choice(TIE_VALUES, size=int(rng.integers(2, 23))))
    while sum(1 for x in d if x != 0) > 16:
        d.pop()
    assert wilcoxon_test(d) == pytest.approx(_wilcoxon_by_enumeration(d), abs=1e-12)


def test_wilcoxon_ties_in_float_noise_are_ties() -> None:
    # 0.6 - 0.5 and 0.2 - 0.1 differ in the last bits; as metric differences they are equal.
    noisy = [0.6 - 0.5, 0.2 - 0.1, -(0.7 - 0.6), 0.3]
    assert wilcoxon_test(noisy) == _wilcoxon_by_enumeration([0.1, 0.1, -0.1, 0.3])


@pytest.mark.parametrize("seed", range(4))
def test_wilcoxon_large_n_equals_the_tie_corrected_normal_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = list(rng.choice(TIE_VALUES, size=int(rng.integers(120, 400))) + 0.02 * (seed % 2))
    assert sum(1 for x in d if x != 0) > 50
    assert wilcoxon_test(d) == pytest.approx(_wilcoxon_normal_by_formula(d), abs=1e-12)


def test_one_question_is_never_significant() -> None:
    c = compare_paired([0.5], [0.3])
    assert c.p_ttest is None
    assert c.p_permutation == 1.0 and c.p_wilcoxon == 1.0


def test_nan_values_make_every_test_not_computable() -> None:
    c = compare_paired([0.5, float("nan"), 0.2], [0.1, 0.2, 0.3], permutations=1000)
    assert c.p_permutation is None and c.p_ttest is None and c.p_wilcoxon is None
    assert math.isnan(c.difference) and math.isnan(c.ci_low) and math.isnan(c.ci_high)
    assert math.isnan(permutation_test([0.1, float("nan")], permutations=100))


def test_same_seed_same_numbers() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.uniform(size=50), rng.uniform(size=50)
    assert compare_paired(a, b, seed=5) == compare_paired(a, b, seed=5)
    assert compare_paired(a, b, seed=5) != compare_paired(a, b, seed=6)


def test_holm_by_hand() -> None:
    # Sorted 0.01, 0.02, 0.04 -> 3 * 0.01, 2 * 0.02, max(0.04, 0.04): in input order.
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([0.01, None, float("nan")]) == pytest.approx([0.03, 1.0, 1.0])


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
    unknown = tied_with_best({"b": [0.0, float("nan"), 0.0], "a": [1.0, 1.0, 1.0]})
    assert unknown[0].cell == "a"
    assert unknown[1].comparison is not None and unknown[1].comparison.p_permutation is None
    assert unknown[1].tied is True
    lower = tied_with_best({"x": [3.0, 2.0, 4.0], "y": [1.0, 1.0, 1.0]}, direction="lower")
    assert lower[0].cell == "y"


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="paired"):
        compare_paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="no questions"):
        compare_paired([], [])


def test_compare_pairs_compares_each_pair_and_holm_adjusts_them_together() -> None:
    rng = np.random.default_rng(4)
    base = rng.uniform(0, 0.5, size=40)
    pairs = [
        (base + 0.2, base),  # clearly apart
        (base + rng.normal(0, 0.05, size=40), base),  # noise
        (base, base + 0.03 + rng.normal(0, 0.05, size=40)),
    ]
    found = compare_pairs(pairs, permutations=3_000, bootstrap=300, seed=2)
    each = [compare_paired(a, b, permutations=3_000, bootstrap=300, seed=2) for a, b in pairs]
    assert [c for c, _ in found] == each
    # Holm written out: sort the p-values, multiply the r-th smallest by (m - r), carry the
    # running maximum, cap at 1.
    raw = [c.p_permutation or 1.0 for c in each]
    expected = [0.0] * 3
    running = 0.0
    for r, i in enumerate(sorted(range(3), key=lambda i: raw[i])):
        running = max(running, min(1.0, (3 - r) * raw[i]))
        expected[i] = running
    assert [p for _, p in found] == pytest.approx(expected)
    assert found[0][1] < 0.05 < found[1][1]
    assert compare_pairs([]) == []
