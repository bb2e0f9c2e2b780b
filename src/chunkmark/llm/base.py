"""The LLM contract and registry, and what every client shares: the answer cache, counters,
and the empty-answer check.

A provider implements :meth:`BaseLLM.identity` and :meth:`BaseLLM._answer` (one
:class:`Prompt`, answered); :meth:`complete`
looks the request up in the cache first and stores what the provider answers.

``complete(..., json_schema=schema)`` asks for an answer that is one JSON object matching the
schema: providers with a structured-output mode use it (OpenAI's ``response_format``), the others
rely on the prompt; either way the schema is part of the cache key, and the answer is still the
text the model returned (the caller parses and validates it).

``complete(..., cache_system=True)`` says the system prompt is a long prefix shared by many
requests (the contextual chunker puts the whole document there) that the provider may keep in
its prompt cache: Anthropic's client marks it with ``cache_control``, OpenAI caches long
prefixes by itself. It changes what the request costs, never the answer, so it is not part of
the answer cache key. The tokens the provider read from or wrote to its prompt cache are
counted in :meth:`BaseLLM.stats` (``cached_input_tokens``, ``cache_write_tokens``).

A client may be used by several threads at once (the features that call an LLM send
independent requests concurrently through :mod:`chunkmark.llm.pool`): at most ``concurrency``
requests are in flight to the endpoint (a semaphore around the provider call), the counters
are kept under a lock (:meth:`BaseLLM.stats`, the whole client) and per thread as well
(:meth:`BaseLLM.thread_stats`, the work of the calling thread only, which is what a feature
counts per item), and two threads asking the same request at once send it once: the second
waits for the first and reads its answer from the cache, as it would in a sequential run.
``concurrency`` changes how fast answers come, never what they are, so it is no part of the
client's identity or of the answer cache key (nor are ``timeout`` and ``max_retries``: see
:data:`TRANSPORT_PARAMS`).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import KW_ONLY, InitVar, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from chunkmark.counters import LLMStats
from chunkmark.errors import LLMError
from chunkmark.llm.cache import LLMCache, cache_key
from chunkmark.specs import Registry


@runtime_checkable
class LLM(Protocol):
    """What every LLM client provides."""

    @property
    def name(self) -> str:
        """Public model name."""
        ...

    def identity(self) -> dict[str, Any]:
        """Everything that changes the answers (provider, model, endpoint kind); keys the cache."""
        ...

    def complete(
        self,
        system: str,
        user: str,
        *,
        max_tokens: int = 1024,
        json_schema: dict[str, Any] | None = None,
        cache_system: bool = False,
    ) -> str:
        """The model's answer to one system + user prompt (temperature 0, seeded); with
        ``json_schema``, asked as JSON matching it where the provider supports that; with
        ``cache_system``, the system prompt offered to the provider's prompt cache."""
        ...

    def stats(self) -> LLMStats:
        """Counters: calls, cache hits, requests, retries, tokens in and out (and those of
        the provider's prompt cache)."""
        ...


LLMS: Registry[LLM] = Registry("llm")

# Parameters of an LLM spec that change how answers are fetched, never what they are: they are
# left out of every identity that names a result (a chunker's or extractor's canonical name, a
# cell's id) and out of the answer cache key (see :func:`chunkmark.llm.identity_spec`).
TRANSPORT_PARAMS = ("max_retries", "timeout", "concurrency", "cache_prompt")
# Requests in flight at once when a spec does not say: one for an endpoint on this machine (a
# CPU server answers one request at a time; more only wait in its queue, and a request that
# waits past its timeout is cancelled and asked again), four for a remote API.
LOCAL_CONCURRENCY = 1
REMOTE_CONCURRENCY = 4


class EmptyAnswerError(LLMError):
    """The model answered with nothing but whitespace (it is not cached)."""


class Answer(NamedTuple):
    """What a provider returned for one request.

    ``input_tokens`` are all the prompt tokens; ``cached_input_tokens`` of them were read from
    the provider's prompt cache and ``cache_write_tokens`` written to it.
    """

    text: str
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


class Prompt(NamedTuple):
    """One request as a provider sends it."""

    system: str
    user: str
    max_tokens: int
    json_schema: dict[str, Any] | None = None
    cache_system: bool = False  # offer the system prompt to the provider's prompt cache


class _Tally:
    """Counters of :class:`~chunkmark.counters.LLMStats` (its integer fields), added to as
    requests go."""

    def __init__(self) -> None:
        self.counts = {f.name: 0 for f in fields(LLMStats)}

    def add(self, counts: dict[str, int]) -> None:
        for name, value in counts.items():
            self.counts[name] += value

    def stats(self) -> LLMStats:
        return LLMStats(**self.counts)


