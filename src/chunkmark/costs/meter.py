"""The spending of a run that calls an LLM, held against its cost limit.

:class:`CostMeter` prices what the client did (its :class:`~chunkmark.counters.LLMStats` since the
meter was made) plus the estimates of the requests in flight, and refuses a request whose
estimate would cross the limit (:class:`~chunkmark.costs.budget.BudgetReached`). A request's
estimate counts its prompt's tokens plus :data:`MESSAGE_TOKENS` for the chat framing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from chunkmark.costs.budget import BudgetReached
from chunkmark.costs.prices import Price
from chunkmark.counters import LLMStats

MESSAGE_TOKENS = 12  # what the chat framing adds to a request's prompt tokens (an estimate)


class MeteredLLM(Protocol):
    """What the meter reads of an LLM client (any :class:`chunkmark.llm.LLM`)."""

    def stats(self) -> LLMStats: ...


class CostMeter:
    """Spending of one run: actual usage from the client's stats, plus the estimates of the
    requests in flight; refuses a request whose estimate would cross ``limit``."""

    def __init__(self, llm: MeteredLLM, price: Price | None, limit: float | None) -> None:
        self.llm = llm
        self.price = price
        self.limit = limit
        self._start = llm.stats()
        self._reserved = 0.0
        self._lock = threading.Lock()

    def usage(self) -> LLMStats:
        """The client's work since this meter was made."""
        return self.llm.stats() - self._start

    def spent(self) -> float | None:
        """Dollars spent so far by this run (None without a price)."""
        if self.price is None:
            return None
        return self.price.cost_of(self.usage())

    @contextmanager
    def request(self, estimate: float) -> Iterator[None]:
        """Hold ``estimate`` dollars for one request; raise :class:`BudgetReached` if that
        would cross the limit."""
        with self._lock:
            if self.limit is not None:
                spent = self.spent() or 0.0
                if spent + self._reserved + estimate > self.limit:
                    raise BudgetReached(
                        f"The next request (about ${estimate:.4f}) would take the spending of "
                        f"this run (${spent:.4f}) past --max-cost ${self.limit:g}.",
                        "Raise --max-cost and run the same command again to go on.",
                    )
            self._reserved += estimate
        try:
            yield
        finally:
            with self._lock:
                self._reserved -= estimate
