"""Reranking: exact dense search picks the top ``candidates`` chunks, a cross-encoder scores each
(question text, chunk text) pair, and the candidates are reordered by that score.

The ranking lists the candidates by cross-encoder score, descending, equal scores in first-stage
order. A ranking asked for deeper than ``candidates`` continues with the rest of the dense
ranking, in its order, scored ``-inf`` (not reranked); so a ranking's prefix never depends on
how deep it was asked for.

``model`` is a sentence-transformers ``CrossEncoder`` name or local folder (the ``st`` extra,
imported and loaded on the first search), or ``"fake"``: a deterministic stand-in for tests that
needs no model (see :class:`FakeCrossEncoder`).

A pair is *truncated* when it is longer than the model reads: for a real model, its tokens
(the model's own tokenizer, special tokens included, no truncation) exceed the model's maximum
sequence length; for the fake, its words exceed the window. :meth:`RerankRetriever.stats`
reports pairs scored, pairs truncated and seconds spent scoring.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from chunkmark.errors import ChunkmarkError
from chunkmark.retrieval.base import FloatArray, IntArray
from chunkmark.retrieval.dense import ExactRetriever
from chunkmark.retrieval.settings import ranker
from chunkmark.st_library import count_over_limit, sentence_transformers_class

DEFAULT_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
FAKE = "fake"
FAKE_MAX_WORDS = 128  # the fake's window (query words + chunk words) unless max_length is given

Pair = tuple[str, str]
_WORD = re.compile(r"\w+")


class RerankerError(ChunkmarkError):
    """A cross-encoder could not be loaded or gave unusable scores."""


class CrossEncoderLike(Protocol):
    """What the reranker needs from a cross-encoder."""

    def score(self, pairs: Sequence[Pair], batch_size: int) -> FloatArray:
        """One relevance score per (query, text) pair, higher is more relevant."""
        ...

    def truncated(self, pairs: Sequence[Pair]) -> int:
        """How many pairs are longer than the model reads."""
        ...


class FakeCrossEncoder:
    """A deterministic cross-encoder for tests: the share of the query's distinct words
    (lower-cased ``\\w+``) found in the part of the text it reads.

    It reads a window of ``max_words`` words: all the query's, then the text's first
    ``max_words - len(query words)``; a pair with more words than that is truncated.
    """

    def __init__(self, max_words: int = FAKE_MAX_WORDS) -> None:
        self.max_words = max_words

    def score(self, pairs: Sequence[Pair], batch_size: int) -> FloatArray:
        words = _word_lists(pairs)
        out = np.zeros(len(pairs), dtype=np.float32)
        for i, (query, text) in enumerate(pairs):
            asked = words[query]
            wanted = set(asked)
            if wanted:
                seen = set(words[text][: max(self.max_words - len(asked), 0)])
                out[i] = len(wanted & seen) / len(wanted)
        return out

    def truncated(self, pairs: Sequence[Pair]) -> int:
        words = _word_lists(pairs)
        return sum(len(words[q]) + len(words[t]) > self.max_words for q, t in pairs)


def _word_lists(pairs: Sequence[Pair]) -> dict[str, list[str]]:
    """Each distinct text of ``pairs`` split into lower-cased ``\\w+`` words."""
    texts = {text for pair in pairs for text in pair}
    return {text: _WORD.findall(text.lower()) for text in texts}


class SentenceTransformersCrossEncoder:
    """A loaded ``sentence_transformers.CrossEncoder`` behind :class:`CrossEncoderLike`."""

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name

    @property
    def max_length(self) -> int | None:
        limit = getattr(self.model, "max_seq_length", None)
        return limit if isinstance(limit, int) else None

    def score(self, pairs: Sequence[Pair], batch_size: int) -> FloatArray:
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        raw = self.model.predict(
            [list(p) for p in pairs], batch_size=batch_size, show_progress_bar=False
        )
        scores = np.asarray(raw, dtype=np.float32)
        if scores.shape != (len(pairs),):
            raise RerankerError(
                f"Cross-encoder {self.name!r} gave scores of shape {scores.shape} for "
                f"{len(pairs)} pairs, not one relevance score per pair.",
                "Use a cross-encoder with a single output (num_labels=1), such as "
                f"{DEFAULT_MODEL!r}.",
            )
        return scores

    def truncated(self, pairs: Sequence[Pair]) -> int:
        limit = self.max_length
        tokenizer = getattr(self.model, "tokenizer", None)
        if limit is None or tokenizer is None or not pairs:
            return 0
        return count_over_limit(tokenizer, limit, [q for q, _ in pairs], [t for _, t in pairs])


def load_cross_encoder(model: str, max_length: int | None) -> CrossEncoderLike:
    """The fake for ``model="fake"``, else a sentence-transformers ``CrossEncoder``.

    Raises :class:`MissingDependencyError` without sentence-transformers and
    :class:`RerankerError` when the model cannot be loaded.
    """
    if model == FAKE:
        return FakeCrossEncoder(max_length or FAKE_MAX_WORDS)
    cross_encoder = sentence_transformers_class("CrossEncoder", "The rerank retriever")
    try:
        loaded = cross_encoder(model, max_length=max_length)
    except (OSError, ValueError) as exc:
        lines = str(exc).strip().splitlines()
        raise RerankerError(
            f"Cannot load cross-encoder {model!r}: {lines[0] if lines else type(exc).__name__}",
            "Pass a local folder holding the model's files as model='/path/to/folder', or "
            "allow access to the Hugging Face Hub (and unset HF_HUB_OFFLINE).",
        ) from None
    loaded.eval()
    return SentenceTransformersCrossEncoder(loaded, model)


class RerankRetriever:
    """Exact dense top ``candidates``, reordered by a cross-encoder (see the module docstring)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        candidates: int = 50,
        batch_size: int = 32,
        max_length: int | None = None,
    ) -> None:
        self.model = model
        self.candidates = candidates
        self.batch_size = batch_size
        self.max_length = max_length
        self._dense = ExactRetriever()
        self._texts: list[str] = []
        self._encoder: CrossEncoderLike | None = None
        self._pairs = 0
        self._truncated = 0
        self._seconds = 0.0
        self._load_seconds = 0.0

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        if len(vectors) != len(texts):
            raise ValueError(f"{len(vectors)} chunk vectors for {len(texts)} chunk texts")
        self._dense.index(vectors, texts)
        self._texts = list(texts)

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        if len(vectors) != len(texts):
            raise ValueError(f"{len(vectors)} query vectors for {len(texts)} query texts")
        n_chunks = len(self._texts)
        k = max(0, min(k, n_chunks))
        pool = min(self.candidates, n_chunks)
        first_ids, _ = self._dense.search(vectors, texts, max(k, pool))
        ids = first_ids[:, :k].copy()
        scores = np.full((len(texts), k), -np.inf, dtype=np.float32)
        if k == 0 or pool == 0:
            return ids, scores
        candidates = first_ids[:, :pool]
        pairs = [(q, self._texts[i]) for q, row in zip(texts, candidates, strict=True) for i in row]
        encoder = self._load()
        start = time.perf_counter()
        relevance = encoder.score(pairs, self.batch_size).reshape(len(texts), pool)
        self._truncated += encoder.truncated(pairs)
        self._seconds += time.perf_counter() - start
        self._pairs += len(pairs)
        order = np.argsort(-relevance, axis=1, kind="stable")  # ties: first-stage order
        head = min(k, pool)
        ids[:, :head] = np.take_along_axis(candidates, order, axis=1)[:, :head]
        scores[:, :head] = np.take_along_axis(relevance, order, axis=1)[:, :head]
        return ids, scores

    def _load(self) -> CrossEncoderLike:
        if self._encoder is None:
            start = time.perf_counter()
            self._encoder = load_cross_encoder(self.model, self.max_length)
            self._load_seconds += time.perf_counter() - start
        return self._encoder

    def stats(self) -> dict[str, int | float]:
        """Pairs scored, pairs truncated, seconds scoring them and seconds loading the model."""
        return {
            "pairs": self._pairs,
            "truncated": self._truncated,
            "seconds": self._seconds,
            "load_seconds": self._load_seconds,
        }


