"""The openai LLM client against a local HTTP server speaking /v1/chat/completions."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from chunkmark.errors import LLMError, MissingDependencyError
from chunkmark.llm import LLM, LLMS, EmptyAnswerError, build_llm
from chunkmark.llm.openai import OpenAIChatLLM

KEY = "sk-test-SECRET-llm-abcdef123456"
RECORDED = Path(__file__).parent / "recorded" / "chat_completions_gpt-4o-mini.json"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def make(server: Any, waits: list[float] | None = None, **kwargs: Any) -> OpenAIChatLLM:
    recorder = waits if waits is not None else []
    kwargs.setdefault("backoff_base", 0.001)
    kwargs.setdefault("api_key_env", "OPENAI_API_KEY")
    return OpenAIChatLLM(
        kwargs.pop("model", "gpt-4o-mini"),
        base_url=server.openai_url,
        sleep=recorder.append,
        **kwargs,
    )


def test_chat_completions_wire_format(llm_server: Any) -> None:
    llm = build_llm(f"openai(base_url={llm_server.openai_url!r})", seed=7)
    answer = llm.complete("Be brief.", "What is a span?", max_tokens=50)
    assert answer == "answer to: What is a span?"
    assert llm_server.paths == ["/v1/chat/completions"]
    (request,) = llm_server.requests
    assert request == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is a span?"},
        ],
        "max_tokens": 50,
        "temperature": 0.0,
        "seed": 7,
        "cache_prompt": True,  # a server on this machine: llama.cpp's prompt cache asked for
    }
    assert llm_server.api_keys() == [KEY]
    stats = llm.stats()
    assert stats.requests == 1 and stats.retries == 0 and stats.calls == 1
    assert stats.input_tokens == 6 and stats.output_tokens == 6
    assert isinstance(llm, LLM)
    assert llm.name == "gpt-4o-mini"


def test_identity_names_provider_model_and_endpoint_not_the_key(llm_server: Any) -> None:
    llm = make(llm_server)
    llm.complete("s", "u")
    identity = llm.identity()
    assert identity == {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "api": "chat.completions",
        "host": llm_server.url.removeprefix("http://"),
    }
    assert KEY not in json.dumps(identity) and KEY not in json.dumps(llm.stats().to_dict())


def test_temperature_none_and_empty_system_are_omitted(llm_server: Any) -> None:
    llm = make(llm_server, temperature=None)
    llm.complete("", "hello")
    (request,) = llm_server.requests
    assert "temperature" not in request
    assert request["messages"] == [{"role": "user", "content": "hello"}]


def test_base_url_from_environment(llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_url)
    llm = build_llm("openai(model='local-model', max_retries=0)")
    assert llm.complete("s", "u").startswith("answer to")
    assert llm_server.requests[0]["model"] == "local-model"


def test_custom_endpoint_needs_no_key(llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    llm = make(llm_server)
    llm.complete("s", "u")
    assert llm_server.api_keys() == ["no-key"]


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    llm = build_llm("openai(api_key_env='MY_OPENAI_KEY')")
    with pytest.raises(LLMError, match="MY_OPENAI_KEY is not set"):
        llm.complete("s", "u")


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, llm_server: Any) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(MissingDependencyError) as info:
        make(llm_server).complete("s", "u")
    assert "pip install 'chunkmark[openai]'" in str(info.value)


def test_429_honours_retry_after(llm_server: Any) -> None:
    llm_server.fail(429, {"retry-after": "7"})
    llm_server.fail(429, {"retry-after-ms": "250", "retry-after": "9"})
    waits: list[float] = []
    llm = make(llm_server, waits)
    assert llm.complete("s", "u") == "answer to: u"
    assert waits == [7.0, 0.25]
    assert llm.stats().retries == 2 and llm.stats().requests == 3


def test_retry_after_is_capped_at_backoff_max(llm_server: Any) -> None:
    llm_server.fail(429, {"retry-after": "3600"})
    waits: list[float] = []
    make(llm_server, waits, backoff_max=30.0).complete("s", "u")
    assert waits == [30.0]


def test_500_and_503_then_success(llm_server: Any) -> None:
    llm_server.fail(500)
    llm_server.fail(503)
    waits: list[float] = []
    llm = make(llm_server, waits, backoff_base=0.5)
    assert llm.complete("s", "u") == "answer to: u"
    assert llm.stats().retries == 2
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0  # exponential, jittered


def test_timeout_is_retried(llm_server: Any) -> None:
    llm_server.fail(200, delay=1.0)
    llm = make(llm_server, timeout=0.2)
    assert llm.complete("s", "u") == "answer to: u"
    assert llm.stats().retries == 1


def test_timeouts_exhausted(llm_server: Any) -> None:
    llm_server.fail(200, delay=1.0)
    llm_server.fail(200, delay=1.0)
    with pytest.raises(LLMError, match="timed out after 2 attempts") as info:
        make(llm_server, timeout=0.2, max_retries=1).complete("s", "u")
    # the server is on this machine (127.0.0.1): retrying cannot help, a longer timeout can
    assert info.value.fix is not None
    assert "raise timeout (it is 0.2 s" in info.value.fix and "network" not in info.value.fix


def test_401_fails_at_once_without_leaking_the_key(llm_server: Any) -> None:
    body = {
        "error": {
            "message": f"Incorrect API key provided: {KEY[:8]}****3456. You can find your key.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    llm_server.fail(401, body=body)
    waits: list[float] = []
    with pytest.raises(LLMError) as info:
        make(llm_server, waits).complete("s", "u")
    message = str(info.value)
    assert "401" in message and "OPENAI_API_KEY" in message
    assert KEY not in message and KEY[:8] not in message and "3456" not in message
    assert len(llm_server.requests) == 1 and waits == []


def test_404_unknown_model(llm_server: Any) -> None:
    body = {
        "error": {
            "message": "The model `gpt-5-nano-typo` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
    llm_server.fail(404, body=body)
    with pytest.raises(LLMError) as info:
        make(llm_server, model="gpt-5-nano-typo").complete("s", "u")
    message = str(info.value)
    assert "404" in message and "gpt-5-nano-typo" in message and "model name" in message
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("status", [400, 403, 422])
def test_client_errors_are_not_retried(llm_server: Any, status: int) -> None:
    llm_server.fail(status)
    with pytest.raises(LLMError, match=str(status)):
        make(llm_server).complete("s", "u")
    assert len(llm_server.requests) == 1


def test_rate_limit_exhausted(llm_server: Any) -> None:
    for _ in range(3):
        llm_server.fail(429, {"retry-after-ms": "1"})
    with pytest.raises(LLMError, match=r"429.*rate limited after 3 attempts"):
        make(llm_server, max_retries=2).complete("s", "u")
    assert len(llm_server.requests) == 3


def test_insufficient_quota_is_not_retried(llm_server: Any) -> None:
    body = {
        "error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}
    }
    llm_server.fail(429, body=body)
    with pytest.raises(LLMError, match="quota exhausted"):
        make(llm_server).complete("s", "u")
    assert len(llm_server.requests) == 1


def test_unreachable_endpoint() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    waits: list[float] = []
    llm = OpenAIChatLLM(
        "m",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key_env="OPENAI_API_KEY",
        max_retries=2,
        backoff_base=0.001,
        sleep=waits.append,
    )
    with pytest.raises(LLMError) as caught:
        llm.complete("s", "u")
    # a server on this machine that refuses the connection is not running: no retry, one line
    assert waits == [] and llm.stats().requests == 1 and llm.stats().retries == 0
    assert f"Nothing is listening at http://127.0.0.1:{port}/v1" in str(caught.value)
    assert "Start the server" in str(caught.value) and "\n" not in str(caught.value)


def test_empty_answer_is_an_error_and_not_cached(llm_server: Any, tmp_path: Path) -> None:
    llm_server.answer = lambda path, payload: ""
    spec = f"openai(base_url={llm_server.openai_url!r})"
    with pytest.raises(EmptyAnswerError, match="empty answer"):
        build_llm(spec, cache_dir=tmp_path).complete("s", "u")
    llm_server.answer = lambda path, payload: "now something"
    again = build_llm(spec, cache_dir=tmp_path)
    assert again.complete("s", "u") == "now something"
    assert len(llm_server.requests) == 2


def test_null_content_is_an_empty_answer(llm_server: Any) -> None:
    llm_server.answer = lambda path, payload: None
    llm = make(llm_server)
    with pytest.raises(EmptyAnswerError):
        llm.complete("s", "u")
    assert llm.stats().empty_answers == 1


def test_rerun_hits_the_cache(llm_server: Any, tmp_path: Path) -> None:
    spec = f"openai(base_url={llm_server.openai_url!r})"
    first = build_llm(spec, cache_dir=tmp_path, seed=3)
    assert first.complete("s", "u", max_tokens=20) == "answer to: u"
    llm_server.answer = lambda path, payload: "a different answer"
    second = build_llm(spec, cache_dir=tmp_path, seed=3)
    assert second.complete("s", "u", max_tokens=20) == "answer to: u"
    assert len(llm_server.requests) == 1
    assert second.stats().cache_hits == 1 and second.stats().requests == 0
    assert (tmp_path / "llm.sqlite3").exists()


@pytest.mark.parametrize(
    ("spec_extra", "seed", "max_tokens"),
    [("", 4, 20), ("", 3, 21), (", temperature=0.5", 3, 20), (", model='other'", 3, 20)],
)
def test_cache_key_covers_seed_tokens_temperature_and_model(
    llm_server: Any, tmp_path: Path, spec_extra: str, seed: int, max_tokens: int
) -> None:
    base = f"openai(base_url={llm_server.openai_url!r}"
    build_llm(base + ")", cache_dir=tmp_path, seed=3).complete("s", "u", max_tokens=20)
    other = build_llm(base + spec_extra + ")", cache_dir=tmp_path, seed=seed)
    other.complete("s", "u", max_tokens=max_tokens)
    assert len(llm_server.requests) == 2
    assert other.stats().cache_hits == 0


def test_registry_resolves_defaults() -> None:
    assert str(LLMS.resolve("openai")) == (
        "openai(model='gpt-4o-mini', base_url=None, api_key_env='OPENAI_API_KEY', "
        "temperature=0.0, max_retries=5, timeout=60.0, cache_prompt=None, concurrency=None)"
    )


def test_recorded_exchange(llm_server: Any) -> None:
    recorded = json.loads(RECORDED.read_text())
    request = recorded["request"]
    llm_server.fail(
        recorded["rate_limited"]["status"],
        recorded["rate_limited"]["headers"],
        recorded["rate_limited"]["body"],
    )
    llm_server.replay = recorded["response"]["body"]
    waits: list[float] = []
    llm = make(llm_server, waits, seed=request["seed"])
    system, user = (m["content"] for m in request["messages"])
    answer = llm.complete(system, user, max_tokens=request["max_tokens"])
    assert answer == recorded["expected_text"]
    # the recording is OpenAI's; replayed on this machine, cache_prompt is added (and only it)
    assert [r.pop("cache_prompt") for r in llm_server.requests] == [True, True]
    assert llm_server.requests == [request, request]
    assert waits == [2.0]
    usage = recorded["response"]["body"]["usage"]
    assert llm.stats().input_tokens == usage["prompt_tokens"]
    assert llm.stats().output_tokens == usage["completion_tokens"]
