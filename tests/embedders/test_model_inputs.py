"""Texts that differ only past the model's window are embedded once (counting fake)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.embedders import CachedEmbedder, EmbeddingCache
from chunkmark.embedders.cache import DIGEST, DigestTable
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


def test_model_seconds_add_up_over_calls_and_kinds(tmp_path: Path) -> None:
    cached = CachedEmbedder(FakeEmbedder(max_words=3), EmbeddingCache(tmp_path), flush_every=7)
    batches = [[f"text {b} {i} tail {i % 5}" for i in range(40)] for b in range(3)]
    for batch in batches:
        cached.embed(batch)
    cached.embed(["a question", "another question"], kind="query")
    total = cached.stats().cache.model_seconds
    documents = cached.model_seconds_for([t for batch in batches for t in batch])
    queries = cached.model_seconds_for(["a question", "another question"], kind="query")
    assert documents > 0 and queries > 0
    assert abs(documents + queries - total) < 1e-9
    parts = sum(cached.model_seconds_for(batch) for batch in batches)
    assert abs(parts - documents) < 1e-9
    assert cached.model_seconds_for(batches[0] + batches[0]) == cached.model_seconds_for(batches[0])
    assert cached.model_seconds_for(["a question"]) == 0  # embedded as a query only


def test_digest_table_keeps_the_latest_value_of_each_key() -> None:
    table = DigestTable(np.float64, merge_every=3)
    keys = [bytes([i % 4]) * 15 + bytes([0 if i % 2 else 255]) for i in range(10)]
    reference: dict[bytes, float] = {}
    for i, key in enumerate(keys * 3):  # every key written three times, merged in between
        table.set_many([key], [float(i)])
        reference[key] = float(i)
    assert len(table) == len(reference)
    missing = b"\x00" * 16
    found, values = table.get_many(np.array([*reference, missing], dtype=DIGEST))
    assert found.tolist() == [True] * len(reference) + [False]
    assert values[:-1].tolist() == list(reference.values())
    empty = DigestTable(DIGEST)
    assert empty.get_many(np.array([missing], dtype=DIGEST))[0].tolist() == [False]
