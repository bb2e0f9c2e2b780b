from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.errors import SpecError
from chunkmark.retrieval import (
    RETRIEVAL,
    RETRIEVERS,
    RankContext,
    RetrievalSetting,
    Selection,
)
from chunkmark.tokenizers import count_tokens

# Span texts and their cl100k tokens (checked below): "x🦜" is x + three byte-tokens of the emoji,
# "🦜🦜 parrot" starts with a token holding half an emoji.
TEXTS = ["The cat sat on the mat.", "one two three four", "hello world", "x🦜", "🦜🦜 parrot"]
TOKENS = [7, 4, 2, 4, 8]


def context(min_depth: list[int] | None = None, texts: list[str] = TEXTS) -> RankContext:
    return RankContext(
        chunk_tokens=np.array(count_tokens(texts, "cl100k_base"), dtype=np.int64),
        span_texts=texts,
        min_depth=np.array(min_depth or [0] * 3, dtype=np.int64),
    )


def build(spec: str) -> RetrievalSetting:
    setting, _ = RETRIEVAL.build(spec)
    return setting


def select(spec: str, ranking: list[list[int]], ctx: RankContext, scores=None) -> Selection:
    ids = np.array(ranking, dtype=np.int64)
    values = np.zeros(ids.shape, np.float32) if scores is None else np.array(scores, np.float32)
    return build(spec).select(ids, values, ctx)


def as_lists(selection: Selection) -> tuple[list[int], list[int], list[int]]:
    return selection.depth.tolist(), selection.last_chars.tolist(), selection.tokens.tolist()


def test_fixture_token_counts() -> None:
    assert count_tokens(TEXTS, "cl100k_base") == TOKENS


def test_top_k() -> None:
    ctx = context()
    ranking = [[0, 1, 2, 3, 4], [2, 4, 0, 1, 3], [3, 2, 1, 0, 4]]
    assert as_lists(select("top_k(k=2)", ranking, ctx)) == (
        [2, 2, 2],
        [18, 9, 11],  # full span of the second chunk
        [7 + 4, 2 + 8, 4 + 2],
    )
    setting = build("top_k(k=10)")
    assert (setting.depth(ctx), setting.k_label) == (5, "10")
    assert as_lists(select("top_k(k=10)", ranking, ctx))[0] == [5, 5, 5]
    assert setting.ranker == RETRIEVERS.resolve("exact()")


def test_top_k_min() -> None:
    ctx = context(min_depth=[0, 3, 1])
    setting = build("top_k(k='min')")
    assert (setting.depth(ctx), setting.k_label) == (3, "min")
    selection = select("top_k(k='min')", [[0, 1, 2], [2, 4, 0], [3, 2, 1]], ctx)
    assert as_lists(selection) == ([0, 3, 1], [0, 23, 2], [0, 2 + 8 + 7, 4])


def test_threshold() -> None:
    ctx = context()
    ranking = [[0, 1, 2], [2, 4, 0], [3, 2, 1]]
    scores = [[0.9, 0.6, 0.55], [0.4, 0.3, 0.2], [0.7, 0.3, 0.8]]
    selection = select("threshold(min_similarity=0.5, max_k=2)", ranking, ctx, scores)
    # max_k caps the first; the second has nothing above; the third stops at its first miss.
    assert as_lists(selection) == ([2, 0, 1], [18, 0, 2], [11, 0, 4])
    setting = build("threshold(min_similarity=0.5, max_k=2)")
    assert (setting.depth(ctx), setting.k_label) == (2, "")


@pytest.mark.parametrize(
    ("budget", "ranking", "expected"),
    [
        (6, [2, 1, 0, 3, 4], (2, 18, 6)),  # 2 + 4 tokens: the budget exactly met, nothing cut
        (6, [1, 0, 2, 3, 4], (2, 7, 6)),  # 4 + 2 of "The cat sat...": "The cat"
        (3, [0, 1, 2, 3, 4], (1, 11, 3)),  # smaller than the first chunk: "The cat sat"
        (4, [2, 3, 0, 1, 4], (2, 1, 4)),  # 2 + "x" and one byte-token of the emoji: "x"
        (1, [4, 0, 1, 2, 3], (0, 0, 0)),  # half an emoji keeps no character: nothing added
        (3, [4, 0, 1, 2, 3], (1, 1, 3)),  # the first emoji, whole
        (7, [4, 0, 1, 2, 3], (1, 6, 7)),  # "🦜🦜 par"
        (100, [4, 0, 1, 2, 3], (5, 2, 25)),  # everything fits
    ],
)
def test_token_budget(budget: int, ranking: list[int], expected: tuple[int, int, int]) -> None:
    ctx = context(min_depth=[0])
    selection = select(f"token_budget(tokens={budget})", [ranking], ctx)
    assert tuple(x[0] for x in as_lists(selection)) == expected
    assert selection.depth[0] <= build(f"token_budget(tokens={budget})").depth(ctx)


