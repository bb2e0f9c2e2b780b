"""The anthropic LLM client against a local HTTP server speaking /v1/messages."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from chunkmark.errors import LLMError, MissingDependencyError
from chunkmark.llm import LLM, EmptyAnswerError, build_llm
from chunkmark.llm.anthropic import AnthropicLLM

KEY = "sk-ant-test-SECRET-abcdef123456"
RECORDED = Path(__file__).parent / "recorded" / "messages_claude-haiku-4-5.json"

# Newer SDKs warn that the default model is deprecated; the wire format is the same.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def make(server: Any, waits: list[float] | None = None, **kwargs: Any) -> AnthropicLLM:
    recorder = waits if waits is not None else []
    kwargs.setdefault("backoff_base", 0.001)
    return AnthropicLLM(
        kwargs.pop("model", "claude-haiku-4-5"),
        base_url=server.url,
        api_key_env="ANTHROPIC_API_KEY",
        sleep=recorder.append,
        **kwargs,
    )


def test_messages_wire_format(llm_server: Any) -> None:
    llm = build_llm(f"anthropic(base_url={llm_server.url!r})", seed=7)
    answer = llm.complete("Be brief.", "What is a span?", max_tokens=50)
    assert answer == "answer to: What is a span?"
    assert llm_server.paths == ["/v1/messages"]
    (request,) = llm_server.requests
    assert request == {
        "model": "claude-haiku-4-5",
        "max_tokens": 50,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "What is a span?"}],
        "temperature": 0.0,
    }  # the Messages API has no seed parameter
    assert llm_server.api_keys() == [KEY]
    assert "anthropic-version" in llm_server.headers[0]
    stats = llm.stats()
    assert stats.requests == 1 and stats.input_tokens == 6 and stats.output_tokens == 6
    assert isinstance(llm, LLM)
    assert llm.identity() == {
        "provider": "anthropic",
        "model": "claude-haiku-4-5",
        "api": "messages",
        "host": llm_server.url.removeprefix("http://"),
    }
    assert KEY not in json.dumps(llm.identity())


def test_empty_system_and_no_temperature_are_omitted(llm_server: Any) -> None:
    make(llm_server, temperature=None).complete("", "hi")
    (request,) = llm_server.requests
    assert "system" not in request and "temperature" not in request


def test_seed_keys_the_cache(llm_server: Any, tmp_path: Path) -> None:
    spec = f"anthropic(base_url={llm_server.url!r})"
    build_llm(spec, cache_dir=tmp_path, seed=1).complete("s", "u")
    build_llm(spec, cache_dir=tmp_path, seed=2).complete("s", "u")
    assert len(llm_server.requests) == 2
    again = build_llm(spec, cache_dir=tmp_path, seed=1)
    assert again.complete("s", "u") == "answer to: u"
    assert len(llm_server.requests) == 2 and again.stats().cache_hits == 1


def test_429_honours_retry_after_and_529_is_retried(llm_server: Any) -> None:
    llm_server.fail(429, {"retry-after": "5"})
    llm_server.fail(529)
    waits: list[float] = []
    llm = make(llm_server, waits, backoff_base=0.5)
    assert llm.complete("s", "u") == "answer to: u"
    assert waits[0] == 5.0 and 0.5 <= waits[1] <= 1.0
    assert llm.stats().retries == 2 and len(llm_server.requests) == 3


def test_401_names_the_variable_without_the_key(llm_server: Any) -> None:
    llm_server.fail(
        401, body={"type": "error", "error": {"type": "authentication_error", "message": KEY}}
    )
    with pytest.raises(LLMError) as info:
        make(llm_server).complete("s", "u")
    assert "401" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
    assert KEY not in str(info.value)
    assert len(llm_server.requests) == 1


def test_404_unknown_model(llm_server: Any) -> None:
    llm_server.fail(
        404,
        body={"type": "error", "error": {"type": "not_found_error", "message": "model: claude-9"}},
    )
    with pytest.raises(LLMError) as info:
        make(llm_server, model="claude-9").complete("s", "u")
    message = str(info.value)
    assert "404" in message and "model: claude-9" in message and "without /v1" in message
    assert len(llm_server.requests) == 1


def test_server_errors_exhausted(llm_server: Any) -> None:
    for _ in range(3):
        llm_server.fail(503)
    with pytest.raises(LLMError, match=r"503.*after 3 attempts"):
        make(llm_server, max_retries=2).complete("s", "u")
    assert len(llm_server.requests) == 3


def test_timeout_is_retried(llm_server: Any) -> None:
    llm_server.fail(200, delay=1.0)
    llm = make(llm_server, timeout=0.2)
    assert llm.complete("s", "u") == "answer to: u"
    assert llm.stats().retries == 1


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY is not set"):
        build_llm("anthropic").complete("s", "u")


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, llm_server: Any) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingDependencyError) as info:
        make(llm_server).complete("s", "u")
    assert "pip install 'chunkmark[anthropic]'" in str(info.value)


def test_empty_content_is_an_empty_answer(llm_server: Any) -> None:
    llm_server.answer = lambda path, payload: ""
    with pytest.raises(EmptyAnswerError, match="end_turn"):
        make(llm_server).complete("s", "u")


def test_recorded_exchange(llm_server: Any) -> None:
    recorded = json.loads(RECORDED.read_text())
    request = recorded["request"]
    overloaded = recorded["overloaded"]
    llm_server.fail(overloaded["status"], overloaded["headers"], overloaded["body"])
    llm_server.replay = recorded["response"]["body"]
    waits: list[float] = []
    llm = make(llm_server, waits)
    (message,) = request["messages"]
    answer = llm.complete(request["system"], message["content"], max_tokens=request["max_tokens"])
    assert answer == recorded["expected_text"]
    assert llm_server.requests == [request, request]
    assert len(waits) == 1
    usage = recorded["response"]["body"]["usage"]
    assert llm.stats().input_tokens == usage["input_tokens"]
    assert llm.stats().output_tokens == usage["output_tokens"]


def test_recorded_overload_exhausted_reports_the_server_message(llm_server: Any) -> None:
    overloaded = json.loads(RECORDED.read_text())["overloaded"]
    llm_server.fail(overloaded["status"], overloaded["headers"], overloaded["body"])
    with pytest.raises(LLMError, match=r"529.*Overloaded"):
        make(llm_server, max_retries=0).complete("s", "u")
