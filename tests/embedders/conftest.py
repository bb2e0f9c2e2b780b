"""The OpenAI-compatible embedding server fixture (the server lives in tests/embedding_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from embedding_server import EmbeddingServer, serve_embeddings


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    with serve_embeddings() as server:
        yield server
