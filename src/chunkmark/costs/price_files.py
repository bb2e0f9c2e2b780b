"""Price files (YAML or JSON), shared by the LLM and embedding price tables.

Both tables ship as package files with the date their list prices were read, and a user's
``--prices FILE`` of the same layout replaces or adds entries. This module reads and validates
such a file and looks a model up by name; what one entry holds (one price, or input and output
prices) is the caller's pydantic model, and the error raised is the caller's type (the default
being :class:`PriceError`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from chunkmark.errors import ChunkmarkError

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


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
