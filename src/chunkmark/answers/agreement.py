"""Do span rankings predict answer rankings, and does a judge agree with the references?

:func:`rank_agreement`: cells scored on the same questions give, per cell, a mean span metric
(recall, IoU) and a mean answer score (token F1, or label accuracy). Kendall's tau-b between the
two orderings of the cells says how far ranking chunkings by the span metric ranks them as their
answers do (1: the same order, -1: reversed, 0: unrelated; tau-b counts ties). The interval
resamples questions (the same resample for every cell, so pairs stay paired): a percentile
bootstrap of tau, resamples where either ordering is all ties left out.

:func:`judge_agreement`: the judge's ``correct`` against the reference-based score on the same
answers: accuracy against ``F1 >= 0.5`` (or against label correctness) and Spearman's rho between
the judge's 0/1 and the score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chunkmark.asdict import AsDict
from chunkmark.metrics.agreement import kendall_tau_b, kendall_taus, percentile_interval

FloatArray = npt.NDArray[np.float64]
RESAMPLES = 2000
CORRECT_F1 = 0.5


@dataclass(frozen=True)
class RankAgreement(AsDict):
    """Kendall's tau-b between two orderings of ``cells`` cells over ``questions`` questions,
    with a percentile bootstrap interval over questions (``resamples`` of which were usable)."""

    cells: int
    questions: int
    tau: float
    ci_low: float
    ci_high: float
    resamples: int


def rank_agreement(
    span: npt.ArrayLike,
    answer: npt.ArrayLike,
    *,
    resamples: int = RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> RankAgreement:
    """Kendall's tau between the cells' mean ``span`` and mean ``answer`` scores, both
    ``(cells, questions)`` (the same questions in the same order), and its bootstrap interval
    over questions. A question with a NaN in any cell is left out."""
    s = np.asarray(span, dtype=np.float64)
    a = np.asarray(answer, dtype=np.float64)
    if s.shape != a.shape or s.ndim != 2:
        raise ValueError(
            f"span and answer must both be (cells, questions), got {s.shape}, {a.shape}"
        )
    keep = ~(np.isnan(s).any(axis=0) | np.isnan(a).any(axis=0))
    s, a = s[:, keep], a[:, keep]
    n_cells, n = s.shape
    tau = kendall_tau_b(s.mean(axis=1), a.mean(axis=1)) if n else math.nan
    taus: FloatArray = np.zeros(0)
    if n and n_cells >= 2:
        rng = np.random.default_rng(seed)
        index = np.stack([rng.integers(0, n, size=n) for _ in range(resamples)])
        # each resample's cell means: (resamples, cells), by the counts of each question drawn
        counts = np.stack([np.bincount(row, minlength=n) for row in index]).astype(np.float64)
        found = kendall_taus(counts @ s.T / n, counts @ a.T / n)
        taus = found[~np.isnan(found)]
    low, high = percentile_interval(taus, level)
    return RankAgreement(n_cells, n, tau, low, high, len(taus))


@dataclass(frozen=True)
class JudgeAgreement(AsDict):
    """The judge's ``correct`` against the reference-based score on ``n`` answers."""

    n: int
    accuracy: float  # share where judge_correct == (score >= threshold)
    spearman: float  # rho between judge_correct (0/1) and the score; NaN when either is constant
    judged_correct: float  # share the judge calls correct
    reference_correct: float  # share with score >= threshold
    threshold: float


def judge_agreement(
    judged: npt.ArrayLike, score: npt.ArrayLike, threshold: float = CORRECT_F1
) -> JudgeAgreement:
    """Agreement of the judge's 0/1 ``judged`` with ``score`` (token F1, or label correctness
    as 0/1) on the answers where both are known (not NaN)."""
    from scipy.stats import spearmanr

    j = np.asarray(judged, dtype=np.float64)
    f = np.asarray(score, dtype=np.float64)
    keep = ~(np.isnan(j) | np.isnan(f))
    j, f = j[keep], f[keep]
    n = len(j)
    if n == 0:
        return JudgeAgreement(0, math.nan, math.nan, math.nan, math.nan, threshold)
    right = f >= threshold
    rho = math.nan
    if np.ptp(j) > 0 and np.ptp(f) > 0:
        rho = float(spearmanr(j, f).statistic)
    return JudgeAgreement(
        n=n,
        accuracy=float(((j >= 0.5) == right).mean()),
        spearman=rho,
        judged_correct=float(j.mean()),
        reference_correct=float(right.mean()),
        threshold=threshold,
    )
