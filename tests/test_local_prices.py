"""Local means free: what runs on this machine is priced 0 unless a price is given, in every
table a cost is read from; one ``--prices FILE`` layout for embedding models and LLMs."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkmark.costs.embedding_prices import LOCAL_FREE, load_embedding_prices
from chunkmark.costs.llm_prices import load_llm_prices, price_of
from chunkmark.costs.overrides import load_plan_prices
from chunkmark.errors import ConfigError
from chunkmark.llm.openai import OpenAIChatLLM
from chunkmark.remote import is_loopback

OLLAMA = "http://localhost:11434/v1"
API = "https://api.acme.example/v1"  # a host that is not this machine (never contacted here)


def test_loopback_addresses_are_this_machine() -> None:
    local = [OLLAMA, "http://127.0.0.1:8000/v1", "http://[::1]:8080/v1", "localhost:11434"]
    local += ["127.0.0.1", "::1:8080", "http://LOCALHOST/v1", "http://app.localhost:3000"]
    remote = [API, "https://api.openai.com/v1", "http://10.0.0.5:11434/v1", "api.openai.com"]
    remote += ["http://localhost.example.com/v1", "http://128.0.0.1/v1", ""]
    assert [is_loopback(u) for u in local] == [True] * len(local)
    assert [is_loopback(u) for u in remote] == [False] * len(remote)


def test_local_embedders_are_free_in_the_shipped_table() -> None:
    table = load_embedding_prices()
    for spec in ("model2vec()", "model2vec(model='minilm-distilled')", "fake(dimension=8)"):
        assert table.lookup(spec) == (0.0, LOCAL_FREE), spec
    assert table.lookup("sentence_transformers(model='all-MiniLM-L6-v2')") == (0.0, LOCAL_FREE)
    assert table.lookup(f"openai(model='text-embedding-3-small', base_url='{API}')") == (
        0.02,
        "price table",
    )


def test_an_endpoint_on_this_machine_is_free_unless_its_model_has_a_price() -> None:
    table = load_embedding_prices()
    assert table.lookup(f"openai(model='nomic-embed-text', base_url='{OLLAMA}')") == (
        0.0,
        LOCAL_FREE,
    )
    assert table.price_of(f"openai(model='nomic-embed-text', base_url='{API}')") is None
    # base_url from $OPENAI_BASE_URL is in the identity (host and port), not in the spec
    identity = {"embedder": "openai", "name": "nomic-embed-text", "base_url": "localhost:11434"}
    assert table.lookup("openai(model='nomic-embed-text')", identity) == (0.0, LOCAL_FREE)
    # a paid model behind a proxy on localhost keeps its list price
    assert table.price_of(f"openai(model='text-embedding-3-large', base_url='{OLLAMA}')") == 0.13


def test_a_price_given_wins_over_local_free(tmp_path: Path) -> None:
    mine = tmp_path / "prices.yaml"
    mine.write_text(
        "models:\n  all-MiniLM-L6-v2: 0.001\n  nomic-embed-text: 0.005\n  my-llm: {input: 1, output: 2}\n"
        "local: [my_plugin_embedder]\n",
        encoding="utf-8",
    )
    table = load_embedding_prices(mine)
    assert table.lookup("sentence_transformers(model='all-MiniLM-L6-v2')") == (0.001, str(mine))
    assert table.lookup(f"openai(model='nomic-embed-text', base_url='{OLLAMA}')") == (
        0.005,
        str(mine),
    )
    assert table.lookup("my_plugin_embedder(model='x')") == (0.0, LOCAL_FREE)
    assert "my-llm" not in table.per_million  # an LLM's entry is not an embedding price
    assert str(mine) in table.sources


def client(model: str, base_url: str) -> OpenAIChatLLM:
    pytest.importorskip("openai")
    return OpenAIChatLLM(model, base_url=base_url, api_key_env="CHUNKMARK_TEST_UNSET_KEY")


def test_an_llm_served_from_this_machine_is_free_unless_priced(tmp_path: Path) -> None:
    table = load_llm_prices()
    local = price_of(client("llama3.1:8b", OLLAMA), table)
    assert local is not None and local.source == LOCAL_FREE
    assert local.per_million() == {
        "input": 0.0,
        "output": 0.0,
        "cached_input": 0.0,
        "cache_write": 0.0,
    }
    assert price_of(client("llama3.1:8b", API), table) is None  # an API without a price
    proxied = price_of(client("gpt-4o-mini", "http://127.0.0.1:4000/v1"), table)
    assert proxied is not None and (proxied.input, proxied.output) == (0.15, 0.60)
    mine = tmp_path / "prices.json"
    mine.write_text('{"per": 1000, "models": {"llama3.1:8b": {"input": 0.001, "output": 0.002}}}')
    given = price_of(client("llama3.1:8b", OLLAMA), load_llm_prices(mine))
    assert given is not None and given.source == str(mine)
    assert (given.input, given.output) == pytest.approx((1.0, 2.0))


def test_one_price_file_serves_every_table(tmp_path: Path) -> None:
    both = tmp_path / "prices.yaml"
    both.write_text(
        "models:\n  acme-embed: 0.07\n  acme-llm: {input: 0.5, output: 1.5}\n", encoding="utf-8"
    )
    plan = load_plan_prices({"embedding": {"acme-embed": 0.01}}, both)
    assert plan.embedding.lookup(f"openai(model='acme-embed', base_url='{API}')") == (
        0.07,  # --prices FILE over the experiment's prices:
        str(both),
    )
    llm = plan.llm.find("acme-llm")
    assert llm is not None and (llm.input, llm.output, llm.source) == (0.5, 1.5, str(both))
    assert load_embedding_prices(both).price_of("openai(model='acme-embed')") == 0.07
    assert load_llm_prices(both).find("acme-embed") is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {acme-embed: -1}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.yaml is not a price table: models.acme-embed"):
        load_plan_prices(None, bad)
