from __future__ import annotations

import math

import bm25s
import numpy as np
import pytest

from chunkmark.retrieval import RETRIEVERS, BM25Retriever
from chunkmark.retrieval.bm25 import tokenize

CORPUS = ["The cat sat.", "Dog, dog sat!", "bird", ""]
NO_VECTORS = np.zeros((0, 0), dtype=np.float32)


def search(retriever: BM25Retriever, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    return retriever.search(np.zeros((len(queries), 0), dtype=np.float32), queries, k)


def built(corpus: list[str], spec: str = "bm25()") -> BM25Retriever:
    retriever, _ = RETRIEVERS.build(spec)
    assert isinstance(retriever, BM25Retriever)
    retriever.index(np.zeros((len(corpus), 0), dtype=np.float32), corpus)
    return retriever


def test_hand_checked_lucene_scores() -> None:
    # Lucene BM25, k1=1.5, b=0.75: idf = ln(1 + (N - df + .5) / (df + .5)),
    # tf part = tf / (tf + k1 * (1 - b + b * dl / avgdl)). Words: "the cat sat" (dl 3),
    # "dog dog sat" (3), "bird" (1), nothing (0): N = 4, avgdl = 7 / 4.
    retriever = built(CORPUS)
    ids, scores = search(retriever, ["Where does a dog sit? dog sat", "zebra", ""], 10)
    norm = 1.5 * (0.25 + 0.75 * 3 / 1.75)  # k1 * (1 - b + b * dl / avgdl) for dl = 3
    idf_dog, idf_sat = math.log(1 + 3.5 / 1.5), math.log(1 + 2.5 / 2.5)
    dog_doc1 = idf_dog * 2 / (2 + norm)
    sat = idf_sat * 1 / (1 + norm)  # "sat" once in documents 0 and 1, both 3 words long
    # The query says "dog" twice: bm25s adds a repeated word's score once per occurrence.
    expected_doc1 = 2 * dog_doc1 + sat
    assert ids.tolist() == [[1, 0, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    np.testing.assert_allclose(scores[0], [expected_doc1, sat, 0, 0], rtol=1e-6)
    assert scores[1:].tolist() == [[0.0] * 4, [0.0] * 4]  # no known word: index order
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    assert retriever.stats() == {"vocabulary": 5, "queries_without_terms": 2}


def test_stop_words_are_kept() -> None:
    assert tokenize(["The cat, a dog and I"]) == [["the", "cat", "dog", "and"]]
    ids, scores = search(built(["the end", "an end"]), ["the"], 2)
    assert ids.tolist() == [[0, 1]] and scores[0, 0] > 0 == scores[0, 1]


def test_k_is_capped_and_small_k_is_a_prefix() -> None:
    retriever = built(CORPUS)
    full, full_scores = search(retriever, ["dog sat bird"], 100)
    assert full.shape == (1, 4)
    for k in range(5):
        ids, scores = search(retriever, ["dog sat bird"], k)
        assert ids.tolist() == full[:, :k].tolist()
        assert scores.tolist() == full_scores[:, :k].tolist()


@pytest.mark.parametrize("corpus", [[], ["", "a", "!!"]])
def test_index_without_words(corpus: list[str]) -> None:
    retriever = built(corpus)
    ids, scores = search(retriever, ["anything", ""], 5)
    assert ids.tolist() == [list(range(len(corpus)))] * 2
    assert not scores.any()
    assert search(retriever, [], 5)[0].shape == (0, len(corpus))


@pytest.mark.parametrize("method", ["robertson", "lucene", "atire", "bm25l", "bm25+"])
@pytest.mark.parametrize("seed", range(4))
def test_matches_bm25s_called_directly(method: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(12)]  # a small vocabulary: many equal scores
    corpus = [" ".join(rng.choice(words, size=rng.integers(0, 9))) for _ in range(40)]
    queries = [
        " ".join(rng.choice([*words, "unknown"], size=rng.integers(1, 4))) for _ in range(15)
    ]
    k1, b = 1.2, 0.6
    retriever = built(corpus, f"bm25(method={method!r}, k1={k1}, b={b})")
    ids, scores = search(retriever, queries, 40)

    reference = bm25s.BM25(method=method, k1=k1, b=b)
    reference.index(
        bm25s.tokenize(corpus, stopwords=None, show_progress=False), show_progress=False
    )
    query_tokens = bm25s.tokenize(queries, stopwords=None, return_ids=False, show_progress=False)
    for row, tokens in enumerate(query_tokens):
        known = [t for t in tokens if t in reference.vocab_dict]
        expected = reference.get_scores(known) if known else np.zeros(len(corpus))
        order = np.lexsort((np.arange(len(corpus)), -expected))  # score desc, then index
        assert ids[row].tolist() == order.tolist()
        np.testing.assert_array_equal(scores[row], expected[order])
    # bm25s's own top-k (its tie order differs) picks the same scores.
    _, top_scores = reference.retrieve(
        bm25s.tokenize(queries, stopwords=None, show_progress=False), k=10, show_progress=False
    )
    np.testing.assert_allclose(scores[:, :10], top_scores, rtol=1e-6)
