"""The labeling page's server: Starlette on 127.0.0.1, one folder, one session token.

Every ``/api/`` request must carry the session's token in the ``X-Chunkmark-Token`` header (the
page reads it from its own HTML); another page open in the browser cannot read that HTML
(same-origin policy), and a request with a custom header from another origin is refused by the
browser's preflight before it is sent, so no other site can post to the labeler. The ``Host``
header must name this machine (127.0.0.1 or localhost), which stops DNS rebinding. No URL maps
to a file: documents are served by id from memory, the page and its script from the package,
and the only file a request names (an export) must resolve inside the folder.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from chunkmark.errors import ChunkmarkError
from chunkmark.files import write_bytes_atomic
from chunkmark.label.pool import Pool
from chunkmark.label.store import LabelError, QuestionStore

TOKEN_HEADER = "X-Chunkmark-Token"
CONTEXT_CHARS = 80
MAX_BODY = 1_000_000


@dataclass
class LabelSession:
    """What the page works on: the folder, its pool and question store, the queries to label."""

    folder: Path
    pool: Pool
    store: QuestionStore
    queries: list[str] = field(default_factory=list)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))


def page_html(token: str, title: str) -> str:
    """The page, with the session token and the folder's name written in."""
    template = resources.files("chunkmark.label").joinpath("page.html").read_text("utf-8")
    return template.replace("{{TOKEN}}", token).replace("{{TITLE}}", _escape(title))


def _escape(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def create_app(session: LabelSession) -> Starlette:
    """The Starlette app serving ``session`` (see the module docstring)."""

    async def index(request: Request) -> Response:
        html = page_html(session.token, session.folder.resolve().name)
        return HTMLResponse(html, headers=_NO_STORE | {"Content-Security-Policy": _CSP})

    routes = [Route("/", index)]
    for path, (handler, methods) in _API.items():
        routes.append(Route(path, _guarded(session, handler), methods=methods))
    hosts = ["127.0.0.1", "localhost", "testserver"]
    return Starlette(
        routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)]
    )


async def _state_reply(session: LabelSession, request: Request) -> Response:
    return _json(_state(session))


async def _document(session: LabelSession, request: Request) -> Response:
    doc_id = request.query_params.get("id", "")
    text = session.pool.documents.get(doc_id)
    if text is None:
        return _error(404, f"no document {doc_id!r} in this folder.")
    return _json({"id": doc_id, "text": text})


async def _suggest(session: LabelSession, request: Request) -> Response:
    pool = session.pool
    body = await _body(request)
    question = _str(body, "question")
    doc_id = _optional_doc(body, pool)
    n = int(body.get("n", 10))
    passages = await run_in_threadpool(pool.suggest, question, doc_id, max(1, min(n, 50)))
    return _json(
        {
            "passages": [
                asdict(p) | {"text": pool.documents[p.doc_id][p.start : p.end]} for p in passages
            ]
        }
    )


async def _search(session: LabelSession, request: Request) -> Response:
    pool = session.pool
    body = await _body(request)
    doc_id = _optional_doc(body, pool)
    hits = pool.search(_str(body, "text"), doc_id, limit=50, words=bool(body.get("words")))
    out = []
    for h in hits:
        text = pool.documents[h.doc_id]
        out.append(
            asdict(h)
            | {
                "before": text[max(0, h.start - CONTEXT_CHARS) : h.start],
                "match": text[h.start : h.end],
                "after": text[h.end : h.end + CONTEXT_CHARS],
            }
        )
    return _json({"hits": out})


async def _save(session: LabelSession, request: Request) -> Response:
    body = await _body(request)
    excerpts = body.get("excerpts")
    if not isinstance(excerpts, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(v, int) for v in e) for e in excerpts
    ):
        return _error(400, "excerpts must be a list of [start, end] integer pairs.")
    saved = session.store.save(
        _str(body, "question"),
        _str(body, "doc_id"),
        [(e[0], e[1]) for e in excerpts],
        qid=_optional_str(body, "id"),
        metadata=_metadata(body),
    )
    return _json({"saved": saved} | _state(session))


async def _unanswered(session: LabelSession, request: Request) -> Response:
    body = await _body(request)
    saved = session.store.mark_unanswered(
        _str(body, "question"), qid=_optional_str(body, "id"), metadata=_metadata(body)
    )
    return _json({"saved": saved} | _state(session))


