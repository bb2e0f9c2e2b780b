"""What one LLM costs: :class:`Price`, US dollars per million tokens.

A price holds the input and output prices and, where the provider publishes them, the prices of
input tokens read from its prompt cache (``cached_input``) and written to it (``cache_write``).
An entry without them takes the provider's usual ratio to the input price
(:mod:`chunkmark.costs.prompt_cache`, applied by :meth:`Price.for_provider`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from chunkmark.costs.prompt_cache import CACHE_MULTIPLIERS, NO_CACHE_DISCOUNT
from chunkmark.counters import LLMStats


class LLMPriceEntry(BaseModel):
    """One model in an LLM price file: US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)


@dataclass(frozen=True)
class Price:
    """What one LLM costs: US dollars per million input and output tokens, and per million
    input tokens read from (``cached_input``) and written to (``cache_write``) the provider's
    prompt cache; None there means "as plain input" until :meth:`for_provider` fills it."""

    model: str
    input: float
    output: float
    source: str = ""
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """Dollars for this many tokens. ``input_tokens`` counts every prompt token; the
        ``cached_input_tokens`` and ``cache_write_tokens`` among them are priced at their own
        rates, the rest at the input price."""
        cached = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        plain = max(input_tokens - cached_input_tokens - cache_write_tokens, 0)
        return (
            plain * self.input
            + cached_input_tokens * cached
            + cache_write_tokens * write
            + output_tokens * self.output
        ) / 1_000_000

    def cost_of(self, stats: LLMStats) -> float:
        """Dollars for what an LLM client did (its :class:`~chunkmark.counters.LLMStats`, or the
        difference of two): uncached input at the input price, prompt-cache reads at the
        cached price, prompt-cache writes at the write price, output at the output price."""
        return self.cost(
            stats.input_tokens,
            stats.output_tokens,
            stats.cached_input_tokens,
            stats.cache_write_tokens,
        )

    def for_provider(self, provider: str | None) -> Price:
        """This price with the cached-input and cache-write prices it lacks set from the
        provider's usual ratios (:data:`~chunkmark.costs.prompt_cache.CACHE_MULTIPLIERS`)."""
        if self.cached_input is not None and self.cache_write is not None:
            return self
        read, write = CACHE_MULTIPLIERS.get(provider or "", NO_CACHE_DISCOUNT)
        return dataclasses.replace(
            self,
            cached_input=self.input * read if self.cached_input is None else self.cached_input,
            cache_write=self.input * write if self.cache_write is None else self.cache_write,
        )

    def per_million(self) -> dict[str, float]:
        """The prices by kind of token, for plans and manifests (cache prices when known)."""
        out = {"input": self.input, "output": self.output}
        if self.cached_input is not None:
            out["cached_input"] = self.cached_input
        if self.cache_write is not None:
            out["cache_write"] = self.cache_write
        return out


def llm_price(name: str, entry: LLMPriceEntry, source: str, scale: float = 1.0) -> Price:
    """The :class:`Price` of a price-file entry; ``scale`` turns the file's unit into per
    million tokens."""

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * scale

    return Price(
        name,
        entry.input * scale,
        entry.output * scale,
        source,
        scaled(entry.cached_input),
        scaled(entry.cache_write),
    )
