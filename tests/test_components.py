"""Components declare what they are when they register; the runner reads the declarations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import chunkmark
from chunkmark.chunkers import CHUNKERS, ChunkerContext, ChunkerFn
from chunkmark.counters import CacheStats, ChunkerStats, EmbedderStats, LLMStats
from chunkmark.retrieval import RETRIEVERS, ExactIndex
from chunkmark.spans import Span
from chunkmark.specs import Registry

CALLS: dict[str, int] = {}


def _counting(name: str) -> ChunkerFn:
    def chunk(text: str) -> list[Span]:
        CALLS[name] = CALLS.get(name, 0) + 1
        return [Span(i, min(i + 300, len(text))) for i in range(0, len(text), 300)]

    return chunk


@pytest.fixture
def declared() -> Iterator[None]:
    # Same code, different declarations. The second takes a parameter called `model`, which a
    # runner guessing from parameter names would not recognise as an LLM.
    @CHUNKERS.register("plain_counting")
    def plain_counting(size: int = 300) -> ChunkerFn:
        """Counts its calls."""
        return _counting("plain_counting")

    @CHUNKERS.register("llm_counting", calls_llm=True, needs=("context",))
    def llm_counting(model: str = "x", *, context: ChunkerContext) -> ChunkerFn:
        """Counts its calls; declared to call an LLM."""
        return _counting("llm_counting")

    CALLS.clear()
    try:
        yield
    finally:
        CHUNKERS.unregister("plain_counting")
        CHUNKERS.unregister("llm_counting")


def test_only_reusable_chunkers_are_stored(declared: None, tmp_path: Path) -> None:
    for run in ("first", "second"):
        chunkmark.evaluate(
            dataset="demo",
            chunkers=["plain_counting()", "llm_counting(model='m')"],
            embedders=["fake()"],
            k=[1],
            out=tmp_path / run,
            cache_dir=tmp_path / "cache",
        )
    documents = len(chunkmark.load_dataset("demo").documents)
    assert CALLS["plain_counting"] == documents  # chunked once, then read from the store
    assert CALLS["llm_counting"] == 2 * documents  # recomputed in every run


def test_traits_are_declared_not_inferred() -> None:
    assert CHUNKERS.entry("kamradt").traits.embeds
    assert CHUNKERS.entry("llm_semantic").traits.calls_llm
    assert not CHUNKERS.entry("llm_semantic").traits.reusable
    assert CHUNKERS.entry("fixed_tokens").traits.reusable
    assert CHUNKERS.entry("cluster_semantic").dependencies() == ["context"]
    assert "context" not in [p.name for p in CHUNKERS.entry("kamradt").parameters()]


def test_an_undeclared_dependency_is_refused() -> None:
    registry: Registry[object] = Registry("widget")
    with pytest.raises(ValueError, match="must be exactly the dependencies"):

        @registry.register("sneaky")
        def sneaky(size: int = 1, *, context: object = None) -> object:
            return object()

    with pytest.raises(ValueError, match="must be exactly the dependencies"):

        @registry.register("claims", needs=("context",))
        def claims(size: int = 1) -> object:
            return object()

    assert "sneaky" not in registry and "claims" not in registry


def test_exact_retriever_is_the_exact_index() -> None:
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(50, 8)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[:7] + 0.1 * rng.normal(size=(7, 8)).astype(np.float32)
    retriever, spec = RETRIEVERS.build("exact(block_rows=3)")
    assert str(spec) == "exact(block_rows=3)"
    retriever.index(docs, [""] * 50)
    ids, scores = retriever.search(queries, [""] * 7, 5)
    index = ExactIndex(block_rows=3)
    index.add(docs)
    want_ids, want_scores = index.search(queries, 5)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(scores, want_scores)
    assert (ids[:, 0] == np.arange(7)).all()


def test_stats_subtract_recursively_and_serialise() -> None:
    before = EmbedderStats(inputs=3, model_seconds=1.0, window=256, cache=CacheStats(hits=2))
    after = EmbedderStats(
        inputs=10,
        model_seconds=1.5,
        window=256,
        extra={"precision": "fp32"},
        cache=CacheStats(hits=5, requested=9),
    )
    delta = after - before
    assert delta.inputs == 7 and delta.model_seconds == pytest.approx(0.5)
    assert delta.window == 256  # a fact, not a counter
    assert delta.cache == CacheStats(hits=3, requested=9)
    assert delta.to_dict()["cache"]["hits"] == 3
    assert delta.to_dict()["extra"] == {"precision": "fp32"}
    chunking = ChunkerStats(fallbacks=2, counters={"windows": 4}, llm=LLMStats(calls=4))
    assert chunking.to_dict() == {
        "fallbacks": 2,
        "counters": {"windows": 4},
        "llm": {
            "calls": 4,
            "cache_hits": 0,
            "requests": 0,
            "retries": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "empty_answers": 0,
            "cached_input_tokens": 0,
            "cache_write_tokens": 0,
        },
        "error": None,
    }


def test_listings_say_what_a_chunker_is() -> None:
    from typer.testing import CliRunner

    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    out = CliRunner().invoke(app, ["chunkers"], terminal_width=400).output
    rows = out.split("├")  # one block of table lines per chunker
    llm_row = next(r for r in rows if "│ llm_semantic " in r)
    kamradt_row = next(r for r in rows if "│ kamradt " in r)
    fixed_row = next(r for r in rows if "│ fixed_tokens " in r)
    assert "[calls an LLM]" in llm_row and "[embeds]" in kamradt_row
    assert "[" not in fixed_row.split("│")[3]  # a plain chunker carries no label
