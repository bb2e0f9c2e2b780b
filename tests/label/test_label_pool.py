"""The pool: reciprocal-rank fusion into merged passages, rankings, literal search."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.datasets import Document
from chunkmark.label.pool import RRF_K, Hit, Pool, coverage, fuse


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
