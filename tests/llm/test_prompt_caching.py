"""Provider prompt caching: the request shapes (``cache_system``), the usage fields each SDK
reports, their counters, their price, and chunkmark's own answer cache that ignores them."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document
from chunkmark.costs.llm_prices import load_llm_prices as load_prices
from chunkmark.costs.llm_prices import price_of
from chunkmark.costs.prices import Price
from chunkmark.costs.prompt_cache import CACHE_MULTIPLIERS
from chunkmark.counters import LLMStats
from chunkmark.llm import FakeLLM
from chunkmark.llm.anthropic import AnthropicLLM
from chunkmark.llm.cache import cache_key
from chunkmark.llm.openai import OpenAIChatLLM

SYSTEM = "You situate passages. The whole document follows: cats purr and dogs bark."
USER = "Situate this passage: cats purr."
SYSTEM_WORDS = len(SYSTEM.split())
USER_WORDS = len(USER.split())

# Newer anthropic SDKs warn that the default model is deprecated; the wire format is the same.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def anthropic(server: Any, cache_dir: Path | None = None) -> AnthropicLLM:
    pytest.importorskip("anthropic")
    return AnthropicLLM(
        "claude-haiku-4-5",
        base_url=server.url,
        api_key_env="ANTHROPIC_API_KEY",
        cache_dir=cache_dir,
        backoff_base=0.001,
    )


def openai(server: Any) -> OpenAIChatLLM:
    pytest.importorskip("openai")
    return OpenAIChatLLM(
        "gpt-4o-mini", base_url=server.openai_url, api_key_env="OPENAI_API_KEY", seed=3
    )


# --- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_marks_the_system_block_only_when_asked(llm_server: Any) -> None:
    llm = anthropic(llm_server)
    llm.complete(SYSTEM, USER, max_tokens=20, cache_system=True)
    llm.complete(SYSTEM, "Another passage.", max_tokens=20)
    marked, plain = llm_server.requests
    assert marked["system"] == [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    ]
    assert plain["system"] == SYSTEM  # as before prompt caching existed
    assert marked["messages"] == [{"role": "user", "content": USER}]
    llm.complete("", USER, cache_system=True)
    assert "system" not in llm_server.requests[-1]  # nothing to cache, nothing sent


def test_anthropic_counts_cache_reads_and_writes(llm_server: Any) -> None:
    llm_server.prompt_cache = True
    llm = anthropic(llm_server)
    llm.complete(SYSTEM, USER, cache_system=True)
    first = llm.stats()
    assert (first.cache_write_tokens, first.cached_input_tokens) == (SYSTEM_WORDS, 0)
    assert first.input_tokens == SYSTEM_WORDS + USER_WORDS  # every prompt token, cached or not
    llm.complete(SYSTEM, "Second passage here.", cache_system=True)
    llm.complete(SYSTEM, "Third passage.", cache_system=True)
    stats = llm.stats()
    assert stats.cache_write_tokens == SYSTEM_WORDS
    assert stats.cached_input_tokens == 2 * SYSTEM_WORDS
    assert stats.input_tokens == 3 * SYSTEM_WORDS + USER_WORDS + 3 + 2
    delta = stats - first  # the counters subtract like the others
    assert (delta.cached_input_tokens, delta.cache_write_tokens) == (2 * SYSTEM_WORDS, 0)
    assert delta.to_dict()["cached_input_tokens"] == 2 * SYSTEM_WORDS


def test_anthropic_usage_without_cache_fields_counts_none(llm_server: Any) -> None:
    llm_server.replay = {
        "id": "msg_old",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 1,
            "cache_read_input_tokens": None,
        },
    }
    llm = anthropic(llm_server)
    assert llm.complete(SYSTEM, USER, cache_system=True) == "ok"
    stats = llm.stats()
    assert (stats.input_tokens, stats.cached_input_tokens, stats.cache_write_tokens) == (12, 0, 0)


def test_the_answer_cache_key_ignores_cache_system(llm_server: Any, tmp_path: Path) -> None:
    llm = anthropic(llm_server, tmp_path)
    assert llm.complete(SYSTEM, USER, cache_system=True) == llm.complete(SYSTEM, USER)
    assert len(llm_server.requests) == 1 and llm.stats().cache_hits == 1
    again = anthropic(llm_server, tmp_path)  # a new client over the same cache
    again.complete(SYSTEM, USER, cache_system=True)
    assert len(llm_server.requests) == 1
    # the key is built as before prompt caching existed: entries written then stay valid
    identity = {"provider": "anthropic", "model": "claude-haiku-4-5", "api": "messages"}
    key = cache_key(
        {**identity, "host": "127.0.0.1:1"},
        "The document.",
        "The chunk.",
        max_tokens=150,
        temperature=0.0,
        seed=0,
    )
    assert key.hex() == "358a84aac52384d04bb3858e5666080e10459f22395c94d3ca8f558b169e8943"


# --- OpenAI --------------------------------------------------------------------------------------


def test_openai_reads_cached_tokens_and_sends_the_same_request(llm_server: Any) -> None:
    llm_server.prompt_cache = True
    llm = openai(llm_server)
    llm.complete(SYSTEM, USER, cache_system=True)
    llm.complete(SYSTEM, USER, cache_system=False)
    first, second = llm_server.requests
    assert first == second  # caching is automatic at OpenAI: nothing to mark
    assert first["messages"][0] == {"role": "system", "content": SYSTEM}
    stats = llm.stats()
    assert stats.cached_input_tokens == SYSTEM_WORDS  # the second request read the prefix
    assert stats.cache_write_tokens == 0  # OpenAI reports (and bills) no writes
    assert stats.input_tokens == 2 * (SYSTEM_WORDS + USER_WORDS)


@pytest.mark.parametrize("details", [None, {}, {"cached_tokens": None}, "absent"])
def test_openai_usage_without_cached_tokens_counts_none(llm_server: Any, details: Any) -> None:
    usage: dict[str, Any] = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    if details != "absent":
        usage["prompt_tokens_details"] = details
    llm_server.replay = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }
    llm = openai(llm_server)
    assert llm.complete(SYSTEM, USER, cache_system=True) == "ok"
    assert (llm.stats().input_tokens, llm.stats().cached_input_tokens) == (9, 0)


# --- the fake ------------------------------------------------------------------------------------


def test_the_fake_plays_a_prompt_cache() -> None:
    fake = FakeLLM()
    fake.complete(SYSTEM, "one", cache_system=True)
    fake.complete(SYSTEM, "two", cache_system=True)
    fake.complete("Another system prompt.", "three", cache_system=True)
    fake.complete(SYSTEM, "four")  # not offered: neither read nor written
    stats = fake.stats()
    assert stats.cache_write_tokens == SYSTEM_WORDS + 3
    assert stats.cached_input_tokens == SYSTEM_WORDS
    assert fake.cache_system == [True, True, True, False]


# --- prices --------------------------------------------------------------------------------------


def test_cost_prices_cached_and_written_tokens_apart() -> None:
    price = Price("m", input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    stats = LLMStats(
        input_tokens=10_000, output_tokens=500, cached_input_tokens=6_000, cache_write_tokens=2_000
    )
    # 2,000 plain x $3 + 6,000 read x $0.30 + 2,000 written x $3.75 + 500 out x $15, per 1M
    assert price.cost_of(stats) == pytest.approx(0.006 + 0.0018 + 0.0075 + 0.0075)
    assert price.cost_of(LLMStats(input_tokens=1_000, output_tokens=10)) == pytest.approx(
        price.cost(1_000, 10)
    )
    unknown = Price("m", input=3.0, output=15.0)  # no cache prices: plain input for all
    assert unknown.cost_of(stats) == pytest.approx((10_000 * 3.0 + 500 * 15.0) / 1e6)


def test_provider_ratios_fill_missing_cache_prices() -> None:
    base = Price("m", input=2.0, output=8.0)
    claude = base.for_provider("anthropic")
    assert (claude.cached_input, claude.cache_write) == pytest.approx((0.2, 2.5))
    gpt = base.for_provider("openai")
    assert (gpt.cached_input, gpt.cache_write) == pytest.approx((1.0, 2.0))
    other = base.for_provider("vllm")
    assert (other.cached_input, other.cache_write) == (2.0, 2.0)
    given = Price("m", 2.0, 8.0, cached_input=0.5).for_provider("anthropic")
    assert (given.cached_input, given.cache_write) == pytest.approx((0.5, 2.5))
    assert set(CACHE_MULTIPLIERS) == {"anthropic", "openai"}


def test_the_shipped_table_has_cache_prices(llm_server: Any) -> None:
    table = load_prices()
    haiku = price_of(anthropic(llm_server), table)
    assert haiku is not None
    assert (haiku.input, haiku.cached_input, haiku.cache_write) == pytest.approx((1.0, 0.1, 1.25))
    mini = table.find("gpt-4o-mini-2024-07-18")
    assert mini is not None and (mini.cached_input, mini.cache_write) == (0.075, 0.15)
    for price in table.prices.values():
        assert price.cached_input is not None and price.cached_input <= price.input
        assert price.cache_write is not None and price.cache_write >= price.input


def test_a_price_file_may_give_cache_prices(tmp_path: Path) -> None:
    mine = tmp_path / "prices.yaml"
    mine.write_text(
        "per: 1000\nmodels:\n  acme: {input: 0.001, output: 0.002, cached_input: 0.0001}\n"
    )
    acme = load_prices(mine).find("acme")
    assert acme is not None and acme.cached_input == pytest.approx(0.1)
    assert acme.cache_write is None  # filled from the provider when the LLM is known


# --- the contextual chunker ------------------------------------------------------------------------


def test_contextual_chunks_are_asked_with_the_document_cached(
    llm_server: Any, tmp_path: Path
) -> None:
    pytest.importorskip("anthropic")
    llm_server.prompt_cache = True
    llm_server.answer = lambda path, payload: "About animals."
    spec = (
        "contextual(chunker='sentences(n=1)', llm=\"anthropic(model='claude-haiku-4-5', "
        f"base_url='{llm_server.url}')\")"
    )
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=tmp_path))
    text = "Cats purr. Dogs bark. Birds sing."
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chunk_document(chunker, "d", text)
    assert len(llm_server.requests) == 3
    systems = [r["system"] for r in llm_server.requests]
    assert all(s[0]["cache_control"] == {"type": "ephemeral"} for s in systems)
    words = len(systems[0][0]["text"].split())
    stats = chunker.stats().llm
    assert stats is not None
    assert (stats.cache_write_tokens, stats.cached_input_tokens) == (words, 2 * words)
    price = load_prices().find("claude-haiku-4-5")
    assert price is not None
    plain = stats.input_tokens - 3 * words
    expected = (plain * 1.0 + 2 * words * 0.1 + words * 1.25 + stats.output_tokens * 5.0) / 1e6
    assert price.cost_of(stats) == pytest.approx(expected)