def check_rerank(model: str, candidates: int, batch_size: int, max_length: int | None) -> None:
    """Raise ValueError for rerank parameters outside their ranges."""
    if not model.strip():
        raise ValueError("model must name a cross-encoder (or 'fake'), got an empty string")
    if isinstance(candidates, bool) or candidates < 1:
        raise ValueError(f"candidates must be at least 1, got {candidates!r}")
    if isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
    if max_length is not None and (isinstance(max_length, bool) or max_length < 1):
        raise ValueError(f"max_length must be at least 1 or None, got {max_length!r}")


@ranker(
    "rerank",
    setting="The top k chunks after a cross-encoder reranks the dense top candidates (see "
    "the ``rerank`` retriever).",
)
def rerank(
    model: str = DEFAULT_MODEL,
    candidates: int = 50,
    batch_size: int = 32,
    max_length: int | None = None,
) -> RerankRetriever:
    """Exact dense search for the top candidates, reordered by a cross-encoder
    (sentence-transformers, the ``st`` extra; ``model='fake'`` for tests).

    Args:
        model: a sentence-transformers CrossEncoder name or local folder, or ``'fake'``.
        candidates: how many dense results are reranked (at least 1).
        batch_size: pairs per cross-encoder batch.
        max_length: the longest pair the model reads, in its tokens (the fake: words);
            ``None`` for the model's own limit.
    """
    check_rerank(model, candidates, batch_size, max_length)
    return RerankRetriever(model, candidates, batch_size, max_length)
