"""The LLM contract and registry, and what every client shares: the answer cache, counters,
and the empty-answer check.

A provider implements :meth:`BaseLLM.identity` and :meth:`BaseLLM._answer`; :meth:`complete`
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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from chunkmark.errors import LLMError
from chunkmark.llm.cache import LLMCache, cache_key
from chunkmark.specs import Registry
from chunkmark.stats import LLMStats


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


class BaseLLM(ABC):
    """An LLM client with an optional on-disk answer cache (``llm.sqlite3`` in ``cache_dir``)."""

    provider: ClassVar[str] = ""

    def __init__(
        self,
        model: str,
        *,
        temperature: float | None = 0.0,
        seed: int = 0,
        cache_dir: Path | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must not be empty")
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.cache = None if cache_dir is None else LLMCache(cache_dir)
        self._calls = 0
        self._hits = 0
        self._requests = 0
        self._retries = 0
        self._input_tokens = 0
        self._output_tokens = 0
        self._cached_input_tokens = 0
        self._cache_write_tokens = 0
        self._empty = 0

    @property
    def name(self) -> str:
        return self.model

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Provider, model and endpoint: what changes the answers besides the request."""

    @abstractmethod
    def _answer(
        self,
        system: str,
        user: str,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        *,
        cache_system: bool = False,
    ) -> Answer:
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
        self._calls += 1
        key = b""
        if self.cache is not None:
            key = self.request_key(system, user, max_tokens=max_tokens, json_schema=json_schema)
            cached = self.cache.get(key)
            if cached is not None:
                self._hits += 1
                return cached
        # Providers are called with only the arguments a request uses: without a schema and
        # without prompt caching, as before either existed (three arguments).
        extra: dict[str, Any] = {"cache_system": True} if cache_system else {}
        answer = (
            self._answer(system, user, max_tokens, **extra)
            if json_schema is None
            else self._answer(system, user, max_tokens, json_schema, **extra)
        )
        self._input_tokens += answer.input_tokens
        self._output_tokens += answer.output_tokens
        self._cached_input_tokens += answer.cached_input_tokens
        self._cache_write_tokens += answer.cache_write_tokens
        if not answer.text.strip():
            self._empty += 1
            raise EmptyAnswerError(
                f"The {self.provider} model {self.model!r} returned an empty answer "
                f"(stop reason {answer.stop_reason!r}).",
                "Raise max_tokens if the stop reason says the answer was cut off; otherwise "
                "use a model that follows instructions more reliably.",
            )
        if self.cache is not None:
            self.cache.put(key, self.identity(), answer.text)
        return answer.text

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
    ) -> str | None:
        """The answer this client's cache holds for this exact request (read only), or None."""
        if self.cache is None:
            return None
        return self.cache.get(
            self.request_key(system, user, max_tokens=max_tokens, json_schema=json_schema)
        )

    def stats(self) -> LLMStats:
        """``calls`` to :meth:`complete`, ``cache_hits``, HTTP ``requests`` (attempts) and
        ``retries``, tokens in and out as the endpoint reported them, ``empty_answers``, and
        the input tokens the provider's prompt cache served (``cached_input_tokens``) or
        stored (``cache_write_tokens``)."""
        return LLMStats(
            calls=self._calls,
            cache_hits=self._hits,
            requests=self._requests,
            retries=self._retries,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            empty_answers=self._empty,
            cached_input_tokens=self._cached_input_tokens,
            cache_write_tokens=self._cache_write_tokens,
        )
