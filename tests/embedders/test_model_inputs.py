"""Texts that differ only past the model's window are embedded once (counting fake)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.embedders import CachedEmbedder, EmbeddingCache
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.experiments.cell import chunk_dataset
from chunkmark.experiments.runner import evaluate

HEAD = "alpha beta gamma delta epsilon zeta eta theta iota kappa"


def test_shared_truncated_inputs_are_embedded_once(tmp_path: Path) -> None:
    inner = FakeEmbedder(max_words=10)
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path))
    texts = [HEAD + " one", HEAD + " two three", "short text", HEAD]
    vectors = cached.embed(texts)
    assert inner.inputs_embedded == 2  # HEAD (shared by three texts) and "short text"
    np.testing.assert_array_equal(vectors[0], vectors[1])
    np.testing.assert_array_equal(vectors[0], vectors[3])
    stats = cached.stats().cache
    assert stats is not None
    assert (stats.distinct, stats.inputs, stats.embedded) == (4, 2, 2)


def test_a_new_text_with_a_known_input_is_an_input_hit(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    CachedEmbedder(FakeEmbedder(max_words=10), cache).embed([HEAD + " one"])
    inner = FakeEmbedder(max_words=10)
    cached = CachedEmbedder(inner, cache)
    cached.embed([HEAD + " something else entirely"])
    assert inner.inputs_embedded == 0
    assert cached.stats().cache.input_hits == 1
    # The text itself is now cached too: a third process does not even tokenise it.
    third = FakeEmbedder(max_words=10)
    again = CachedEmbedder(third, cache)
    again.embed([HEAD + " something else entirely"])
    assert again.stats().cache.hits == 1 and again.stats().cache.inputs == 0


def test_model_seconds_are_attributed_to_each_input(tmp_path: Path) -> None:
    cached = CachedEmbedder(FakeEmbedder(max_words=10), EmbeddingCache(tmp_path))
    cached.embed([HEAD + " one", "short text", HEAD + " two"])
    total = cached.stats().cache.model_seconds
    both = cached.model_seconds_for([HEAD + " two", "short text"])
    assert abs(both - total) < 1e-5  # HEAD's input counted once, though two texts share it
    head_only = cached.model_seconds_for([HEAD + " one", HEAD + " two"])
    assert 0 < head_only < total
    assert cached.model_seconds_for(["never seen"]) == 0


def test_two_configs_sharing_truncated_inputs_embed_them_once(tmp_path: Path) -> None:
    """Windows of 40 and 80 tokens every 40 tokens start at the same places: those longer
    than 12 words read the same first words, so the second config embeds almost nothing."""
    specs = ["fixed_tokens(size=40, overlap=0)", "fixed_tokens(size=80, overlap=40)"]
    results = evaluate(
        dataset="demo",
        chunkers=specs,
        embedders=["fake(max_words=12)"],
        k=[1],
        out=tmp_path / "out",
        cache_dir=tmp_path / "cache",
    )
    dataset = load_dataset("demo")
    fake = FakeEmbedder(max_words=12)
    inputs = []
    for spec in specs:
        chunker, _ = CHUNKERS.build(spec)
        chunks = chunk_dataset(dataset, chunker)
        inputs.append(
            set(fake.model_inputs([c.text(dataset.by_id[c.doc_id].text) for c in chunks]))
        )
    first, second = results.manifest["cells"]
    assert first["embedding"]["cache"]["embedded"] == len(inputs[0])
    assert second["embedding"]["cache"]["embedded"] == len(inputs[1] - inputs[0])
    assert second["embedding"]["cache"]["embedded"] < second["n_chunks"] / 4
    stats = results.manifest["embedding"]["fake(dimension=64, seed=0, max_words=12)"]["stats"]
    queries = {*fake.model_inputs([q.text for q in dataset.questions], "query")}
    assert stats["inputs"] == len(inputs[0] | inputs[1]) + len(queries)