@dataclass(eq=False, repr=False)
class BaseLLM(ABC):
    """An LLM client with an optional on-disk answer cache (``llm.sqlite3`` in ``cache_dir``),
    safe to share between threads (module docs); at most ``concurrency`` requests in flight."""

    provider: ClassVar[str] = ""

    model: str
    _: KW_ONLY
    temperature: float | None = 0.0
    seed: int = 0
    cache_dir: InitVar[Path | None] = None
    concurrency: int = 1

    def __post_init__(self, cache_dir: Path | None) -> None:
        if not self.model:
            raise ValueError("model must not be empty")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        self.cache = None if cache_dir is None else LLMCache(cache_dir)
        self._tally = _Tally()
        self._tally_lock = threading.Lock()
        self._local = threading.local()
        self._gate = threading.BoundedSemaphore(self.concurrency)
        self._inflight: dict[bytes, threading.Event] = {}

    @property
    def name(self) -> str:
        return self.model

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Provider, model and endpoint: what changes the answers besides the request."""

    @abstractmethod
    def _answer(self, prompt: Prompt) -> Answer:
        """Ask the model (no cache involved); counts its own requests and retries."""

    def complete(
        self,
        system: str,
        user: str,
        *,
        max_tokens: int = 1024,
        json_schema: dict[str, Any] | None = None,
        cache_system: bool = False,
    ) -> str:
        """The model's answer, from the cache when this exact request was answered before.

        ``json_schema`` (a JSON Schema of one object) asks for structured output where the
        provider has it; it is part of the cache key. ``cache_system`` offers the system prompt
        to the provider's prompt cache; it is not part of the key (the answer does not depend
        on it). Raises :class:`EmptyAnswerError` (an :class:`LLMError`) when the answer is
        empty.
        """
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self._count(calls=1)
        if self.cache is None:
            return self._ask(system, user, max_tokens, json_schema, cache_system)
        key = self.request_key(system, user, max_tokens=max_tokens, json_schema=json_schema)
        cached, mine = self._claim(key)
        if cached is not None:
            self._count(cache_hits=1)
            return cached
        try:
            text = self._ask(system, user, max_tokens, json_schema, cache_system)
            self.cache.put(key, self.identity(), text)
        finally:
            with self._tally_lock:
                del self._inflight[key]
            mine.set()
        return text

    def _claim(self, key: bytes) -> tuple[str | None, threading.Event]:
        """The cached answer of ``key``; else this thread's claim to ask it (an event set when
        it is done). A thread that finds the same request in flight waits for it and reads its
        answer from the cache (or, when it failed, asks again itself)."""
        assert self.cache is not None
        while True:
            cached = self.cache.get(key)
            if cached is not None:
                return cached, threading.Event()
            with self._tally_lock:
                other = self._inflight.get(key)
                if other is None:
                    mine = self._inflight[key] = threading.Event()
                    break
            other.wait()
        # the answer may have been stored between the lookup and the claim
        cached = self.cache.get(key)
        if cached is not None:
            with self._tally_lock:
                del self._inflight[key]
            mine.set()
        return cached, mine

    def _ask(
        self,
        system: str,
        user: str,
        max_tokens: int,
        json_schema: dict[str, Any] | None,
        cache_system: bool,
    ) -> str:
        """The provider's answer (at most ``concurrency`` in flight), counted; empty answers
        raise :class:`EmptyAnswerError`."""
        with self._gate:
            answer = self._answer(Prompt(system, user, max_tokens, json_schema, cache_system))
        empty = not answer.text.strip()
        self._count(
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cached_input_tokens=answer.cached_input_tokens,
            cache_write_tokens=answer.cache_write_tokens,
            empty_answers=int(empty),
        )
        if empty:
            raise EmptyAnswerError(
                f"The {self.provider} model {self.model!r} returned an empty answer "
                f"(stop reason {answer.stop_reason!r}).",
                "Raise max_tokens if the stop reason says the answer was cut off; otherwise "
                "use a model that follows instructions more reliably.",
            )
        return answer.text

    def _count(self, **counts: int) -> None:
        """Add to the client's counters and to the calling thread's."""
        with self._tally_lock:
            self._tally.add(counts)
        local: _Tally | None = getattr(self._local, "tally", None)
        if local is None:
            local = self._local.tally = _Tally()
        local.add(counts)

    def _counted(self, name: str) -> None:
        """Count one HTTP ``requests`` or ``retries`` (the retry layer calls it)."""
        self._count(**{name: 1})

    def request_key(
        self,
        system: str,
        user: str,
        *,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
    ) -> bytes:
        """The answer cache's key of this request: what :meth:`complete` looks up."""
        return cache_key(
            self.identity(),
            system,
            user,
            max_tokens=max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            json_schema=json_schema,
        )

    def cached_answer(
        self,
        system: str,
        user: str,
        *,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        cache: LLMCache | None = None,
    ) -> str | None:
        """The answer ``cache`` (else this client's own cache) holds for this exact request
        (read only), or None."""
        cache = self.cache if cache is None else cache
        if cache is None:
            return None
        return cache.get(
            self.request_key(system, user, max_tokens=max_tokens, json_schema=json_schema)
        )

    def stats(self) -> LLMStats:
        """``calls`` to :meth:`complete`, ``cache_hits``, HTTP ``requests`` (attempts) and
        ``retries``, tokens in and out as the endpoint reported them, ``empty_answers``, and
        the input tokens the provider's prompt cache served (``cached_input_tokens``) or
        stored (``cache_write_tokens``): the whole client's, over every thread."""
        with self._tally_lock:
            return self._tally.stats()

    def thread_stats(self) -> LLMStats:
        """The same counters for the calling thread's requests only: what one item of a
        concurrent feature cost (``after - before`` around its requests, in its thread)."""
        local: _Tally | None = getattr(self._local, "tally", None)
        return LLMStats() if local is None else local.stats()
