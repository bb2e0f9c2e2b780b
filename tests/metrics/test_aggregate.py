from __future__ import annotations

import numpy as np
import pytest

from chunkmark.metrics import bootstrap_ci, mean_std, mean_std_rows


def test_mean_std_is_population_std() -> None:
    mean, std = mean_std(np.array([0.0, 1.0]))
    assert mean == 0.5 and std == pytest.approx(0.5)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = np.random.default_rng(1).random(200)
    a = bootstrap_ci({"x": values}, seed=3)
    b = bootstrap_ci({"x": values}, seed=3)
    assert a == b
    lo, hi = a["x"]
    assert lo < values.mean() < hi
    assert hi - lo < 0.2


def test_rows_at_once_are_the_one_dimensional_numbers_bit_for_bit() -> None:
    # The summary computes every metric's mean and std in one call on a column selection (which
    # numpy returns in Fortran order); each must equal np.mean / np.std of that metric alone.
    rng = np.random.default_rng(5)
    table = rng.random((9, 700)) * (rng.random((9, 700)) < 0.5)
    mask = rng.random(700) < 0.4
    selected = table[:, mask]
    assert selected.flags["F_CONTIGUOUS"] and not selected.flags["C_CONTIGUOUS"]
    means, stds = mean_std_rows(selected)
    for i in range(9):
        one = np.array(table[i][mask])
        assert float(means[i]) == float(np.mean(one))
        assert float(stds[i]) == float(np.std(one))
    empty_means, empty_stds = mean_std_rows(table[:, :0])
    assert np.isnan(empty_means).all() and np.isnan(empty_stds).all()


def test_bootstrap_of_many_columns_is_each_columns_own_percentile_interval() -> None:
    # Reference: numpy's generator and percentile on one column at a time.
    rng = np.random.default_rng(9)
    for n in (1, 3, 40, 900):  # 900 x 1000 resamples is drawn afresh, the others cached
        columns = {f"m{i}": rng.random(n) for i in range(6)}
        for _ in range(2):  # the second call reads the cached resamples
            got = bootstrap_ci(columns, n_resamples=1000, level=0.9, seed=4)
            idx = np.random.default_rng(4).integers(0, n, size=(1000, n))
            for name, values in columns.items():
                means = values[idx].mean(axis=1)
                low, high = np.quantile(means, [0.05, 0.95])
                assert got[name] == pytest.approx((low, high), abs=1e-15)
