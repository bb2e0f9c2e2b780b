"""Aggregation: mean and population std (like the reference), bootstrap confidence intervals."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def mean_std(values: FloatArray) -> tuple[float, float]:
    """Mean and population standard deviation (``ddof=0``); NaN for no values."""
    if len(values) == 0:
        return float("nan"), float("nan")
    return float(np.mean(values)), float(np.std(values))


def bootstrap_ci(
    columns: Mapping[str, FloatArray],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of the mean for each column, sharing one set of resamples.

    The same seed and inputs give the same intervals.
    """
    n = len(next(iter(columns.values()), []))
    if n == 0:
        return {name: (float("nan"), float("nan")) for name in columns}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    alpha = (1.0 - level) / 2.0
    out: dict[str, tuple[float, float]] = {}
    for name, values in columns.items():
        means = np.asarray(values, dtype=np.float64)[idx].mean(axis=1)
        lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
        out[name] = (float(lo), float(hi))
    return out