async def _delete(session: LabelSession, request: Request) -> Response:
    body = await _body(request)
    session.store.delete(_str(body, "id"))
    return _json(_state(session))


async def _undo(session: LabelSession, request: Request) -> Response:
    await _body(request)
    done = session.store.undo()
    return _json({"undone": done} | _state(session))


async def _export(session: LabelSession, request: Request) -> Response:
    from chunkmark.label.interop import to_label_studio

    folder = session.folder.resolve()
    body = await _body(request)
    target = inside(folder, _str(body, "path"))
    data = to_label_studio(session.store.questions(), session.pool.documents)
    write_bytes_atomic(target, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode())
    return _json({"written": str(target.relative_to(folder))})


_Handler = Callable[[LabelSession, Request], Awaitable[Response]]
# Every /api/ route, its handler and methods; each is served behind the session token.
_API: dict[str, tuple[_Handler, list[str] | None]] = {
    "/api/state": (_state_reply, None),
    "/api/document": (_document, None),
    "/api/suggest": (_suggest, ["POST"]),
    "/api/search": (_search, ["POST"]),
    "/api/questions": (_save, ["POST"]),
    "/api/unanswered": (_unanswered, ["POST"]),
    "/api/delete": (_delete, ["POST"]),
    "/api/undo": (_undo, ["POST"]),
    "/api/export": (_export, ["POST"]),
}


def serve(app: Starlette, port: int, listening: Callable[[str], None]) -> None:
    """Serve ``app`` on 127.0.0.1:``port`` (0: a free port) until stopped; once it listens,
    ``listening`` is told its address."""
    import asyncio

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            listening(f"http://127.0.0.1:{_bound_port(server, port)}/")
        await task

    asyncio.run(main())


def _bound_port(server: Any, asked: int) -> int:
    for each in getattr(server, "servers", []):
        for sock in each.sockets:
            return int(sock.getsockname()[1])
    return asked


_NO_STORE = {"Cache-Control": "no-store"}
_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def inside(folder: Path, relative: str) -> Path:
    """``relative`` resolved inside ``folder``; a path that leaves it (absolute, ``..``, a link
    out) is a :class:`LabelError`."""
    target = (folder / relative).resolve()
    if not relative or not target.is_relative_to(folder) or target == folder:
        raise LabelError(
            f"{relative!r} is outside the dataset folder {folder}.",
            "Name a file inside the folder (a relative path without '..').",
        )
    return target


def _guarded(session: LabelSession, handler: _Handler) -> Callable[[Request], Awaitable[Response]]:
    async def checked(request: Request) -> Response:
        given = request.headers.get(TOKEN_HEADER, "")
        if not secrets.compare_digest(given.encode(), session.token.encode()):
            return _error(403, f"missing or wrong {TOKEN_HEADER}; reload the page.")
        try:
            response = await handler(session, request)
        except _BadRequest as exc:
            return _error(400, str(exc))
        except ChunkmarkError as exc:
            return _error(400, str(exc))
        return response

    return checked


class _BadRequest(Exception):
    pass


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise _BadRequest("the request is too large.")
    try:
        value = json.loads(raw or b"{}")
    except json.JSONDecodeError:
        raise _BadRequest("the request body is not JSON.") from None
    if not isinstance(value, dict):
        raise _BadRequest("the request body is not a JSON object.")
    return value


def _str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise _BadRequest(f"{key} must be a string.")
    return value


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value else None


def _optional_doc(body: dict[str, Any], pool: Pool) -> str | None:
    doc_id = _optional_str(body, "doc_id")
    if doc_id is not None and doc_id not in pool.documents:
        raise _BadRequest(f"no document {doc_id!r} in this folder.")
    return doc_id


def _metadata(body: dict[str, Any]) -> dict[str, Any] | None:
    value = body.get("metadata")
    return value if isinstance(value, dict) and value else None


def _state(session: LabelSession) -> dict[str, Any]:
    questions = session.store.questions()
    unanswered = session.store.unanswered()
    return {
        "folder": session.folder.name,
        "documents": [{"id": k, "chars": len(v)} for k, v in session.pool.documents.items()],
        "questions": questions,
        "unanswered": unanswered,
        "counts": {"answered": len(questions), "unanswered": len(unanswered)},
        "queries": session.queries,
        "lists": session.pool.lists,
    }


def _json(value: Any) -> Response:
    return JSONResponse(value, headers=_NO_STORE)


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=_NO_STORE)
