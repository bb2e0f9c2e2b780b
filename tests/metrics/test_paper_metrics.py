"""The catalog's metrics from other evaluations (containment recall, failure, DCG, document
level precision/recall/F1, the oracle bound): hand-computed cases, then properties on random
spans, rankings and scoring options against the span metrics and direct implementations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.metrics import (
    METRICS,
    ChunkTable,
    ExcerptCopies,
    QuestionTable,
    ScoreInputs,
    Scoring,
    TokenUnits,
    find_excerpt_copies,
    score_chunking,
    score_chunking_with,
    score_retrieval,
    score_retrieval_with,
)

NEW = (
    "containment_recall", "failure", "dcg", "doc_precision", "doc_recall", "doc_f1",
    "oracle_recall",
)  # fmt: skip
SKY = "The sky is blue. Grass is green. The sky is blue."  # the sentence at 0 and at 33


def _inputs(
    q: QuestionTable,
    c: ChunkTable,
    ranking: np.ndarray,
    k: int | np.ndarray,
    *,
    last_end: np.ndarray | None = None,
    copies: ExcerptCopies | None = None,
    union: bool = False,
) -> ScoreInputs:
    """What a cell scoring in characters passes the catalog."""
    omega = score_chunking(q, c, copies=copies)
    scores = score_retrieval(
        q, c, ranking, k, omega.n_relevant, last_end=last_end, copies=copies, union=union
    )
    return ScoreInputs(q, c, ranking, scores.k, scores, omega)


def _values(inputs: ScoreInputs) -> dict[str, np.ndarray]:
    return METRICS.score(inputs)


# --- the catalog ------------------------------------------------------------------------------


def test_registered_after_the_reference_metrics_off_screen_with_intervals() -> None:
    names = METRICS.names()
    assert names[8:15] == list(NEW)
    assert {"containment_recall", "doc_recall", "oracle_recall"} <= set(METRICS.with_interval())
    assert not any(METRICS[n].on_screen for n in NEW)
    assert METRICS["failure"].direction == "lower"
    assert all(METRICS[n].direction == "higher" for n in NEW if n != "failure")
    assert all(len(METRICS[n].label) <= 9 for n in NEW)


# --- hand-computed ----------------------------------------------------------------------------

# Document 0: A = [0, 30), B = [30, 65), C = [65, 100); document 1: D = [0, 50).
CHUNKS = [(0, 0, 30), (0, 30, 65), (0, 65, 100), (1, 0, 50)]
A, B, C, D = range(4)


def _hand() -> dict[str, np.ndarray]:
    q = QuestionTable.from_lists(
        [0, 0, 1],
        [[(10, 20)], [(25, 40), (70, 75)], [(5, 10)]],
    )
    ranking = np.array([[A, D], [C, D], [A, B]], dtype=np.int64)
    return _values(_inputs(q, ChunkTable.from_rows(CHUNKS), ranking, 2))


def test_containment_recall_by_hand() -> None:
    v = _hand()
    # q0: [10, 20) lies in A. q1: [25, 40) straddles A and B, [70, 75) lies in C: 5 of 20
    # characters. q2: only chunks of the other document.
    np.testing.assert_allclose(v["containment_recall"], [1.0, 5 / 20, 0.0])
    np.testing.assert_allclose(v["recall"], [1.0, 5 / 20, 0.0])


def test_a_straddled_excerpt_counts_for_recall_not_containment() -> None:
    q = QuestionTable.from_lists([0], [[(25, 40)]])
    v = _values(_inputs(q, ChunkTable.from_rows(CHUNKS), np.array([[A, B]]), 2))
    assert v["recall"][0] == 1.0 and v["containment_recall"][0] == 0.0


def test_failure_by_hand() -> None:
    np.testing.assert_allclose(_hand()["failure"], [0.0, 0.75, 1.0])


def test_dcg_by_hand() -> None:
    v = _hand()
    # q0: A relevant at rank 1, D (other document) at rank 2: 1 / log2(2) = 1.
    # q1: C relevant at rank 1. q2: nothing relevant.
    np.testing.assert_allclose(v["dcg"], [1.0, 1.0, 0.0])
    q = QuestionTable.from_lists([0], [[(25, 40)]])
    v = _values(_inputs(q, ChunkTable.from_rows(CHUNKS), np.array([[C, B, A]]), 3))
    assert v["dcg"][0] == pytest.approx(1 / np.log2(3) + 1 / np.log2(4))
    # Two relevant chunks exist (A and B): the ideal puts them at ranks 1 and 2.
    assert v["ndcg"][0] == pytest.approx(v["dcg"][0] / (1 + 1 / np.log2(3)))


def test_document_level_by_hand() -> None:
    v = _hand()
    np.testing.assert_allclose(v["doc_precision"], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(v["doc_recall"], [1.0, 1.0, 0.0])
    np.testing.assert_allclose(v["doc_f1"], [2 / 3, 2 / 3, 0.0])


def test_document_level_counts_chunks_that_miss_the_excerpts() -> None:
    q = QuestionTable.from_lists([0], [[(10, 20)]])
    v = _values(_inputs(q, ChunkTable.from_rows(CHUNKS), np.array([[C, D, B]]), 3))
    assert v["hit"][0] == 0.0 and v["doc_recall"][0] == 1.0
    assert v["doc_precision"][0] == pytest.approx(2 / 3)
    assert v["doc_f1"][0] == pytest.approx(0.8)


def test_oracle_recall_by_hand() -> None:
    v = _hand()
    # q0: budget |A| + |D| = 80 holds A, which holds the excerpt.
    # q1: budget |C| + |D| = 85. Items (length, gain): A (30, 5), B (35, 10), C (35, 5); by gain
    # per character B, A, then 20 of C's 35 characters: 10 + 5 + 5 * 20 / 35 of 20.
    # q2: budget 65 takes D, which holds [5, 10).
    np.testing.assert_allclose(v["oracle_recall"], [1.0, (15 + 100 / 35) / 20, 1.0])
    # The best whole-chunk choice for q1 (A and B, or B and C) reaches 15 / 20: the relaxation
    # bounds it from above.
    assert v["oracle_recall"][1] > 15 / 20 >= v["recall"][1]


def test_oracle_budget_is_the_retrieved_chunks_whole() -> None:
    q = QuestionTable.from_lists([0], [[(40, 60)]])
    chunks = ChunkTable.from_rows(CHUNKS)
    # A alone: 30 characters, all spent on B's best part: 30 / 35 of B's 20.
    v = _values(_inputs(q, chunks, np.array([[A, B]]), 1))
    assert v["recall"][0] == 0.0
    assert v["oracle_recall"][0] == pytest.approx(30 / 35)
    # B cut to [30, 45): recall 5 / 20, while the budget stays B's whole 35 characters.
    cut = _values(_inputs(q, chunks, np.array([[B, A]]), 1, last_end=np.array([45])))
    assert cut["recall"][0] == pytest.approx(5 / 20)
    assert cut["containment_recall"][0] == 0.0
    assert cut["oracle_recall"][0] == 1.0


def test_a_cut_chunk_contains_only_what_it_keeps() -> None:
    q = QuestionTable.from_lists([0, 0], [[(10, 20)], [(10, 20)]])
    chunks = ChunkTable.from_rows(CHUNKS)
    ranking = np.array([[A], [A]], dtype=np.int64)
    v = _values(_inputs(q, chunks, ranking, 1, last_end=np.array([20, 19])))
    np.testing.assert_allclose(v["containment_recall"], [1.0, 0.0])
    np.testing.assert_allclose(v["recall"], [1.0, 0.9])


def test_text_mode_copies_count_as_contained_and_in_the_oracle() -> None:
    q = QuestionTable.from_lists([0], [[(0, 16)]])
    chunks = ChunkTable.from_rows([(0, 0, 16), (0, 16, 32), (0, 32, 49)])
    copies = find_excerpt_copies([SKY], q)
    ranking = np.array([[2, 1]], dtype=np.int64)  # " The sky is blue." first
    pos = _values(_inputs(q, chunks, ranking, 1))
    assert pos["containment_recall"][0] == 0.0 and pos["dcg"][0] == 0.0
    txt = _values(_inputs(q, chunks, ranking, 1, copies=copies))
    assert txt["recall"][0] == 1.0 and txt["containment_recall"][0] == 1.0
    assert txt["dcg"][0] == 1.0
    assert txt["oracle_recall"][0] == 1.0


def test_overlapping_excerpts_stay_within_recall() -> None:
    # Two copies of one span: recall's Σ|e| counts 20, the covered union 10.
    q = QuestionTable.from_lists([0], [[(10, 20), (10, 20)]])
    v = _values(_inputs(q, ChunkTable.from_rows(CHUNKS), np.array([[A]]), 1))
    assert v["recall"][0] == 0.5
    assert v["containment_recall"][0] == 0.5 and v["oracle_recall"][0] == 0.5


def test_no_chunk_counted() -> None:
    q = QuestionTable.from_lists([0], [[(10, 20)]])
    v = _values(_inputs(q, ChunkTable.from_rows(CHUNKS), np.array([[A]]), 0))
    assert [float(v[n][0]) for n in NEW] == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_tokens_unit_measures_budget_and_cover_in_tokens() -> None:
    # cl100k_base: alpha| beta| gamma| delta| epsilon. The excerpt "beta" is token 1; chunk 0
    # [0, 17) reaches into " delta", so it is tokens [0, 4); chunk 1 [17, 30) is tokens [3, 5).
    texts = ["alpha beta gamma delta epsilon"]
    q = QuestionTable.from_lists([0], [[(6, 10)]])
    chunks = ChunkTable.from_rows([(0, 0, 17), (0, 17, 30)])
    ranking = np.array([[1, 0]], dtype=np.int64)
    scoring = Scoring(unit="tokens")
    units = TokenUnits.from_texts(texts)
    omega = score_chunking_with(scoring, q, chunks, units=units)
    scores = score_retrieval_with(scoring, q, chunks, ranking, 1, omega.n_relevant, units=units)
    tq, tc = units.convert_questions(q), units.convert_chunks(chunks)
    assert tc.start.tolist() == [0, 3] and tc.end.tolist() == [4, 5]
    tokens = _values(ScoreInputs(tq, tc, ranking, scores.k, scores, omega))
    chars = _values(_inputs(q, chunks, ranking, 1))
    assert tokens["recall"][0] == chars["recall"][0] == 0.0
    assert tokens["oracle_recall"][0] == pytest.approx(2 / 4)  # 2 of chunk 0's 4 tokens
    assert chars["oracle_recall"][0] == pytest.approx(13 / 17)  # 13 of its 17 characters


# --- properties -------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> dict:
    """Two documents over a two-letter alphabet (so excerpt texts repeat), questions with
    possibly overlapping excerpts, possibly overlapping chunks of either document, a random
    ranking, one depth per question, and the scoring options."""
    texts = [draw(st.text("ab", min_size=10, max_size=40)) for _ in range(2)]
    docs, excerpts = [], []
    for _ in range(draw(st.integers(1, 4))):
        d = draw(st.integers(0, 1))
        n = len(texts[d])
        spans = []
        for _ in range(draw(st.integers(1, 3))):
            s = draw(st.integers(0, n - 1))
            spans.append((s, draw(st.integers(s + 1, n))))
        docs.append(d)
        excerpts.append(spans)
    chunk_rows = []
    for _ in range(draw(st.integers(1, 8))):
        d = draw(st.integers(0, 1))
        s = draw(st.integers(0, len(texts[d]) - 1))
        chunk_rows.append((d, s, draw(st.integers(s + 1, len(texts[d])))))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ranking = np.stack([rng.permutation(len(chunk_rows)) for _ in docs]).astype(np.int64)
    depth = np.array([draw(st.integers(0, len(chunk_rows))) for _ in docs], dtype=np.int64)
    q, c = QuestionTable.from_lists(docs, excerpts), ChunkTable.from_rows(chunk_rows)
    last_end = None
    if draw(st.booleans()):
        last = ranking[np.arange(len(docs)), np.maximum(depth - 1, 0)]
        keep = rng.random(len(docs))
        last_end = (c.start[last] + np.floor(keep * c.length[last])).astype(np.int64)
    copies = find_excerpt_copies(texts, q) if draw(st.booleans()) else None
    return {
        "q": q,
        "c": c,
        "ranking": ranking,
        "depth": depth,
        "last_end": last_end,
        "copies": copies,
        "union": draw(st.booleans()),
    }


def _case_inputs(case: dict) -> ScoreInputs:
    return _inputs(
        case["q"],
        case["c"],
        case["ranking"],
        case["depth"],
        last_end=case["last_end"],
        copies=case["copies"],
        union=case["union"],
    )


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_bounds_between_the_new_metrics_and_recall(case) -> None:
    s = _case_inputs(case)
    v = _values(s)
    recall = v["recall"]
    assert np.all(v["containment_recall"] <= recall + 1e-12)
    assert np.all(v["containment_recall"] >= 0)
    assert np.array_equal(v["failure"], 1.0 - recall)
    assert np.all(v["doc_recall"] >= (recall > 0))
    assert np.all(v["doc_recall"] >= v["hit"])
    assert np.all(v["oracle_recall"] >= recall - 1e-12)
    assert np.all(v["oracle_recall"] <= 1 + 1e-12)
    for name in ("doc_precision", "doc_recall", "doc_f1"):
        assert np.all((v[name] >= 0) & (v[name] <= 1 + 1e-12))


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_dcg_normalised_is_ndcg(case) -> None:
    s = _case_inputs(case)
    v = _values(s)
    discounts = 1 / np.log2(np.arange(s.ranking.shape[1]) + 2.0)
    ideal_n = np.minimum(s.depth, s.chunking.n_relevant)
    ideal = np.concatenate([[0.0], np.cumsum(discounts)])[ideal_n]
    assert np.all(v["dcg"] >= 0)
    assert np.all(v["dcg"] <= ideal + 1e-12)
    has_ideal = ideal > 0
    np.testing.assert_allclose(v["dcg"][has_ideal] / ideal[has_ideal], v["ndcg"][has_ideal])
    assert np.all(v["ndcg"][~has_ideal] == 0) and np.all(v["dcg"][~has_ideal] == 0)


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_against_direct_per_question_sets(case) -> None:
    """Containment, the document metrics and the oracle against character sets and, for the
    oracle, the exact best choice of whole chunks (every subset of the relevant chunks)."""
    s = _case_inputs(case)
    v = _values(s)
    q, c = case["q"], case["c"]
    for i in range(len(q)):
        d, k = int(q.doc[i]), int(s.depth[i])
        excerpts = [tuple(map(int, e)) for e, m in zip(q.excerpts[i], q.mask[i], strict=True) if m]
        total = sum(e - b for b, e in excerpts)
        top = [int(j) for j in case["ranking"][i, :k]]
        spans = [(int(c.doc[j]), int(c.start[j]), int(c.end[j])) for j in top]
        if case["last_end"] is not None and k:
            dd, b, _ = spans[-1]
            spans[-1] = (dd, b, int(case["last_end"][i]))
        own = [(b, e) for dd, b, e in spans if dd == d]
        found = [
            (b, e)
            for b, e in excerpts
            if any(x <= b and e <= y for x, y in own) or _copy_inside(case, i, (b, e), own)
        ]
        contained = set().union(*(range(b, e) for b, e in found))
        assert v["containment_recall"][i] == pytest.approx(len(contained) / total)
        n_same = sum(dd == d for dd, _, _ in spans)
        assert v["doc_recall"][i] == float(n_same > 0)
        assert v["doc_precision"][i] == pytest.approx(n_same / k if k else 0.0)
        budget = sum(int(c.length[j]) for j in top)
        assert v["oracle_recall"][i] >= _best_whole_choice(case, i, budget) / total - 1e-12


def _copy_inside(case: dict, i: int, excerpt: tuple[int, int], own: list) -> bool:
    copies = case["copies"]
    if copies is None:
        return False
    j = next(
        j
        for j, m in enumerate(case["q"].mask[i])
        if m and tuple(map(int, case["q"].excerpts[i, j])) == excerpt
    )
    spans = [
        tuple(map(int, copies.spans[i, x]))
        for x in range(copies.mask.shape[1])
        if copies.mask[i, x] and copies.owner[i, x] == j
    ]
    return any(x <= b and e <= y for b, e in spans for x, y in own if e > b)


def _best_whole_choice(case: dict, i: int, budget: int) -> int:
    """The most of ∪E any set of whole chunks of the question's document within ``budget``
    covers (positions, plus excerpts whose copy a chosen chunk wholly holds)."""
    q, c = case["q"], case["c"]
    d = int(q.doc[i])
    excerpts = [tuple(map(int, e)) for e, m in zip(q.excerpts[i], q.mask[i], strict=True) if m]
    union_e = set().union(*(range(b, e) for b, e in excerpts))
    mine = [j for j in range(len(c)) if int(c.doc[j]) == d]
    best = 0
    for r in range(len(mine) + 1):
        for chosen in itertools.combinations(mine, r):
            if sum(int(c.length[j]) for j in chosen) > budget:
                continue
            own = [(int(c.start[j]), int(c.end[j])) for j in chosen]
            cover = set().union(*(range(b, e) for b, e in own))
            for b, e in excerpts:
                if _copy_inside(case, i, (b, e), own):
                    cover |= set(range(b, e))
            best = max(best, len(cover & union_e))
    return best
