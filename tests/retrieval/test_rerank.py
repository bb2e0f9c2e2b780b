from __future__ import annotations

import sys

import numpy as np
import pytest

from chunkmark.errors import ChunkmarkError, MissingDependencyError
from chunkmark.retrieval import RETRIEVAL, FakeCrossEncoder, rank

TEXTS = [
    "apples and pears",
    "bananas",
    "apples bananas cherries",
    "cherries",
    "filler " * 200 + "apples bananas cherries",  # the fake reads only its first words
]
# Cosine with the query [1, 0] falls with the angle: the dense order is 4, 1, 3, 0, 2.
ANGLES = np.array([0.4, 0.2, 0.5, 0.3, 0.1])
VECTORS = np.stack([np.cos(ANGLES), np.sin(ANGLES)], axis=1).astype(np.float32)
QUERIES = ["Apples, bananas, cherries?", "pears"]
QUERY_VECTORS = np.array([[1.0, 0.0], [1.0, 0.0]], dtype=np.float32)


def test_fake_reorders_the_candidates_and_counts_truncation() -> None:
    ids, scores, stats = rank(
        "rerank(model='fake', candidates=4)", VECTORS, TEXTS, QUERY_VECTORS, QUERIES, 5
    )
    # Query 0: chunks 1, 3, 0 each hold a third of its words (ties: dense order), chunk 4's
    # words lie past the window (0); chunk 2 (all of them) is no candidate: it follows, unscored.
    # Query 1: only chunk 0 says "pears".
    assert ids.tolist() == [[1, 3, 0, 4, 2], [0, 4, 1, 3, 2]]
    third = np.float32(1 / 3)
    np.testing.assert_array_equal(scores[0], [third, third, third, 0, -np.inf])
    np.testing.assert_array_equal(scores[1], [1, 0, 0, 0, -np.inf])
    assert stats["pairs"] == 8 and stats["truncated"] == 2  # chunk 4, once per question
    assert stats["seconds"] >= 0 and stats["load_seconds"] >= 0


def test_shallower_rankings_are_prefixes() -> None:
    full, full_scores, _ = rank(
        "rerank(model='fake', candidates=4)", VECTORS, TEXTS, QUERY_VECTORS, QUERIES, 9
    )
    assert full.shape == (2, 5)
    for depth in range(5):
        ids, scores, _ = rank(
            "rerank(model='fake', candidates=4)", VECTORS, TEXTS, QUERY_VECTORS, QUERIES, depth
        )
        assert ids.tolist() == full[:, :depth].tolist()
        assert scores.tolist() == full_scores[:, :depth].tolist()


def test_max_length_is_the_fake_window() -> None:
    # A window of 4 words: the first query (3 words) sees one word of each chunk, a third of
    # its words for every chunk but the filler; "pears" sees three, all of chunk 0.
    ids, _, stats = rank(
        "rerank(model='fake', candidates=5, max_length=4)",
        VECTORS,
        TEXTS,
        QUERY_VECTORS,
        QUERIES,
        5,
    )
    assert ids.tolist() == [[1, 3, 0, 2, 4], [0, 4, 1, 3, 2]]
    assert stats["truncated"] == 3 + 1  # query words + chunk words > 4
    fake = FakeCrossEncoder(max_words=4)
    assert fake.truncated([("a b", "c d e"), ("a b", "c d")]) == 1
    assert fake.score([("a b", "b c a"), ("", "a")], 1).tolist() == [0.5, 0.0]


def test_no_chunks() -> None:
    empty = np.zeros((0, 2), dtype=np.float32)
    ids, scores, stats = rank("rerank(model='fake')", empty, [], QUERY_VECTORS, QUERIES, 5)
    assert ids.shape == scores.shape == (2, 0)
    assert stats["pairs"] == 0


def test_missing_sentence_transformers_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import raises ImportError
    setting, _ = RETRIEVAL.build("rerank(k=2)")  # building needs no model
    with pytest.raises(MissingDependencyError, match=r"pip install 'chunkmark\[st\]'") as info:
        rank(setting.ranker, VECTORS, TEXTS, QUERY_VECTORS, QUERIES, 2)
    assert isinstance(info.value, ChunkmarkError)
