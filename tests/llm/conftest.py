"""A local HTTP server speaking OpenAI's ``POST /v1/chat/completions`` and Anthropic's
``POST /v1/messages`` wire formats, with scripted answers and faults.

With ``prompt_cache = True`` the server plays the providers' prompt caches (words are tokens,
no minimum length): Anthropic's caches a system block marked ``cache_control`` (the first
request writes it, later ones read it); OpenAI's caches every system message by itself (the
first request is plain input, later ones read it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from wire_formats import (
    CHAT_PATH,
    MESSAGES_PATH,
    JSONHandler,
    anthropic_error,
    chat_body,
    messages_body,
    openai_error,
    system_text,
)


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
    prompt_cache: bool = False  # play the providers' prompt caches (see the module docs)
    cached_prompts: set[str] = field(default_factory=set)

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

    def cache_usage(self, chat: bool, payload: dict[str, Any]) -> tuple[int, int]:
        """(words read from, words written to) the prompt cache by one request."""
        if not self.prompt_cache:
            return 0, 0
        if chat:
            systems = [m for m in payload["messages"] if m["role"] == "system"]
            text = str(systems[0]["content"]) if systems else ""
            marked = bool(text)
        else:
            system = payload.get("system")
            text = system_text(system)
            marked = isinstance(system, list) and any("cache_control" in b for b in system)
        if not marked:
            return 0, 0
        words = len(text.split())
        if text in self.cached_prompts:
            return words, 0
        self.cached_prompts.add(text)
        return 0, 0 if chat else words

    def api_keys(self) -> list[str]:
        """The key each request carried (``x-api-key`` or ``Authorization: Bearer``)."""
        keys = []
        for h in self.headers:
            auth = h.get("authorization", "")
            keys.append(h.get("x-api-key") or auth.removeprefix("Bearer "))
        return keys


def _handler(server: LLMServer, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_POST(self) -> None:
            payload = self.read_json()
            with lock:
                server.requests.append(payload)
                server.paths.append(self.path)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                fault = server.faults.pop(0) if server.faults else None
            chat = self.path == CHAT_PATH
            if not chat and self.path != MESSAGES_PATH:
                self.send_json(404, openai_error("Unknown path", "invalid_request_error", None), {})
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
                    self.send_json(fault.status, body, fault.headers)
                    return
            if server.replay is not None:
                self.send_json(200, server.replay, {})
                return
            if not isinstance(payload.get("max_tokens"), int) or not payload.get("messages"):
                body = (
                    openai_error("max_tokens and messages are required", "invalid_request", None)
                    if chat
                    else anthropic_error("max_tokens: Field required", "invalid_request_error")
                )
                self.send_json(400, body, {})
                return
            text = server.answer(self.path, payload)
            with lock:
                read, written = server.cache_usage(chat, payload)
            body = (
                chat_body(payload, text, read)
                if chat
                else messages_body(payload, text, read, written)
            )
            self.send_json(200, body, {})

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
