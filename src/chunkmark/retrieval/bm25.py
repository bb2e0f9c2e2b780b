"""Keyword ranking: BM25 over the chunk texts, through the ``bm25s`` library.

Tokenisation is bm25s's own (``bm25s.tokenize``): lower-cased words of two or more ``\\w``
characters, no stemming, and **no stop-word removal**. Stop words are kept on purpose: the
ranker must work on any language the corpora are in, and BM25's IDF already gives words found
in most chunks almost no weight, so removing an English list changes little for English and
would be wrong for other languages. (``chunkmark synth inspect``'s keyword baseline removes
English stop words; its numbers are not meant to equal a ``bm25`` setting's.)

Scores are bm25s's BM25 scores (float32) for the chosen variant; a question word found in no
chunk adds nothing, and a question with no known word scores every chunk 0. Rankings are full
length (``min(k, chunks)``), ordered by score, equal scores by chunk index, so zero-score chunks
follow in index order.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from chunkmark.errors import ChunkmarkError
from chunkmark.retrieval.base import FloatArray, IntArray
from chunkmark.retrieval.settings import ranker
from chunkmark.retrieval.topk import top_k

Bm25Method = Literal["robertson", "lucene", "atire", "bm25l", "bm25+"]

# Score cells held at once while ranking (rows of questions x chunks), about 16 MB of float32.
_BLOCK_CELLS = 4_000_000


class BM25Retriever:
    """BM25 over the texts given to :meth:`index`; query vectors are ignored."""

    def __init__(self, method: Bm25Method = "lucene", k1: float = 1.5, b: float = 0.75) -> None:
        self.method = method
        self.k1 = k1
        self.b = b
        self._model: Any = None
        self._n_chunks = 0
        self._vocabulary = 0
        self._without_terms = 0

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        bm25s = _bm25s()
        tokens = tokenize(texts)
        self._n_chunks = len(texts)
        self._vocabulary = len({t for doc in tokens for t in doc})
        self._without_terms = 0
        self._model = None
        if self._vocabulary:  # bm25s cannot index a corpus without a single word
            model = bm25s.BM25(method=self.method, k1=self.k1, b=self.b, dtype="float32")
            model.index(tokens, show_progress=False)
            self._model = model

    def scores(self, texts: Sequence[str]) -> FloatArray:
        """BM25 score of every chunk for every query text, ``(queries, chunks)``."""
        out = np.zeros((len(texts), self._n_chunks), dtype=np.float32)
        if self._model is None:
            self._without_terms += len(texts)
            return out
        for row, words in enumerate(tokenize(texts)):
            ids = self._model.get_tokens_ids(words)
            if ids:
                out[row] = self._model.get_scores_from_ids(ids)
            else:
                self._without_terms += 1
        return out

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        k = max(0, min(k, self._n_chunks))
        ids = np.zeros((len(texts), k), dtype=np.int64)
        scores = np.zeros((len(texts), k), dtype=np.float32)
        step = max(1, _BLOCK_CELLS // max(self._n_chunks, 1))
        for lo in range(0, len(texts), step):
            block = self.scores(texts[lo : lo + step])
            ids[lo : lo + len(block)], scores[lo : lo + len(block)] = top_k(block, k)
        return ids, scores

    def stats(self) -> dict[str, int | float]:
        """Distinct words indexed, and queries (so far) with no indexed word."""
        return {"vocabulary": self._vocabulary, "queries_without_terms": self._without_terms}


def tokenize(texts: Sequence[str], stopwords: str | None = None) -> list[list[str]]:
    """bm25s's tokenisation, as both chunks and queries get it (see the module docstring);
    ``stopwords="en"`` drops bm25s's English stop words (the retriever keeps them)."""
    tokens: list[list[str]] = _bm25s().tokenize(
        list(texts), stopwords=stopwords, return_ids=False, show_progress=False
    )
    return tokens


def check_bm25(k1: float, b: float) -> None:
    """Raise ValueError for BM25 parameters outside their ranges."""
    if not k1 >= 0:
        raise ValueError(f"k1 must be at least 0, got {k1!r}")
    if not 0 <= b <= 1:
        raise ValueError(f"b must be between 0 and 1, got {b!r}")


def _bm25s() -> Any:
    try:
        return importlib.import_module("bm25s")
    except ImportError:
        raise ChunkmarkError(
            "The bm25 retriever needs the 'bm25s' package, which is not installed.",
            "pip install bm25s (a dependency of chunkmark: reinstalling chunkmark installs it).",
        ) from None


@ranker("bm25", setting="The top k chunks by BM25 keyword search (``k='min'`` as in ``top_k``).")
def bm25(method: Bm25Method = "lucene", k1: float = 1.5, b: float = 0.75) -> BM25Retriever:
    """BM25 keyword search over the chunk texts (bm25s; no stemming, stop words kept).

    Args:
        method: the BM25 variant, as bm25s names it.
        k1: term-frequency saturation (at least 0).
        b: length normalisation (0 to 1).
    """
    check_bm25(k1, b)
    return BM25Retriever(method, float(k1), float(b))
