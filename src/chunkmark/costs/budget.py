"""Cost limits: the errors of a run that would spend more than ``--max-cost``, and dollars
written for people."""

from __future__ import annotations

import math

from chunkmark.errors import ChunkmarkError, ConfigError


class BudgetReached(ChunkmarkError):
    """The next request would cross the cost limit (the run stops cleanly before it)."""


class CostLimitError(ConfigError):
    """The estimated cost exceeds ``--max-cost``, or cannot be estimated at all (refused before
    any request)."""


def usd(value: float) -> str:
    """Dollars for people: cents, or two significant digits below a cent ($0.00049)."""
    if value <= 0 or value >= 0.01:
        return f"${value:,.2f}"
    digits = 1 - math.floor(math.log10(value))
    return f"${value:.{digits}f}".rstrip("0")
