"""Price files shared by the LLM and embedding price tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from chunkmark.errors import ConfigError
from chunkmark.prices import find_price, parse_price_file, read_price_file


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    date: str | None = None
    models: dict[str, float] = {}


def test_a_dated_snapshot_takes_the_longest_matching_name() -> None:
    prices = {"gpt-4o": 1.0, "gpt-4o-mini": 2.0}
    assert find_price(prices, "gpt-4o-mini") == 2.0
    assert find_price(prices, "gpt-4o-mini-2024-07-18") == 2.0
    assert find_price(prices, "gpt-4o-2024-08-06") == 1.0
    assert find_price(prices, "gpt-4") is None


def test_parse_reads_dates_and_names_the_bad_field() -> None:
    parsed = parse_price_file(
        "date: 2025-11-20\nmodels: {a: 0.5}\n", "f.yaml", _File, "L", ConfigError
    )
    assert parsed.date == "2025-11-20" and parsed.models == {"a": 0.5}
    with pytest.raises(ConfigError, match=r"f.yaml is not a price table: models.a: .*Fix: L"):
        parse_price_file("models: {a: cheap}\n", "f.yaml", _File, "L", ConfigError)
    with pytest.raises(ConfigError, match="not valid YAML or JSON"):
        parse_price_file("models: [\n", "f.yaml", _File, "L", ConfigError)


def test_an_unreadable_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Cannot read the price file .*missing\.yaml"):
        read_price_file(tmp_path / "missing.yaml", ConfigError)
