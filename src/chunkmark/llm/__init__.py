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

from chunkmark.llm import anthropic, fake, openai
from chunkmark.llm.base import LLM, LLMS, BaseLLM, EmptyAnswerError
from chunkmark.llm.fake import FakeLLM


def build_llm(spec: str, *, cache_dir: Path | None = None, seed: int = 0) -> LLM:
    """Build the LLM client ``spec`` names, with answers cached under ``cache_dir`` (if given)."""
    llm, _ = LLMS.build(spec, cache_dir=cache_dir, seed=seed)
    return llm


__all__ = [
    "LLM",
    "LLMS",
    "BaseLLM",
    "EmptyAnswerError",
    "FakeLLM",
    "anthropic",
    "build_llm",
    "fake",
    "openai",
]
