"""Hand-computed goldens and a property test against a direct, per-question implementation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.metrics import (
    ChunkTable,
    QuestionTable,
    min_k_depth,
    score_chunking,
    score_retrieval,
)


def _one(excerpts, chunks, ranking, k, doc=0):
    q = QuestionTable.from_lists([doc], [excerpts])
    c = ChunkTable.from_rows(chunks)
    return q, c, score_retrieval(q, c, np.array([ranking], dtype=np.int64), k)


def test_hand_computed_example() -> None:
    # Excerpt [10, 20); chunks: A=[0,15) doc0, B=[12,30) doc0, C=[10,20) doc1 (other document).
    _, _, s = _one([(10, 20)], [(0, 0, 15), (0, 12, 30), (1, 10, 20)], [0, 1, 2], 3)
    overlap = 10  # [10, 20) fully covered by A ∪ B
    retrieved = 15 + 18 + 10  # sum, other document included
    assert s.recall[0] == pytest.approx(1.0)
    assert s.precision[0] == pytest.approx(overlap / retrieved)
    assert s.iou[0] == pytest.approx(overlap / (retrieved + 0))
    p, r = overlap / retrieved, 1.0
    assert s.f1[0] == pytest.approx(2 * p * r / (p + r))
    assert s.hit[0] == 1.0 and s.mrr[0] == 1.0


def test_partial_coverage_and_rank_metrics() -> None:
    # Excerpt [100, 200); top-1 is irrelevant [0, 50), top-2 covers [150, 250).
    q, c, s = _one([(100, 200)], [(0, 0, 50), (0, 150, 250)], [0, 1], 2)
    assert s.recall[0] == pytest.approx(0.5)
    assert s.precision[0] == pytest.approx(50 / 150)
    assert s.iou[0] == pytest.approx(50 / (150 + 50))
    assert s.mrr[0] == pytest.approx(0.5)
    # Without the count of relevant chunks the ideal ranking fills both slots ...
    assert s.ndcg[0] == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)))
    # ... with it (one relevant chunk exists), the ideal is that chunk at rank 1.
    with_rel = score_retrieval(q, c, np.array([[0, 1]]), 2, score_chunking(q, c).n_relevant)
    assert with_rel.ndcg[0] == pytest.approx(1 / np.log2(3))


def test_touching_chunk_counts_for_omega_not_for_overlap() -> None:
    # Chunk [0, 10) touches excerpt [10, 20) at 10; chunk [10, 20) is the excerpt itself.
    q = QuestionTable.from_lists([0], [[(10, 20)]])
    c = ChunkTable.from_rows([(0, 0, 10), (0, 10, 20), (0, 20, 30)])
    om = score_chunking(q, c)
    assert om.n_touching[0] == 3  # both neighbours touch
    assert om.n_relevant[0] == 1
    assert om.precision_omega[0] == pytest.approx(10 / 30)


def test_no_retrieval_of_own_document_scores_zero() -> None:
    _, _, s = _one([(0, 5)], [(1, 0, 5)], [0], 1)
    assert (
        s.recall[0] == 0
        and s.precision[0] == 0
        and s.iou[0] == 0
        and s.f1[0] == 0
        and s.hit[0] == 0
    )


def test_min_k_depth_is_capped() -> None:
    assert min_k_depth(np.array([1, 3, 40])).tolist() == [1, 3, 20]
    assert min_k_depth(np.array([1, 3, 2])).tolist() == [1, 3, 2]


# --- property test against a direct implementation of the definitions --------------------------


def _covered(points: set[int], spans) -> set[int]:
    for s, e in spans:
        points.update(range(s, e))
    return points


def _direct(excerpts, chunks, ranking, k, doc):
    """Character sets, one question at a time: the definitions written out literally."""
    top = [chunks[i] for i in ranking[:k]]
    own = [(s, e) for d, s, e in top if d == doc]
    ex_chars = _covered(set(), excerpts)
    r_chars = _covered(set(), own)
    overlap = len(ex_chars & r_chars)
    ex_sum = sum(e - s for s, e in excerpts)
    r_sum = sum(e - s for _, s, e in top)
    unused = sum(len(set(range(s, e)) - r_chars) for s, e in excerpts)
    recall = overlap / ex_sum if ex_sum else 0.0
    precision = overlap / r_sum if r_sum else 0.0
    iou = overlap / (r_sum + unused) if r_sum + unused else 0.0
    hits = [
        (s, e)
        for d, s, e in chunks
        if d == doc and any(max(s, a) <= min(e, b) for a, b in excerpts)
    ]
    h_chars = _covered(set(), hits)
    omega = (
        len(h_chars & ex_chars) / len(h_chars | ex_chars) if hits and (h_chars | ex_chars) else 0.0
    )
    return recall, precision, iou, omega, len(hits)


span = st.tuples(st.integers(0, 60), st.integers(1, 25)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=300, deadline=None)
@given(
    excerpts=st.lists(span, min_size=1, max_size=3).map(sorted),
    chunk_list=st.lists(st.tuples(st.integers(0, 1), span), min_size=1, max_size=12),
    k=st.integers(1, 12),
    seed=st.integers(0, 1000),
)
def test_vectorised_equals_direct(excerpts, chunk_list, k, seed) -> None:
    # Non-overlapping excerpts, as in real datasets (the reference sums excerpt lengths).
    merged = []
    for s, e in excerpts:
        if merged and s <= merged[-1][1]:
            continue
        merged.append((s, e))
    chunks = [(d, s, e) for d, (s, e) in chunk_list]
    ranking = np.random.default_rng(seed).permutation(len(chunks))
    q = QuestionTable.from_lists([0], [merged])
    c = ChunkTable.from_rows(chunks)
    s = score_retrieval(q, c, ranking[None, :], k)
    om = score_chunking(q, c)
    recall, precision, iou, omega, n_hits = _direct(merged, chunks, list(ranking), k, 0)
    assert s.recall[0] == pytest.approx(recall, abs=1e-12)
    assert s.precision[0] == pytest.approx(precision, abs=1e-12)
    assert s.iou[0] == pytest.approx(iou, abs=1e-12)
    assert om.precision_omega[0] == pytest.approx(omega, abs=1e-12)
    assert om.n_touching[0] == n_hits


@pytest.mark.parametrize("block", [1, 1000, 10**9])
def test_questions_swept_a_block_at_a_time_score_as_the_definitions(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full set's questions are swept a block at a time (bounded memory): with blocks of one
    question's worth of entries, of a few questions, and of all of them, every question's
    scores are the definitions' (``_direct``), so no block boundary loses or mixes a row."""
    from chunkmark.metrics import span_metrics

    # a block is counted in entries (targets x spans a row, here at most 3 x 41): one row a
    # block, a few rows a block, every row in one block
    monkeypatch.setattr(span_metrics, "SWEEP_BLOCK", block)
    rng = np.random.default_rng(5)
    chunks = [(0, s, s + int(rng.integers(1, 30))) for s in range(0, 400, 13)]
    chunks += [(1, s, s + 20) for s in range(0, 200, 20)]
    excerpt_lists, docs = [], []
    for _ in range(40):
        starts = np.sort(
            rng.choice(np.arange(0, 380, 40), size=int(rng.integers(1, 4)), replace=False)
        )
        excerpt_lists.append([(int(a), int(a) + int(rng.integers(5, 35))) for a in starts])
        docs.append(0)
    ranking = np.stack([rng.permutation(len(chunks)) for _ in range(40)])
    q = QuestionTable.from_lists(docs, excerpt_lists)
    c = ChunkTable.from_rows(chunks)
    found = score_retrieval(q, c, ranking, 9)
    for i, excerpts in enumerate(excerpt_lists):
        recall, precision, iou, _, _ = _direct(excerpts, chunks, list(ranking[i]), 9, 0)
        assert found.recall[i] == pytest.approx(recall, abs=1e-12), i
        assert found.precision[i] == pytest.approx(precision, abs=1e-12), i
        assert found.iou[i] == pytest.approx(iou, abs=1e-12), i
        # the other pairwise steps: which counted chunks of the question's document overlap an
        # excerpt, which excerpts lie wholly inside one of them (the definitions, one by one)
        top = [chunks[j] for j in ranking[i][:9]]
        relevant = [d == 0 and any(max(s, a) < min(e, b) for a, b in excerpts) for d, s, e in top]
        first = next((r + 1 for r, yes in enumerate(relevant) if yes), None)
        assert found.hit[i] == (1.0 if first else 0.0), i
        assert found.mrr[i] == pytest.approx(1 / first if first else 0.0, abs=1e-12), i
        inside = sum(
            b - a for a, b in excerpts if any(d == 0 and s <= a and b <= e for d, s, e in top)
        )
        total = sum(b - a for a, b in excerpts)
        assert found.containment[i] == pytest.approx(inside / total, abs=1e-12), i