def test_token_budget_depth_bound() -> None:
    ctx = context()  # tokens sorted: 2, 4, 4, 7, 8
    depths = {b: build(f"token_budget(tokens={b})").depth(ctx) for b in (1, 2, 3, 6, 7, 17, 18, 99)}
    assert depths == {1: 1, 2: 1, 3: 2, 6: 2, 7: 3, 17: 4, 18: 5, 99: 5}
    assert build("token_budget()").k_label == ""


def test_zero_token_chunks_count_while_budget_remains() -> None:
    ctx = context(texts=["", "one two", "", "three"])
    selection = select("token_budget(tokens=2)", [[0, 1, 2, 3]], ctx)
    assert as_lists(selection) == ([2], [7], [2])  # budget met after "one two": "" not added
    selection = select("token_budget(tokens=3)", [[0, 1, 2, 3]], ctx)
    assert as_lists(selection) == ([4], [5], [3])
    # Both empty chunks, "three" and a cut "one two" fit in some order: [0, 2, 3, 1].
    assert build("token_budget(tokens=2)").depth(ctx) == 4
    assert as_lists(select("token_budget(tokens=2)", [[0, 2, 3, 1]], ctx)) == ([4], [3], [2])


def test_no_chunks() -> None:
    ctx = context(texts=[])
    for spec in ("top_k()", "top_k(k='min')", "token_budget()", "threshold()"):
        setting = build(spec)
        assert setting.depth(ctx) == 0
        selection = setting.select(np.zeros((3, 0), np.int64), np.zeros((3, 0), np.float32), ctx)
        assert as_lists(selection) == ([0] * 3, [0] * 3, [0] * 3)


def test_a_ranking_shallower_than_depth_is_refused() -> None:
    with pytest.raises(ValueError, match="needs 3"):
        select("top_k(k=3)", [[0, 1]], context())


@pytest.mark.parametrize(
    "spec",
    [
        "top_k(k=0)",
        "top_k(k=-1)",
        "top_k(k='max')",
        "top_k(k=2.5)",
        "token_budget(tokens=-5)",
        "token_budget(tokens=0)",
        "threshold(max_k=0)",
        "threshold(min_similarity=float)",
        "bm25(k=0)",
        "bm25(k1=-1)",
        "bm25(b=1.5)",
        "bm25(method='okapi')",
        "rerank(k=60, candidates=50)",
        "rerank(candidates=0)",
        "rerank(batch_size=0)",
        "rerank(max_length=0)",
    ],
)
def test_bad_settings(spec: str) -> None:
    with pytest.raises(SpecError):
        RETRIEVAL.build(spec)


def test_canonical_specs_and_rankers() -> None:
    assert str(RETRIEVAL.resolve("top_k")) == "top_k(k=5)"
    assert str(RETRIEVAL.resolve("top_k(k='min')")) == "top_k(k='min')"
    bm25 = build("bm25(k=3, method='atire', b=0.5)")
    assert (bm25.ranker, bm25.k_label) == (RETRIEVERS.resolve("bm25(method='atire', b=0.5)"), "3")
    rerank = build("rerank(k='min', model='fake', candidates=10)")
    assert rerank.ranker == RETRIEVERS.resolve("rerank(model='fake', candidates=10)")
    assert build("token_budget()").ranker == build("threshold()").ranker == build("top_k()").ranker


