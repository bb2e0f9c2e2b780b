"""The LLM contract and registry, and what every client shares: the answer cache, counters,
and the empty-answer check.

A provider implements :meth:`BaseLLM.identity` and :meth:`BaseLLM._answer`; :meth:`complete`
looks the request up in the cache first and stores what the provider answers.

``complete(..., json_schema=schema)`` asks for an answer that is one JSON object matching the
schema: providers with a structured-output mode use it (OpenAI's ``response_format``), the others
rely on the prompt; either way the schema is part of the cache key, and the answer is still the
text the model returned (the caller parses and validates it).
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
    ) -> str:
        """The model's answer to one system + user prompt (temperature 0, seeded); with
        ``json_schema``, asked as JSON matching it where the provider supports that."""
        ...

    def stats(self) -> LLMStats:
        """Counters: calls, cache hits, requests, retries, tokens in and out."""
        ...


LLMS: Registry[LLM] = Registry("llm")


class EmptyAnswerError(LLMError):
    """The model answered with nothing but whitespace (it is not cached)."""


class Answer(NamedTuple):
    """What a provider returned for one request."""

    text: str
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


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
        self._empty = 0

    @property
    def name(self) -> str:
        return self.model

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Provider, model and endpoint: what changes the answers besides the request."""

    @abstractmethod
    def _answer(
        self, system: str, user: str, max_tokens: int, json_schema: dict[str, Any] | None = None
    ) -> Answer:
        """Ask the model (no cache involved); counts its own requests and retries."""

    def complete(
        self,
        system: str,
        user: str,
        *,
        max_tokens: int = 1024,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """The model's answer, from the cache when this exact request was answered before.

        ``json_schema`` (a JSON Schema of one object) asks for structured output where the
        provider has it; it is part of the cache key. Raises :class:`EmptyAnswerError` (an
        :class:`LLMError`) when the answer is empty.
        """
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self._calls += 1
        key = b""
        if self.cache is not None:
            key = cache_key(
                self.identity(),
                system,
                user,
                max_tokens=max_tokens,
                temperature=self.temperature,
                seed=self.seed,
                json_schema=json_schema,
            )
            cached = self.cache.get(key)
            if cached is not None:
                self._hits += 1
                return cached
        # Without a schema, providers are called as before schemas existed (three arguments).
        answer = (
            self._answer(system, user, max_tokens)
            if json_schema is None
            else self._answer(system, user, max_tokens, json_schema)
        )
        self._input_tokens += answer.input_tokens
        self._output_tokens += answer.output_tokens
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

    def stats(self) -> LLMStats:
        """``calls`` to :meth:`complete`, ``cache_hits``, HTTP ``requests`` (attempts) and
        ``retries``, tokens in and out as the endpoint reported them, ``empty_answers``."""
        return LLMStats(
            calls=self._calls,
            cache_hits=self._hits,
            requests=self._requests,
            retries=self._retries,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            empty_answers=self._empty,
        )
