from __future__ import annotations

import numpy as np
import pytest
from ranx import Run
from ranx import fuse as ranx_fuse

from chunkmark.errors import SpecError
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS, BM25Retriever, ExactRetriever, fuse, rank

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64")  # inside ranx


def random_list(
    rng: np.random.Generator, n_chunks: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """A ranking as rankers give them: distinct chunks, scores descending, many ties."""
    ids = rng.permutation(n_chunks)[:width]
    scores = -np.sort(-rng.choice([0.1, 0.25, 0.5, 0.75, 1.3, 2.0], size=width))
    scores = scores.astype(np.float32)
    return ids.astype(np.int64), scores


def ranx_expected(
    lists: list[tuple[np.ndarray, np.ndarray]], fusion: str, alpha: float, rrf_k: int
) -> dict[str, dict[str, float]]:
    runs = []
    for ids, scores in lists:
        run = {}
        for q, (row_ids, row_scores) in enumerate(zip(ids, scores, strict=True)):
            if fusion == "rrf":  # ranks are positions: give ranx scores in that order
                values = [float(len(row_ids) - i) for i in range(len(row_ids))]
            else:
                values = [float(s) for s in row_scores]
            run[f"q{q}"] = {str(int(c)): v for c, v in zip(row_ids, values, strict=True)}
        runs.append(Run(run))
    if fusion == "rrf":
        fused = ranx_fuse(runs, norm=None, method="rrf", params={"k": rrf_k})
    else:
        weights = [alpha, 1 - alpha]
        fused = ranx_fuse(runs, norm="min-max", method="wsum", params={"weights": weights})
    return {q: dict(results) for q, results in fused.to_dict().items()}


def check_against_ranx(
    ids: np.ndarray,
    scores: np.ndarray,
    expected: dict[str, dict[str, float]],
    n_chunks: int,
) -> None:
    for q in range(len(ids)):
        want = expected[f"q{q}"]
        order = sorted(want, key=lambda c: (-want[c], int(c)))  # score desc, then chunk index
        n = min(len(order), ids.shape[1])
        order = order[:n]
        assert ids[q, :n].tolist() == [int(c) for c in order]
        np.testing.assert_allclose(scores[q, :n], [want[c] for c in order], rtol=1e-6, atol=1e-7)
        rest = sorted(set(range(n_chunks)) - {int(c) for c in order})
        assert ids[q, n:].tolist() == rest[: ids.shape[1] - n]  # the others: index order
        assert not scores[q, n:].any()


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
@pytest.mark.parametrize("seed", range(25))
def test_fusion_equals_ranx(fusion: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_chunks = int(rng.integers(1, 30))
    n_q = int(rng.integers(1, 6))
    width = int(rng.integers(1, n_chunks + 1))
    alpha, rrf_k = float(rng.choice([0.0, 0.3, 0.5, 1.0])), int(rng.choice([1, 10, 60]))
    lists = []
    for _ in range(2):
        rows = [random_list(rng, n_chunks, width) for _ in range(n_q)]
        lists.append((np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])))
    ids, scores = fuse(
        lists[0], lists[1], n_chunks=n_chunks, k=n_chunks, fusion=fusion, alpha=alpha, rrf_k=rrf_k
    )
    assert ids.shape == scores.shape == (n_q, n_chunks)
    assert all(sorted(row) == list(range(n_chunks)) for row in ids.tolist())
    check_against_ranx(ids, scores, ranx_expected(lists, fusion, alpha, rrf_k), n_chunks)
    # A shallower fusion is a prefix of the deeper one.
    small_ids, small_scores = fuse(
        lists[0], lists[1], n_chunks=n_chunks, k=3, fusion=fusion, alpha=alpha, rrf_k=rrf_k
    )
    assert small_ids.tolist() == ids[:, :3].tolist()
    assert small_scores.tolist() == scores[:, :3].tolist()


