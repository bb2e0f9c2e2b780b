"""A deterministic, scriptable LLM for tests and dry runs; it never touches the network.

``FakeLLM(answers)`` answers from a list (in order; the last answer repeats once the list is
used up) or from a callable ``(system, user) -> str``; with neither it answers a fixed text
derived from the prompts. ``fail_after=n`` makes every request after the first ``n`` raise an
:class:`~chunkmark.errors.LLMError`, like an endpoint going down. Every request that reaches
it (cache misses) is kept in ``prompts``, the JSON schema each asked for (or None) in
``schemas``, and whether it offered its system prompt to the prompt cache in ``cache_system``.

Tokens are words. With ``cache_system=True`` the fake plays a provider's prompt cache, the
way Anthropic's works: the first request with a given system prompt writes its words to the
cache (``cache_write_tokens``), every later request with the same system prompt reads them
(``cached_input_tokens``); both stay part of ``input_tokens``. It never forgets, and a
request without ``cache_system`` neither reads nor writes.

``concurrency`` (default 1) is how many requests features send it at once; the fake is safe to
share between threads (a callable responder runs outside its lock, so a slow one overlaps), but
answers from a list are handed out in the order requests arrive, which threads do not fix.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from chunkmark.errors import LLMError
from chunkmark.llm.base import LLMS, Answer, BaseLLM, Prompt

Responder = Callable[[str, str], str]


class FakeLLM(BaseLLM):
    """Scripted answers; counts requests like a real client (see :meth:`stats`)."""

    provider: ClassVar[str] = "fake"

    def __init__(
        self,
        answers: Sequence[str] | Responder = (),
        *,
        model: str = "fake",
        fail_after: int | None = None,
        temperature: float | None = 0.0,
        seed: int = 0,
        cache_dir: Path | None = None,
        concurrency: int = 1,
    ) -> None:
        if fail_after is not None and fail_after < 0:
            raise ValueError(f"fail_after must be >= 0, got {fail_after}")
        super().__init__(
            model,
            temperature=temperature,
            seed=seed,
            cache_dir=cache_dir,
            concurrency=concurrency,
        )
        self.respond: Responder | None = answers if callable(answers) else None
        self.answers: list[str] = [] if callable(answers) else list(answers)
        self.fail_after = fail_after
        self.prompts: list[tuple[str, str, int]] = []
        self.schemas: list[dict[str, Any] | None] = []
        self.cache_system: list[bool] = []
        self._prompt_cache: set[str] = set()
        self._script_lock = threading.Lock()
        self._sent = 0

    def identity(self) -> dict[str, Any]:
        if self.respond is not None:
            script = (
                f"callable:{getattr(self.respond, '__qualname__', type(self.respond).__name__)}"
            )
        else:
            script = hashlib.sha256(json.dumps(self.answers).encode()).hexdigest()[:16]
        return {"provider": self.provider, "model": self.model, "script": script}

    def _answer(self, prompt: Prompt) -> Answer:
        system, user, max_tokens, json_schema, cache_system = prompt
        self._counted("requests")
        with self._script_lock:
            self._sent += 1
            if self.fail_after is not None and self._sent > self.fail_after:
                raise LLMError(
                    f"The fake LLM is scripted to fail after {self.fail_after} requests.",
                    "Raise fail_after, or leave it unset.",
                )
            self.prompts.append((system, user, max_tokens))
            self.schemas.append(json_schema)
            self.cache_system.append(cache_system)
            scripted = None
            if self.respond is None and self.answers:
                scripted = self.answers[min(len(self.prompts), len(self.answers)) - 1]
        if self.respond is not None:
            text = self.respond(system, user)
        elif scripted is not None:
            text = scripted
        else:
            digest = hashlib.sha256(f"{system}\0{user}".encode()).hexdigest()[:12]
            text = f"fake answer {digest}"
        system_tokens = len(system.split())
        read = written = 0
        if cache_system and system_tokens:
            with self._script_lock:
                if system in self._prompt_cache:
                    read = system_tokens
                else:
                    written = system_tokens
                    self._prompt_cache.add(system)
        return Answer(
            text,
            "stop",
            system_tokens + len(user.split()),
            len(text.split()),
            cached_input_tokens=read,
            cache_write_tokens=written,
        )


@LLMS.register("fake", needs=("cache_dir", "seed"))
def fake_llm(
    answers: list[str] | None = None,
    model: str = "fake",
    fail_after: int | None = None,
    temperature: float | None = 0.0,
    concurrency: int = 1,
    *,
    cache_dir: Path | None = None,
    seed: int = 0,
) -> FakeLLM:
    """A scripted LLM for tests: answers in order (the last repeats), no network.

    With no answers it returns a fixed text derived from the prompts. ``fail_after=n`` makes
    every request after the first n fail with an LLMError. ``concurrency``: requests sent at
    once by the features that use it.
    """
    return FakeLLM(
        answers or (),
        model=model,
        fail_after=fail_after,
        temperature=temperature,
        seed=seed,
        cache_dir=cache_dir,
        concurrency=concurrency,
    )
