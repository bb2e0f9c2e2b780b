"""Exact search blocked over questions and chunks, on arrays and memory maps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.embedders import l2_normalise
from chunkmark.retrieval import ExactIndex
from chunkmark.retrieval.exact import merge_top_k


def reference(queries: np.ndarray, docs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every similarity (one product, on one BLAS thread), fully sorted by (-score, chunk
    index), cut to k."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        sims = queries @ docs.T
    n = sims.shape[1]
    ids = np.array([np.lexsort((np.arange(n), -row))[:k] for row in sims], dtype=np.int64)
    ids = ids.reshape(len(queries), min(k, n))
    return ids, np.take_along_axis(sims, ids, axis=1)


@st.composite
def tied_problem(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """Small-integer vectors: every dot product is exact in float32 whatever the block shape,
    and few distinct values make many ties."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 60))
    m = draw(st.integers(1, 12))
    dim = draw(st.integers(1, 4))
    rng = np.random.default_rng(seed)
    docs = rng.integers(-2, 3, size=(n, dim)).astype(np.float32)
    queries = rng.integers(-2, 3, size=(m, dim)).astype(np.float32)
    return (
        docs,
        queries,
        draw(st.integers(1, 70)),
        draw(st.integers(1, 13)),
        draw(st.integers(1, 61)),
    )


@settings(max_examples=300, deadline=None)
@given(tied_problem())
def test_blocked_search_equals_a_full_sort(problem: tuple) -> None:
    docs, queries, k, block_rows, block_chunks = problem
    index = ExactIndex(block_rows=block_rows, block_chunks=block_chunks)
    index.add(docs)
    ids, scores = index.search(queries, k)
    want_ids, want_scores = reference(queries, docs, k)
    assert ids.dtype == np.int64 and scores.dtype == np.float32
    assert np.array_equal(ids, want_ids)
    assert np.array_equal(scores, want_scores)
    for shallower in range(min(k, len(docs)) + 1):  # a shallower ranking is a prefix
        head_ids, head_scores = index.search(queries, shallower)
        assert np.array_equal(head_ids, ids[:, :shallower])
        assert np.array_equal(head_scores, scores[:, :shallower])


def test_one_chunk_block_is_the_one_product_over_all_chunks() -> None:
    """Up to block_chunks chunks, scores are exactly those of queries @ chunks.T (computed on
    one BLAS thread)."""
    rng = np.random.default_rng(3)
    docs = l2_normalise(rng.normal(size=(3000, 64)))
    queries = l2_normalise(rng.normal(size=(200, 64)))
    index = ExactIndex(block_chunks=3000)
    index.add(docs)
    ids, scores = index.search(queries, 25)
    want_ids, want_scores = reference(queries, docs, 25)
    assert np.array_equal(ids, want_ids)
    assert np.array_equal(scores, want_scores)


def test_many_chunk_blocks_rank_like_one_product() -> None:
    """Past one block, the ranking is the same and scores agree to float32 rounding."""
    rng = np.random.default_rng(4)
    docs = l2_normalise(rng.normal(size=(5000, 32)))
    queries = l2_normalise(rng.normal(size=(40, 32)))
    index = ExactIndex(block_rows=16, block_chunks=700)
    index.add(docs)
    ids, scores = index.search(queries, 30)
    want_ids, want_scores = reference(queries, docs, 30)
    assert np.array_equal(ids, want_ids)
    assert np.allclose(scores, want_scores, atol=1e-6)


