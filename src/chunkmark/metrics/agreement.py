"""Do two question sets rank the same cells alike? Kendall's tau-b between the cells' means on
each set, with a bootstrap interval that resamples each set's questions on its own.

The two sets need not share questions (human questions and synthetic ones about the same
documents, say), only cells: ``a`` is ``(cells, questions of a)``, ``b`` is ``(cells, questions of
b)``, rows in the same cell order. Each resample draws ``n_a`` questions of ``a`` and ``n_b`` of
``b`` with replacement, independently (the same draw for every cell of a set, so a set's cells
stay paired), recomputes both sets' cell means and their tau. The interval is the percentile
interval of the resampled taus; a resample in which either side's means are all equal has no tau
and is left out (``resamples`` counts those kept).

Kendall's tau itself is computed here only (:func:`kendall_tau`, scipy's tau-b and p-value), for
every caller: this bootstrap, the answers' agreement and the suite's leaderboard.

Same inputs and seed, same numbers.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chunkmark.asdict import AsDict

FloatArray = npt.NDArray[np.float64]
RESAMPLES = 1_000
LEVEL = 0.95
_BLOCK = 256  # resamples drawn at once


@dataclass(frozen=True)
class KendallTau:
    """Kendall's tau-b of ``n`` pairs and its two-sided p-value."""

    tau: float
    p: float
    n: int


def kendall_tau(x: npt.ArrayLike, y: npt.ArrayLike) -> KendallTau:
    """Kendall's tau-b of two paired sequences and its two-sided p-value: the one computation
    of Kendall's tau in chunkmark, by ``scipy.stats.kendalltau`` (the p-value exact for small
    samples without ties, else the normal approximation with the ties' variance). NaN with
    fewer than two values or when either side is constant."""
    from scipy.stats import kendalltau

    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"the sequences differ in length or are not flat: shapes {a.shape} and {b.shape}"
        )
    n = len(a)
    if n < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return KendallTau(math.nan, math.nan, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kendalltau(a, b)
    return KendallTau(float(result.statistic), float(result.pvalue), n)


def kendall_tau_b(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Kendall's tau-b of two paired sequences (:func:`kendall_tau`)."""
    return kendall_tau(x, y).tau


def kendall_taus(x: FloatArray, y: FloatArray) -> FloatArray:
    """Kendall's tau-b (:func:`kendall_tau`) of each row of ``x`` with the same row of ``y``
    (both ``(rows, n)``): a bootstrap's resamples; NaN for a row where either is constant."""
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"x and y must be (rows, n) of one shape: {x.shape} and {y.shape}")
    return np.array([kendall_tau(a, b).tau for a, b in zip(x, y, strict=True)], dtype=np.float64)


def percentile_interval(values: npt.ArrayLike, level: float) -> tuple[float, float]:
    """The ``level`` percentile interval of bootstrap values, NaN values left out (NaN, NaN
    when none is left)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if not len(v):
        return math.nan, math.nan
    alpha = (1.0 - level) / 2.0
    low, high = (float(q) for q in np.quantile(v, [alpha, 1.0 - alpha]))
    return low, high


@dataclass(frozen=True)
class RankingAgreement(AsDict):
    """Kendall's tau-b between the orderings of ``cells`` cells by two question sets of
    ``questions_a`` and ``questions_b`` questions, and its percentile bootstrap interval at
    ``level`` over ``resamples`` usable resamples."""

    cells: int
    questions_a: int
    questions_b: int
    tau: float
    ci_low: float
    ci_high: float
    resamples: int
    level: float


def ranking_agreement(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> RankingAgreement:
    """Tau-b between the cell means of ``a`` and of ``b`` (both ``(cells, questions)``, the
    same cells in the same order, any numbers of questions) and its bootstrap interval, each
    set's questions resampled independently (see the module docstring). A question with a NaN
    in any cell is left out of its set."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    x = _complete(np.asarray(a, dtype=np.float64), "a")
    y = _complete(np.asarray(b, dtype=np.float64), "b")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"a has {x.shape[0]} cells and b {y.shape[0]}: they must be the same")
    cells, n_a = x.shape
    n_b = y.shape[1]
    if n_a == 0 or n_b == 0:
        return RankingAgreement(cells, n_a, n_b, math.nan, math.nan, math.nan, 0, level)
    tau = kendall_tau_b(x.mean(axis=1), y.mean(axis=1))
    rng = np.random.default_rng(seed)
    found: list[FloatArray] = []
    for start in range(0, resamples, _BLOCK):
        size = min(_BLOCK, resamples - start)
        means_a = _resampled_means(x, rng, size)
        means_b = _resampled_means(y, rng, size)
        found.append(kendall_taus(means_a.T, means_b.T))
    taus = np.concatenate(found)
    taus = taus[~np.isnan(taus)]
    low, high = percentile_interval(taus, level)
    return RankingAgreement(cells, n_a, n_b, tau, low, high, len(taus), level)


def _complete(values: FloatArray, name: str) -> FloatArray:
    """The questions (columns) without a NaN in any cell."""
    if values.ndim != 2:
        raise ValueError(f"{name} must be (cells, questions), got shape {values.shape}")
    return values[:, ~np.isnan(values).any(axis=0)]


def _resampled_means(values: FloatArray, rng: np.random.Generator, size: int) -> FloatArray:
    """``(cells, size)``: each column the cell means over one draw of the questions with
    replacement (as counts: how often each question was drawn)."""
    n = values.shape[1]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(np.float64)
    result: FloatArray = values @ counts.T / n
    return result
