"""Price files (YAML or JSON), shared by the LLM and embedding price tables.

Both tables ship as package files with the date their list prices were read, and a user's
``--prices FILE`` replaces or adds entries. One layout serves both (:class:`PriceFile`), so the
same file means the same on every command: an entry that is a number is an embedding model's
price, one with ``input`` and ``output`` an LLM's; ``local:`` lists embedders that cost nothing.
This module reads and validates such a file and looks a model up by name; the error raised is
the caller's type (the default being :class:`PriceError`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chunkmark.costs.prices import LLMPriceEntry
from chunkmark.errors import ChunkmarkError

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


LAYOUT = (
    "Write 'models:' followed by one entry per model in US dollars per million tokens: "
    "'text-embedding-3-small: 0.02' for an embedding model, 'gpt-4o-mini: {input: 0.15, "
    "output: 0.60}' for an LLM (optionally cached_input and cache_write, the prices of "
    "prompt-cache reads and writes); 0 for a free model. 'local: [embedder, ...]' names "
    "embedders that cost nothing."
)


class PriceFile(BaseModel):
    """A price file: entries by model name (a number: an embedding model's price; input and
    output prices: an LLM's), in US dollars per ``per`` tokens, and the embedders that are
    free (``local``)."""

    model_config = ConfigDict(extra="forbid")

    date: str | None = None
    currency: str = "USD"
    per: float = Field(default=1_000_000, gt=0)
    local: list[str] = []
    models: dict[str, Annotated[float, Field(ge=0)] | LLMPriceEntry] = {}

    def embedding(self) -> dict[str, float]:
        """The embedding models' prices, per million tokens."""
        scale = 1_000_000 / self.per
        return {
            name: float(price) * scale
            for name, price in self.models.items()
            if not isinstance(price, LLMPriceEntry)
        }

    def llm(self) -> dict[str, LLMPriceEntry]:
        """The LLMs' entries, as the file gives them (in its ``per``)."""
        return {n: p for n, p in self.models.items() if isinstance(p, LLMPriceEntry)}


class PriceError(ChunkmarkError):
    """A price file cannot be read or is not a price table, or a model has no price where one
    is needed."""


def read_price_file(path: Path, error: type[ChunkmarkError]) -> str:
    """The text of a user's price file; ``error`` names it when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(
            f"Cannot read the price file {path}: {exc}.",
            "Pass a readable YAML or JSON file to --prices.",
        ) from None


def load_price_file(path: Path, error: type[ChunkmarkError] = PriceError) -> PriceFile:
    """A user's price file (``--prices FILE``), read and checked; ``error`` names a bad one."""
    return parse_price_file(read_price_file(path, error), str(path), PriceFile, LAYOUT, error)


def shipped_price_file(name: str, where: str, error: type[ChunkmarkError]) -> PriceFile:
    """The shipped price table ``name`` (a package file of :mod:`chunkmark.costs`), read and
    checked; ``where`` names it in the error (of type ``error``) a bad one raises."""
    text = resources.files("chunkmark.costs").joinpath(name).read_text("utf-8")
    return parse_price_file(text, where, PriceFile, LAYOUT, error)


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
