"""``in_document``: each question searches only its own document's chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkmark
from chunkmark.datasets import load_dataset
from chunkmark.errors import SpecError
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS, RankContext, rank
from chunkmark.tokenizers import count_tokens


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def brute_force(
    chunks: np.ndarray, chunk_docs: list[str], queries: np.ndarray, query_docs: list[str], k: int
) -> list[list[int]]:
    """Per question: its document's chunks by cosine, best first, ties by chunk index."""
    out = []
    for q, doc in zip(queries, query_docs, strict=True):
        own = [i for i, d in enumerate(chunk_docs) if d == doc]
        scored = sorted(own, key=lambda i: (-float(np.dot(chunks[i], q)), i))
        out.append(scored[:k])
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("abc"), min_size=1, max_size=14),
    st.lists(st.sampled_from("abcd"), min_size=1, max_size=6),
    st.integers(1, 6),
    st.integers(0, 10_000),
)
def test_rankings_equal_a_brute_force_search_of_each_document(
    chunk_docs: list[str], query_docs: list[str], k: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    # few distinct values: ties happen and must be broken by chunk index
    chunks = _unit(rng.integers(-2, 3, size=(len(chunk_docs), 3)).astype(np.float32) + 0.01)
    queries = _unit(rng.normal(size=(len(query_docs), 3)))
    texts = [f"chunk {i}" for i in range(len(chunk_docs))]
    ranking, scores, _ = rank(
        "in_document()",
        chunks,
        texts,
        queries,
        [f"q{i}" for i in range(len(query_docs))],
        min(k, len(chunk_docs)),
        chunk_docs=chunk_docs,
        query_docs=query_docs,
    )
    expected = brute_force(chunks, chunk_docs, queries, query_docs, k)
    assert ranking.shape == (len(query_docs), min(k, len(chunk_docs)))
    for row, score_row, want in zip(ranking.tolist(), scores, expected, strict=True):
        assert row[: len(want)] == want
        assert all(i == -1 for i in row[len(want) :])
        assert np.all(np.isneginf(score_row[len(want) :]))


def test_a_missing_document_list_is_refused() -> None:
    vectors = _unit(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="chunk_docs and query_docs"):
        rank("in_document()", vectors, ["a", "b", "c"], vectors[:1], ["q"], 2)


def test_spec_forms() -> None:
    assert str(RETRIEVERS.resolve("in_document(ranker='exact()')")) == "in_document()"
    assert str(RETRIEVAL.resolve("in_document(k=3, ranker='bm25')")).startswith(
        "in_document(k=3, ranker=\"bm25(method='lucene'"
    )
    with pytest.raises(SpecError, match="cannot scope another in_document"):
        RETRIEVAL.build("in_document(ranker='in_document()')")


def _context(texts: list[str]) -> RankContext:
    return RankContext(
        chunk_tokens=np.array(count_tokens(texts, "cl100k_base"), dtype=np.int64),
        span_texts=texts,
        min_depth=np.zeros(2, dtype=np.int64),
    )


def test_settings_count_only_the_documents_own_chunks() -> None:
    texts = ["one two three", "four five", "six", "seven eight nine ten"]
    ctx = _context(texts)
    # question 0's document has two chunks (2, 0), question 1's has all four
    ranking = np.array([[2, 0, -1, -1], [3, 1, 0, 2]], dtype=np.int64)
    scores = np.array([[0.9, 0.5, -np.inf, -np.inf], [0.8, 0.7, 0.2, 0.1]], np.float32)
    top = RETRIEVAL.build("in_document(k=4)")[0].select(ranking, scores, ctx)
    assert top.depth.tolist() == [2, 4]
    assert top.tokens.tolist() == [1 + 3, 4 + 2 + 3 + 1]
    budget = RETRIEVAL.build("token_budget(tokens=100, ranker='in_document()')")[0]
    sel = budget.select(ranking, scores, ctx)
    assert sel.depth.tolist() == [2, 4]
    assert sel.last_chars.tolist() == [len(texts[0]), len(texts[2])]
    threshold = RETRIEVAL.build("threshold(min_similarity=-1, ranker='in_document()')")[0]
    assert threshold.select(ranking, scores, ctx).depth.tolist() == [2, 4]


def test_evaluate_retrieves_only_from_each_questions_document(tmp_path: Path) -> None:
    retrieval = [
        "top_k(k=5)",
        "in_document(k=5)",
        "token_budget(tokens=200, ranker='in_document()')",
    ]
    chunkmark.evaluate(
        dataset="demo",
        chunkers=["fixed_tokens(size=50)"],
        embedders=["fake()"],
        retrieval=retrieval,
        cache_dir=tmp_path / "cache",
        out=tmp_path / "run",
    )
    dataset = load_dataset("demo")
    doc_of = {q.id: q.doc_id for q in dataset.questions}
    assert len(dataset.documents) > 1
    rows = pq.read_table(tmp_path / "run" / "results.parquet").to_pandas()
    scoped = rows[rows["retrieval"] == "in_document(k=5)"]
    assert len(scoped) == len(dataset.questions)
    (ranking_file,) = (tmp_path / "run" / "cells").glob("*.ranking.parquet")
    (chunks_file,) = (tmp_path / "run" / "cells").glob("*.chunks.parquet")
    chunk_doc = pq.read_table(chunks_file).column("doc_id").to_pylist()
    rankings = pq.read_table(ranking_file).to_pylist()
    scoped_rows = [r for r in rankings if r["ranker"] == "in_document()"]
    assert len(scoped_rows) == len(dataset.questions)
    for row in scoped_rows:
        assert row["chunks"], row["question_id"]
        assert {chunk_doc[i] for i in row["chunks"]} == {doc_of[row["question_id"]]}
    corpus_rows = [r for r in rankings if r["ranker"].startswith("exact(")]
    assert any(
        {chunk_doc[i] for i in r["chunks"]} != {doc_of[r["question_id"]]} for r in corpus_rows
    ), "the fake embedder should retrieve some chunks of other documents over the corpus"
    # scoped retrieval never retrieves another document's text: document precision is 1
    assert (scoped["doc_precision"] == 1.0).all()
    unscoped = rows[rows["retrieval"] == "top_k(k=5)"]
    assert scoped["recall"].mean() >= unscoped["recall"].mean()
