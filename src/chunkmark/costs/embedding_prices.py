"""Embedding prices: what indexing a corpus with an API embedder costs, in US dollars.

The shipped table (``embedding_prices.yaml``) holds list prices per million input tokens and the
date they were read; ``--prices FILE`` (the same layout) replaces or adds entries. Embedders that
run locally (``local:``) cost 0; an API model missing from the table has no price (shown as
unknown, never as 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from chunkmark.costs.price_files import PriceError, find_price, parse_price_file, read_price_file
from chunkmark.errors import ChunkmarkError
from chunkmark.specs import parse_spec

SHIPPED = "the shipped embedding_prices.yaml"
LAYOUT = (
    "Write 'models:' followed by one 'model-name: 0.02' per model (US dollars per million "
    "tokens), and optionally 'local: [embedder, ...]' for embedders that cost nothing."
)


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    date: str | None = None
    currency: str = "USD"
    per: float = 1_000_000
    local: list[str] = []
    models: dict[str, float] = {}


@dataclass(frozen=True)
class EmbeddingPrices:
    """Dollars per million tokens by model name, the embedders that are free, and the date."""

    per_million: dict[str, float]
    local: frozenset[str]
    date: str | None
    sources: tuple[str, ...]

    def find(self, model: str) -> float | None:
        """The price of ``model``: its entry, else the longest name it starts with plus ``-``."""
        return find_price(self.per_million, model)

    def price_of(self, embedder: str, identity: dict[str, Any] | None = None) -> float | None:
        """Dollars per million tokens for the embedder spec ``embedder`` (0 when it is local),
        or None when its model has no price here."""
        try:
            name, _, kwargs = parse_spec(embedder)
        except ChunkmarkError:
            return None
        if name in self.local:
            return 0.0
        model = kwargs.get("model") or (identity or {}).get("name")
        return None if model is None else self.find(str(model))

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "per_million": dict(sorted(self.per_million.items())),
            "local": sorted(self.local),
            "sources": list(self.sources),
        }


def load_embedding_prices(
    path: str | Path | None = None, error: type[ChunkmarkError] = PriceError
) -> EmbeddingPrices:
    """The shipped price table, with the entries of ``path`` (YAML or JSON) replacing or adding
    to it; a bad file raises ``error``."""
    shipped_text = resources.files("chunkmark.costs").joinpath("embedding_prices.yaml")
    shipped = _parse(shipped_text.read_text("utf-8"), SHIPPED, error)
    prices = _per_million(shipped)
    local = set(shipped.local)
    sources = [SHIPPED]
    date = shipped.date
    if path is not None:
        extra = _parse(read_price_file(Path(path), error), str(path), error)
        prices.update(_per_million(extra))
        local.update(extra.local)
        sources.append(str(path))
        date = extra.date or date
    return EmbeddingPrices(prices, frozenset(local), date, tuple(sources))


def _parse(text: str, where: str, error: type[ChunkmarkError]) -> _PriceFile:
    return parse_price_file(text, where, _PriceFile, LAYOUT, error)


def _per_million(table: _PriceFile) -> dict[str, float]:
    scale = 1_000_000 / table.per
    return {name: float(price) * scale for name, price in table.models.items()}
