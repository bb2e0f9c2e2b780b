"""Half-open character spans and vectorised span arithmetic.

A chunk is a span ``[start, end)`` into its document, never a string: ``doc.text[start:end]``
is its text. The helpers below work on ``(n, 2)`` int64 arrays of spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, order=True, slots=True)
class Span:
    """A half-open range ``[start, end)`` of character offsets."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"invalid span [{self.start}, {self.end})")

    def __len__(self) -> int:
        return self.end - self.start


def as_array(spans: object) -> IntArray:
    """Spans (``Span`` objects, pairs, or an array) as an ``(n, 2)`` int64 array."""
    if isinstance(spans, np.ndarray):
        arr = spans.astype(np.int64, copy=False)
    else:
        items = list(spans)  # type: ignore[call-overload]
        if not items:
            return np.zeros((0, 2), dtype=np.int64)
        if isinstance(items[0], Span):
            arr = np.array([(s.start, s.end) for s in items], dtype=np.int64)
        else:
            arr = np.asarray(items, dtype=np.int64)
    return arr.reshape(-1, 2)


def union(spans: IntArray) -> IntArray:
    """Merge overlapping or adjacent spans into sorted, disjoint spans (empty spans dropped)."""
    spans = spans[spans[:, 1] > spans[:, 0]]
    if len(spans) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    ends = np.maximum.accumulate(spans[:, 1])
    starts_new = np.ones(len(spans), dtype=bool)
    starts_new[1:] = spans[1:, 0] > ends[:-1]
    group = np.cumsum(starts_new) - 1
    out_start = spans[starts_new, 0]
    out_end = np.zeros(len(out_start), dtype=np.int64)
    np.maximum.at(out_end, group, spans[:, 1])
    return np.stack([out_start, out_end], axis=1)


def total_length(spans: IntArray) -> int:
    """Sum of span lengths (overlaps counted twice)."""
    return int((spans[:, 1] - spans[:, 0]).sum()) if len(spans) else 0
