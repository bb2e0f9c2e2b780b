"""Checks that the vectors of a cell can be trusted.

Before any search, :func:`check_same_embedder`: query and chunk vectors must come from the same
embedder identity and have the same dimension; a mismatch is an error, never a silent zero.

After the search, :func:`query_signal`: a query embedder that ignores its input (a mock left in
place, a broken client returning constant or random vectors) still yields rankings and numbers.
Its tell is that a question's vector is no closer to the chunks holding its own answer than
another question's vector is. Per question, the *answer similarity* is the highest cosine
similarity between its vector and a chunk that overlaps one of its excerpts; the *shuffled*
answer similarity is the same with the question vectors shuffled among the questions (a seeded
derangement). With a working embedder the first is clearly higher. The sign-flip randomisation
test on the paired differences (:func:`chunkmark.metrics.paired.permutation_test`, as
``chunkmark compare`` uses) decides; a cell with p >= 0.01, or a mean difference not above zero,
is flagged on screen and in the manifest. With fewer than :data:`MIN_QUESTIONS` questions a
working embedder too often misses p < 0.01, so there such a cell is *inconclusive* (a neutral
note: the check cannot tell), never flagged; a clear signal (p < 0.01) still counts.

(The top-1 similarity over the whole index does not depend on which question a vector belongs
to, so comparing it for shuffled queries could not detect anything; the answer's chunks can.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chunkmark.embedders.base import FloatArray
from chunkmark.errors import ConfigError
from chunkmark.metrics import ChunkTable, QuestionTable
from chunkmark.metrics.paired import permutation_test

FLAG_P = 0.01
PERMUTATIONS = 2000  # resolves p down to 0.0005, well below FLAG_P
# Fewer questions than this cannot tell a working query embedder from a broken one. Below 8
# the test cannot reach p < 0.01 at all (the smallest two-sided p of n sign flips is 2 / 2^n).
# Above, its power depends on the effect: with all-MiniLM-L6-v2 on the demo set the paired
# differences have mean/sd from 1.0 (fixed_tokens(size=800, overlap=400), few large chunks a
# shuffled question's answer often shares) to 1.9 (sentences(n=5)). At the weakest, 300 draws of
# n questions reached p < 0.01 in 42% of draws at n = 10, 75% at 15, 91% at 20 and 98% at 25
# (the normal approximation ((z_0.995 + z_0.98) / 1.0)^2 gives 21): from 25 questions a miss
# means something; below, it is a note that the check cannot tell.
MIN_QUESTIONS = 25


class EmbedderMismatchError(ConfigError):
    """Query and chunk vectors that cannot be compared."""


def check_same_embedder(
    query_identity: dict[str, Any],
    chunk_identity: dict[str, Any],
    query_vectors: FloatArray,
    chunk_vectors: FloatArray,
) -> None:
    """Raise :class:`EmbedderMismatchError` unless both sides come from one embedder."""
    if query_identity != chunk_identity:
        raise EmbedderMismatchError(
            f"Questions were embedded by {query_identity} and chunks by {chunk_identity}.",
            "Embed questions and chunks with the same embedder spec.",
        )
    if len(chunk_vectors) and query_vectors.shape[1] != chunk_vectors.shape[1]:
        raise EmbedderMismatchError(
            f"Question vectors have {query_vectors.shape[1]} dimensions and chunk vectors "
            f"{chunk_vectors.shape[1]}.",
            "The embedder returns vectors of different sizes for queries and documents; fix it "
            "or use one that does not.",
        )


def query_signal(
    questions: QuestionTable,
    chunks: ChunkTable,
    query_vectors: FloatArray,
    chunk_vectors: FloatArray,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Answer similarity of the real and of shuffled questions (see the module docstring);
    None when fewer than two questions have an answer chunk. ``flagged``: no signal where
    :data:`MIN_QUESTIONS` questions would show one; ``inconclusive``: no clear signal, but too
    few questions to tell."""
    real, shuffled = _answer_similarities(questions, chunks, query_vectors, chunk_vectors, seed)
    keep = ~np.isnan(real) & ~np.isnan(shuffled)
    n = int(keep.sum())
    if n < 2:
        return None
    diff = real[keep] - shuffled[keep]
    p = permutation_test(diff, permutations=PERMUTATIONS, seed=seed)
    no_signal = bool(p >= FLAG_P or float(diff.mean()) <= 0.0)
    # Every question exactly as close as a shuffled one: the query vectors ignore the question,
    # whatever the number of questions.
    constant = bool(np.all(diff == 0.0))
    return {
        "questions": n,
        "answer_similarity": round(float(real[keep].mean()), 6),
        "shuffled_similarity": round(float(shuffled[keep].mean()), 6),
        "p_value": p,
        "flagged": constant or (no_signal and n >= MIN_QUESTIONS),
        "inconclusive": no_signal and n < MIN_QUESTIONS and not constant,
        "min_questions": MIN_QUESTIONS,
    }


def _answer_similarities(
    questions: QuestionTable,
    chunks: ChunkTable,
    query_vectors: FloatArray,
    chunk_vectors: FloatArray,
    seed: int,
) -> tuple[np.ndarray[Any, np.dtype[np.float64]], np.ndarray[Any, np.dtype[np.float64]]]:
    n_q = len(questions)
    real = np.full(n_q, np.nan)
    shuffled = np.full(n_q, np.nan)
    if n_q < 2 or len(chunks.doc) == 0:
        return real, shuffled
    perm = _derangement(n_q, seed)
    chunks_of, questions_of = _grouped(chunks.doc), _grouped(questions.doc)
    for d in np.unique(questions.doc):
        c_idx = chunks_of(d)
        q_idx = questions_of(d)
        if len(c_idx) == 0:
            continue
        ex = questions.excerpts[q_idx]
        lo = np.maximum(chunks.start[c_idx][None, :, None], ex[:, None, :, 0])
        hi = np.minimum(chunks.end[c_idx][None, :, None], ex[:, None, :, 1])
        relevant = ((hi > lo) & questions.mask[q_idx][:, None, :]).any(axis=2)  # (q, chunks)
        vecs = chunk_vectors[c_idx]
        for target, source in ((real, q_idx), (shuffled, perm[q_idx])):
            sims = np.where(relevant, query_vectors[source] @ vecs.T, -np.inf)
            best = sims.max(axis=1)
            target[q_idx] = np.where(np.isfinite(best), best, np.nan)
    return real, shuffled


def _grouped(
    doc: np.ndarray[Any, np.dtype[np.int64]],
) -> Callable[[int], np.ndarray[Any, np.dtype[np.int64]]]:
    """A lookup of the positions holding each document index, ascending (what
    ``np.flatnonzero(doc == d)`` gives), from one stable sort instead of a scan per document."""
    order = np.argsort(doc, kind="stable")
    ordered = doc[order]

    def positions(d: int) -> np.ndarray[Any, np.dtype[np.int64]]:
        lo, hi = np.searchsorted(ordered, d, side="left"), np.searchsorted(ordered, d, "right")
        return order[lo:hi].astype(np.int64, copy=False)

    return positions


def _derangement(n: int, seed: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """A seeded permutation of range(n) with no fixed point: a random shift of a shuffle."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    shift = int(rng.integers(1, n))
    out = np.empty(n, dtype=np.int64)
    out[order] = order[(np.arange(n) + shift) % n]
    return out
