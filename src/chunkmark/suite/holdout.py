"""Does the leaderboard's advice hold on a set it was not fitted on? Leave one set out.

For each set of a suite in turn, the cells are ranked on the *other* sets only and a pick is
made there; the pick is then scored on the held-out set:

- **mean-rank pick**: the cell with the best mean rank over the other sets (the board's own
  rule, :func:`chunkmark.suite.estimates.ranks`; ties broken by the higher mean metric over
  the other sets, then by name);
- **minimax-regret pick**: the cell whose worst regret over the other sets is smallest (the cell
  that loses least anywhere);
- optionally a fixed **baseline** cell (say, a common default), which is fitted on nothing.

On the held-out set each is given its rank among the cells (1 is best; ties share the mean
rank) and its **regret**: the best cell's mean minus the pick's mean, in the metric's units.
The regret's interval is a paired percentile bootstrap over the held-out set's questions in
which the best cell is chosen again in every resample (``max`` over cells of the resampled
means, minus the pick's resampled mean), so the interval carries the winner's curse instead
of treating the observed best as known.

Only the cells every set has are ranked, as on the board. The input is plain matrices, so the
same function serves a suite folder
(:func:`chunkmark.suite.leaderboard.leave_one_set_out_suite`) and any other table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chunkmark.suite.estimates import CellKey, Estimate, ranks

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HeldOutPick:
    """One pick scored on the held-out set."""

    rule: str  # "mean rank", "minimax regret" or "baseline"
    cell: CellKey
    rank: float  # among the held-out set's cells, 1 is best
    mean: float  # the pick's mean metric on the held-out set
    regret: Estimate  # best mean minus the pick's mean, with a paired bootstrap interval


@dataclass(frozen=True)
class HeldOutSet:
    """One held-out set: its best cell and every pick fitted on the other sets."""

    set: str
    questions: int
    cells: int
    best: CellKey
    best_mean: float
    picks: tuple[HeldOutPick, ...]

    def pick(self, rule: str) -> HeldOutPick:
        return next(p for p in self.picks if p.rule == rule)


@dataclass(frozen=True)
class HoldOut:
    """Leave-one-set-out over a suite, and each rule's worst and mean regret over the sets."""

    metric: str
    budget: int | None
    keys: tuple[CellKey, ...]
    sets: tuple[HeldOutSet, ...]
    full_pick: CellKey  # the mean-rank pick over every set: the board's headline cell

    def worst(self, rule: str) -> float:
        return max(s.pick(rule).regret.value for s in self.sets)

    def mean(self, rule: str) -> float:
        return float(np.mean([s.pick(rule).regret.value for s in self.sets]))

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(p.rule for p in self.sets[0].picks) if self.sets else ()


def mean_rank_pick(means: FloatArray) -> int:
    """The row with the best mean rank over the columns (sets) of ``means`` (cells x sets);
    ties go to the higher mean over the sets, then to the lower row."""
    mean_rank = ranks(means).mean(axis=1)
    order = np.lexsort((np.arange(means.shape[0]), -means.mean(axis=1), mean_rank))
    return int(order[0])


def minimax_regret_pick(means: FloatArray) -> int:
    """The row whose largest regret over the columns (best mean of the column minus the row's)
    is smallest; ties go to the smaller mean regret, then to the lower row."""
    regret = means.max(axis=0, keepdims=True) - means
    order = np.lexsort((np.arange(means.shape[0]), regret.mean(axis=1), regret.max(axis=1)))
    return int(order[0])


def _regret(values: FloatArray, row: int, counts: FloatArray, level: float) -> Estimate:
    """Best mean minus ``row``'s mean of the cells x questions matrix ``values``, with the
    percentile interval over the resampled means ``values @ counts.T / n``."""
    means = values.mean(axis=1)
    resampled = values @ counts.T / values.shape[1]  # cells x resamples
    regrets = resampled.max(axis=0) - resampled[row]
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(regrets, [alpha, 1.0 - alpha])
    return Estimate(float(means.max() - means[row]), float(low), float(high))


def leave_one_set_out(
    values: Mapping[str, FloatArray],
    keys: Sequence[CellKey],
    *,
    baseline: CellKey | None = None,
    metric: str = "recall",
    budget: int | None = None,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> HoldOut:
    """Leave-one-set-out over ``values[set]``, a cells x questions matrix per set whose rows are
    ``keys`` in the same order in every set. Needs at least two sets."""
    names = list(values)
    if len(names) < 2:
        raise ValueError("leaving a set out needs at least two sets")
    matrices = {n: np.asarray(values[n], dtype=np.float64) for n in names}
    if any(m.ndim != 2 or m.shape[0] != len(keys) or m.shape[1] == 0 for m in matrices.values()):
        raise ValueError("every set needs a (cells x questions) matrix with one row per key")
    base_row = None
    if baseline is not None:
        if baseline not in keys:
            raise ValueError(f"the baseline cell {baseline} is not among the cells")
        base_row = list(keys).index(baseline)
    means = np.stack([matrices[n].mean(axis=1) for n in names], axis=1)  # cells x sets
    rng = np.random.default_rng(seed)
    held: list[HeldOutSet] = []
    for j, name in enumerate(names):
        others = np.delete(means, j, axis=1)
        rows = {"mean rank": mean_rank_pick(others), "minimax regret": minimax_regret_pick(others)}
        if base_row is not None:
            rows["baseline"] = base_row
        m = matrices[name]
        n = m.shape[1]
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
        rank = ranks(means[:, j])
        best = int(np.argmax(means[:, j]))
        held.append(
            HeldOutSet(
                set=name,
                questions=n,
                cells=len(keys),
                best=keys[best],
                best_mean=float(means[best, j]),
                picks=tuple(
                    HeldOutPick(
                        rule=rule,
                        cell=keys[row],
                        rank=float(rank[row]),
                        mean=float(means[row, j]),
                        regret=_regret(m, row, counts, level),
                    )
                    for rule, row in rows.items()
                ),
            )
        )
    return HoldOut(
        metric=metric,
        budget=budget,
        keys=tuple(keys),
        sets=tuple(held),
        full_pick=keys[mean_rank_pick(means)],
    )
