"""An experiment file's ``prices:``: entries that replace or add to the shipped tables, for that
experiment only::

    prices:
      embedding:                 # US dollars per million input tokens
        text-embedding-3-small: 0.02
        my-local-endpoint: 0     # an OpenAI-compatible server of your own: free
      llm:                       # US dollars per million input and output tokens
        gpt-4o-mini: {input: 0.15, output: 0.60}
        my-claude: {input: 1.0, output: 5.0, cached_input: 0.1, cache_write: 1.25}

``cached_input`` and ``cache_write`` (prompt-cache reads and writes) are optional: without them
the provider's usual ratios apply (:data:`chunkmark.costs.prompt_cache.CACHE_MULTIPLIERS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chunkmark.costs.embedding_prices import EmbeddingPrices, load_embedding_prices
from chunkmark.costs.llm_prices import LLMPrices, load_llm_prices
from chunkmark.costs.price_files import load_price_file
from chunkmark.costs.prices import LLMPriceEntry, llm_price
from chunkmark.errors import ConfigError

OVERRIDES = "the experiment file's prices"
PRICE_LAYOUT = (
    "Write it as 'prices: {embedding: {MODEL: 0.02}, llm: {MODEL: {input: 0.15, output: "
    "0.60}}}' (US dollars per million tokens; 0 for a free endpoint)."
)


class PriceOverrides(BaseModel):
    """The experiment file's ``prices:`` (see the module documentation)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    embedding: dict[str, float] = Field(default_factory=dict)
    llm: dict[str, LLMPriceEntry] = Field(default_factory=dict)

    @classmethod
    def parse(cls, value: dict[str, Any] | None) -> PriceOverrides:
        """The overrides, checked: a wrong layout is a ConfigError naming the field."""
        try:
            parsed = cls.model_validate(value or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "prices"
            raise ConfigError(
                f"Invalid experiment setting 'prices' ({where}): {first['msg']}.", PRICE_LAYOUT
            ) from None
        negative = [name for name, usd in parsed.embedding.items() if usd < 0]
        if negative:
            raise ConfigError(
                f"Invalid experiment setting 'prices' (embedding.{negative[0]}): a price must "
                "be zero or more.",
                PRICE_LAYOUT,
            )
        return parsed


@dataclass(frozen=True)
class PlanPrices:
    """The embedding and LLM price tables of one experiment, and the embedding models its
    ``prices:`` overrides."""

    embedding: EmbeddingPrices
    llm: LLMPrices
    embedding_overrides: frozenset[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedding": {"date": self.embedding.date, "sources": list(self.embedding.sources)},
            "llm": {"date": self.llm.date},
            "overrides": sorted(self.embedding_overrides),
        }


def load_plan_prices(
    overrides: dict[str, Any] | None, price_file: str | Path | None = None
) -> PlanPrices:
    """The shipped embedding and LLM price tables with the experiment's ``prices:`` applied,
    then the entries of ``price_file`` (``--prices FILE``, the layout of
    :class:`~chunkmark.costs.price_files.PriceFile`); a bad file is a ConfigError."""
    extra = PriceOverrides.parse(overrides)
    embedding = load_embedding_prices().with_entries(extra.embedding, (), OVERRIDES)
    llm = load_llm_prices()
    added = {m: llm_price(m, p, OVERRIDES) for m, p in extra.llm.items()}
    if price_file is not None:
        file = load_price_file(Path(price_file), ConfigError)
        embedding = embedding.with_entries(file.embedding(), file.local, str(price_file))
        scale = 1_000_000 / file.per
        added |= {m: llm_price(m, p, str(price_file), scale) for m, p in file.llm().items()}
    return PlanPrices(
        embedding, LLMPrices({**llm.prices, **added}, llm.date), frozenset(embedding.given)
    )
