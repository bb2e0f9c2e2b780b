"""Work counters: typed records of the work components do (embedders, their cache, LLM
clients, chunkers).

Every embedder reports the same :class:`EmbedderStats` fields (inputs, tokens, truncation
against its window, requests, model seconds), plus its own extras; the caching wrapper adds a
:class:`CacheStats`. LLM clients report :class:`LLMStats`; chunkers that call an LLM or fall back
report :class:`ChunkerStats`. Records subtract (``after - before``: one cell's share of a shared
component's work) and turn into plain dicts for the manifest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

Extra = Mapping[str, "int | float | str | bool | None"]
R = TypeVar("R", bound="_Record")
FACT = {"fact": True}  # field metadata: a fact about the component, not a counter


class _Record:
    """Counters subtract; nested records subtract recursively; facts (fields marked with
    :data:`FACT`, and anything not a number) are kept as they are now."""

    def __sub__(self: R, before: R) -> R:
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.metadata.get("fact"):
                continue
            now, then = getattr(self, f.name), getattr(before, f.name)
            changes[f.name] = _minus(now, then)
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict: nested records as dicts, floats rounded to microseconds."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, _Record):
                value = value.to_dict()
            elif isinstance(value, float):
                value = round(value, 6)
            elif isinstance(value, Mapping):
                value = {k: round(v, 6) if isinstance(v, float) else v for k, v in value.items()}
            out[f.name] = value
        return out


def _minus(now: Any, then: Any) -> Any:
    if isinstance(now, _Record) and isinstance(then, _Record):
        return now - then
    if isinstance(now, _Record):
        return now
    if _is_number(now) and _is_number(then):
        return now - then
    if isinstance(now, Mapping) and isinstance(then, Mapping):
        return {k: _minus(v, then.get(k, 0)) for k, v in now.items()}
    return now


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class CacheStats(_Record):
    """What the embedding cache saved: texts asked for, distinct, found, model inputs, embedded.

    ``inputs`` are the distinct model inputs behind the texts missing from the cache (texts that
    differ only past the model's window are one input); ``input_hits`` of them were found under
    their input key; ``embedded`` went to the model.
    """

    requested: int = 0
    distinct: int = 0
    hits: int = 0
    inputs: int = 0
    input_hits: int = 0
    embedded: int = 0
    model_seconds: float = 0.0


@dataclass(frozen=True)
class EmbedderStats(_Record):
    """What an embedder did; the same fields for every embedder.

    - ``inputs``: inputs embedded (sent to the model or the API);
    - ``measured``: inputs whose length was measured against ``window``, of which
      ``truncated`` were longer and cut (the model never saw their ends);
    - ``window``: the tokens the model reads per input (None when unknown);
    - ``tokens``: tokens sent to the model or the API;
    - ``requests``/``retries``: model calls or HTTP requests, and retried ones;
    - ``model_seconds``: time inside the model or waiting for the API;
    - ``extra``: the embedder's own facts and counters (precision, source, ...);
    - ``cache``: set by the caching wrapper.
    """

    inputs: int = 0
    measured: int = 0
    truncated: int = 0
    window: int | None = field(default=None, metadata=FACT)
    tokens: int = 0
    requests: int = 0
    retries: int = 0
    model_seconds: float = 0.0
    extra: Extra = field(default_factory=dict)
    cache: CacheStats | None = None


@dataclass(frozen=True)
class LLMStats(_Record):
    """What an LLM client did: ``calls`` to it, ``cache_hits`` (answers from chunkmark's own
    answer cache), HTTP ``requests`` (attempts) and ``retries``, tokens in and out as the
    endpoint reported them, ``empty_answers``.

    ``input_tokens`` counts every prompt token, whether the provider's prompt cache served it
    or not; ``cached_input_tokens`` of them were read from the provider's prompt cache and
    ``cache_write_tokens`` were written to it (both part of ``input_tokens``; priced apart, see
    :meth:`chunkmark.costs.prices.Price.cost_of`).
    """

    calls: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    empty_answers: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class ChunkerStats(_Record):
    """What a chunker did beyond its spans.

    ``fallbacks`` counts the places where it could not do what its spec asks and fell back
    (windows an LLM left unsplit, sections split by paragraphs because the LLM failed);
    ``counters`` holds its own counts; ``llm`` the LLM client's work, when it has one;
    ``error`` the first failure behind a fallback.
    """

    fallbacks: int = 0
    counters: Mapping[str, int] = field(default_factory=dict)
    llm: LLMStats | None = None
    error: str | None = None  # the first failure that caused a fallback, if any
