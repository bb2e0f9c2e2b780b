"""LLM clients for LLM-based chunkers (and, later, question generation).

An LLM is built from a provider spec such as ``openai(model='gpt-4o-mini')`` or
``anthropic(model='claude-haiku-4-5')`` by :func:`build_llm`; answers are cached on disk
(keyed by the client's identity, the messages, the sampling parameters and the seed), so a rerun
asks nothing new.

Providers: ``openai`` (Chat Completions; any OpenAI-compatible endpoint), ``anthropic``
(Messages API) and ``fake`` (scripted, for tests). See ``docs/llm.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

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

    def complete(self, system: str, user: str, *, max_tokens: int = 1024) -> str:
        """The model's answer to one system + user prompt (temperature 0, seeded)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counters: requests, cache hits, tokens in and out, retries."""
        ...


LLMS: Registry[LLM] = Registry("llm")


def build_llm(spec: str, *, cache_dir: Path | None = None, seed: int = 0) -> LLM:
    """Build the LLM client ``spec`` names, with answers cached under ``cache_dir`` (if given)."""
    llm, _ = LLMS.build(spec, cache_dir=cache_dir, seed=seed)
    return llm


# Importing the provider modules registers their factories (SDKs are imported lazily).
from chunkmark.llm import anthropic, fake, openai  # noqa: E402, F401
from chunkmark.llm.base import BaseLLM, EmptyAnswerError  # noqa: E402
from chunkmark.llm.fake import FakeLLM  # noqa: E402

__all__ = ["LLM", "LLMS", "BaseLLM", "EmptyAnswerError", "FakeLLM", "build_llm"]
