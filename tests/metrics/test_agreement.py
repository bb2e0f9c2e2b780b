"""Kendall's tau between two question sets' orderings of the same cells, checked against taus
counted by hand and resampling distributions enumerated by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chunkmark.metrics.agreement import kendall_tau_b, ranking_agreement


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
