"""A local server speaking OpenAI's ``/v1/chat/completions`` and Anthropic's ``/v1/messages``
for question generation: it answers like a model that reads the window in the prompt, takes
scripted answers and faults (429 with Retry-After, 500, a stall for timeouts, 401), counts every
request and every answered prompt, and can run a hook when a request arrives (to kill a client).

The wire format comes from ``tests/wire_formats.py`` (shared with ``tests/llm/conftest.py``);
this server adds the counting, the scripting by request and the model-like default answer.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from wire_formats import (
    CHAT_PATH,
    JSONHandler,
    anthropic_error,
    chat_body,
    messages_body,
    openai_error,
)

KEY_ENV = "SYNTH_TEST_KEY"
KEY = "sk-synth-test-SECRET-0123456789"

# Three documents of distinct, numbered facts (each sentence occurs once), one of them with
# typography that a model's copy usually straightens: curly quotes, a dash, doubled spaces.
NOUNS = ("bridge", "tower", "market", "school", "harbour", "library", "mill", "station")
PLACES = ("the river", "the old road", "the north gate", "the hill", "the square")


def fact(doc: int, i: int) -> str:
    noun = NOUNS[(doc * 7 + i) % len(NOUNS)]
    place = PLACES[(doc * 3 + i) % len(PLACES)]
    return f"Fact {doc}-{i}: the {noun} near {place} measures {100 + 13 * i + doc} metres."


def corpus_texts() -> dict[str, str]:
    texts = {}
    for doc, (name, count) in enumerate((("atlas", 40), ("bulletin", 24), ("chronicle", 12))):
        lines = [fact(doc, i) for i in range(count)]
        if name == "chronicle":
            lines.insert(
                5, "The keeper said \u201cnever  again\u201d \u2014 it\u2019s a local saying."
            )
        texts[name] = "\n".join(" ".join(lines[j : j + 4]) for j in range(0, len(lines), 4)) + "\n"
    return texts


def write_corpus(folder: Path, sources: list[Any] | None = None) -> Path:
    """A corpus folder as ``chunkmark datasets import`` writes it."""
    (folder / "corpora").mkdir(parents=True)
    for name, text in corpus_texts().items():
        (folder / "corpora" / f"{name}.md").write_text(text, encoding="utf-8")
    if sources is not None:
        (folder / "manifest.json").write_text(json.dumps({"sources": sources}), encoding="utf-8")
    return folder


# --- what a model-like responder reads from a prompt -----------------------------------------

FACT = re.compile(r"Fact \d+-\d+: [^.]+\.")


def window_text(user: str) -> str:
    """The text between <text> and </text> of a generation prompt (pieces markers kept)."""
    return user.split("<text>\n", 1)[1].split("\n</text>", 1)[0]


def asked_section(user: str) -> str:
    """The list of earlier questions in a prompt ("" when there is none)."""
    if "were already asked" not in user:
        return ""
    return user.split("were already asked", 1)[1].split("\n\n", 1)[0]


def asked_count(user: str) -> int:
    """How many earlier questions the prompt lists."""
    return sum(1 for line in asked_section(user).splitlines() if line.startswith("- "))


def style_of(user: str) -> str:
    if "two separate passages" in user:
        return "multi"
    if "word it in your own way" in user:
        return "paraphrased"
    return "factoid"


def label(passage: str) -> str:
    """``0-3`` for ``Fact 0-3: ...``."""
    return passage.split(":")[0].split()[1]


def model_answer(user: str) -> str:
    """What a well-behaved model answers: the first fact of the window no earlier question is
    about (two facts apart from each other for a multi question); exact passages, or piece
    ranges when the prompt shows numbered pieces."""
    text = window_text(user)
    plain = re.sub(r"\[\[\d+\]\]", "", text)
    facts = FACT.findall(plain)
    used = set(re.findall(r"\d+-\d+", asked_section(user)))
    fresh = [i for i, f in enumerate(facts) if label(f) not in used] or [0]
    chosen = [facts[fresh[0]]]
    style = style_of(user)
    if style == "multi":  # far enough apart that not even their ~100-character pieces touch
        later = [i for i in fresh if i >= fresh[0] + 5] or [len(facts) - 1]
        chosen.append(facts[later[0]])
    first = label(chosen[0])
    if style == "paraphrased":
        question = f"How long is the structure listed as item {first}?"
    elif style == "multi":
        question = f"How do facts {first} and {label(chosen[1])} compare in length?"
    else:
        question = f"What does fact {first} say?"
    if "[[1]]" in text:
        return json.dumps({"question": question, "pieces": [piece_range(text, c) for c in chosen]})
    return json.dumps({"question": question, "passages": chosen})


def piece_range(numbered: str, passage: str) -> list[int]:
    """The piece numbers [first, last] of the pieces a passage lies in."""
    parts = re.split(r"\[\[(\d+)\]\]", numbered)[1:]
    pieces = [(int(parts[i]), parts[i + 1]) for i in range(0, len(parts), 2)]
    plain = "".join(text for _, text in pieces)
    start = plain.index(passage)
    end = start + len(passage)
    first = last = 0
    pos = 0
    for number, text in pieces:
        if pos <= start < pos + len(text):
            first = number
        if pos < end <= pos + len(text):
            last = number
        pos += len(text)
    return [first, last]


# --- the server -------------------------------------------------------------------------------


@dataclass
class Scripted:
    """One scripted reply: an answer text, or an HTTP error, or a stall before replying."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class SynthServer:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    answered: Counter[str] = field(default_factory=Counter)  # 200 replies per distinct prompt
    script: list[Scripted] = field(default_factory=list)  # replies for the next requests
    # Replies by content, after the script: (request number, user prompt) -> a reply or None.
    responder: Callable[[int, str], Scripted | None] | None = None
    # Called with each request's 1-based number before it is answered; True drops the request
    # unanswered (the connection is closed).
    on_request: Callable[[int], bool | None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def answer_next(self, text: str) -> None:
        """Answer the next request with ``text`` instead of the model-like answer."""
        self.script.append(Scripted(text=text))

    def fail_next(
        self, status: int, headers: dict[str, str] | None = None, delay: float = 0.0
    ) -> None:
        """Answer the next request with an HTTP error (after stalling ``delay`` seconds)."""
        self.script.append(Scripted(status=status, headers=headers or {}, delay=delay))

    def as_usual_next(self, count: int = 1) -> None:
        """Let the next ``count`` requests get the usual answer (responder, else model)."""
        self.script.extend(Scripted() for _ in range(count))

    def requests_answered(self) -> int:
        return sum(self.answered.values())

    def openai_spec(self, **params: Any) -> str:
        return _spec("openai", base_url=self.openai_url, **params)

    def anthropic_spec(self, **params: Any) -> str:
        return _spec("anthropic", base_url=self.url, **params)

    def user_prompts(self) -> list[str]:
        return [_user(p) for p in self.requests]


def _spec(name: str, **params: Any) -> str:
    params.setdefault("api_key_env", KEY_ENV)
    params.setdefault("max_retries", 2)
    params.setdefault("timeout", 5.0)
    params.setdefault("model", "gpt-4o-mini" if name == "openai" else "claude-haiku-4-5")
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def _user(payload: dict[str, Any]) -> str:
    users = [m for m in payload["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content)
    return str(content)


def _prompt_key(path: str, payload: dict[str, Any]) -> str:
    return json.dumps([path, payload.get("system"), payload["messages"]], sort_keys=True)


def _error_body(chat: bool, status: int) -> dict[str, Any]:
    message = "invalid api key" if status == 401 else "scripted fault"
    if chat:
        return openai_error(message, "server_error", None)
    return anthropic_error(message, "api_error")


def _handler(server: SynthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_POST(self) -> None:
            payload = self.read_json()
            with server.lock:
                server.requests.append(payload)
                server.paths.append(self.path)
                number = len(server.requests)
                scripted = server.script.pop(0) if server.script else Scripted()
            if server.on_request is not None and server.on_request(number):
                return
            chat = self.path == CHAT_PATH
            usual = scripted.status == 200 and scripted.text is None and not scripted.delay
            if usual and server.responder is not None:
                scripted = server.responder(number, _user(payload)) or scripted
            if scripted.delay:
                time.sleep(scripted.delay)
            if scripted.status != 200:
                self.send_json(
                    scripted.status, _error_body(chat, scripted.status), scripted.headers
                )
                return
            text = scripted.text if scripted.text is not None else model_answer(_user(payload))
            with server.lock:
                server.answered[_prompt_key(self.path, payload)] += 1
            body = chat_body(payload, text) if chat else messages_body(payload, text)
            self.send_json(200, body, {})

    return Handler


@pytest.fixture
def synth_server() -> Iterator[SynthServer]:
    state = SynthServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def _synth_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def synth_corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus", sources=[{"path": "atlas.pdf", "doc_id": "atlas"}])
