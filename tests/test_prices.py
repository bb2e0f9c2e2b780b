"""Price files shared by the LLM and embedding price tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from chunkmark.costs.price_files import find_price, parse_price_file, read_price_file
from chunkmark.costs.prices import LLMPriceEntry, Price, llm_price
from chunkmark.counters import LLMStats
from chunkmark.errors import ConfigError


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


class _LLMFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    per: int = 1_000_000
    models: dict[str, LLMPriceEntry]


def test_llm_entries_take_optional_cache_prices_scaled_to_a_million() -> None:
    text = (
        "per: 1000\nmodels:\n"
        "  a: {input: 0.003, output: 0.015, cached_input: 0.0003, cache_write: 0.00375}\n"
        "  b: {input: 0.001, output: 0.002}\n"
    )
    parsed = parse_price_file(text, "f.yaml", _LLMFile, "L", ConfigError)
    scale = 1_000_000 / parsed.per
    a = llm_price("a", parsed.models["a"], "f.yaml", scale)
    assert (a.input, a.output) == pytest.approx((3.0, 15.0))
    assert (a.cached_input, a.cache_write) == pytest.approx((0.3, 3.75))
    assert a.per_million() == pytest.approx(
        {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}
    )
    b = llm_price("b", parsed.models["b"], "f.yaml", scale)
    assert (b.cached_input, b.cache_write) == (None, None)
    assert b.per_million() == pytest.approx({"input": 1.0, "output": 2.0})


def test_llm_entries_refuse_negative_or_unknown_cache_prices() -> None:
    with pytest.raises(ConfigError, match=r"models.a.cached_input"):
        parse_price_file(
            "models: {a: {input: 1, output: 2, cached_input: -1}}", "f", _LLMFile, "L", ConfigError
        )
    with pytest.raises(ConfigError, match=r"models.a.cache_read"):
        parse_price_file(
            "models: {a: {input: 1, output: 2, cache_read: 1}}", "f", _LLMFile, "L", ConfigError
        )


def test_cost_without_cached_tokens_is_the_plain_price() -> None:
    price = Price("m", 0.15, 0.60, cached_input=0.075, cache_write=0.15)
    assert price.cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    stats = LLMStats(input_tokens=1_000_000, output_tokens=0, cached_input_tokens=1_000_000)
    assert price.cost_of(stats) == pytest.approx(0.075)  # every prompt token read from cache
    # counters that claim more cached tokens than input tokens never make plain input negative
    odd = LLMStats(input_tokens=10, cached_input_tokens=20)
    assert price.cost_of(odd) == pytest.approx(20 * 0.075 / 1e6)
