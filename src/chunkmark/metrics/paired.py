"""Paired comparisons of two cells over the same questions, and which cells tie with the best.

Two cells scored on the same questions give paired values ``a[i]``, ``b[i]``; everything here
works on the differences ``d = a - b``, so question difficulty cancels out.

- **Is there a difference?** The paired randomisation test (sign flips): under "no difference"
  each ``d[i]`` is as likely to be ``-d[i]``; with ``R`` random sign vectors, ``p = (b + 1) /
  (R + 1)`` where ``b`` counts the flips whose ``|mean|`` reaches the observed one. It assumes
  nothing about the shape of the differences (metric values are bounded and often mostly zero),
  and is the default. The paired t-test (``scipy.stats.ttest_rel``) and the Wilcoxon
  signed-rank test (``scipy.stats.wilcoxon``) are reported beside it.
- **How large is it?** The mean difference with a paired-bootstrap percentile interval
  (questions resampled with their pair), and win/tie/loss counts over questions.
- **Across many pairs**, p-values are Holm-adjusted (:func:`holm`), and
  :func:`tied_with_best` returns the cells no test can tell from the best: a tie, not an order.

Same inputs and seed, same numbers.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]
PERMUTATIONS = 10_000
BOOTSTRAP = 10_000
_BLOCK = 1_000  # sign vectors drawn at once


@dataclass(frozen=True)
class PairedComparison:
    """``a`` against ``b`` on the same ``n`` questions; ``difference`` is mean(a - b)."""

    n: int
    mean_a: float
    mean_b: float
    difference: float
    ci_low: float
    ci_high: float
    p_permutation: float
    p_ttest: float
    p_wilcoxon: float
    wins: int  # questions where a > b
    ties: int
    losses: int
    permutations: int
    level: float
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_paired(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    permutations: int = PERMUTATIONS,
    bootstrap: int = BOOTSTRAP,
    level: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Compare paired per-question values ``a`` and ``b`` (same questions, same order)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-D and paired, got shapes {x.shape} and {y.shape}")
    if len(x) == 0:
        raise ValueError("no questions to compare")
    d = x - y
    low, high = paired_bootstrap_ci(d, resamples=bootstrap, level=level, seed=seed)
    return PairedComparison(
        n=len(d),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        difference=float(d.mean()),
        ci_low=low,
        ci_high=high,
        p_permutation=permutation_test(d, permutations=permutations, seed=seed),
        p_ttest=paired_ttest(x, y),
        p_wilcoxon=wilcoxon_test(d),
        wins=int((d > 0).sum()),
        ties=int((d == 0).sum()),
        losses=int((d < 0).sum()),
        permutations=permutations,
        level=level,
        seed=seed,
    )


def permutation_test(d: npt.ArrayLike, *, permutations: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided sign-flip randomisation test of mean(d) = 0: ``p = (b + 1) / (R + 1)``."""
    diffs = np.asarray(d, dtype=np.float64)
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, got {permutations}")
    observed = abs(diffs.mean())
    # A flipped mean equal to the observed one up to rounding counts as reaching it.
    reach = observed - 1e-12 * max(1.0, float(np.abs(diffs).sum()))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, _BLOCK):
        rows = min(_BLOCK, permutations - start)
        signs = rng.integers(0, 2, size=(rows, len(diffs)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diffs) / len(diffs)
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


def paired_ttest(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Two-sided paired t-test p-value (``scipy.stats.ttest_rel``); 1.0 when a equals b."""
    from scipy import stats

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.array_equal(x, y):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant non-zero differences
        p = float(stats.ttest_rel(x, y).pvalue)
    return 0.0 if math.isnan(p) else p


def wilcoxon_test(d: npt.ArrayLike) -> float:
    """Two-sided Wilcoxon signed-rank p-value (zero differences dropped); 1.0 with none left."""
    from scipy import stats

    diffs = np.asarray(d, dtype=np.float64)
    if not np.any(diffs != 0):
        return 1.0
    return float(stats.wilcoxon(diffs, zero_method="wilcox").pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [float(v) for v in adjusted]


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
    permutation p-value of the paired difference is at least ``alpha``.

    The cells tied with the best form one group: the data cannot order them.
    """
    if not cells:
        return []
    sign = 1.0 if direction == "higher" else -1.0
    means = {
        name: sign * float(np.mean(np.asarray(v, dtype=np.float64))) for name, v in cells.items()
    }
    best = max(means, key=lambda name: (means[name], name))
    others = sorted((n for n in cells if n != best), key=lambda n: (-means[n], n))
    comparisons = [
        compare_paired(
            cells[best], cells[n], permutations=permutations, bootstrap=bootstrap, seed=seed
        )
        for n in others
    ]
    adjusted = holm([c.p_permutation for c in comparisons])
    out = [TieWithBest(best, None, 1.0, True)]
    for name, comparison, p in zip(others, comparisons, adjusted, strict=True):
        out.append(TieWithBest(name, comparison, p, p >= alpha))
    return out
