"""LLM clients for LLM-based chunkers (and, later, question generation).

An LLM is built from a provider spec such as ``openai(model='gpt-4o-mini')`` or
``anthropic(model='claude-haiku-4-5')`` by :func:`build_llm`; answers are cached on disk
(keyed by the client's identity, the messages, the sampling parameters and the seed), so a rerun
asks nothing new.

Providers: ``openai`` (Chat Completions; any OpenAI-compatible endpoint), ``anthropic``
(Messages API) and ``fake`` (scripted, for tests). See ``docs/llm.md``.

A spec's transport parameters (:data:`TRANSPORT_PARAMS`: ``timeout``, ``max_retries``,
``concurrency``, ``cache_prompt``) change how answers are fetched, not what they are: :func:`identity_spec` is the
spec without them, which is how results that depend on an LLM name it. Features send
independent requests concurrently through :mod:`chunkmark.llm.pool`, up to the client's
``concurrency``, with the outputs of a sequential run.
"""

from __future__ import annotations

from pathlib import Path

from chunkmark.llm import anthropic, fake, openai
from chunkmark.llm.base import LLM, LLMS, TRANSPORT_PARAMS, BaseLLM, EmptyAnswerError
from chunkmark.llm.fake import FakeLLM
from chunkmark.specs import Spec, parse_spec


def build_llm(
    spec: str, *, cache_dir: Path | None = None, seed: int = 0, concurrency: int | None = None
) -> LLM:
    """Build the LLM client ``spec`` names, with answers cached under ``cache_dir`` (if given);
    ``concurrency``, when given, replaces the spec's (how many requests may be in flight)."""
    target: str | Spec = spec
    if concurrency is not None:
        resolved = LLMS.resolve(spec)
        target = Spec.of(resolved.name, **{**resolved.kwargs, "concurrency": concurrency})
    llm, _ = LLMS.build(target, cache_dir=cache_dir, seed=seed)
    return llm


def identity_spec(spec: str) -> str:
    """``spec`` without its transport parameters (:data:`TRANSPORT_PARAMS`): the text as
    written when it names none, else its short form (the model, then the parameters that differ
    from their defaults) without them. ``openai(model='m', timeout=600.0, concurrency=8)`` is
    ``openai(model='m')``. Raises :class:`~chunkmark.errors.SpecError` for a bad spec."""
    name, args, kwargs = parse_spec(spec)
    entry = LLMS.entry(name)
    given = entry.signature().replace(parameters=entry.parameters()).bind_partial(*args, **kwargs)
    if not set(given.arguments) & set(TRANSPORT_PARAMS):
        return spec
    resolved = LLMS.resolve(spec)
    kept = tuple((k, v) for k, v in resolved.params if k not in TRANSPORT_PARAMS)
    return LLMS.short(Spec(resolved.name, kept))


__all__ = [
    "LLM",
    "LLMS",
    "TRANSPORT_PARAMS",
    "BaseLLM",
    "EmptyAnswerError",
    "FakeLLM",
    "anthropic",
    "build_llm",
    "fake",
    "identity_spec",
    "openai",
]
