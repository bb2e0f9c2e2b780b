"""Price files (YAML or JSON) shared by the LLM and embedding price tables.

Both tables ship as package files with the date their list prices were read, and a user's
``--prices FILE`` of the same layout replaces or adds entries. This module reads and validates
such a file and looks a model up by name; what one entry holds (one price, or input and output
prices) is the caller's pydantic model.

An LLM's price is a :class:`Price`: US dollars per million input and output tokens, and, where
the provider publishes them, per million input tokens read from its prompt cache
(``cached_input``) and written to it (``cache_write``). An entry without them takes the
provider's usual ratio to the input price (:data:`CACHE_MULTIPLIERS`, applied by
:meth:`Price.for_provider`): Anthropic reads at 0.1x and writes (five-minute cache) at 1.25x;
OpenAI reads at 0.5x (the highest of its published ratios: newer models charge 0.25x or 0.1x)
and bills no writes (1x). Any other provider: no discount, writes at the input price.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chunkmark.errors import ChunkmarkError
from chunkmark.stats import LLMStats

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def read_price_file(path: Path, error: type[ChunkmarkError]) -> str:
    """The text of a user's price file; ``error`` names it when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(
            f"Cannot read the price file {path}: {exc}.",
            "Pass a readable YAML or JSON file to --prices.",
        ) from None


def parse_price_file(
    text: str, where: str, model: type[M], layout: str, error: type[ChunkmarkError]
) -> M:
    """``text`` (YAML or JSON) validated as ``model``; a bad file raises ``error`` naming
    ``where``, the first wrong field and ``layout`` (how the file should look)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{where} is not valid YAML or JSON: {exc}.", layout) from None
    if isinstance(raw, dict) and isinstance(raw.get("date"), dt.date):
        raw["date"] = raw["date"].isoformat()  # YAML reads an unquoted date as a date
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "the file"
        raise error(f"{where} is not a price table: {field}: {first['msg']}.", layout) from None


def find_price(prices: Mapping[str, T], model: str) -> T | None:
    """``model``'s entry, else that of the longest name it starts with followed by ``-`` (a
    dated snapshot such as ``gpt-4o-mini-2024-07-18``), else None."""
    if model in prices:
        return prices[model]
    prefixes = [name for name in prices if model.startswith(name + "-")]
    return prices[max(prefixes, key=len)] if prefixes else None


# --- LLM prices -------------------------------------------------------------------------------

# (cached input, cache write) as multiples of the input price, for entries that do not give them.
CACHE_MULTIPLIERS: dict[str, tuple[float, float]] = {
    "anthropic": (0.1, 1.25),  # cache hits 0.1x, five-minute cache writes 1.25x
    "openai": (0.5, 1.0),  # cached input at most 0.5x; no charge for writing
}
NO_CACHE_DISCOUNT = (1.0, 1.0)  # other providers: priced as plain input


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
        """Dollars for what an LLM client did (its :class:`~chunkmark.stats.LLMStats`, or the
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
        provider's usual ratios (:data:`CACHE_MULTIPLIERS`)."""
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
