"""Shared by the tests of chunkers that call an LLM: a chunker context whose LLM is a given
fake, and the local wire-format LLM server of ``tests/llm/conftest.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from chunkmark.chunkers import ChunkerContext
from chunkmark.llm import FakeLLM


class FakeContext(ChunkerContext):
    """A chunker context whose LLM is a given FakeLLM, whatever the spec says."""

    def __init__(self, fake: FakeLLM) -> None:
        super().__init__()
        self.fake = fake

    def llm(self, spec: str) -> Any:
        return self.fake


def wire_server() -> Any:
    """The module holding the local OpenAI/Anthropic wire-format server (``.serve()``)."""
    path = Path(__file__).resolve().parent / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("llm_wire_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
