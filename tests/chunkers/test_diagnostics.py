"""Boundary diagnostics: hand-computed excerpt cuts, fragments, lengths, boundary F1, Pk and
WindowDiff (against nltk itself)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from chunkmark.chunkers import Chunk
from chunkmark.chunkers.diagnostics import (
    Distribution,
    boundary_agreement,
    chunk_boundaries,
    diagnose,
    excerpt_cover,
    match_boundaries,
    pk_windowdiff,
    segmentation,
    window_size,
)
from chunkmark.datasets import Dataset, Document, Question
from chunkmark.errors import ChunkingError, DatasetError
from chunkmark.spans import Span


def question(qid: str, doc_id: str, *spans: tuple[int, int]) -> Question:
    return Question(qid, f"question {qid}?", doc_id, tuple(Span(s, e) for s, e in spans))


@pytest.fixture
def dataset() -> Dataset:
    documents = (Document("a", "x" * 100), Document("b", "y" * 50))
    questions = (
        question("inside", "a", (5, 20)),
        question("straddles", "a", (25, 35)),
        question("everything", "a", (0, 100)),
        question("exact", "a", (30, 60)),
        question("gap and whole", "b", (0, 5), (10, 40)),
    )
    return Dataset("hand", documents, questions)


CHUNKS = [Chunk("a", 0, 30), Chunk("a", 30, 60), Chunk("a", 60, 100), Chunk("b", 10, 40)]


def test_cut_share_and_fragments_by_hand(dataset: Dataset) -> None:
    d = diagnose(dataset, CHUNKS, encoding=None)
    e = d.excerpts
    # fragments: [5,20) 1; [25,35) 2; [0,100) 3; [30,60) 1 (touching chunks hold none of it);
    # [0,5) of b lies in a gap: 0; [10,40) of b: 1.
    assert e.excerpts == 6
    assert e.cut == 3  # straddles, everything, the gap
    assert e.cut_share == pytest.approx(0.5)
    assert e.fragment_counts == {0: 1, 1: 3, 2: 1, 3: 1}
    assert e.fragments.mean == pytest.approx(8 / 6)
    assert e.fragments.max == 3
    assert e.share_with(1) == pytest.approx(0.5)
    assert e.share_with(2, or_more=True) == pytest.approx(2 / 6)
    assert d.chunks == 4
    assert d.chars.mean == pytest.approx(32.5)
    assert (d.chars.min, d.chars.max, d.chars.p50) == (30, 40, 30)
    assert d.tokens is None


def test_tuples_work_like_chunks(dataset: Dataset) -> None:
    triples = [(c.doc_id, c.start, c.end) for c in CHUNKS]
    assert diagnose(dataset, triples, encoding=None) == diagnose(dataset, CHUNKS, encoding=None)


def test_overlapping_chunks_contain_what_one_window_holds() -> None:
    starts = np.array([0, 25, 50])
    ends = np.array([50, 75, 100])
    contained, fragments = excerpt_cover(
        starts, ends, np.array([40, 20, 0]), np.array([60, 80, 10])
    )
    assert contained.tolist() == [True, False, True]
    assert fragments.tolist() == [3, 3, 1]


def test_no_chunks_cut_everything() -> None:
    contained, fragments = excerpt_cover(
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.array([0]), np.array([4])
    )
    assert contained.tolist() == [False] and fragments.tolist() == [0]


def test_excerpt_cover_matches_a_loop() -> None:
    rng = np.random.default_rng(0)
    starts = rng.integers(0, 500, 60)
    ends = starts + rng.integers(1, 80, 60)
    e_starts = rng.integers(0, 500, 200)
    e_ends = e_starts + rng.integers(1, 60, 200)
    contained, fragments = excerpt_cover(starts, ends, e_starts, e_ends)
    for i, (s, e) in enumerate(zip(e_starts, e_ends, strict=True)):
        assert contained[i] == any(cs <= s and e <= ce for cs, ce in zip(starts, ends, strict=True))
        assert fragments[i] == sum(cs < e and s < ce for cs, ce in zip(starts, ends, strict=True))


def test_token_lengths_count_the_span_text() -> None:
    data = Dataset("t", (Document("d", "one two three four five six"),), ())
    d = diagnose(data, [Chunk("d", 0, 7, embed_text="a much longer text"), Chunk("d", 8, 27)])
    assert d.tokens is not None
    assert (d.tokens.min, d.tokens.max) == (2, 4)
    given_counts = diagnose(data, [Chunk("d", 0, 7)], tokens=[9])
    assert given_counts.tokens == Distribution.of([9])


def test_distribution_percentiles() -> None:
    d = Distribution.of(np.arange(101))
    assert (d.p5, d.p50, d.p95, d.min, d.max, d.mean) == (5, 50, 95, 0, 100, 50)
    assert Distribution.of([]).count == 0


def test_bad_chunks_name_the_problem(dataset: Dataset) -> None:
    with pytest.raises(DatasetError, match="'zzz'"):
        diagnose(dataset, [("zzz", 0, 1)], encoding=None)
    with pytest.raises(ChunkingError, match=r"\[90, 120\)"):
        diagnose(dataset, [("b", 90, 120)], encoding=None)


def test_to_dict_is_json_ready(dataset: Dataset) -> None:
    out = diagnose(dataset, CHUNKS, encoding=None).to_dict()
    assert out["excerpts"]["cut_share"] == pytest.approx(0.5)
    assert out["excerpts"]["fragment_counts"] == {"0": 1, "1": 3, "2": 1, "3": 1}
    assert out["tokens"] is None


# --- boundaries --------------------------------------------------------------------------------


def test_boundary_matching_by_hand() -> None:
    true, predicted = [100, 200, 300], [95, 110, 260, 500]
    assert match_boundaries(true, predicted, 10) == 1  # 100-95
    assert match_boundaries(true, predicted, 50) == 2  # 100-95, 300-260
    assert match_boundaries(true, predicted, 0) == 0
    assert match_boundaries([100, 105], [103], 10) == 1  # one-to-one
    assert match_boundaries([], predicted, 10) == 0


def maximum_matching(true: list[int], predicted: list[int], tolerance: int) -> int:
    if not true or not predicted:
        return 0
    pairs = np.abs(np.subtract.outer(true, predicted)) <= tolerance
    graph = csr_matrix(pairs.astype(np.int8))
    return int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 300), max_size=12),
    st.lists(st.integers(0, 300), max_size=12),
    st.integers(0, 40),
)
def test_greedy_matching_is_maximum(true: list[int], predicted: list[int], tolerance: int) -> None:
    assert match_boundaries(true, predicted, tolerance) == maximum_matching(
        sorted(true), sorted(predicted), tolerance
    )


def test_chunk_boundaries_skip_each_documents_first_start() -> None:
    chunks = [("a", 0, 10), ("a", 10, 30), ("a", 5, 20), ("b", 3, 9), ("b", 9, 12)]
    found = chunk_boundaries(chunks)
    assert {k: v.tolist() for k, v in found.items()} == {"a": [5, 10], "b": [9]}


def test_segmentation_marks_the_unit_of_each_boundary() -> None:
    assert segmentation([300, 700], 1000, 100) == "0001000100"
    assert segmentation([0, 301, 350, 1000], 1000, 100) == "0001000000"  # 0 and the end ignored
    assert segmentation([], 50, 100) == "0"
    with pytest.raises(ValueError, match="unit"):
        segmentation([1], 10, 0)


def test_pk_and_windowdiff_by_hand_and_against_nltk() -> None:
    from nltk.metrics.segmentation import pk, windowdiff

    ref, hyp = segmentation([300, 700], 1000, 100), segmentation([350, 500], 1000, 100)
    assert (ref, hyp) == ("0001000100", "0001010000")
    assert window_size(ref) == 2  # half the mean segment length, as nltk's pk rounds it
    # windows of 2 units at 0..8: ref has a boundary in 2, 3, 6, 7; hyp in 2, 3, 4, 5.
    assert pk_windowdiff(ref, hyp) == pytest.approx((4 / 9, 4 / 9))
    assert pk_windowdiff(ref, hyp)[0] == pytest.approx(pk(ref, hyp))
    assert pk_windowdiff(ref, hyp, 3) == pytest.approx((pk(ref, hyp, 3), windowdiff(ref, hyp, 3)))
    assert pk_windowdiff(ref, ref) == (0.0, 0.0)


def test_boundary_agreement_pools_f1_and_averages_pk() -> None:
    data = Dataset("s", (Document("a", "a" * 1000), Document("b", "b" * 400)), ())
    true = {"a": [300, 700], "b": [200]}
    chunks = [("a", 0, 350), ("a", 350, 500), ("a", 500, 1000), ("b", 0, 195), ("b", 195, 400)]
    result = boundary_agreement(data, chunks, true, tolerance=60, unit=100)
    assert (result.true_boundaries, result.predicted_boundaries, result.matched) == (3, 3, 2)
    assert result.precision == pytest.approx(2 / 3) and result.recall == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(2 / 3)
    pk_a, wd_a = pk_windowdiff("0001000100", "0001010000")
    pk_b, wd_b = pk_windowdiff("0010", "0100")
    assert result.pk == pytest.approx((pk_a + pk_b) / 2)
    assert result.windowdiff == pytest.approx((wd_a + wd_b) / 2)
    assert result.to_dict()["f1"] == pytest.approx(2 / 3)


def test_boundary_agreement_rejects_unknown_documents() -> None:
    data = Dataset("s", (Document("a", "a" * 10),), ())
    with pytest.raises(DatasetError, match="'nope'"):
        boundary_agreement(data, [("a", 0, 10)], {"nope": [3]})


def test_no_predicted_boundaries_scores_zero() -> None:
    data = Dataset("s", (Document("a", "a" * 1000),), ())
    result = boundary_agreement(data, [("a", 0, 1000)], {"a": [500]}, tolerance=10)
    assert (result.precision, result.recall, result.f1) == (0.0, 0.0, 0.0)
