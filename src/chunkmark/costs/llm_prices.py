"""The LLM price table: the shipped ``llm_prices.yaml``, with a user's ``--prices FILE`` on top.

Prices are US dollars per million tokens (input, output and, optionally, prompt-cache reads and
writes), read on the date the file gives. A model is looked up by its exact name, else by the
longest name it starts with followed by ``-``; an LLM client's price (:func:`price_of`) also
takes its provider's prompt-cache ratios where the entry gives none. A price the user gave
(``--prices FILE``, an experiment's ``prices:``) or the shipped list price applies whatever the
``base_url`` (a proxy on ``localhost`` forwards to the paid API); a model with neither, served
from this machine (a client whose ``base_url`` is a loopback address, e.g. Ollama on
``localhost:11434``), costs 0 ("local: free"). Any other model without a price has no cost
estimate (None, never 0): :func:`unknown_price` is the error naming the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from chunkmark.costs.price_files import (
    PriceError,
    PriceFile,
    find_price,
    load_price_file,
    shipped_price_file,
)
from chunkmark.costs.prices import Price, llm_price
from chunkmark.errors import ChunkmarkError
from chunkmark.remote import is_loopback

SHIPPED = "the shipped llm_prices.yaml"
LOCAL_FREE = "local: free"
"""The source of the price of a model served from this machine (and given no price)."""

E = TypeVar("E", bound=ChunkmarkError)


class PricedLLM(Protocol):
    """What a price lookup reads of an LLM client (any :class:`chunkmark.llm.LLM`)."""

    @property
    def name(self) -> str: ...

    def identity(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class LLMPrices:
    """Prices by model name (USD per 1M tokens); ``date`` is when the shipped ones were read."""

    prices: Mapping[str, Price]
    date: str | None = None

    def find(self, model: str) -> Price | None:
        """The price of ``model``: its own entry, else that of the longest name it starts with
        followed by ``-`` (a dated snapshot), else None."""
        return find_price(self.prices, model)


def load_llm_prices(
    path: str | Path | None = None, error: type[ChunkmarkError] = PriceError
) -> LLMPrices:
    """The shipped price table (``llm_prices.yaml``), with the entries of ``path`` (YAML or
    JSON, the same layout) replacing or adding to it; a bad file raises ``error``."""
    base = shipped_price_file("llm_prices.yaml", SHIPPED, error)
    prices = dict(_to_prices(base, SHIPPED))
    if path is not None:
        prices.update(_to_prices(load_price_file(Path(path), error), str(path)))
    return LLMPrices(prices, base.date)


def _to_prices(table: PriceFile, source: str) -> dict[str, Price]:
    scale = 1_000_000 / table.per
    return {name: llm_price(name, entry, source, scale) for name, entry in table.llm().items()}


def price_of(llm: PricedLLM, table: LLMPrices) -> Price | None:
    """The price of ``llm``'s model: 0 for the scripted fake; its entry in ``table`` (the
    user's or the shipped list price); else 0 when it is served from this machine
    (:data:`LOCAL_FREE`); else None."""
    identity = llm.identity()
    model = str(identity.get("model", llm.name))
    if identity.get("provider") == "fake":
        return Price(llm.name, 0.0, 0.0, "fake")
    price = table.find(model)
    if price is not None:
        return price.for_provider(identity.get("provider"))
    if is_loopback(str(identity.get("host") or "")):
        return Price(model, 0.0, 0.0, LOCAL_FREE, 0.0, 0.0)
    return None


def unknown_price(llm: PricedLLM, table: LLMPrices, error: type[E]) -> E:
    """The error (of type ``error``) for a model without a price, naming the fix."""
    known = ", ".join(sorted(table.prices))
    return error(
        f"No price is known for the model {llm.name!r}, so the cost cannot be estimated or "
        "limited.",
        "Give its price with --prices FILE (YAML: 'models: {"
        f"{llm.name}: {{input: 0.15, output: 0.60}}}}', US dollars per million tokens; 0 for a "
        f"free local model), or use a model with a known price ({known}).",
    )
