"""Relation metrics on a hand-computed tiny set, and their invariants (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.metrics import bootstrap_ci
from chunkmark.relations.metrics import (
    RELATION_METRICS,
    Chunking,
    ChunkPairs,
    Gold,
    MatchedRecords,
    match_records,
    metric_columns,
    metric_row,
    score_chunking,
    score_retrieval,
    support_containment,
)
from chunkmark.relations.model import Extraction
from relations.run_helpers import D1, D2, RELATIONS, ScriptedExtractor, tiny_set

RS = tiny_set()
GOLD = Gold.of(RS)
# d1 split at its sentences, d2 whole.
SENTENCES_D1 = Chunking.of(["d1", "d1", "d2"], [0, 24, 0], [23, 42, 39], [10, 10, 10])
SCRIPT = {
    D1[0:23]: [("Alice", "Bob", "knows"), ("Alice", "Paris", "")],
    D1[24:42]: [("Acme", "Bob", "employer"), ("Bob", "Zed", "x")],
    D2: [("Carol", "Rome", "P551"), ("Dave", "Dave", "x")],
}


def _records(chunking: Chunking = SENTENCES_D1, **costs: int) -> MatchedRecords:
    from chunkmark.relations.runner import chunk_inputs

    extractions = ScriptedExtractor(SCRIPT, **costs).extract(chunk_inputs(RS, chunking))
    return match_records(RS, chunking, extractions)


def test_gold_pairs_and_question_pairs() -> None:
    assert GOLD.n_pairs == 5
    pairs = [
        {tuple(sorted(GOLD.pairs[p])) for p in GOLD.question_pairs[lo:hi]}
        for lo, hi in zip(GOLD.question_ptr[:-1], GOLD.question_ptr[1:], strict=True)
    ]
    # r3's support spans both sentences of d1, so it joins the pairs of r1's and r2's questions
    assert pairs == [
        {("e1", "e2"), ("e1", "e4")},
        {("e2", "e4"), ("e1", "e4")},
        {("e1", "e2"), ("e2", "e4"), ("e1", "e4")},
        {("e5", "e6")},
        {("e6", "e7")},
    ]


def test_support_containment_by_hand() -> None:
    # r3 needs both sentences of d1 in one chunk; every other support is one sentence
    assert support_containment(GOLD, SENTENCES_D1).tolist() == [1, 1, 0, 1, 1]
    whole = Chunking.of(["d1", "d2"], [0, 0], [42, 39])
    assert support_containment(GOLD, whole).tolist() == [1] * 5
    # a chunk must hold the support: [1, 23) misses r1's first character; d2 unchunked
    shifted = Chunking.of(["d1", "d1"], [1, 20], [23, 42])
    assert support_containment(GOLD, shifted).tolist() == [0, 1, 0, 0, 0]
    assert support_containment(GOLD, Chunking.of([], [], [])).tolist() == [0] * 5


def test_matching_counts_by_hand() -> None:
    records = _records(calls=1, input_tokens=7, output_tokens=3)
    assert records.per_chunk[0] == (("e1", "e2", "knows"), ("e1", "e3", ""))
    assert records.per_chunk[1] == (("e4", "e2", "employer"),)
    assert records.per_chunk[2] == (("e5", "e6", "p551"),)
    assert (records.records, records.names, records.unmatched_names) == (6, 12, 1)
    assert records.same_entity_records == 1
    assert (records.calls, records.input_tokens, records.output_tokens) == (3, 21, 9)


def test_costs_count_each_distinct_text_once() -> None:
    twice = Chunking.of(["d1", "d1", "d2"], [0, 0, 0], [23, 23, 39])
    records = _records(twice, calls=1)
    assert records.calls == 2 and records.distinct_texts == 2
    assert records.per_chunk[0] == records.per_chunk[1]


def test_extraction_metrics_by_hand() -> None:
    row = metric_row("chunking", score_chunking(GOLD, SENTENCES_D1, _records()))
    expected = {
        "support_containment_mean": 4 / 5,
        # found {e1,e2}, {e2,e4}, {e5,e6} of 5 gold pairs; {e1,e3} is not gold
        "recall_mean": 3 / 5,
        "precision_mean": 3 / 4,
        "f1": 2 * 0.75 * 0.6 / 1.35,
        # (e4, e2) is the wrong way round
        "directed_recall_mean": 2 / 5,
        "directed_precision_mean": 2 / 4,
        # 'knows' is r1's label, 'P551' r4's property id
        "typed_recall_mean": 2 / 5,
        "typed_precision_mean": 2 / 4,
        "recall_contained_mean": 3 / 4,
        "recall_split_mean": 0.0,
        "recall_same_sentence_mean": 3 / 3,
        "recall_cross_sentence_mean": 0 / 2,
        "relations_per_1k_tokens": 6 / 30 * 1000,
        "unmatched_name_rate": 1 / 12,
    }
    for name, value in expected.items():
        assert row[name] == pytest.approx(value), name
    low, high = bootstrap_ci({"x": np.array([1.0, 1, 0, 1, 1])})["x"]
    assert (row["support_containment_ci_low"], row["support_containment_ci_high"]) == (low, high)
    assert set(row) == set(metric_columns("chunking"))


def test_chunking_row_without_extractor_has_containment_only() -> None:
    row = metric_row("chunking", score_chunking(GOLD, SENTENCES_D1), extractor=False)
    assert set(row) == {
        "support_containment_mean",
        "support_containment_ci_low",
        "support_containment_ci_high",
    }


RANKING = np.array([[0, 2], [0, 1], [1, 0], [2, 0], [0, 1]])


@pytest.mark.parametrize(
    ("k", "recall", "precision", "support"),
    [
        (1, [1 / 2, 0, 1 / 3, 1, 0], [1 / 2, 0, 1, 1, 0], [1 / 2, 0, 1 / 3, 1, 0]),
        (2, [1 / 2, 1 / 2, 2 / 3, 1, 0], [1 / 3, 1 / 3, 2 / 3, 1 / 3, 0], [1 / 2, 1, 1, 1, 0]),
    ],
)
def test_retrieval_metrics_by_hand(
    k: int, recall: list[float], precision: list[float], support: list[float]
) -> None:
    pairs = ChunkPairs.of(GOLD, _records())
    depth = np.full(5, k)
    scores = score_retrieval(GOLD, SENTENCES_D1, RANKING, depth, pairs)
    np.testing.assert_allclose(scores.rel_recall, recall)
    np.testing.assert_allclose(scores.rel_precision, precision)
    np.testing.assert_allclose(scores.support_recall, support)
    row = metric_row("retrieval", scores)
    assert row["rel_recall_mean"] == pytest.approx(np.mean(recall))
    assert row["support_recall_ci_low"] <= row["support_recall_mean"]


def test_support_recall_needs_no_extractor_and_spans_adjacent_chunks() -> None:
    # r3's support is covered only by both d1 chunks together
    ranking = np.array([[0, 1]] * 5)
    at_two = score_retrieval(GOLD, SENTENCES_D1, ranking, np.full(5, 2))
    assert at_two.support_recall[2] == 1.0 and at_two.rel_recall.tolist() == [0.0] * 5
    at_one = score_retrieval(GOLD, SENTENCES_D1, ranking, np.full(5, 1))
    assert at_one.support_recall[2] == pytest.approx(1 / 3)
    padded = score_retrieval(GOLD, SENTENCES_D1, np.array([[0, -1]] * 5), np.full(5, 2))
    assert padded.support_recall[2] == pytest.approx(1 / 3)


def test_catalog_documents_every_metric() -> None:
    for m in RELATION_METRICS.values():
        assert m.description and m.label, m.name
    assert "lower bound" in RELATION_METRICS["precision"].description
    assert RELATION_METRICS["f1"].columns() == ["f1"]


# --- properties ---------------------------------------------------------------------------

NAMES = ["Alice", "Bob", "Paris", "Acme", "Carol", "Rome", "Dave", "Zed", "the bob"]


@st.composite
def chunkings(draw: st.DrawFn) -> Chunking:
    docs, starts, ends = [], [], []
    for doc, text in (("d1", D1), ("d2", D2)):
        cuts = sorted(set(draw(st.lists(st.integers(1, len(text) - 1), max_size=4))))
        bounds = [0, *cuts, len(text)]
        overlap = draw(st.integers(0, 5))
        for lo, hi in itertools.pairwise(bounds):
            docs.append(doc)
            starts.append(max(0, lo - overlap))
            ends.append(hi)
    return Chunking.of(docs, starts, ends, [3] * len(docs))


records_strategy = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(["", "knows"])),
    max_size=4,
)


def _random_records(
    chunking: Chunking, draw_lists: list[list[tuple[str, str, str]]]
) -> MatchedRecords:
    from chunkmark.relations.model import ExtractedRelation

    extractions = [
        Extraction(relations=tuple(ExtractedRelation(*r) for r in rows)) for rows in draw_lists
    ]
    return match_records(RS, chunking, extractions)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_extraction_metrics_stay_in_unit_interval(data: st.DataObject) -> None:
    chunking = data.draw(chunkings())
    lists = [data.draw(records_strategy) for _ in range(len(chunking))]
    row = metric_row("chunking", score_chunking(GOLD, chunking, _random_records(chunking, lists)))
    for name, value in row.items():
        if name != "relations_per_1k_tokens" and value == value:  # NaN: no units
            assert 0.0 <= value <= 1.0, name


@settings(max_examples=60, deadline=None)
@given(chunkings())
def test_whole_document_chunks_contain_every_support(chunking: Chunking) -> None:
    whole = Chunking.of(
        [*chunking.doc_ids, "d1", "d2"],
        [*chunking.start.tolist(), 0, 0],
        [*chunking.end.tolist(), len(D1), len(D2)],
    )
    assert support_containment(GOLD, whole).tolist() == [1.0] * len(RELATIONS)


def _slow_support(chunking: Chunking, ranking: np.ndarray, k: int) -> list[float]:
    """SupportRecall@k by the definition: character sets."""
    out = []
    for qi, q in enumerate(RS.dataset.questions):
        chars = set()
        for c in ranking[qi, :k]:
            if c >= 0 and chunking.doc_ids[c] == q.doc_id:
                chars |= set(range(int(chunking.start[c]), int(chunking.end[c])))
        lo, hi = GOLD.question_ptr[qi], GOLD.question_ptr[qi + 1]
        hits = 0
        for pid in GOLD.question_pairs[lo:hi]:
            pair = GOLD.pairs[pid]
            hits += any(
                all(set(range(s.start, s.end)) <= chars for s in r.support)
                for r in RELATIONS
                if r.pair == pair
            )
        out.append(hits / (hi - lo))
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_support_recall_matches_definition_and_grows_with_k(data: st.DataObject) -> None:
    chunking = data.draw(chunkings())
    n = len(chunking)
    depth = data.draw(st.integers(1, n))
    ranking = np.array([data.draw(st.permutations(range(n)))[:depth] for _ in RS.dataset.questions])
    previous = np.zeros(len(RELATIONS))
    for k in range(1, depth + 1):
        scores = score_retrieval(GOLD, chunking, ranking, np.full(len(RELATIONS), k))
        np.testing.assert_allclose(scores.support_recall, _slow_support(chunking, ranking, k))
        assert (scores.support_recall >= previous).all()
        previous = scores.support_recall


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_rel_recall_matches_sets_and_is_bounded(data: st.DataObject) -> None:
    chunking = data.draw(chunkings())
    n = len(chunking)
    lists = [data.draw(records_strategy) for _ in range(n)]
    records = _random_records(chunking, lists)
    pairs = ChunkPairs.of(GOLD, records)
    ranking = np.array([data.draw(st.permutations(range(n))) for _ in RS.dataset.questions])
    k = data.draw(st.integers(1, n))
    scores = score_retrieval(GOLD, chunking, ranking, np.full(len(RELATIONS), k), pairs)
    for qi in range(len(RELATIONS)):
        got = {frozenset(r[:2]) for c in ranking[qi, :k] for r in records.per_chunk[c]}
        lo, hi = GOLD.question_ptr[qi], GOLD.question_ptr[qi + 1]
        wanted = {GOLD.pairs[p] for p in GOLD.question_pairs[lo:hi]}
        assert scores.rel_recall[qi] == pytest.approx(len(got & wanted) / len(wanted))
        expected_p = len(got & wanted) / len(got) if got else 0.0
        assert scores.rel_precision[qi] == pytest.approx(expected_p)


def test_relation_metrics_are_entries_of_the_one_catalog_type() -> None:
    from chunkmark.metrics import METRICS, Metric, MetricCatalog

    assert isinstance(RELATION_METRICS, MetricCatalog) and type(METRICS) is type(RELATION_METRICS)
    assert all(isinstance(m, Metric) for m in RELATION_METRICS)
    precision = RELATION_METRICS["precision"]
    assert (precision.unit, precision.family, precision.interval) == ("extracted", "chunking", True)
    assert not RELATION_METRICS["support_recall"].extractor
    assert precision.columns() == ["precision_mean", "precision_ci_low", "precision_ci_high"]
    assert METRICS["recall"].columns() == [
        "recall_mean",
        "recall_std",
        "recall_ci_low",
        "recall_ci_high",
    ]
    assert METRICS["recall"].family is None and "recall" in RELATION_METRICS.names()
