"""What several benchmark scripts share: the machine's CPU named in their output, and the base
of the small JSON servers they start on 127.0.0.1.

Scripts import it as a sibling, with the benchmarks folder appended to ``sys.path`` (at the end,
so that none of the scripts' names shadows a module of the same name, such as the tests'
``report`` package when a test loads a script in-process).
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def cpu_name() -> str:
    """The CPU's model name, with its family and model numbers (a VM may show only a brand)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown CPU"
    name = fields.get("model name", "unknown CPU")
    return f"{name} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


class JSONHandler(BaseHTTPRequestHandler):
    """A request handler that answers in JSON over kept-alive HTTP/1.1 connections, quietly."""

    protocol_version = "HTTP/1.1"  # keep connections open, as an API does

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
