"""Top-k selection in groups of rows against a full sort of every row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.retrieval.topk import top_k


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 40),
    n=st.integers(1, 50),
    k=st.integers(0, 55),
    group_rows=st.integers(1, 45),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_grouped_rows_select_like_a_full_sort(
    seed: int, rows: int, n: int, k: int, group_rows: int, dtype: type
) -> None:
    """Few distinct values make ties at the k-th score; each row must still be the first k
    of (-score, column) order, whatever the row groups."""
    scores = np.random.default_rng(seed).integers(-3, 4, size=(rows, n)).astype(dtype)
    ids, top = top_k(scores, k, group_rows=group_rows)
    depth = min(k, n)
    want = np.array([np.lexsort((np.arange(n), -row))[:depth] for row in scores], np.int64)
    want = want.reshape(rows, depth)
    assert ids.dtype == np.int64 and top.dtype == dtype
    assert np.array_equal(ids, want)
    assert np.array_equal(top, np.take_along_axis(scores, want, axis=1))
