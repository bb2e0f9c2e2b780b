"""A local HTTP server speaking OpenAI's ``POST /v1/chat/completions`` and Anthropic's
``POST /v1/messages`` wire formats, with scripted answers and faults."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = "/v1/messages"


@dataclass
class Fault:
    """One scripted reply instead of the normal one: an HTTP error, or a delay before replying."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    delay: float = 0.0  # seconds to stall (longer than the client's timeout = a timeout)


def user_text(path: str, payload: dict[str, Any]) -> str:
    """The user message of a request in either wire format."""
    users = [m for m in payload["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content)
    return str(content)


def default_answer(path: str, payload: dict[str, Any]) -> str:
    return f"answer to: {user_text(path, payload)[:40]}"


@dataclass
class LLMServer:
    url: str  # http://127.0.0.1:port (append /v1 for OpenAI clients)
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    answer: Callable[[str, dict[str, Any]], str] = default_answer
    replay: dict[str, Any] | None = None  # a response body to return verbatim

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def fail(
        self,
        status: int = 500,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer the next request with this fault instead of an answer."""
        self.faults.append(Fault(status, headers or {}, body, delay))

    def api_keys(self) -> list[str]:
        """The key each request carried (``x-api-key`` or ``Authorization: Bearer``)."""
        keys = []
        for h in self.headers:
            auth = h.get("authorization", "")
            keys.append(h.get("x-api-key") or auth.removeprefix("Bearer "))
        return keys


def openai_error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _chat_body(payload: dict[str, Any], text: str | None) -> dict[str, Any]:
    prompt = sum(len(str(m["content"]).split()) for m in payload["messages"])
    completion = len((text or "").split())
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": payload["model"],
        "system_fingerprint": "fp_local",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _messages_body(payload: dict[str, Any], text: str) -> dict[str, Any]:
    prompt = len(str(payload.get("system", "")).split()) + sum(
        len(str(m["content"]).split()) for m in payload["messages"]
    )
    return {
        "id": "msg_local",
        "type": "message",
        "role": "assistant",
        "model": payload["model"],
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": len(text.split())},
    }


def _handler(server: LLMServer, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and hung up first

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length))
            with lock:
                server.requests.append(payload)
                server.paths.append(self.path)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                fault = server.faults.pop(0) if server.faults else None
            chat = self.path == CHAT_PATH
            if not chat and self.path != MESSAGES_PATH:
                self._send(404, openai_error("Unknown path", "invalid_request_error", None), {})
                return
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.status >= 400:
                    body = fault.body or (
                        openai_error("scripted fault", "server_error", None)
                        if chat
                        else anthropic_error("scripted fault", "api_error")
                    )
                    self._send(fault.status, body, fault.headers)
                    return
            if server.replay is not None:
                self._send(200, server.replay, {})
                return
            if not isinstance(payload.get("max_tokens"), int) or not payload.get("messages"):
                body = (
                    openai_error("max_tokens and messages are required", "invalid_request", None)
                    if chat
                    else anthropic_error("max_tokens: Field required", "invalid_request_error")
                )
                self._send(400, body, {})
                return
            text = server.answer(self.path, payload)
            self._send(
                200, _chat_body(payload, text) if chat else _messages_body(payload, text), {}
            )

    return Handler


@contextmanager
def serve() -> Iterator[LLMServer]:
    """Run a server on 127.0.0.1 (a free port) for the duration of the block."""
    state = LLMServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, threading.Lock()))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with serve() as state:
        yield state
