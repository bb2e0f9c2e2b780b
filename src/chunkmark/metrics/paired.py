"""Paired comparisons of two cells over the same questions, and which cells tie with the best.

Two cells scored on the same questions give paired values ``a[i]``, ``b[i]``; everything here
works on the differences ``d = a - b``, so question difficulty cancels out.

- **Is there a difference?** The paired randomisation test (sign flips): under "no difference"
  each ``d[i]`` is as likely to be ``-d[i]``; with ``R`` random sign vectors, ``p = (b + 1) /
  (R + 1)`` where ``b`` counts the flips whose ``|mean|`` reaches the observed one. It assumes
  nothing about the shape of the differences (metric values are bounded and often mostly zero),
  and is the default. The paired t-test and the Wilcoxon signed-rank test are reported beside
  it (:func:`paired_ttest`, :func:`wilcoxon_test`).
- **What cannot be computed says so.** A p-value is ``None`` (printed "n/a") when its test is
  undefined: any NaN among the values, or the t-test with fewer than two questions or
  differences that do not vary. ``None`` is never read as significant: Holm and
  :func:`tied_with_best` treat it as p = 1.
- **Ties are real.** Metric differences are mostly zero and often repeat (two chunkings that
  both retrieve the whole excerpt); differences are rounded to :data:`DECIMALS` places first,
  so values equal in exact arithmetic are equal here, and the Wilcoxon test ranks ties by their
  mid-rank with an exact null distribution up to :data:`WILCOXON_EXACT_MAX` non-zero
  differences.
- **How large is it?** The mean difference with a paired-bootstrap percentile interval
  (questions resampled with their pair), and win/tie/loss counts over questions.
- **Across many pairs**, p-values are Holm-adjusted (:func:`holm`, :func:`compare_pairs`), and
  :func:`tied_with_best` returns the cells no test can tell from the best: a tie, not an order.

Same inputs and seed, same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from chunkmark.asdict import AsDict

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]
Alternative = Literal["two-sided", "less", "greater"]
PERMUTATIONS = 10_000
BOOTSTRAP = 10_000
# The fewest sign flips behind a p-value chunkmark prints (compare, report): p cannot go below
# 1 / (R + 1), and its sampling error at p = 0.05 is about 0.007 with R = 1,000.
MIN_PRINTED_PERMUTATIONS = 1_000
# Differences are rounded to this many decimals before testing: metric values are ratios whose
# float results differ in the last bits when they are equal in exact arithmetic.
DECIMALS = 12
# Up to this many non-zero differences the Wilcoxon p-value comes from the exact null
# distribution of the signed-rank statistic (mid-ranks for ties); above it, from the normal
# approximation with the tie-corrected variance.
WILCOXON_EXACT_MAX = 50
_BLOCK = 1_000  # sign vectors drawn at once


@dataclass(frozen=True)
class PairedComparison(AsDict):
    """``a`` against ``b`` on the same ``n`` questions; ``difference`` is mean(a - b)."""

    n: int
    mean_a: float
    mean_b: float
    difference: float
    ci_low: float
    ci_high: float
    p_permutation: float | None  # None: not computable (NaN values), printed "n/a"
    p_ttest: float | None  # None: n < 2, differences that do not vary, or NaN values
    p_wilcoxon: float | None  # None: NaN values
    wins: int  # questions where a > b
    ties: int
    losses: int
    permutations: int
    level: float
    seed: int


def compare_paired(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    permutations: int = PERMUTATIONS,
    bootstrap: int = BOOTSTRAP,
    level: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Compare paired per-question values ``a`` and ``b`` (same questions, same order).

    With a NaN among the values nothing is tested: every p-value is ``None`` and the difference
    and its interval are NaN."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-D and paired, got shapes {x.shape} and {y.shape}")
    if len(x) == 0:
        raise ValueError("no questions to compare")
    d = x - y
    if np.isnan(d).any():
        low = high = math.nan
    else:
        low, high = paired_bootstrap_ci(d, resamples=bootstrap, level=level, seed=seed)
    p_permutation = permutation_test(d, permutations=permutations, seed=seed)
    return PairedComparison(
        n=len(d),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        difference=float(d.mean()),
        ci_low=low,
        ci_high=high,
        p_permutation=None if math.isnan(p_permutation) else p_permutation,
        p_ttest=paired_ttest(x, y),
        p_wilcoxon=wilcoxon_test(d),
        wins=int((d > 0).sum()),
        ties=int((d == 0).sum()),
        losses=int((d < 0).sum()),
        permutations=permutations,
        level=level,
        seed=seed,
    )


def permutation_test(
    d: npt.ArrayLike,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    alternative: Alternative = "two-sided",
) -> float:
    """Sign-flip randomisation test of mean(d) = 0: ``p = (b + 1) / (R + 1)``; NaN when ``d``
    holds a NaN (nothing can be tested).

    ``b`` counts the flipped means at least as extreme as the observed one: in absolute value
    (``alternative="two-sided"``), at most it (``"less"``: the alternative is mean(d) < 0) or
    at least it (``"greater"``). The same seed draws the same sign vectors for each."""
    diffs = np.asarray(d, dtype=np.float64)
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, got {permutations}")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be two-sided, less or greater, got {alternative!r}")
    if np.isnan(diffs).any():
        return math.nan
    # One-sided "less" is "greater" on -d; two-sided compares absolute means.
    sign = -1.0 if alternative == "less" else 1.0
    observed = sign * diffs.mean()
    if alternative == "two-sided":
        observed = abs(observed)
    # A flipped mean equal to the observed one up to rounding counts as reaching it.
    reach = observed - 1e-12 * max(1.0, float(np.abs(diffs).sum()))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, _BLOCK):
        rows = min(_BLOCK, permutations - start)
        signs = rng.integers(0, 2, size=(rows, len(diffs)), dtype=np.int8) * 2 - 1
        means = sign * (signs @ diffs) / len(diffs)
        if alternative == "two-sided":
            means = np.abs(means)
        hits += int((means >= reach).sum())
    return (hits + 1) / (permutations + 1)


def paired_bootstrap_ci(
    d: npt.ArrayLike, *, resamples: int = BOOTSTRAP, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of mean(d), resampling questions (each with its pair)."""
    diffs = np.asarray(d, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, _BLOCK):
        rows = min(_BLOCK, resamples - start)
        idx = rng.integers(0, len(diffs), size=(rows, len(diffs)))
        means[start : start + rows] = diffs[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def paired_ttest(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """Two-sided paired t-test p-value of mean(a - b) = 0.

    ``t = mean(d) / (s / sqrt(n))`` with ``s`` the sample standard deviation, against Student's
    t with ``n - 1`` degrees of freedom. 1.0 when every difference is zero; ``None`` when the
    test is undefined: fewer than two questions, a NaN, or differences that are all equal but
    not zero (``s = 0``: t would be infinite, a certainty no finite sample gives)."""
    from scipy import stats

    d = _rounded(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    if len(d) < 2 or np.isnan(d).any():
        return None
    if not d.any():
        return 1.0
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return None
    t = float(d.mean()) / (sd / math.sqrt(len(d)))
    return float(min(1.0, 2.0 * stats.t.sf(abs(t), len(d) - 1)))


def wilcoxon_test(d: npt.ArrayLike) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value; zero differences dropped (Wilcoxon's method).

    The statistic is W+, the sum of the ranks of ``|d|`` (mid-ranks for ties) over positive
    differences. Up to :data:`WILCOXON_EXACT_MAX` non-zero differences the p-value is exact:
    ``P(|W+ - E| >= |w - E|)`` under the null distribution in which each rank's sign is a fair
    coin, counted over all ``2^n`` sign vectors (with the tied ranks as they are). Above it, the
    normal approximation with variance ``sum(rank^2) / 4`` (which is the tie-corrected
    ``n(n+1)(2n+1)/24 - sum(t^3 - t)/48``), no continuity correction. 1.0 when no difference is
    non-zero; ``None`` with a NaN."""
    from scipy import stats

    diffs = _rounded(np.asarray(d, dtype=np.float64))
    if np.isnan(diffs).any():
        return None
    nonzero = diffs[diffs != 0]
    if len(nonzero) == 0:
        return 1.0
    ranks = stats.rankdata(np.abs(nonzero))  # mid-ranks: multiples of 0.5
    w = float(ranks[nonzero > 0].sum())
    centre = float(ranks.sum()) / 2.0
    if len(nonzero) > WILCOXON_EXACT_MAX:
        z = (w - centre) / math.sqrt(float((ranks**2).sum()) / 4.0)
        return float(min(1.0, 2.0 * stats.norm.sf(abs(z))))
    # Exact: the distribution of W+ by dynamic programming over doubled (integer) ranks.
    doubled = np.rint(2.0 * ranks).astype(np.int64)
    counts = np.zeros(int(doubled.sum()) + 1)
    counts[0] = 1.0
    for r in doubled:
        counts[r:] = counts[r:] + counts[:-r]
        counts /= 2.0  # probabilities, so 2^n never overflows
    observed = abs(2.0 * w - 2.0 * centre)
    sums = np.arange(len(counts), dtype=np.float64)
    extreme = np.abs(sums - 2.0 * centre) >= observed - 1e-9
    return float(min(1.0, counts[extreme].sum()))


def _rounded(d: FloatArray) -> FloatArray:
    """Differences rounded to :data:`DECIMALS` places: equal in exact arithmetic, equal here."""
    out: FloatArray = np.round(d, DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    return out


def holm(pvalues: Sequence[float | None]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (monotone, capped at 1); a p-value
    that could not be computed (``None`` or NaN) counts as 1."""
    p = np.array([1.0 if v is None or math.isnan(v) else v for v in pvalues], dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [float(v) for v in adjusted]


def compare_pairs(
    pairs: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    *,
    permutations: int = PERMUTATIONS,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
) -> list[tuple[PairedComparison, float]]:
    """:func:`compare_paired` of each pair (``a`` minus ``b``), with its permutation p-value
    Holm-adjusted over all the pairs together (:func:`holm`)."""
    found = [
        compare_paired(a, b, permutations=permutations, bootstrap=bootstrap, seed=seed)
        for a, b in pairs
    ]
    return list(zip(found, holm([c.p_permutation for c in found]), strict=True))


@dataclass(frozen=True)
class TieWithBest:
    """A cell against the best cell: its comparison and the Holm-adjusted p-value."""

    cell: str
    comparison: PairedComparison | None  # None for the best cell itself
    p_adjusted: float
    tied: bool


def tied_with_best(
    cells: Mapping[str, npt.ArrayLike],
    *,
    direction: Direction = "higher",
    alpha: float = 0.05,
    permutations: int = PERMUTATIONS,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
) -> list[TieWithBest]:
    """Every cell against the best one (by mean), best first: ``tied`` when the Holm-adjusted
    permutation p-value of the paired difference is at least ``alpha`` (or cannot be computed).

    The cells tied with the best form one group: the data cannot order them.
    """
    if not cells:
        return []
    sign = 1.0 if direction == "higher" else -1.0
    means = {
        name: sign * float(np.mean(np.asarray(v, dtype=np.float64))) for name, v in cells.items()
    }
    # A cell with a NaN among its values ranks last: its comparisons say "not computable".
    means = {name: -math.inf if math.isnan(m) else m for name, m in means.items()}
    best = max(means, key=lambda name: (means[name], name))
    others = sorted((n for n in cells if n != best), key=lambda n: (-means[n], n))
    found = compare_pairs(
        [(cells[best], cells[n]) for n in others],
        permutations=permutations,
        bootstrap=bootstrap,
        seed=seed,
    )
    out = [TieWithBest(best, None, 1.0, True)]
    for name, (comparison, p) in zip(others, found, strict=True):
        out.append(TieWithBest(name, comparison, p, p >= alpha))
    return out
