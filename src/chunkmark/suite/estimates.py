"""What the suite's leaderboard and its held-out test share: an estimate with its interval, a
cell's key, and ranks of cells by mean."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
CellKey = tuple[str, str, str]  # chunker, embedder, setting label


def json_float(value: float) -> float | None:
    """``value`` for JSON: None where it is not finite."""
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Estimate:
    """A value and its interval."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        return {
            k: json_float(v)
            for k, v in (("value", self.value), ("low", self.low), ("high", self.high))
        }


def ranks(means: npt.ArrayLike) -> FloatArray:
    """Ranks of cells by mean (rows; 1 is the highest), ties sharing their mean rank; a NaN mean
    ranks last. Columns are ranked independently."""
    from scipy.stats import rankdata

    m = np.asarray(means, dtype=np.float64)
    m = np.where(np.isnan(m), -np.inf, m)
    out: FloatArray = np.asarray(rankdata(-m, axis=0, method="average"), dtype=np.float64)
    return out
