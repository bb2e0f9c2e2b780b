from __future__ import annotations

import numpy as np
import pytest

from chunkmark.errors import SpecError
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS, RankContext, rank, ranker_stats
from chunkmark.tokenizers import count_tokens

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64")

RANKERS = [
    "exact()",
    "bm25()",
    "bm25(method='bm25+', k1=0.9, b=0.4)",
    "hybrid(candidates=6)",
    "hybrid(fusion='convex', alpha=0.7, candidates=4)",
    "rerank(model='fake', candidates=5)",
]


def corpus(seed: int) -> tuple[np.ndarray, list[str], np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    words = ["red", "green", "blue", "cyan", "gold", "gray"]
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 6))) for _ in range(15)]
    # Few distinct vectors: many equal cosines, so the tie rule matters.
    vectors = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=15)]
    queries = [" ".join(rng.choice([*words, "black"], size=2)) for _ in range(4)]
    query_vectors = rng.normal(size=(4, 4)).astype(np.float32)
    query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
    return vectors, texts, query_vectors, queries


@pytest.mark.parametrize("spec", RANKERS)
@pytest.mark.parametrize("seed", range(3))
def test_every_ranker_is_deterministic_full_length_and_prefix_stable(spec: str, seed: int) -> None:
    vectors, texts, query_vectors, queries = corpus(seed)
    full, full_scores, _ = rank(spec, vectors, texts, query_vectors, queries, 100)
    assert full.shape == full_scores.shape == (4, 15)
    assert full.dtype == np.int64 and full_scores.dtype == np.float32
    assert all(sorted(row) == list(range(15)) for row in full.tolist())
    for depth in (0, 1, 4, 9, 15):
        ids, scores, _ = rank(spec, vectors, texts, query_vectors, queries, depth)
        assert ids.tolist() == full[:, :depth].tolist()
        assert scores.tolist() == full_scores[:, :depth].tolist()


def test_exact_ties_follow_chunk_order() -> None:
    vectors, texts, query_vectors, queries = corpus(0)
    ids, scores, stats = rank("exact()", vectors, texts, query_vectors, queries, 15)
    for row, values in zip(ids, scores, strict=True):
        assert sorted(zip(-values, row, strict=True)) == list(zip(-values, row, strict=True))
    assert stats == {}


def test_settings_grouped_by_ranker_read_one_ranking() -> None:
    vectors, texts, query_vectors, queries = corpus(1)
    ctx = RankContext(
        chunk_tokens=np.array(count_tokens(texts, "cl100k_base"), dtype=np.int64),
        span_texts=texts,
        min_depth=np.array([0, 2, 5, 1], dtype=np.int64),
    )
    specs = ["top_k(k=3)", "top_k(k='min')", "token_budget(tokens=7)", "bm25(k=2)", "bm25(k=4)"]
    settings = [RETRIEVAL.build(s)[0] for s in specs]
    groups: dict[str, list[int]] = {}
    for i, setting in enumerate(settings):
        groups.setdefault(str(setting.ranker), []).append(i)
    assert list(groups) == ["exact(block_rows=1024)", "bm25(method='lucene', k1=1.5, b=0.75)"]
    for ranker, members in groups.items():
        depth = max(settings[i].depth(ctx) for i in members)
        ranking, scores, _ = rank(ranker, vectors, texts, query_vectors, queries, depth)
        for i in members:
            alone, alone_scores, _ = rank(
                ranker, vectors, texts, query_vectors, queries, settings[i].depth(ctx)
            )
            shared = settings[i].select(ranking, scores, ctx)
            own = settings[i].select(alone, alone_scores, ctx)
            assert shared.depth.tolist() == own.depth.tolist()
            assert shared.last_chars.tolist() == own.last_chars.tolist()
            assert shared.tokens.tolist() == own.tokens.tolist()


def test_rank_checks_its_inputs() -> None:
    vectors, texts, query_vectors, queries = corpus(0)
    with pytest.raises(ValueError, match="depth"):
        rank("exact()", vectors, texts, query_vectors, queries, -1)
    with pytest.raises(ValueError, match="chunk texts"):
        rank("bm25()", vectors, texts[:3], query_vectors, queries, 3)
    with pytest.raises(ValueError, match="query texts"):
        rank("bm25()", vectors, texts, query_vectors, queries[:1], 3)
    with pytest.raises(SpecError, match="Unknown retriever"):
        rank("nope()", vectors, texts, query_vectors, queries, 3)


def test_registries_list_rankers_and_settings() -> None:
    assert [e.name for e in RETRIEVERS] == [
        "bm25",
        "exact",
        "faiss",
        "hybrid",
        "in_document",
        "rerank",
        "store",
    ]
    assert [e.name for e in RETRIEVAL] == [
        "bm25",
        "faiss",
        "hybrid",
        "in_document",
        "rerank",
        "store",
        "threshold",
        "token_budget",
        "top_k",
    ]
    assert ranker_stats(object()) == {}
