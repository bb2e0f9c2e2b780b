"""Kendall's tau between span and answer rankings, and the judge's agreement, against values
counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chunkmark.answers.agreement import judge_agreement, rank_agreement
from chunkmark.metrics.agreement import kendall_tau_b as kendall_tau


def test_kendall_tau_by_hand() -> None:
    # x = 1 2 3 4, y = 1 3 2 4: of the 6 pairs, only (2, 3) is discordant -> (5 - 1) / 6
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # tau-b with a tie in y: x = 1 2 3, y = 1 1 2: concordant 2, discordant 0, one pair tied in
    # y only -> 2 / sqrt((3 - 0) * (3 - 1))
    assert kendall_tau([1, 2, 3], [1, 1, 2]) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_rank_agreement_reads_cell_means() -> None:
    # three cells over four questions; cell means: span 0.25, 0.5, 0.75; answer 0.1, 0.3, 0.2
    span = np.array([[0, 0, 0, 1], [0, 1, 0, 1], [1, 1, 0, 1]], dtype=float)
    answer = np.array([[0.1] * 4, [0.3] * 4, [0.2] * 4])
    found = rank_agreement(span, answer, resamples=200, seed=1)
    # pairs (1,2) and (1,3) concordant, (2,3) discordant -> 1/3
    assert found.tau == pytest.approx(1 / 3)
    assert found.cells == 3 and found.questions == 4
    assert found.resamples > 0 and -1 <= found.ci_low <= found.ci_high <= 1
    # same inputs and seed, same interval
    assert rank_agreement(span, answer, resamples=200, seed=1) == found


def test_rank_agreement_drops_questions_with_a_missing_value() -> None:
    span = np.array([[0.1, 0.5, np.nan], [0.9, 0.5, 0.2]])
    answer = np.array([[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    found = rank_agreement(span, answer, resamples=50)
    assert found.questions == 2
    assert found.tau == pytest.approx(1.0)  # means: span 0.3 < 0.7, answer 0.5 < 1.0


def test_judge_agreement_by_hand() -> None:
    judged = [1, 1, 0, 0, 1, math.nan]
    f1 = [0.9, 0.2, 0.0, 0.6, 0.5, 1.0]
    found = judge_agreement(judged, f1)
    # five known pairs; F1 >= 0.5: T F F T T; judge: T T F F T -> agree on 1st, 3rd, 5th
    assert found.n == 5
    assert found.accuracy == pytest.approx(3 / 5)
    assert found.judged_correct == pytest.approx(3 / 5)
    assert found.reference_correct == pytest.approx(3 / 5)
    # Spearman by hand: judge ranks (ties averaged) 0,0 -> 1.5, 1,1,1 -> 4; F1 ranks of
    # 0.9 0.2 0.0 0.6 0.5 -> 5 2 1 4 3; Pearson of the ranks
    a = np.array([4, 4, 1.5, 1.5, 4])
    b = np.array([5, 2, 1, 4, 3], dtype=float)
    rho = ((a - a.mean()) * (b - b.mean())).sum() / math.sqrt(
        ((a - a.mean()) ** 2).sum() * ((b - b.mean()) ** 2).sum()
    )
    assert found.spearman == pytest.approx(rho)
    assert judge_agreement([], []).n == 0
