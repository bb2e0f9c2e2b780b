"""The OpenAI embedder against a real local HTTP server speaking the /v1/embeddings wire format."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkmark.embedders import EMBEDDERS, Embedder
from chunkmark.embedders.openai import OpenAIEmbedder
from chunkmark.errors import EmbeddingError

KEY = "sk-test-SECRET-abcdef123456"
RECORDED = Path(__file__).parent / "recorded" / "embeddings_text-embedding-3-small_dim8.json"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def make(server: Any, waits: list[float] | None = None, **kwargs: Any) -> OpenAIEmbedder:
    recorder = waits if waits is not None else []
    kwargs.setdefault("backoff_base", 0.001)
    return OpenAIEmbedder(base_url=server.url, sleep=recorder.append, **kwargs)


def test_embeds_in_wire_format(embedding_server: Any) -> None:
    texts = ["first text", "second text", "third"]
    emb = make(embedding_server)
    out = emb.embed(texts)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, embedding_server.expected(texts), rtol=1e-6)
    (request,) = embedding_server.requests
    assert request["model"] == "text-embedding-3-small"
    assert request["input"] == texts
    assert request["encoding_format"] == "base64"
    assert "dimensions" not in request
    assert embedding_server.auth_headers == [f"Bearer {KEY}"]
    assert emb.stats().requests == 1
    assert emb.stats().retries == 0
    assert emb.stats().inputs == 3
    assert isinstance(emb, Embedder)


def test_dimensions_and_identity(embedding_server: Any) -> None:
    emb = make(embedding_server, dimensions=5)
    assert emb.embed(["x"]).shape == (1, 5)
    assert embedding_server.requests[0]["dimensions"] == 5
    identity = emb.identity()
    assert identity["dimensions"] == 5
    assert identity["base_url"] == embedding_server.url.split("/")[2]
    assert KEY not in json.dumps(identity)
    assert KEY not in json.dumps(emb.stats().to_dict())


def test_order_follows_index(embedding_server: Any) -> None:
    embedding_server.reverse = True
    texts = [f"text {i}" for i in range(7)]
    out = make(embedding_server).embed(texts)
    np.testing.assert_allclose(out, embedding_server.expected(texts), rtol=1e-6)


def test_server_answering_floats(embedding_server: Any) -> None:
    embedding_server.float_only = True
    out = make(embedding_server).embed(["a", "b"])
    np.testing.assert_allclose(out, embedding_server.expected(["a", "b"]), rtol=1e-6)


def test_batches_at_2048_inputs(embedding_server: Any) -> None:
    texts = [f"t{i}" for i in range(5000)]
    out = make(embedding_server).embed(texts)
    assert embedding_server.batch_sizes == [2048, 2048, 904]
    sent = [t for r in embedding_server.requests for t in r["input"]]
    assert sent == texts
    np.testing.assert_allclose(
        out[[0, 2048, 4999]],
        embedding_server.expected([sent[0], sent[2048], sent[4999]]),
        rtol=1e-6,
    )


def test_batches_at_300k_tokens(embedding_server: Any) -> None:
    emb = make(embedding_server)
    texts = [f"doc{i} " + "hello " * 7999 for i in range(45)]
    tokens = [p.tokens for p in emb.prepare(texts)]
    assert all(7990 < n <= 8191 for n in tokens)
    emb.embed(texts)
    sizes = embedding_server.batch_sizes
    assert len(sizes) == 2 and sum(sizes) == 45
    first = sum(tokens[: sizes[0]])
    assert first <= 300_000 < first + tokens[sizes[0]]  # the first request is as full as allowed
    assert emb.stats().tokens == sum(tokens)


def test_long_inputs_truncated_and_counted(embedding_server: Any) -> None:
    emb = make(embedding_server)
    long = "word " * 9000
    emb.embed(["short", long])
    sent = embedding_server.requests[0]["input"][1]
    assert long.startswith(sent) and len(sent) < len(long)
    assert [p.tokens for p in emb.prepare([long])] == [8191]
    assert emb.stats().truncated == 1


def test_empty_string_sent_as_space(embedding_server: Any) -> None:
    emb = make(embedding_server)
    out = emb.embed(["", "x"])
    assert embedding_server.requests[0]["input"] == [" ", "x"]
    assert out.shape == (2, 8)
    assert emb.stats().extra["empty_inputs"] == 1


def test_prompts_are_prepended(embedding_server: Any) -> None:
    emb = make(embedding_server, query_prompt="query: ", document_prompt="passage: ")
    emb.embed(["a"], kind="query")
    emb.embed(["a"], kind="document")
    assert [r["input"] for r in embedding_server.requests] == [["query: a"], ["passage: a"]]


def test_429_honours_retry_after(embedding_server: Any) -> None:
    embedding_server.fail(429, {"retry-after": "7"})
    embedding_server.fail(429, {"retry-after-ms": "250", "retry-after": "9"})
    waits: list[float] = []
    emb = make(embedding_server, waits)
    out = emb.embed(["a", "b"])
    assert waits == [7.0, 0.25]
    np.testing.assert_allclose(out, embedding_server.expected(["a", "b"]), rtol=1e-6)
    assert emb.stats().retries == 2
    assert emb.stats().requests == 3


def test_500_then_success(embedding_server: Any) -> None:
    embedding_server.fail(500)
    embedding_server.fail(503)
    waits: list[float] = []
    emb = make(embedding_server, waits, backoff_base=0.5)
    emb.embed(["a"])
    assert emb.stats().retries == 2
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0  # exponential, jittered


def test_timeout_is_retried(embedding_server: Any) -> None:
    embedding_server.fail(200, delay=1.0)
    emb = make(embedding_server, timeout=0.2)
    emb.embed(["a"])
    assert emb.stats().retries == 1


def test_401_fails_at_once_without_leaking_the_key(embedding_server: Any) -> None:
    body = {
        "error": {
            "message": f"Incorrect API key provided: {KEY[:8]}****3456. You can find your key.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    embedding_server.fail(401, body=body)
    waits: list[float] = []
    with pytest.raises(EmbeddingError) as info:
        make(embedding_server, waits).embed(["a"])
    message = str(info.value)
    assert "401" in message and "OPENAI_API_KEY" in message
    assert KEY not in message and KEY[:8] not in message and "3456" not in message
    assert len(embedding_server.requests) == 1
    assert waits == []


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_client_errors_are_not_retried(embedding_server: Any, status: int) -> None:
    embedding_server.fail(status)
    with pytest.raises(EmbeddingError, match=str(status)):
        make(embedding_server).embed(["a"])
    assert len(embedding_server.requests) == 1


def test_insufficient_quota_is_not_retried(embedding_server: Any) -> None:
    body = {
        "error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}
    }
    embedding_server.fail(429, body=body)
    with pytest.raises(EmbeddingError, match="429"):
        make(embedding_server).embed(["a"])
    assert len(embedding_server.requests) == 1


def test_exhausting_retries(embedding_server: Any) -> None:
    for _ in range(5):
        embedding_server.fail(503)
    waits: list[float] = []
    with pytest.raises(EmbeddingError, match=r"503.*3 attempts"):
        make(embedding_server, waits, max_retries=2).embed(["a"])
    assert len(embedding_server.requests) == 3
    assert len(waits) == 2


def test_unreachable_endpoint() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    waits: list[float] = []
    emb = OpenAIEmbedder(
        base_url=f"http://127.0.0.1:{port}/v1",
        max_retries=2,
        backoff_base=0.001,
        sleep=waits.append,
    )
    with pytest.raises(EmbeddingError, match=f"Nothing is listening at http://127.0.0.1:{port}/v1"):
        emb.embed(["a"])
    assert waits == []  # refused on this machine: the server is not running, no retry
    assert emb.stats().requests == 1 and emb.stats().retries == 0


def test_missing_key_for_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        OpenAIEmbedder().embed(["a"])


def test_custom_endpoint_needs_no_key(
    embedding_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_server.url)
    emb, _ = EMBEDDERS.build("openai(model='local-model', max_retries=0)")
    assert emb.embed(["a"]).shape == (1, 8)
    assert embedding_server.requests[0]["model"] == "local-model"
    assert emb.identity()["base_url"] == embedding_server.url.split("/")[2]


def test_recorded_response(embedding_server: Any) -> None:
    recorded = json.loads(RECORDED.read_text())
    embedding_server.replay = recorded["response"]["body"]
    request = recorded["request"]
    emb = make(embedding_server, model=request["model"], dimensions=request["dimensions"])
    out = emb.embed(request["input"])
    assert embedding_server.requests == [request]
    expected = np.array(recorded["expected_float"], dtype=np.float32)
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert out[0] @ out[1] > out[0] @ out[2]
    assert emb.stats().tokens == recorded["response"]["body"]["usage"]["total_tokens"]


def test_wrong_number_of_embeddings(embedding_server: Any) -> None:
    recorded = json.loads(RECORDED.read_text())
    embedding_server.replay = recorded["response"]["body"]
    with pytest.raises(EmbeddingError, match="3 embeddings for 2 inputs"):
        make(embedding_server).embed(["a", "b"])