def test_a_memory_map_is_searched_in_place(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    docs = l2_normalise(rng.normal(size=(1000, 16)))
    queries = l2_normalise(rng.normal(size=(9, 16)))
    np.save(tmp_path / "v.npy", docs)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    index = ExactIndex(block_chunks=128)
    index.add(mapped)
    assert np.shares_memory(index._data(), mapped)  # not copied into memory
    in_memory = ExactIndex(block_chunks=128)
    in_memory.add(docs)
    for got, want in zip(index.search(queries, 12), in_memory.search(queries, 12), strict=True):
        assert np.array_equal(got, want)


def test_several_parts_are_joined() -> None:
    docs = np.eye(5, dtype=np.float32)
    index = ExactIndex(block_chunks=2)
    index.add(docs[:2])
    index.add(docs[2:])
    assert len(index) == 5
    ids, _ = index.search(docs[[4]], 2)
    assert ids.tolist() == [[4, 0]]


def test_merge_keeps_the_best_and_breaks_ties_by_index() -> None:
    ids, scores = merge_top_k(
        np.array([[0, 2]]),
        np.array([[0.5, 0.1]], np.float32),
        np.array([[7, 5]]),
        np.array([[0.5, 0.3]], np.float32),
        3,
    )
    assert ids.tolist() == [[0, 7, 5]]
    assert scores.tolist() == np.array([[0.5, 0.5, 0.3]], np.float32).tolist()


def test_block_sizes_must_be_positive() -> None:
    import pytest

    with pytest.raises(ValueError, match="at least 1"):
        ExactIndex(block_chunks=0)


def blocked_products(queries: np.ndarray, docs: np.ndarray, rows: int, chunks: int) -> np.ndarray:
    """Every similarity, computed as the index's blocks of ``rows`` questions by ``chunks``
    chunks, each block one float32 product on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    sims = np.empty((len(queries), len(docs)), dtype=np.float32)
    with threadpool_limits(1, user_api="blas"):
        for lo in range(0, len(queries), rows):
            for start in range(0, len(docs), chunks):
                sims[lo : lo + rows, start : start + chunks] = (
                    queries[lo : lo + rows] @ docs[start : start + chunks].T
                )
    return sims


def test_scores_do_not_depend_on_the_number_of_blas_threads(
    record_property: Callable[[str, object], None],
) -> None:
    """A multithreaded float32 product may round some sums differently than a single-threaded
    one (the reason a Ray task, on one BLAS thread, ranked near-ties unlike a local run; whether
    it does depends on the CPU and the kernel OpenBLAS picks). The index's scores are, on any
    number of BLAS threads, the bits of its block products on one thread, its ranking is the
    exact order of those bits, and both agree with a float64 reference up to float32 rounding.
    Whether this machine's BLAS differs between 1 and 4 threads is reported, not asserted."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(7)
    docs = l2_normalise(rng.standard_normal((3000, 64)))
    queries = l2_normalise(rng.standard_normal((600, 64)))
    with threadpool_limits(1, user_api="blas"):
        plain_single = queries @ docs.T
    with threadpool_limits(4, user_api="blas"):
        plain_multi = queries @ docs.T
    differs = not np.array_equal(plain_single, plain_multi)
    record_property("blas_1_vs_4_threads_differ", differs)
    print(f"BLAS gives other bits on 1 and 4 threads on this machine: {differs}")
    exact = queries.astype(np.float64) @ docs.T.astype(np.float64)
    ref_ids, _ = reference(queries.astype(np.float64), docs.astype(np.float64), 10)
    for rows, chunks in ((1024, 16_384), (100, 700)):
        sims = blocked_products(queries, docs, rows, chunks)
        n = sims.shape[1]
        want_ids = np.array([np.lexsort((np.arange(n), -row))[:10] for row in sims])
        for threads in (1, 2, 4):
            with threadpool_limits(threads, user_api="blas"):
                index = ExactIndex(block_rows=rows, block_chunks=chunks)
                index.add(docs)
                ids, scores = index.search(queries, 10)
            assert np.array_equal(ids, want_ids), (rows, chunks, threads)
            assert np.array_equal(scores, np.take_along_axis(sims, ids, 1)), (rows, threads)
            # a float32 sum of 64 products is within 64 * 2**-24 * sum|x_i y_i| of the exact
            # dot product of the same float32 inputs, and sum|x_i y_i| <= |x||y| = 1 here
            np.testing.assert_allclose(scores, np.take_along_axis(exact, ids, 1), atol=64 * 2**-24)
            assert (ids == ref_ids).mean() > 0.999  # near-ties aside, the true top 10
