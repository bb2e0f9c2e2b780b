from __future__ import annotations

import numpy as np

from chunkmark.embedders import l2_normalise
from chunkmark.retrieval import ExactIndex


def test_matches_full_sort() -> None:
    rng = np.random.default_rng(0)
    docs = l2_normalise(rng.normal(size=(500, 16)))
    queries = l2_normalise(rng.normal(size=(37, 16)))
    index = ExactIndex(block_rows=8)
    index.add(docs[:200])
    index.add(docs[200:])
    ids, scores = index.search(queries, 10)
    sims = queries @ docs.T
    expected = np.argsort(-sims, axis=1, kind="stable")[:, :10]
    # The index's products (8 questions at a time, one BLAS thread) may round a score's last
    # bits otherwise than this one product: each is within 16 * 2**-24 of the exact dot of
    # these unit vectors (a float32 sum of 16 products). No two of a row's top 11 scores are
    # that close twice over, so any float32 path gives these ids.
    top = -np.sort(-sims, axis=1)[:, :11]
    assert (-np.diff(top, axis=1) > 2 * 16 * 2**-24).all()
    assert np.array_equal(ids, expected)
    assert np.allclose(
        scores, np.take_along_axis(sims, expected, axis=1), rtol=0, atol=2 * 16 * 2**-24
    )


def test_ties_broken_by_insertion_order() -> None:
    docs = np.array([[1.0, 0.0]] * 6 + [[0.0, 1.0]], dtype=np.float32)
    index = ExactIndex()
    index.add(docs)
    ids, _ = index.search(np.array([[1.0, 0.0]], dtype=np.float32), 3)
    assert ids.tolist() == [[0, 1, 2]]


def test_k_larger_than_index() -> None:
    index = ExactIndex()
    index.add(np.eye(3, dtype=np.float32))
    ids, _ = index.search(np.eye(3, dtype=np.float32), 10)
    assert ids.shape == (3, 3)
    assert ids[:, 0].tolist() == [0, 1, 2]
