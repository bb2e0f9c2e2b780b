"""The wire formats the local test servers speak: OpenAI's ``POST /v1/chat/completions`` and
Anthropic's ``POST /v1/messages`` response and error bodies, and a JSON request handler base.

Shared by the LLM client tests (``tests/llm``) and the question-generation tests
(``tests/synth``); ``tests`` is on ``pythonpath`` (pyproject), so ``import wire_formats`` works.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = "/v1/messages"


def openai_error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def system_text(system: Any) -> str:
    """A Messages API ``system``: a string, or a list of text blocks (joined)."""
    if isinstance(system, list):
        return "".join(str(block.get("text", "")) for block in system)
    return str(system or "")


def chat_body(payload: dict[str, Any], text: str | None, cached: int = 0) -> dict[str, Any]:
    """A Chat Completions response; usage counts words as tokens, ``cached`` of the prompt's
    read from the prompt cache (``prompt_tokens_details.cached_tokens``)."""
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
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        },
    }


def messages_body(
    payload: dict[str, Any], text: str, read: int = 0, written: int = 0
) -> dict[str, Any]:
    """A Messages API response; usage counts words as tokens: ``read`` of the prompt's from the
    prompt cache, ``written`` to it, and ``input_tokens`` the rest (as Anthropic counts)."""
    prompt = len(system_text(payload.get("system")).split()) + sum(
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
        "usage": {
            "input_tokens": prompt - read - written,
            "output_tokens": len(text.split()),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        },
    }


class JSONHandler(BaseHTTPRequestHandler):
    """Quiet request handler that sends JSON bodies and tolerates clients hanging up."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_json(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
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
            pass  # the client hung up first (a timeout, or it was killed)

    def read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length", "0"))
        payload: dict[str, Any] = json.loads(self.rfile.read(length))
        return payload