def test_rrf_hand_computed() -> None:
    dense = (np.array([[2, 0, 1]]), np.array([[0.9, 0.5, 0.1]], dtype=np.float32))
    keyword = (np.array([[0, 3]]), np.array([[7.0, 7.0]], dtype=np.float32))
    ids, scores = fuse(dense, keyword, n_chunks=5, k=5, fusion="rrf", rrf_k=1)
    # chunk 0: 1/(1+2) + 1/(1+1); chunk 2: 1/2; chunk 3: 1/3; chunk 1: 1/4; chunk 4 in no list.
    assert ids.tolist() == [[0, 2, 3, 1, 4]]
    np.testing.assert_allclose(scores[0], [1 / 3 + 1 / 2, 1 / 2, 1 / 3, 1 / 4, 0], rtol=1e-6)


def test_convex_hand_computed_and_equal_scores_normalise_to_zero() -> None:
    dense = (np.array([[2, 0, 1]]), np.array([[0.9, 0.5, 0.1]], dtype=np.float32))
    keyword = (np.array([[0, 3]]), np.array([[7.0, 7.0]], dtype=np.float32))
    ids, scores = fuse(dense, keyword, n_chunks=5, k=5, fusion="convex", alpha=0.25)
    # dense min-max: chunk 2 -> 1, chunk 0 -> 0.5, chunk 1 -> 0; keyword all equal -> 0.
    # Chunks 1 and 3 tie at 0 (listed), then chunk 4 (in no list).
    assert ids.tolist() == [[2, 0, 1, 3, 4]]
    np.testing.assert_allclose(scores[0], [0.25, 0.125, 0, 0, 0], rtol=1e-6)


def test_hybrid_retriever_equals_ranx_on_its_two_rankings() -> None:
    rng = np.random.default_rng(7)
    words = ["apple", "pear", "plum", "fig", "kiwi", "lime"]
    texts = [" ".join(rng.choice(words, size=5)) for _ in range(30)]
    vectors = rng.normal(size=(30, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = ["apple fig", "plum", "nothing known"]
    query_vectors = vectors[[3, 10, 20]] + 0.1
    for fusion in ("rrf", "convex"):
        spec = f"hybrid(fusion={fusion!r}, alpha=0.4, rrf_k=5, candidates=8)"
        for depth in (12, 30):
            ids, scores, stats = rank(spec, vectors, texts, query_vectors, queries, depth)
            assert ids.shape == (3, depth)
            dense, keyword = ExactRetriever(), BM25Retriever()
            dense.index(vectors, texts)
            keyword.index(vectors, texts)
            lists = [
                dense.search(query_vectors, queries, 8),
                keyword.search(query_vectors, queries, 8),
            ]
            check_against_ranx(ids, scores, ranx_expected(lists, fusion, 0.4, 5), 30)
            assert stats["queries_without_terms"] == 1


def test_hybrid_with_no_chunks_or_no_questions() -> None:
    empty = np.zeros((0, 4), dtype=np.float32)
    ids, scores, _ = rank("hybrid()", empty, [], np.ones((2, 4), np.float32), ["a", "b"], 5)
    assert ids.shape == scores.shape == (2, 0)
    vectors = np.eye(4, dtype=np.float32)
    ids, _, _ = rank("hybrid()", vectors, ["a b", "c d", "e f", "g h"], empty, [], 5)
    assert ids.shape == (0, 4)


@pytest.mark.parametrize(
    "spec",
    [
        "hybrid(alpha=1.5)",
        "hybrid(alpha=-0.1)",
        "hybrid(rrf_k=0)",
        "hybrid(candidates=0)",
        "hybrid(fusion='max')",
        "hybrid(k=0)",
        "hybrid(k=20, candidates=10)",
        "hybrid(b=2)",
        "hybrid(method='bm99')",
    ],
)
def test_bad_hybrid_settings(spec: str) -> None:
    with pytest.raises(SpecError):
        RETRIEVAL.build(spec)


def test_hybrid_setting_reads_the_hybrid_ranker_without_k() -> None:
    setting, canonical = RETRIEVAL.build("hybrid(k='min', fusion='convex', alpha=0.3)")
    assert setting.k_label == "min"
    assert setting.ranker == RETRIEVERS.resolve("hybrid(fusion='convex', alpha=0.3)")
    assert str(canonical).startswith("hybrid(k='min', fusion='convex', alpha=0.3, rrf_k=60")
    with pytest.raises(SpecError):
        RETRIEVERS.build("hybrid(fusion='convex', alpha=2)")
