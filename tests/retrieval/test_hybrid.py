"""Hybrid fusion: RRF against a brute-force reading of chunkmark's tie rule on raw tied scores,
and against ranx where the two conventions coincide (no ties; convex fusion, which reads scores,
not ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ranx import Run
from ranx import fuse as ranx_fuse

from chunkmark.errors import SpecError
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS, BM25Retriever, ExactRetriever, fuse, rank
from chunkmark.retrieval.hybrid import Fusion

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64")  # inside ranx

Entries = list[tuple[int, float]]  # one list of one question: (chunk, score)


# --- the independent reference: chunkmark's RRF rule in plain Python -------------------------


def brute_rrf(lists: list[Entries], n_chunks: int, rrf_k: int) -> list[tuple[int, float]]:
    """Every chunk with its fused RRF score, best first: within each list the entries ordered by
    score (higher first) then chunk index (lower first), rank = 1-based position in that order;
    a chunk scores the sum of 1 / (rrf_k + rank) over the lists holding it (added list by list,
    the dense list first); the fused order is score descending, then chunk index; the chunks in
    no list follow in index order with score 0."""
    fused: dict[int, float] = {}
    for entries in lists:
        ordered = sorted(entries, key=lambda entry: (-entry[1], entry[0]))
        for position, (chunk, _score) in enumerate(ordered, start=1):
            fused[chunk] = fused.get(chunk, 0.0) + 1.0 / (rrf_k + position)
    listed = sorted(fused, key=lambda chunk: (-fused[chunk], chunk))
    unlisted = [chunk for chunk in range(n_chunks) if chunk not in fused]
    return [(c, fused[c]) for c in listed] + [(c, 0.0) for c in unlisted]


def as_arrays(rows: list[Entries]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (chunk, score) entries of one width as fuse's (ids, float32 scores)."""
    ids = np.array([[c for c, _ in row] for row in rows], dtype=np.int64).reshape(len(rows), -1)
    scores = np.array([[s for _, s in row] for row in rows], dtype=np.float32)
    return ids, scores.reshape(len(rows), -1)


def check_against_brute(
    dense: list[Entries], keyword: list[Entries], n_chunks: int, k: int, rrf_k: int
) -> None:
    ids, scores = fuse(
        as_arrays(dense), as_arrays(keyword), n_chunks=n_chunks, k=k, fusion="rrf", rrf_k=rrf_k
    )
    for q in range(len(dense)):
        # Scores as fuse's input holds them (float32), read back as Python floats.
        lists = [[(c, float(np.float32(s))) for c, s in rows[q]] for rows in (dense, keyword)]
        want = brute_rrf(lists, n_chunks, rrf_k)[:k]
        assert ids[q].tolist() == [c for c, _ in want]
        assert scores[q].tolist() == [float(np.float32(s)) for _, s in want]


@st.composite
def tied_lists(draw: st.DrawFn) -> tuple[list[Entries], list[Entries], int, int, int]:
    """Two rankings of a few questions with heavy ties: scores from small pools (BM25 zeros,
    identical dense scores), best first, equal scores in an arbitrary chunk order."""
    n_chunks = draw(st.integers(1, 25))
    n_q = draw(st.integers(1, 3))
    width = draw(st.integers(0, n_chunks))
    dense_pool = draw(st.sampled_from([[0.5], [0.25, 0.25, 0.75], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]]))
    bm25_pool = draw(st.sampled_from([[0.0], [0.0, 0.0, 0.0, 1.5], [0.0, 2.25, 2.25, 4.0]]))
    lists = []
    for pool in (dense_pool, bm25_pool):
        rows = []
        for _ in range(n_q):
            chunks = draw(st.permutations(range(n_chunks)))[:width]
            values = draw(st.lists(st.sampled_from(pool), min_size=width, max_size=width))
            # Stable sort by score only: ties stay in the drawn (random) chunk order.
            rows.append(sorted(zip(chunks, values, strict=True), key=lambda e: -e[1]))
        lists.append(rows)
    k = draw(st.integers(1, n_chunks))
    rrf_k = draw(st.sampled_from([1, 2, 60]))
    return lists[0], lists[1], n_chunks, k, rrf_k


