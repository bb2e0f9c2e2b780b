"""The faiss ranker: approximate search, deterministic, with its recall against exact search."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from chunkmark.embedders import l2_normalise
from chunkmark.errors import MissingDependencyError, SpecError
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS, ExactIndex, rank
from chunkmark.retrieval.ann import complete_ranking, default_nlist, recall_at_k, sample_rows

pytest.importorskip("faiss")


def data(n: int, m: int, dim: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return l2_normalise(rng.normal(size=(n, dim))), l2_normalise(rng.normal(size=(m, dim)))


def texts(n: int) -> list[str]:
    return [""] * n


def test_hnsw_with_a_wide_search_equals_exact_on_small_data() -> None:
    docs, queries = data(300, 20)
    spec = "faiss(index='hnsw', ef_search=512, candidates=40)"
    ids, scores, stats = rank(spec, docs, texts(300), queries, texts(20), 10)
    exact_ids, exact_scores, _ = rank("exact()", docs, texts(300), queries, texts(20), 10)
    # faiss and numpy sum the 16 products of a float32 dot in their own order: each is within
    # 16 * 2**-24 of the exact dot of these unit vectors. No two of a row's top 11 exact scores
    # are that close twice over, so both give the same order.
    tolerance = 2 * 16 * 2**-24
    top = -np.sort(-(queries @ docs.T), axis=1)[:, :11]
    assert (-np.diff(top, axis=1) > tolerance).all()
    assert np.array_equal(ids, exact_ids)
    assert np.allclose(scores, exact_scores, rtol=0, atol=tolerance)
    assert stats == {"recall_vs_exact_at_k": 1.0, "sample": 20, "k": 10}


def test_recall_is_the_share_of_the_exact_top_k_found() -> None:
    docs, queries = data(3000, 150, dim=32, seed=1)
    spec = "faiss(index='ivf_flat', nlist=64, nprobe=1, candidates=10, sample=60, seed=7)"
    ids, _, stats = rank(spec, docs, texts(3000), queries, texts(150), 10)
    rows = np.sort(np.random.default_rng(7).choice(150, size=60, replace=False))
    exact = ExactIndex()
    exact.add(docs)
    truth, _ = exact.search(queries[rows], 10)
    found = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(ids[rows], truth, strict=True)]
    expected = sum(found) / (60 * 10)
    assert 0.0 < expected < 1.0  # one probed list misses neighbours: the recall is informative
    assert stats["recall_vs_exact_at_k"] == pytest.approx(expected, abs=1e-6)
    assert stats["sample"] == 60 and stats["k"] == 10


@pytest.mark.parametrize("index", ["hnsw", "ivf_flat"])
def test_deterministic_full_length_and_prefix_stable(index: str) -> None:
    docs, queries = data(800, 30, seed=2)
    spec = f"faiss(index='{index}', nprobe=2, candidates=20)"
    deep, deep_scores, _ = rank(spec, docs, texts(800), queries, texts(30), 50)
    again, again_scores, _ = rank(spec, docs, texts(800), queries, texts(30), 50)
    assert np.array_equal(deep, again) and np.array_equal(deep_scores, again_scores)
    assert all(len(set(row)) == 50 for row in deep.tolist())
    assert np.isneginf(deep_scores[:, 20:]).all()  # past the candidates: index order, -inf
    for depth in (0, 1, 5, 20, 33):
        ids, scores, _ = rank(spec, docs, texts(800), queries, texts(30), depth)
        assert np.array_equal(ids, deep[:, :depth])
        assert np.array_equal(scores, deep_scores[:, :depth])


def test_complete_ranking_orders_ties_by_index_and_fills_in_index_order() -> None:
    ids = np.array([[5, 3, -1, 8], [2, 0, 1, 4]])
    scores = np.array([[0.5, 0.5, 0.0, 0.9], [0.1, 0.1, 0.1, 0.1]], np.float32)
    ranking, ranked = complete_ranking(ids, scores, 6, 10)
    assert ranking.tolist() == [[8, 3, 5, 0, 1, 2], [0, 1, 2, 4, 3, 5]]
    assert np.isneginf(ranked[0, 3:]).all() and np.isneginf(ranked[1, 4:]).all()
    assert ranked[0, :3].tolist() == pytest.approx([0.9, 0.5, 0.5])


def test_helpers() -> None:
    assert recall_at_k(np.array([[1, 2, 3]]), np.array([[3, 4, 1]])) == pytest.approx(2 / 3)
    assert sample_rows(5, 10, 0).tolist() == [0, 1, 2, 3, 4]
    assert len(sample_rows(100, 10, 0)) == 10
    assert default_nlist(10) == 1 and default_nlist(10_000) == 256
    assert default_nlist(1_000_000) == 4000


def test_empty_index_and_no_questions() -> None:
    docs, queries = data(5, 3)
    ids, scores, stats = rank("faiss()", docs[:0], [], queries, texts(3), 4)
    assert ids.shape == scores.shape == (3, 0)
    assert stats["k"] == 0


def test_setting_reads_the_faiss_ranking() -> None:
    setting, _ = RETRIEVAL.build("faiss(k=5, index='ivf_flat', nprobe=4)")
    assert setting.ranker == RETRIEVERS.resolve("faiss(index='ivf_flat', nprobe=4)")
    assert setting.k_label == "5"
    with pytest.raises(SpecError, match="raise candidates"):
        RETRIEVAL.build("faiss(k=20, candidates=10)")
    with pytest.raises(SpecError, match="nprobe must be at least 1"):
        RETRIEVERS.build("faiss(nprobe=0)")


def test_missing_faiss_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def without_faiss(name: str, *args: object) -> object:
        if name == "faiss":
            raise ImportError("no faiss")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_faiss)
    docs, queries = data(5, 3)
    with pytest.raises(MissingDependencyError, match=r"chunkmark\[ann\]"):
        rank("faiss()", docs, texts(5), queries, texts(3), 2)
