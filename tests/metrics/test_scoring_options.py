"""The named scoring options in characters: text-matched excerpts, the union denominator and a
cut last chunk. Tiny hand-computed cases, then properties against the defaults and against a
direct character-set implementation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.metrics import (
    ChunkTable,
    ExcerptCopies,
    QuestionTable,
    RetrievalScores,
    Scoring,
    count_duplicated_excerpts,
    find_excerpt_copies,
    score_chunking,
    score_chunking_with,
    score_retrieval,
    score_retrieval_with,
)

FIELDS = ("k", "recall", "precision", "iou", "f1", "hit", "mrr", "ndcg", "containment", "dcg")
SKY = "The sky is blue. Grass is green. The sky is blue."  # the sentence at 0 and at 33


def _rank(*rows: list[int]) -> np.ndarray:
    return np.array(rows, dtype=np.int64)


def _same(a: RetrievalScores, b: RetrievalScores) -> bool:
    return all(
        getattr(a, f).dtype == getattr(b, f).dtype and np.array_equal(getattr(a, f), getattr(b, f))
        for f in FIELDS
    )


# --- Scoring ------------------------------------------------------------------------------------


def test_scoring_defaults_columns_and_validation() -> None:
    s = Scoring()
    assert s.columns() == {"excerpts": "position", "unit": "chars", "denominator": "sum"}
    other = Scoring(excerpts="text", unit="tokens", denominator="union")
    assert Scoring(**other.columns()) == other
    assert other.uses_copies and other.uses_tokens and not (s.uses_copies or s.uses_tokens)
    with pytest.raises(ValueError, match=r"unit='words' is unknown: use one of 'chars', 'tokens'"):
        Scoring(unit="words")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="denominator"):
        Scoring(denominator="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="excerpts"):
        Scoring(excerpts="fuzzy")  # type: ignore[arg-type]


# --- excerpts="text" ----------------------------------------------------------------------------


def test_find_copies_of_a_repeated_sentence() -> None:
    q = QuestionTable.from_lists([0], [[(0, 16), (17, 32)]])
    copies = find_excerpt_copies([SKY], q)
    assert SKY[33:49] == SKY[0:16] == "The sky is blue."
    assert copies.mask.sum() == 1
    assert copies.spans[0, 0].tolist() == [33, 49] and copies.owner[0, 0] == 0
    assert count_duplicated_excerpts(copies).tolist() == [1]


def test_chunk_holding_only_the_copy_scores_in_text_mode_only() -> None:
    q = QuestionTable.from_lists([0], [[(0, 16)]])
    chunks = ChunkTable.from_rows([(0, 0, 16), (0, 16, 32), (0, 32, 49)])
    copies = find_excerpt_copies([SKY], q)
    ranking = _rank([2, 1])  # the chunk " The sky is blue." (17 characters) first

    pos = score_retrieval(q, chunks, ranking, 1)
    assert (pos.recall[0], pos.precision[0], pos.iou[0], pos.hit[0]) == (0, 0, 0, 0)

    text = score_retrieval(q, chunks, ranking, 1, copies=copies)
    assert text.recall[0] == 1.0
    assert text.precision[0] == pytest.approx(16 / 17)  # the copy adds no retrieved length
    assert text.iou[0] == pytest.approx(16 / 17)
    assert text.hit[0] == 1.0 and text.mrr[0] == 1.0

    # A chunk holding only part of the copy does not count.
    partial = ChunkTable.from_rows([(0, 0, 16), (0, 16, 32), (0, 35, 49)])
    cut = score_retrieval(q, partial, ranking, 1, copies=copies)
    assert (cut.recall[0], cut.hit[0]) == (0, 0)


def test_text_mode_relevance_counts_for_ndcg_ideal() -> None:
    q = QuestionTable.from_lists([0], [[(0, 16)]])
    chunks = ChunkTable.from_rows([(0, 0, 16), (0, 16, 32), (0, 32, 49)])
    copies = find_excerpt_copies([SKY], q)
    assert score_chunking(q, chunks).n_relevant.tolist() == [1]
    omega = score_chunking(q, chunks, copies=copies)
    assert omega.n_relevant.tolist() == [2]  # the excerpt's chunk and the copy's
    assert omega.precision_omega[0] == score_chunking(q, chunks).precision_omega[0]
    both = score_retrieval(q, chunks, _rank([2, 0, 1]), 3, omega.n_relevant, copies=copies)
    assert both.ndcg[0] == pytest.approx(1.0)  # the two relevant chunks ranked first
    assert both.recall[0] == 1.0


def test_a_copy_overlapping_the_excerpt_itself() -> None:
    text = "xx aaaa yy"  # "aaa" at 3 and, overlapping it, at 4
    q = QuestionTable.from_lists([0], [[(3, 6)]])
    copies = find_excerpt_copies([text], q)
    assert copies.spans[0][copies.mask[0]].tolist() == [[4, 7]]
    chunks = ChunkTable.from_rows([(0, 4, 7)])
    pos = score_retrieval(q, chunks, _rank([0]), 1)
    assert pos.recall[0] == pytest.approx(2 / 3)  # [4, 6) of [3, 6)
    txt = score_retrieval(q, chunks, _rank([0]), 1, copies=copies)
    assert txt.recall[0] == 1.0 and txt.precision[0] == 1.0 and txt.iou[0] == 1.0


def test_empty_excerpts_never_have_copies() -> None:
    q = QuestionTable.from_lists([0], [[(5, 5), (0, 2)]])
    copies = find_excerpt_copies(["ab ab ab"], q)
    assert copies.owner[copies.mask].tolist() == [1, 1]  # "ab" at 3 and 6; none for (5, 5)
    assert count_duplicated_excerpts(copies).tolist() == [1]


def test_copies_of_another_document_do_not_count() -> None:
    texts = ["alpha beta", "beta alpha beta"]
    q = QuestionTable.from_lists([0], [[(6, 10)]])  # "beta" in document 0: no copy there
    copies = find_excerpt_copies(texts, q)
    assert not copies.mask.any()
    chunks = ChunkTable.from_rows([(1, 0, 15)])
    s = score_retrieval(q, chunks, _rank([0]), 1, copies=copies)
    assert s.recall[0] == 0 and s.hit[0] == 0


def test_copy_rows_must_match_the_questions() -> None:
    q = QuestionTable.from_lists([0, 0], [[(0, 3)], [(4, 6)]])
    copies = ExcerptCopies.from_lists([[(1, 4, 0)]])
    with pytest.raises(ValueError, match="1 rows for 2 questions"):
        score_retrieval(q, ChunkTable.from_rows([(0, 0, 9)]), _rank([0], [0]), 1, copies=copies)


# --- denominator="union" ------------------------------------------------------------------------


def test_union_denominator_with_overlapping_chunks_and_another_document() -> None:
    # Excerpt [10, 20); A=[0,15) and B=[5,20) overlap; C=[0,10) is of document 1.
    q = QuestionTable.from_lists([0], [[(10, 20)]])
    chunks = ChunkTable.from_rows([(0, 0, 15), (0, 5, 20), (1, 0, 10)])
    ranking = _rank([0, 1, 2])
    total = score_retrieval(q, chunks, ranking, 3)
    assert total.precision[0] == pytest.approx(10 / 40)
    assert total.iou[0] == pytest.approx(10 / 40)
    union = score_retrieval(q, chunks, ranking, 3, union=True)
    # |∪R| = |[0,20)| in document 0 + |[0,10)| in document 1 (not folded into document 0's).
    assert union.precision[0] == pytest.approx(10 / 30)
    assert union.iou[0] == pytest.approx(10 / (30 + 10 - 10))
    assert union.recall[0] == total.recall[0] == 1.0
    via = score_retrieval_with(Scoring(denominator="union"), q, chunks, ranking, 3)
    assert _same(via, union)


def test_union_iou_counts_missed_excerpt_once() -> None:
    # Two overlapping excerpts [0,10) and [5,15): |∪E| = 15; the chunk [0,5) covers 5.
    q = QuestionTable.from_lists([0], [[(0, 10), (5, 15)]])
    chunks = ChunkTable.from_rows([(0, 0, 5)])
    s = score_retrieval(q, chunks, _rank([0]), 1, union=True)
    assert s.iou[0] == pytest.approx(5 / 15)  # |∪E ∩ ∪R| / |∪E ∪ ∪R|


# --- last_end -----------------------------------------------------------------------------------


def test_cut_last_chunk() -> None:
    q = QuestionTable.from_lists([0, 0], [[(50, 60)], [(50, 60)]])
    chunks = ChunkTable.from_rows([(0, 0, 40), (0, 40, 100)])
    ranking = _rank([0, 1], [1, 0])
    full = score_retrieval(q, chunks, ranking, np.array([2, 1]))
    assert full.recall.tolist() == [1.0, 1.0]
    cut = score_retrieval(q, chunks, ranking, np.array([2, 1]), last_end=np.array([55, 45]))
    # Question 0: chunks [0,40) and [40,55). Question 1: only [40,45), which misses the excerpt.
    assert cut.recall[0] == pytest.approx(0.5)
    assert cut.precision[0] == pytest.approx(5 / 55)
    assert cut.iou[0] == pytest.approx(5 / (55 + 5))
    assert cut.recall[1] == 0 and cut.hit[1] == 0 and cut.precision[1] == 0
    assert cut.iou[1] == 0
    # The uncut end gives the uncut scores back; a question with k = 0 ignores its value.
    same = score_retrieval(q, chunks, ranking, np.array([2, 0]), last_end=np.array([100, -7]))
    assert _same(same, score_retrieval(q, chunks, ranking, np.array([2, 0])))


def test_cut_must_shorten_the_last_chunk() -> None:
    q = QuestionTable.from_lists([0], [[(50, 60)]])
    chunks = ChunkTable.from_rows([(0, 0, 40), (0, 40, 100)])
    with pytest.raises(ValueError, match="outside its last counted chunk"):
        score_retrieval(q, chunks, _rank([0, 1]), 2, last_end=np.array([101]))
    with pytest.raises(ValueError, match="outside its last counted chunk"):
        score_retrieval(q, chunks, _rank([0, 1]), 2, last_end=np.array([39]))
    with pytest.raises(ValueError, match="one end per question"):
        score_retrieval(q, chunks, _rank([0, 1]), 2, last_end=np.array([50, 50]))


def test_with_functions_need_their_inputs() -> None:
    q = QuestionTable.from_lists([0], [[(0, 3)]])
    c = ChunkTable.from_rows([(0, 0, 5)])
    with pytest.raises(ValueError, match="find_excerpt_copies"):
        score_retrieval_with(Scoring(excerpts="text"), q, c, _rank([0]), 1)
    with pytest.raises(ValueError, match=r"TokenUnits\.from_texts"):
        score_chunking_with(Scoring(unit="tokens"), q, c)


# --- properties ---------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[str], QuestionTable, ChunkTable, np.ndarray, int]:
    """Two documents over a two-letter alphabet (so excerpt texts repeat), questions with
    non-overlapping excerpts, random chunks of either document, a random ranking."""
    texts = [draw(st.text("ab", min_size=20, max_size=60)) for _ in range(2)]
    docs, excerpts = [], []
    for _ in range(draw(st.integers(1, 4))):
        d = draw(st.integers(0, 1))
        cuts = sorted(draw(st.sets(st.integers(0, len(texts[d])), min_size=2, max_size=6)))
        pairs = list(zip(cuts[::2], cuts[1::2], strict=False))
        docs.append(d)
        excerpts.append([p for p in pairs if draw(st.booleans())] or pairs[:1])
    chunk_rows = []
    for _ in range(draw(st.integers(1, 10))):
        d = draw(st.integers(0, 1))
        s = draw(st.integers(0, len(texts[d]) - 1))
        chunk_rows.append((d, s, draw(st.integers(s + 1, len(texts[d])))))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    ranking = np.stack([rng.permutation(len(chunk_rows)) for _ in docs])
    k = draw(st.integers(1, len(chunk_rows)))
    return (
        texts,
        QuestionTable.from_lists(docs, excerpts),
        ChunkTable.from_rows(chunk_rows),
        ranking,
        k,
    )


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_defaults_are_bit_identical(case) -> None:
    texts, q, c, ranking, k = case
    omega = score_chunking(q, c)
    plain = score_retrieval(q, c, ranking, k, omega.n_relevant)
    explicit = score_retrieval(
        q, c, ranking, k, omega.n_relevant, last_end=None, copies=None, union=False
    )
    via = score_retrieval_with(Scoring(), q, c, ranking, k, omega.n_relevant)
    no_copies = ExcerptCopies.from_lists([[] for _ in range(len(q))])
    empty = score_retrieval(q, c, ranking, k, omega.n_relevant, copies=no_copies)
    uncut_end = c.end[ranking[:, k - 1]]
    uncut = score_retrieval(q, c, ranking, k, omega.n_relevant, last_end=uncut_end)
    for other in (explicit, via, empty, uncut):
        assert _same(plain, other)
    via_omega = score_chunking_with(Scoring(), q, c, copies=find_excerpt_copies(texts, q))
    for f in ("precision_omega", "n_touching", "n_relevant"):
        assert np.array_equal(getattr(omega, f), getattr(via_omega, f))


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_union_precision_and_iou_at_least_sum(case) -> None:
    _, q, c, ranking, k = case
    total = score_retrieval(q, c, ranking, k)
    union = score_retrieval(q, c, ranking, k, union=True)
    assert np.all(union.precision >= total.precision - 1e-12)
    assert np.all(union.iou >= total.iou - 1e-12)
    assert np.array_equal(union.recall, total.recall)
    assert np.all((union.precision <= 1 + 1e-12) & (union.iou <= 1 + 1e-12))


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_text_mode_at_least_position_mode(case) -> None:
    texts, q, c, ranking, k = case
    copies = find_excerpt_copies(texts, q)
    omega = score_chunking(q, c, copies=copies)
    assert np.all(omega.n_relevant >= score_chunking(q, c).n_relevant)
    pos = score_retrieval(q, c, ranking, k)
    txt = score_retrieval(q, c, ranking, k, omega.n_relevant, copies=copies)
    assert np.all(txt.recall >= pos.recall - 1e-12)
    assert np.all(txt.hit >= pos.hit) and np.all(txt.mrr >= pos.mrr)
    assert np.all((txt.ndcg >= 0) & (txt.ndcg <= 1 + 1e-12))


def _direct_text(texts, q, c, ranking, k, qi):
    """Text mode for one question, from character sets and a naive search for copies."""
    d = int(q.doc[qi])
    excerpts = [tuple(map(int, e)) for e, m in zip(q.excerpts[qi], q.mask[qi], strict=True) if m]
    top = [tuple(map(int, (c.doc[i], c.start[i], c.end[i]))) for i in ranking[qi, :k]]
    own = [(s, e) for dd, s, e in top if dd == d]
    covered = set().union(*(range(s, e) for s, e in own))
    for s, e in excerpts:
        needle = texts[d][s:e]
        copies = [p for p in range(len(texts[d])) if p != s and texts[d].startswith(needle, p)]
        if any(a <= p and p + len(needle) <= b for p in copies for a, b in own):
            covered |= set(range(s, e))
    ex_chars = set().union(*(range(s, e) for s, e in excerpts))
    overlap = len(ex_chars & covered)
    r_sum = sum(e - s for _, s, e in top)
    unused = sum(len(set(range(s, e)) - covered) for s, e in excerpts)
    ex_sum = sum(e - s for s, e in excerpts)
    return overlap / ex_sum, overlap / r_sum, overlap / (r_sum + unused)


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_text_mode_equals_direct(case) -> None:
    texts, q, c, ranking, k = case
    txt = score_retrieval(q, c, ranking, k, copies=find_excerpt_copies(texts, q))
    for qi in range(len(q)):
        recall, precision, iou = _direct_text(texts, q, c, ranking, k, qi)
        assert txt.recall[qi] == pytest.approx(recall, abs=1e-12)
        assert txt.precision[qi] == pytest.approx(precision, abs=1e-12)
        assert txt.iou[qi] == pytest.approx(iou, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(case=cases(), data=st.data())
def test_cut_equals_a_shorter_chunk(case, data) -> None:
    """Cutting the last counted chunk scores like a table where that chunk is shorter."""
    _, q, c, ranking, k = case
    last = ranking[:, k - 1]
    ends = np.array([data.draw(st.integers(int(c.start[i]), int(c.end[i]))) for i in last])
    cut = score_retrieval(q, c, ranking, k, last_end=ends, union=True)
    for qi in range(len(q)):
        # A table of its own per question: the last chunk replaced by its prefix.
        extra = ChunkTable(
            np.append(c.doc, c.doc[last[qi]]), np.append(c.start, c.start[last[qi]]),
            np.append(c.end, ends[qi]),
        )  # fmt: skip
        row = ranking[qi : qi + 1].copy()
        row[0, k - 1] = len(c)
        one = QuestionTable.from_padded(
            q.doc[qi : qi + 1], q.excerpts[qi : qi + 1], q.mask[qi : qi + 1]
        )
        ref = score_retrieval(one, extra, row, k, union=True)
        for f in ("recall", "precision", "iou", "hit", "mrr"):
            assert getattr(cut, f)[qi] == getattr(ref, f)[0]


def test_one_scoring_serves_the_run_and_the_report() -> None:
    from chunkmark.report import settings as report_settings

    assert report_settings.Scoring is Scoring
    other = Scoring(excerpts="text", unit="tokens", denominator="union")
    assert Scoring.from_key(other.key) == other and other.key == "text/tokens/union"
    assert Scoring.from_row({"unit": "tokens", "excerpts": ""}) == Scoring(unit="tokens")
    assert Scoring().is_default and not other.is_default
    assert sorted([other, Scoring()]) == [Scoring(), other]
    with pytest.raises(ValueError):
        Scoring.of("position", "words", "sum")