@settings(max_examples=300, deadline=None)
@given(tied_lists())
def test_rrf_equals_brute_force_on_raw_tied_scores(
    case: tuple[list[Entries], list[Entries], int, int, int],
) -> None:
    dense, keyword, n_chunks, k, rrf_k = case
    check_against_brute(dense, keyword, n_chunks, k, rrf_k)


def test_rrf_ties_by_chunk_index_hand_computed() -> None:
    # BM25 gives chunks 5, 3, 1 the same score in that order: ranks follow chunk index (1, 3, 5).
    dense = [[(3, 0.9), (5, 0.9), (0, 0.1)]]  # tied pair given as 3, 5: ranks 1, 2
    keyword = [[(5, 2.0), (3, 2.0), (1, 2.0)]]  # ranks: 1 -> 1, 3 -> 2, 5 -> 3
    ids, scores = fuse(as_arrays(dense), as_arrays(keyword), n_chunks=6, k=6, fusion="rrf", rrf_k=1)
    # 3: 1/2 + 1/3; 5: 1/3 + 1/4; 1: 1/2; 0: 1/4; then 2 and 4 in no list.
    assert ids.tolist() == [[3, 5, 1, 0, 2, 4]]
    np.testing.assert_allclose(scores[0], [5 / 6, 7 / 12, 1 / 2, 1 / 4, 0, 0], rtol=1e-6)
    check_against_brute(dense, keyword, 6, 6, 1)


@pytest.mark.parametrize("rrf_k", [1, 60])
def test_rrf_all_bm25_zero_and_all_dense_equal(rrf_k: int) -> None:
    rng = np.random.default_rng(3)
    n_chunks, width = 40, 30
    # BM25 with no matching term: every candidate scores 0 (given in a random order).
    zeros = [[(int(c), 0.0) for c in rng.permutation(n_chunks)[:width]] for _ in range(2)]
    distinct = [[(int(c), 1.0 - i / 64) for i, c in enumerate(rng.permutation(n_chunks)[:width])]]
    distinct.append([(int(c), 0.5) for c in rng.permutation(n_chunks)[:width]])  # all equal
    check_against_brute(distinct, zeros, n_chunks, n_chunks, rrf_k)
    check_against_brute(zeros, distinct, n_chunks, 7, rrf_k)
    check_against_brute(zeros, zeros, n_chunks, n_chunks, rrf_k)


def test_rrf_ignores_the_input_order_of_tied_entries() -> None:
    rng = np.random.default_rng(11)
    ids = np.array([[4, 2, 9, 7, 1, 0]])
    scores = np.array([[3.0, 1.0, 1.0, 1.0, 0.0, 0.0]], dtype=np.float32)
    other = (np.array([[9, 4]]), np.array([[0.8, 0.2]], dtype=np.float32))
    base = fuse((ids, scores), other, n_chunks=10, k=10, fusion="rrf", rrf_k=2)
    for _ in range(10):
        perm = rng.permutation(6)[None, :]
        shuffled = (np.take_along_axis(ids, perm, 1), np.take_along_axis(scores, perm, 1))
        again = fuse(shuffled, other, n_chunks=10, k=10, fusion="rrf", rrf_k=2)
        assert again[0].tolist() == base[0].tolist()
        assert again[1].tolist() == base[1].tolist()


# --- ranx, where the conventions coincide --------------------------------------------------


def random_list(
    rng: np.random.Generator, n_chunks: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """A ranking as rankers give them: distinct chunks, scores descending, many ties, equal
    scores in chunk-index order."""
    ids = rng.permutation(n_chunks)[:width]
    scores = rng.choice([0.1, 0.25, 0.5, 0.75, 1.3, 2.0], size=width)
    order = np.lexsort((ids, -scores))
    return ids[order].astype(np.int64), scores[order].astype(np.float32)


def fixture(seed: int) -> tuple[int, list[tuple[np.ndarray, np.ndarray]], float, int]:
    """The random fixture of seed ``seed``: chunks, the two lists, alpha and rrf_k."""
    rng = np.random.default_rng(seed)
    n_chunks = int(rng.integers(1, 30))
    n_q = int(rng.integers(1, 6))
    width = int(rng.integers(1, n_chunks + 1))
    alpha, rrf_k = float(rng.choice([0.0, 0.3, 0.5, 1.0])), int(rng.choice([1, 10, 60]))
    lists = []
    for _ in range(2):
        rows = [random_list(rng, n_chunks, width) for _ in range(n_q)]
        lists.append((np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])))
    return n_chunks, lists, alpha, rrf_k


