"""A cell embeds many chunks in slices into a vector file and gives the same results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder
from chunkmark.experiments.cell import Cell, CellEnv, CellResult, ChunkTexts, SpanTexts
from chunkmark.retrieval import RETRIEVAL

SETTINGS = (
    "top_k(k=3)",
    "top_k(k='min')",
    "token_budget(tokens=300)",
    "threshold(min_similarity=0.2, max_k=4)",
    "bm25(k=2)",
    "hybrid(k=2, candidates=5)",
)


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_dataset("demo")


def run(dataset: Dataset, retrieval: tuple[str, ...], **env_options: object) -> CellResult:
    inner, _ = EMBEDDERS.build("fake(dimension=32)")
    embedder = CachedEmbedder(inner, None)
    env = CellEnv(
        embedder=embedder,
        identity=inner.identity(),
        embed_queries=lambda: embedder.embed([q.text for q in dataset.questions], kind="query"),
        **env_options,  # type: ignore[arg-type]
    )
    cell = Cell(
        dataset,
        CHUNKERS.resolve("fixed_tokens(size=40)"),
        EMBEDDERS.resolve("fake(dimension=32)"),
        tuple(RETRIEVAL.resolve(s) for s in retrieval),
    )
    return cell.run(env)


def test_slices_and_a_vector_file_change_nothing(dataset: Dataset, tmp_path: Path) -> None:
    whole = run(dataset, SETTINGS)
    sliced = run(dataset, SETTINGS, embed_slice=7, scratch_dir=tmp_path)
    assert whole.n_chunks > 7 * 3  # several slices
    assert sliced.columns == whole.columns
    assert sliced.query_check == whole.query_check
    assert np.array_equal(sliced.chunk_tokens, whole.chunk_tokens)
    assert sliced.rankings.keys() == whole.rankings.keys()
    for key, (ranking, scores) in whole.rankings.items():
        assert np.array_equal(sliced.rankings[key][0], ranking)
        assert np.array_equal(sliced.rankings[key][1], scores)
    assert sliced.embedding.inputs == whole.embedding.inputs
    assert sliced.model_seconds_attributed is not None
    assert list(tmp_path.iterdir()) == []  # the vector file's folder is gone with the cell


def test_the_faiss_setting_reports_recall_in_the_cell(dataset: Dataset) -> None:
    pytest.importorskip("faiss")
    result = run(dataset, ("top_k(k=3)", "faiss(k=3, ef_search=256)"), embed_slice=9)
    (ranker,) = [r for r in result.rankings if r.startswith("faiss(")]
    stats = result.retrieval_stats[ranker]
    assert stats["recall_vs_exact_at_k"] == pytest.approx(1.0)
    assert stats["k"] == 3 and stats["sample"] == len(dataset.questions)


def test_lazy_texts_slice_the_documents(dataset: Dataset) -> None:
    chunker, _ = CHUNKERS.build("fixed_tokens(size=40)")
    from chunkmark.experiments.cell import chunk_dataset

    chunks = chunk_dataset(dataset, chunker)
    spans = SpanTexts(dataset, chunks)
    texts = ChunkTexts(dataset, chunks)
    docs = dataset.by_id
    expected = [docs[c.doc_id].text[c.start : c.end] for c in chunks]
    assert len(spans) == len(texts) == len(chunks)
    assert list(spans) == expected == list(texts)  # no chunk of the demo has an embed text
    assert spans[2:5] == expected[2:5] and spans[-1] == expected[-1]
    assert isinstance(texts[0:2], list)
