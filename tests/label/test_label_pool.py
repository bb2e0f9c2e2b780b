"""The pool: reciprocal-rank fusion into merged passages, rankings, literal search."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.datasets import Document
from chunkmark.label.pool import OPENING, RRF_K, Hit, Passage, Pool, coverage, fuse, place_opening


def test_overlapping_chunks_of_two_lists_become_one_passage() -> None:
    rankings = {
        "a": [Hit("d", 0, 10), Hit("d", 20, 30)],
        "b": [Hit("d", 5, 15), Hit("d", 40, 50)],
    }
    passages = fuse(rankings)
    assert [(p.start, p.end) for p in passages] == [(0, 15), (20, 30), (40, 50)]
    assert passages[0].score == 2 / (RRF_K + 1)  # one first place from each list
    assert passages[0].sources == ("a", "b")
    assert passages[1].score == passages[2].score == 1 / (RRF_K + 2)


def test_a_list_counts_once_per_passage() -> None:
    rankings = {"a": [Hit("d", 0, 10), Hit("d", 5, 15)], "b": [Hit("d", 100, 110)]}
    first = fuse(rankings)[0]
    assert (first.start, first.end) == (0, 15)
    assert first.score == 1 / (RRF_K + 1)  # not 1/61 + 1/62: the list's best chunk only


def test_a_passage_grows_no_longer_than_max_chars() -> None:
    rankings = {"a": [Hit("d", 0, 100)], "b": [Hit("d", 50, 400)]}
    (only,) = fuse(rankings, max_chars=200)
    assert (only.start, only.end) == (0, 100)  # the union (400) would pass 200
    assert only.score == 2 / (RRF_K + 1)  # the chunk still adds its list's score
    (grown,) = fuse(rankings, max_chars=400)
    assert (grown.start, grown.end) == (0, 400)


def test_a_smaller_rrf_k_weighs_rank_more() -> None:
    rankings = {"a": [Hit("d", 0, 10), Hit("d", 20, 30)], "b": [Hit("d", 20, 30)]}
    assert fuse(rankings, rrf_k=1)[0].start == 20  # 1/3 + 1/2 beats 1/2
    assert fuse(rankings, rrf_k=60)[0].start == 20


spans = st.tuples(st.sampled_from(["x", "y"]), st.integers(0, 300), st.integers(1, 120))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), st.lists(spans, max_size=12), max_size=4))
def test_no_character_is_suggested_twice(raw: dict[str, list[tuple[str, int, int]]]) -> None:
    rankings = {k: [Hit(d, s, s + n) for d, s, n in v] for k, v in raw.items()}
    passages = fuse(rankings, max_chars=150)
    chunks = [h for hits in rankings.values() for h in hits]
    longest = max((h.end - h.start for h in chunks), default=0)
    for i, p in enumerate(passages):
        assert p.start < p.end
        assert p.end - p.start <= max(150, longest)  # merging stops at max_chars
        # every character shown lies in a chunk some list ranked
        for c in range(p.start, p.end):
            assert any(h.doc_id == p.doc_id and h.start <= c < h.end for h in chunks)
        for q in passages[i + 1 :]:
            assert q.score <= p.score
            assert p.doc_id != q.doc_id or p.end <= q.start or q.end <= p.start
        assert set(p.sources) <= set(rankings)
    ranked_chars = {(h.doc_id, c) for h in chunks for c in range(h.start, h.end)}
    assert bool(passages) == bool(ranked_chars)


def _corpus() -> list[Document]:
    filler = "The committee met on Tuesday. Minutes were read and approved. " * 20
    return [
        Document("alpha", filler + "The zanzibarite valve must be greased every spring. " + filler),
        Document("beta", filler + "A second document about greased hinges and doors. " + filler),
        Document("gamma", "Unrelated notes on gardening and seeds. " * 30),
    ]


def test_the_first_suggestion_holds_the_only_sentence_that_answers() -> None:
    docs = _corpus()
    pool = Pool(docs, None, chunkers=("sentences(n=1)", "fixed_tokens(size=64)"))
    assert pool.lists == ["sentences(n=1)/bm25", "fixed_tokens(size=64)/bm25"]
    first = pool.suggest("When is the zanzibarite valve greased?")[0]
    answer = docs[0].text.index("The zanzibarite valve")
    assert first.doc_id == "alpha" and first.start <= answer < first.end
    assert len(pool.suggest("greased", doc_id="beta")) >= 1
    assert {p.doc_id for p in pool.suggest("greased", doc_id="beta")} == {"beta"}
    assert pool.suggest("   ") == []


def test_dense_and_hybrid_lists_join_with_an_embedder() -> None:
    from chunkmark.embedders import EMBEDDERS

    embedder, _ = EMBEDDERS.build("fake()")
    pool = Pool(_corpus(), embedder, chunkers=("sentences(n=2)",))
    assert pool.lists == ["sentences(n=2)/bm25", "sentences(n=2)/dense", "sentences(n=2)/hybrid"]
    rankings = pool.rankings("zanzibarite valve", "gamma")
    assert all(h.doc_id == "gamma" for hits in rankings.values() for h in hits)
    assert all(len(hits) == min(pool.depth, len(hits)) for hits in rankings.values())


def test_search_ignores_case_and_spacing_and_reports_exact_offsets() -> None:
    docs = [
        Document("a", "Line one.\nThe  Quick\nbrown fox; the quick brown fox."),
        Document("b", "quick brown"),
    ]
    pool = Pool(docs, None, chunkers=("sentences(n=1)",))
    hits = pool.search("quick brown")
    assert [(h.doc_id, docs[0 if h.doc_id == "a" else 1].text[h.start : h.end]) for h in hits] == [
        ("a", "Quick\nbrown"),
        ("a", "quick brown"),
        ("b", "quick brown"),
    ]
    assert [h.doc_id for h in pool.search("quick brown", "b")] == ["b"]
    assert len(pool.search("quick", limit=2)) == 2
    assert pool.search("fox", words=True) and not pool.search("fo", words=True)


def test_coverage_counts_characters_of_the_evidence() -> None:
    assert coverage([(0, 10)], [(5, 20)]) == 0.5
    assert coverage([(0, 10), (20, 30)], [(0, 10)]) == 0.5
    assert coverage([(0, 10)], []) == 0.0
    assert coverage([(0, 10)], [(0, 4), (2, 6)]) == 0.6  # overlapping suggestions count once


def test_a_ranker_weight_scales_its_lists_contributions() -> None:
    rankings = {"c/bm25": [Hit("d", 0, 10)], "c/dense": [Hit("d", 20, 30)]}
    even = fuse(rankings)  # equal scores: by offset
    assert [p.start for p in even] == [0, 20]
    halved = fuse(rankings, weights={"bm25": 0.5})
    assert [p.start for p in halved] == [20, 0]
    assert halved[1].score == 0.5 / (RRF_K + 1)
    assert halved[0].score == 1 / (RRF_K + 1)  # a ranker not named weighs 1


def test_the_pool_suggests_with_its_own_rank_offset_and_weights() -> None:
    pool = Pool(_corpus(), None, chunkers=("sentences(n=1)",), rrf_k=4, weights={"bm25": 3.0})
    first = pool.suggest("zanzibarite valve", "alpha")[0]
    assert first.score == 3.0 / (4 + 1)  # one list, its first place, weighed 3
    assert pool.fuse(pool.rankings("zanzibarite valve", "alpha"))[0] == first


def test_a_shallower_pool_reads_the_first_lists_of_a_deeper_one() -> None:
    # benchmarks/label_pool.py --tune cuts a depth-20 pool's lists to 10 to stand for a
    # depth-10 pool: the hybrid list must fuse the same candidates at either depth
    from chunkmark.embedders import EMBEDDERS

    embedder, _ = EMBEDDERS.build("fake()")
    words = ["valve", "hinge", "spring", "door", "oil", "grease", "seal", "pump", "gear", "belt"]
    text = " ".join(
        f"Note {i}: the {words[i % 10]} and the {words[(i * 7) % 10]} need care."
        for i in range(300)
    )
    docs = [Document("d", text)]
    deep = Pool(docs, embedder, chunkers=("sentences(n=1)",), depth=20)
    shallow = Pool(docs, embedder, chunkers=("sentences(n=1)",), depth=10)
    for question in ("grease the valve", "door seal pump", "belt gear oil spring"):
        deeper = deep.rankings(question, "d")
        assert shallow.rankings(question, "d") == {k: v[:10] for k, v in deeper.items()}


def test_join_merges_chunks_within_its_gap_and_never_hides_one() -> None:
    rankings = {"a": [Hit("d", 0, 10)], "b": [Hit("d", 10, 20)], "c": [Hit("d", 25, 30)]}

    def spans(**settings: Any) -> list[tuple[int, int]]:
        return [(p.start, p.end) for p in fuse(rankings, **settings)]

    assert spans() == [(0, 10), (10, 20), (25, 30)]  # touching is not overlapping
    assert spans(join=0) == [(0, 20), (25, 30)]  # touching chunks join, a gap of 5 does not
    assert spans(join=5) == [(0, 30)]
    # a chunk the union would stretch past max_chars starts its own passage, shown
    assert spans(join=5, max_chars=25) == [(0, 20), (25, 30)]
    (joined,) = fuse(rankings, join=5)
    assert joined.score == 3 / (RRF_K + 1) and joined.sources == ("a", "b", "c")


def test_a_chunker_or_list_weight_multiplies_with_the_ranker_weight() -> None:
    rankings = {
        "long/bm25": [Hit("d", 0, 10)],
        "long/dense": [Hit("d", 20, 30)],
        "short/dense": [Hit("d", 40, 50)],
    }
    weights = {"dense": 0.5, "long": 3.0, "short/dense": 4.0}
    score = {p.start: p.score for p in fuse(rankings, weights=weights)}
    assert score == {
        0: 3.0 / (RRF_K + 1),  # chunker 3 x ranker 1
        20: 1.5 / (RRF_K + 1),  # chunker 3 x ranker 0.5
        40: 2.0 / (RRF_K + 1),  # ranker 0.5 x list 4
    }


def _passage(start: int, end: int, score: float, doc_id: str = "d") -> Passage:
    return Passage(doc_id, start, end, score, ("x/bm25",))


def test_the_opening_takes_its_place_and_the_later_passages_lose_what_it_shows() -> None:
    passages = [_passage(2000, 3000, 0.9), _passage(500, 1500, 0.8), _passage(4000, 4500, 0.7)]
    placed = place_opening(passages, "d", 1000, at=2)
    assert [(p.start, p.end) for p in placed] == [
        (2000, 3000),
        (0, 1000),
        (1000, 1500),
        (4000, 4500),
    ]
    assert placed[1].sources == (OPENING,)
    assert [p.score for p in placed] == [0.9, 0.8, 0.8, 0.7]  # best first still
    # past the end of the list it comes last; another document's passages keep their text
    last = place_opening([_passage(0, 50, 0.5, "e")], "d", 1000, at=10)
    assert [(p.doc_id, p.start, p.end, p.score) for p in last] == [
        ("e", 0, 50, 0.5),
        ("d", 0, 1000, 0.5),
    ]


def test_an_opening_better_suggestions_already_show_is_not_suggested_again() -> None:
    passages = [_passage(0, 900, 0.9), _passage(3000, 4000, 0.8)]
    assert place_opening(passages, "d", 1000, at=2) == passages  # 100 of 1000 left: below 1/5
    part = place_opening([_passage(0, 700, 0.9)], "d", 1000, at=2)
    assert [(p.start, p.end) for p in part] == [(0, 700), (700, 1000)]
    assert place_opening(passages, "d", 0, at=2) == passages


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcd"), st.lists(spans, max_size=12), max_size=4),
    st.integers(1, 200),
    st.integers(1, 12),
)
def test_no_character_is_suggested_twice_with_the_opening(
    raw: dict[str, list[tuple[str, int, int]]], length: int, at: int
) -> None:
    rankings = {k: [Hit(d, s, s + n) for d, s, n in v] for k, v in raw.items()}
    passages = place_opening(fuse(rankings, max_chars=150, join=3), "x", length, at)
    for i, p in enumerate(passages):
        assert p.start < p.end
        for q in passages[i + 1 :]:
            assert q.score <= p.score
            assert p.doc_id != q.doc_id or p.end <= q.start or q.end <= p.start
    opening = [p for p in passages if p.sources == (OPENING,)]
    assert len(opening) <= 1
    for p in opening:
        assert p.doc_id == "x" and 0 <= p.start < p.end <= length
        assert passages.index(p) <= at - 1


def test_the_pool_suggests_the_opening_of_the_question_s_document() -> None:
    docs = _corpus()
    pool = Pool(docs, None, chunkers=("sentences(n=1)",), opening=60, opening_at=2)
    within = pool.suggest("zanzibarite valve", "alpha")
    assert within[0].sources != (OPENING,)
    assert (within[1].doc_id, within[1].start, within[1].end) == ("alpha", 0, 60)
    across = pool.suggest("hinges and doors")  # across the corpus: the first one's document
    assert across[0].doc_id == "beta" and (across[1].doc_id, across[1].start) == ("beta", 0)
    assert OPENING not in {
        s
        for p in Pool(docs, None, ("sentences(n=1)",), opening=0).suggest(
            "zanzibarite valve", "alpha"
        )
        for s in p.sources
    }
    short = Pool([Document("s", "Tiny text here.")], None, ("sentences(n=1)",), opening=1000)
    assert all(p.end <= len("Tiny text here.") for p in short.suggest("tiny", "s"))
