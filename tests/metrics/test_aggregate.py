from __future__ import annotations

import numpy as np
import pytest

from chunkmark.metrics import bootstrap_ci, mean_std


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
