"""A local HTTP server that speaks OpenAI's ``POST /v1/embeddings`` wire format, with faults.

Shared by the embedder, plan and runner tests (``with serve_embeddings() as server``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def server_vector(text: str, dimension: int) -> np.ndarray:
    """The (unnormalised) vector the server returns for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)


@dataclass
class Fault:
    """One scripted reply instead of the normal one: an HTTP error, or a delay before replying."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    delay: float = 0.0  # seconds to stall (longer than the client's timeout = a timeout)


@dataclass
class EmbeddingServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth_headers: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    reverse: bool = False  # return ``data`` in reverse order (clients must sort by ``index``)
    replay: dict[str, Any] | None = None  # a recorded response body to return verbatim
    dimension: int = 8
    float_only: bool = False  # ignore ``encoding_format`` like some compatible servers do

    @property
    def batch_sizes(self) -> list[int]:
        return [len(r["input"]) for r in self.requests]

    def fail(
        self,
        status: int = 500,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer the next request with this fault instead of embeddings."""
        self.faults.append(Fault(status, headers or {}, body, delay))

    def expected(self, texts: list[str], dimension: int | None = None) -> np.ndarray:
        """The L2-normalised vectors the server returns for ``texts``."""
        rows = np.stack([server_vector(t, dimension or self.dimension) for t in texts])
        normalised: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return normalised


def _error_body(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _handler(server: EmbeddingServer, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length))
            with lock:
                server.requests.append(payload)
                server.auth_headers.append(self.headers.get("Authorization", ""))
                fault = server.faults.pop(0) if server.faults else None
            if self.path != "/v1/embeddings":
                self._send(404, _error_body("Unknown path", "invalid_request_error", None), {})
                return
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.status >= 400:
                    body = fault.body or _error_body("scripted fault", "server_error", None)
                    self._send(fault.status, body, fault.headers)
                    return
            if server.replay is not None:
                self._send(200, server.replay, {})
                return
            inputs = payload["input"]
            if not isinstance(inputs, list) or len(inputs) > 2048:
                self._send(400, _error_body("bad input", "invalid_request_error", None), {})
                return
            if any(not isinstance(t, str) or t == "" for t in inputs):
                message = "'$.input' is invalid. Please check the API reference."
                self._send(400, _error_body(message, "invalid_request_error", None), {})
                return
            dimension = int(payload.get("dimensions") or server.dimension)
            fmt = "float" if server.float_only else payload.get("encoding_format", "float")
            data = []
            for i, text in enumerate(inputs):
                vector = server_vector(text, dimension)
                embedding: Any = (
                    base64.b64encode(vector.astype("<f4").tobytes()).decode()
                    if fmt == "base64"
                    else vector.tolist()
                )
                data.append({"object": "embedding", "index": i, "embedding": embedding})
            if server.reverse:
                data.reverse()
            tokens = sum(len(t.split()) for t in inputs)
            body = {
                "object": "list",
                "data": data,
                "model": payload["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
            self._send(200, body, {})

    return Handler


@contextmanager
def serve_embeddings() -> Iterator[EmbeddingServer]:
    """A running server on 127.0.0.1 (a free port) for the duration of the block."""
    state = EmbeddingServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, threading.Lock()))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
