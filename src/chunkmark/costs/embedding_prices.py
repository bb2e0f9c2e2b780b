"""Embedding prices: what indexing a corpus with an API embedder costs, in US dollars.

The shipped table (``embedding_prices.yaml``) holds list prices per million input tokens and the
date they were read; ``--prices FILE`` (the layout of :class:`~chunkmark.costs.price_files.
PriceFile`) replaces or adds entries. A price is found in this order:

1. a price the user gave (``--prices FILE``, or an experiment's ``prices:``) for the model;
2. 0 for an embedder listed under ``local:`` (model2vec, sentence-transformers, the fake):
   it runs on this machine ("local: free");
3. the shipped list price of the model: an API model keeps it behind any ``base_url`` (a proxy
   or gateway on ``localhost`` forwards to the paid API);
4. 0 for a model without a list price served from a loopback address (``localhost``,
   ``127.0.0.1``, ``::1``): a server on this machine, e.g. Ollama or vLLM ("local: free").

An API model with none of these has no price (shown as unknown, never as 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chunkmark.costs.price_files import (
    PriceError,
    find_price,
    load_price_file,
    shipped_price_file,
)
from chunkmark.errors import ChunkmarkError
from chunkmark.remote import is_loopback
from chunkmark.specs import parse_spec

SHIPPED = "the shipped embedding_prices.yaml"
LOCAL_FREE = "local: free"
"""The source of the price of an embedder that runs on this machine (and was given none)."""
PRICE_TABLE = "price table"
UNKNOWN = "unknown: not in the price table"


@dataclass(frozen=True)
class EmbeddingPrices:
    """Dollars per million tokens by model name, the embedders that are free, and the date;
    ``given`` maps the models whose price the user gave to where they gave it."""

    per_million: dict[str, float]
    local: frozenset[str]
    date: str | None
    sources: tuple[str, ...]
    given: Mapping[str, str] = field(default_factory=dict)

    def find(self, model: str) -> float | None:
        """The price of ``model``: its entry, else the longest name it starts with plus ``-``."""
        return find_price(self.per_million, model)

    def price_of(self, embedder: str, identity: dict[str, Any] | None = None) -> float | None:
        """Dollars per million tokens for the embedder spec ``embedder`` (0 when it runs on
        this machine and has no other price), or None when its model has no price here."""
        return self.lookup(embedder, identity)[0]

    def lookup(
        self, embedder: str, identity: dict[str, Any] | None = None
    ) -> tuple[float | None, str]:
        """The price of the embedder spec ``embedder`` and where it comes from: a source the
        user gave, :data:`LOCAL_FREE`, :data:`PRICE_TABLE` or :data:`UNKNOWN` (module docs)."""
        try:
            name, _, kwargs = parse_spec(embedder)
        except ChunkmarkError:
            return None, UNKNOWN
        found = identity or {}
        model = kwargs.get("model") or found.get("name")
        if model is not None:
            given = find_price(self.given, str(model))
            if given is not None:
                mine = {n: self.per_million[n] for n in self.given if n in self.per_million}
                return find_price(mine, str(model)), given
        if name in self.local:
            return 0.0, LOCAL_FREE
        price = None if model is None else self.find(str(model))
        if price is not None:
            return price, PRICE_TABLE
        base_url = kwargs.get("base_url") or found.get("base_url")
        if isinstance(base_url, str) and is_loopback(base_url):
            return 0.0, LOCAL_FREE
        return None, UNKNOWN

    def with_entries(
        self, prices: Mapping[str, float], local: Iterable[str], source: str
    ) -> EmbeddingPrices:
        """This table with ``prices`` (per million tokens) replacing or adding entries and
        ``local`` embedders added, all given by the user in ``source``."""
        local = frozenset(local)
        if not prices and not local:
            return self
        return replace(
            self,
            per_million={**self.per_million, **prices},
            local=self.local | local,
            sources=(*self.sources, source),
            given={**self.given, **dict.fromkeys(prices, source)},
        )

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
    shipped = shipped_price_file("embedding_prices.yaml", SHIPPED, error)
    table = EmbeddingPrices(shipped.embedding(), frozenset(shipped.local), shipped.date, (SHIPPED,))
    if path is None:
        return table
    extra = load_price_file(Path(path), error)
    table = table.with_entries(extra.embedding(), extra.local, str(path))
    sources = table.sources if str(path) in table.sources else (*table.sources, str(path))
    return replace(table, date=extra.date or table.date, sources=sources)