words = st.sampled_from(["a", "cat", " dog", "🦜", "é", "鹦鹉", "parrot", " ", "\n", "123"])
texts = st.lists(st.lists(words, max_size=12).map("".join), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), span_texts=texts, budget=st.integers(1, 40))
def test_selection_never_deeper_than_depth(
    data: st.DataObject, span_texts: list[str], budget: int
) -> None:
    n = len(span_texts)
    rows = data.draw(st.lists(st.permutations(range(n)), min_size=1, max_size=4))
    ranking = np.array(rows, dtype=np.int64)
    scores = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n)), np.float32)
    scores = np.tile(-np.sort(-scores), (len(rows), 1))
    min_depth = data.draw(st.lists(st.integers(0, n), min_size=len(rows), max_size=len(rows)))
    ctx = context(min_depth, span_texts)
    specs = [
        f"token_budget(tokens={budget})",
        f"top_k(k={1 + budget % 5})",
        "top_k(k='min')",
        f"threshold(min_similarity={budget / 40 - 0.5}, max_k={1 + budget % 7})",
    ]
    for spec in specs:
        setting = build(spec)
        depth = setting.depth(ctx)
        assert 0 <= depth <= n
        selection = setting.select(ranking[:, :depth], scores[:, :depth], ctx)
        assert (selection.depth <= depth).all()
        spans = ctx.span_lengths[ranking[np.arange(len(rows)), np.maximum(selection.depth - 1, 0)]]
        assert ((selection.last_chars <= spans) & (selection.last_chars >= 0)).all()
        assert (selection.last_chars[selection.depth == 0] == 0).all()
    budget_setting = build(f"token_budget(tokens={budget})")
    selection = budget_setting.select(ranking, scores, ctx)
    assert (selection.tokens <= budget).all()
    for q, row in enumerate(ranking):
        whole = ctx.chunk_tokens[row[: max(selection.depth[q] - 1, 0)]].sum()
        assert whole <= selection.tokens[q]
    bigger = build(f"token_budget(tokens={budget + 3})").select(ranking, scores, ctx)
    assert (bigger.depth >= selection.depth).all() and (bigger.tokens >= selection.tokens).all()


def test_token_budget_and_threshold_read_any_ranker() -> None:
    budget = build("token_budget(tokens=64, ranker='bm25(k1=1.2)')")
    assert budget.ranker == RETRIEVERS.resolve("bm25(k1=1.2)")
    threshold = build("threshold(min_similarity=0.1, ranker='hybrid')")
    assert threshold.ranker == RETRIEVERS.resolve("hybrid()")
    canonical = str(RETRIEVAL.resolve("token_budget(ranker='bm25')"))
    assert canonical == (
        "token_budget(tokens=1024, ranker=\"bm25(method='lucene', k1=1.5, b=0.75)\")"
    )
    assert RETRIEVAL.resolve(canonical) == RETRIEVAL.resolve("token_budget(ranker='bm25')")


def test_the_dense_ranker_is_left_out_of_canonical_specs() -> None:
    for spec in ("token_budget(tokens=64, ranker='exact')", "token_budget(tokens=64)"):
        assert str(RETRIEVAL.resolve(spec)) == "token_budget(tokens=64)"
    assert str(RETRIEVAL.resolve("threshold(ranker='exact()')")) == (
        "threshold(min_similarity=0.5, max_k=20)"
    )
    with pytest.raises(SpecError, match="not a ranker spec"):
        RETRIEVAL.resolve("threshold(ranker='nope')")


def test_reads_dense_asks_the_setting() -> None:
    from chunkmark.retrieval.settings import reads_dense

    dense = ["top_k(k=5)", "token_budget(tokens=10)", "threshold()"]
    other = ["bm25(k=5)", "hybrid", "rerank(model='fake')", "faiss", "token_budget(ranker='bm25')"]
    assert [reads_dense(s) for s in dense] == [True] * 3
    assert [reads_dense(s) for s in other] == [False] * 5
    assert not reads_dense("no_such_setting(k=1)")


@pytest.mark.parametrize("name", ["bm25", "hybrid", "rerank", "faiss"])
def test_a_ranker_declares_its_setting(name: str) -> None:
    ranker = RETRIEVERS.entry(name).parameters()
    setting = RETRIEVAL.entry(name).parameters()
    assert [p.name for p in setting] == ["k", *(p.name for p in ranker)]
    assert [p.default for p in setting[1:]] == [p.default for p in ranker]
    assert [p.annotation for p in setting[1:]] == [p.annotation for p in ranker]
    doc = RETRIEVAL.entry(name).factory.__doc__ or ""
    assert all(f"    {p.name}: " in doc for p in setting)
