"""Aggregation: mean and population std (like the reference), bootstrap confidence intervals."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def mean_std(values: FloatArray) -> tuple[float, float]:
    """Mean and population standard deviation (``ddof=0``); NaN for no values."""
    if len(values) == 0:
        return float("nan"), float("nan")
    return float(np.mean(values)), float(np.std(values))


def mean_std_rows(values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:func:`mean_std` of each row of a 2-D array at once; NaN for no columns. The same numbers,
    bit for bit: the rows are made C-contiguous, so each is summed pairwise along its own axis as
    one 1-D array is (a column selection such as ``a[:, mask]`` comes back in Fortran order,
    whose rows numpy would sum one element after another)."""
    rows = np.ascontiguousarray(values, dtype=np.float64)
    if rows.shape[1] == 0:
        nan = np.full(rows.shape[0], np.nan)
        return nan, nan.copy()
    return rows.mean(axis=1), rows.std(axis=1)


def _draw_indices(seed: int, n: int, n_resamples: int) -> npt.NDArray[np.int64]:
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    idx.flags.writeable = False
    return idx


_cached_indices = functools.lru_cache(maxsize=128)(_draw_indices)
_CACHED_MAX = 500_000  # indices per cached draw (4 MB): at most 0.5 GB for the whole cache


def _resample_indices(seed: int, n: int, n_resamples: int) -> npt.NDArray[np.int64]:
    """The resamples' question indices for ``n`` questions (read-only). A run's summary asks
    for the same few small sizes for thousands of cells, settings and documents, so those are
    drawn once per (seed, n, count) and kept; large ones are drawn each time."""
    if n * n_resamples <= _CACHED_MAX:
        return _cached_indices(seed, n, n_resamples)
    return _draw_indices(seed, n, n_resamples)


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
    idx = _resample_indices(seed, n, n_resamples)
    alpha = (1.0 - level) / 2.0
    means = np.empty((len(columns), n_resamples), dtype=np.float64)
    for row, values in enumerate(columns.values()):
        means[row] = np.asarray(values, dtype=np.float64)[idx].mean(axis=1)
    # one quantile call for every column: the same numbers as one call per column
    bounds = np.quantile(means, [alpha, 1.0 - alpha], axis=1)
    return {
        name: (float(bounds[0, row]), float(bounds[1, row])) for row, name in enumerate(columns)
    }
