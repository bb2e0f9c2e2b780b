"""estimate_chunks: the one way the planner and the relations estimates chunk, with no request
and no model: the chunk store, a chunker that needs no model run, an embedding chunker reading
the embedding cache only, an LLM chunker unknown."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.plan import estimate_chunks
from chunkmark.experiments.plan_chunks import CALLS_LLM, EMBEDS, NOT_CACHED

SEMANTIC = "kamradt(breakpoint_percentile=50)"
CLOSED_PORT = "http://127.0.0.1:9/v1"  # nothing listens: a request would fail


@pytest.fixture(scope="module")
def demo() -> Dataset:
    return load_dataset("demo")


def spans(chunks: Sequence[Chunk]) -> list[tuple[str, int, int]]:
    return [(c.doc_id, c.start, c.end) for c in chunks]


def run(dataset: Dataset, spec: str, context: ChunkerContext) -> list[tuple[str, int, int]]:
    chunker, _ = CHUNKERS.build(spec, context=context)
    return spans([c for d in dataset.documents for c in chunk_document(chunker, d.id, d.text)])


def test_a_chunker_without_a_model_is_run_or_read_from_the_store(
    tmp_path: Path, demo: Dataset
) -> None:
    spec = "fixed_tokens(size=100)"
    found = estimate_chunks(demo, spec)
    assert found.source == "chunked" and found.chunks is not None
    assert spans(found.chunks) == run(demo, spec, ChunkerContext())
    docs = demo.by_id
    assert found.texts(demo) == [docs[c.doc_id].text[c.start : c.end] for c in found.chunks]

    store = ChunkStore(tmp_path)
    stored = found.chunks[:3]
    key = chunk_key(str(CHUNKERS.resolve(spec)), demo.fingerprint, None)
    store.put(key, stored, np.zeros(len(stored), dtype=np.int64))
    again = estimate_chunks(demo, spec, store=store)
    assert again.source == "chunk store" and again.chunks == stored


def test_an_llm_chunker_is_unknown(demo: Dataset) -> None:
    found = estimate_chunks(demo, "llm_semantic(llm='fake()')")
    assert (found.chunks, found.source, found.note) == (None, "unknown", CALLS_LLM)


def test_an_embedding_chunker_reads_the_cache_only(tmp_path: Path, demo: Dataset) -> None:
    fake, _ = EMBEDDERS.build("fake()")
    assert estimate_chunks(demo, SEMANTIC).note == EMBEDS  # no embedder given: unknown
    cache = EmbeddingCache(tmp_path)
    cold = estimate_chunks(demo, SEMANTIC, embedder=fake, cache=cache)
    assert (cold.chunks, cold.note) == (None, NOT_CACHED)
    assert estimate_chunks(demo, SEMANTIC, embedder=fake).note == NOT_CACHED  # no cache at all

    real = run(demo, SEMANTIC, ChunkerContext(embedder=CachedEmbedder(fake, cache)))
    warm = estimate_chunks(demo, SEMANTIC, embedder=fake, cache=cache)
    assert warm.source == "chunked" and warm.chunks is not None
    assert spans(warm.chunks) == real


def test_an_embedder_a_spec_names_is_read_from_the_cache_only(
    tmp_path: Path, demo: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    named = f"openai(model='text-embedding-3-small', base_url='{CLOSED_PORT}')"
    spec = f'kamradt(breakpoint_percentile=50, embedder="{named}")'
    fake, _ = EMBEDDERS.build("fake()")
    found = estimate_chunks(demo, spec, embedder=fake, cache=EmbeddingCache(tmp_path))
    assert (found.chunks, found.note) == (None, NOT_CACHED)  # no request reached the port