def without_ties(lists: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The same lists with distinct scores, descending in each row's order."""
    out = []
    for ids, scores in lists:
        width = scores.shape[1]
        distinct = np.broadcast_to(np.linspace(2.0, 0.05, width, dtype=np.float32), scores.shape)
        out.append((ids, distinct.copy()))
    return out


def ranx_expected(
    lists: list[tuple[np.ndarray, np.ndarray]],
    fusion: str,
    alpha: float,
    rrf_k: int,
    ranks_as_scores: bool = False,
) -> dict[str, dict[str, float]]:
    """ranx's fusion of the lists, given their raw scores, or (``ranks_as_scores``) scores that
    encode chunkmark's ranks (the lists' positions, ties already in chunk-index order)."""
    runs = []
    for ids, scores in lists:
        run = {}
        for q, (row_ids, row_scores) in enumerate(zip(ids, scores, strict=True)):
            if ranks_as_scores:
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


def ranx_order(want: dict[str, float]) -> list[str]:
    return sorted(want, key=lambda c: (-want[c], int(c)))  # score desc, then chunk index


def check_against_ranx(
    ids: np.ndarray,
    scores: np.ndarray,
    expected: dict[str, dict[str, float]],
    n_chunks: int,
) -> None:
    for q in range(len(ids)):
        want = expected[f"q{q}"]
        order = ranx_order(want)
        n = min(len(order), ids.shape[1])
        order = order[:n]
        assert ids[q, :n].tolist() == [int(c) for c in order]
        np.testing.assert_allclose(scores[q, :n], [want[c] for c in order], rtol=1e-6, atol=1e-7)
        rest = sorted(set(range(n_chunks)) - {int(c) for c in order})
        assert ids[q, n:].tolist() == rest[: ids.shape[1] - n]  # the others: index order
        assert not scores[q, n:].any()


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
@pytest.mark.parametrize("seed", range(25))
def test_fusion_equals_ranx(fusion: Fusion, seed: int) -> None:
    """RRF without ties (the one case where ranx's ranks are defined) and convex fusion with
    ties (scores, not ranks, are fused), ranx given the raw scores."""
    n_chunks, lists, alpha, rrf_k = fixture(seed)
    if fusion == "rrf":
        lists = without_ties(lists)
    n_q = len(lists[0][0])
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


def test_ranx_on_raw_tied_scores_differs_only_where_a_list_has_ties() -> None:
    """The 25 fixtures' 83 questions, RRF, ranx given the raw tied scores: it disagrees with
    chunkmark on 22 of them (ranx orders a tie by numba's unstable argsort; the count is for
    the locked ranx and numba), every one a question with a tie in one of its lists; given
    chunkmark's ranks instead, it agrees on all 83."""
    questions = tied = differing = 0
    for seed in range(25):
        n_chunks, lists, _, rrf_k = fixture(seed)
        ids, scores = fuse(lists[0], lists[1], n_chunks=n_chunks, k=n_chunks, rrf_k=rrf_k)
        raw = ranx_expected(lists, "rrf", 0.5, rrf_k)
        check_against_ranx(ids, scores, ranx_expected(lists, "rrf", 0.5, rrf_k, True), n_chunks)
        for q in range(len(ids)):
            questions += 1
            has_tie = any(len(set(s[q].tolist())) < s.shape[1] for _, s in lists)
            want = raw[f"q{q}"]
            order = ranx_order(want)
            same = ids[q, : len(order)].tolist() == [int(c) for c in order] and np.allclose(
                scores[q, : len(order)], [want[c] for c in order], rtol=1e-6, atol=1e-7
            )
            tied += has_tie
            differing += not same
            assert same or has_tie, f"seed {seed}, question {q}: differs from ranx without a tie"
    assert (questions, tied, differing) == (83, 71, 22)


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
