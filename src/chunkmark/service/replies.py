"""Replies as the MCP tools send them: JSON-able values (:func:`jsonable`), cut to fit
:data:`REPLY_LIMIT` bytes (:func:`fit`: lists from their end, the reply's ``truncated`` saying
what was cut), and errors as structured payloads (:func:`error_payload`). Nothing here imports
the MCP SDK."""

from __future__ import annotations

import copy
import json
import math
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any

from chunkmark.errors import ChunkmarkError, ConfigError

Payload = dict[str, Any]
REPLY_LIMIT = 8192  # bytes of a whole tools/call result as the client receives it


def cut(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def jsonable(value: Any) -> Any:
    """``value`` as JSON holds it: NaN and infinities as null, floats to 6 significant digits,
    paths and other objects as text, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return None if not math.isfinite(value) else float(f"{value:.6g}")
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return jsonable(item())
    return str(value)


def dumps(payload: Payload) -> str:
    """The compact JSON text of a reply."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def fit(payload: Payload, measure: Callable[[Payload], int], limit: int = REPLY_LIMIT) -> Payload:
    """``payload``, cut until ``measure(payload)`` (its size in bytes as sent) is at most
    ``limit``: the longest list is cut from its end, one item at a time, and
    ``truncated[<path>] = {"shown": n, "of": total}`` says so; long texts are cut last. A
    ``ConfigError`` when even that cannot make it fit."""
    if measure(payload) <= limit:
        return payload
    out = copy.deepcopy(payload)
    totals: dict[str, int] = {}
    while measure(out) > limit:
        found = _longest_list(out)
        if found is None:
            if not _cut_longest_text(out):
                raise ConfigError(
                    f"The reply would exceed {limit:,} bytes.",
                    "Ask for less: fewer datasets, chunkers or embedders, or one kind at a time.",
                )
            continue
        where, items = found
        totals.setdefault(where, len(items))
        items.pop()
        out["truncated"] = {
            path: {"shown": len(_at(out, path)), "of": total} for path, total in totals.items()
        }
    return out


def _lists(value: Any, path: str) -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "truncated":
                found += _lists(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        if len(value) > 1:
            found.append((path, value))
        for i, item in enumerate(value):
            found += _lists(item, f"{path}[{i}]")
    return found


def _longest_list(payload: Payload) -> tuple[str, list[Any]] | None:
    lists = _lists(payload, "")
    if not lists:
        return None
    return max(lists, key=lambda found: len(dumps({"x": found[1]})))


def _at(payload: Payload, path: str) -> list[Any]:
    value: Any = payload
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return list(value)


def _cut_longest_text(payload: Any) -> bool:
    """Halve the longest string in ``payload`` (over 40 characters); False when none is."""
    best: tuple[int, Any, Any] | None = None
    stack: list[Any] = [payload]
    while stack:
        node = stack.pop()
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in pairs:
            if isinstance(item, str) and len(item) > 40 and (best is None or len(item) > best[0]):
                best = (len(item), node, key)
            elif isinstance(item, dict | list):
                stack.append(item)
    if best is None:
        return False
    _, node, key = best
    node[key] = node[key][: len(node[key]) // 2] + "…"
    return True


def error_payload(exc: BaseException) -> Payload:
    """An error as a reply: a ChunkmarkError's kind, the one line it prints, its problem and
    fix; anything else as ``unexpected``, its traceback saved in a log file it names."""
    if not isinstance(exc, ChunkmarkError):
        return _unexpected(exc)
    message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return {
        "error": {
            "kind": type(exc).__name__,
            "message": message,
            "problem": exc.problem,
            "fix": exc.fix,
        }
    }


def _unexpected(exc: BaseException) -> Payload:
    """A fault (not bad input): one scrubbed line for the client, the traceback on the
    server's stderr, which MCP clients keep as the server's log."""
    from chunkmark.retry import scrub

    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    detail = scrub(str(exc)).rstrip(".")
    message = (
        f"unexpected {type(exc).__name__}: {detail}. The traceback is in the server's log "
        "(its stderr); please include it when you report this."
    )
    return {"error": {"kind": "unexpected", "message": message}}
