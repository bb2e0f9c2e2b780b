"""Semantic chunkers: cut where the embeddings of neighbouring pieces say the topic changes.

The three embedding-based chunkers of Chroma's study "Evaluating Chunking Strategies for
Retrieval", with the behaviour of its reference code (``chunking_evaluation``):

- ``kamradt``: Greg Kamradt's semantic chunker, as in LangChain's experimental
  ``SemanticChunker`` (percentile breakpoints). Sentences, each embedded together with
  ``buffer_size`` neighbours on each side; a chunk ends wherever the cosine distance from one
  combined sentence to the next is above the ``breakpoint_percentile``-th percentile of the
  document's distances.
- ``kamradt_modified``: the reference's ``KamradtModifiedChunker``. Pieces of at most
  ``min_size`` tokens from the recursive splitter, each embedded with ``buffer_size``
  neighbours on each side (3, fixed in the reference); the distance threshold is bisected
  (``[0, 1]``, until the interval is at most 1e-6 wide) so that about
  ``total tokens // avg_size`` distances lie above it; a chunk ends at each of those.
- ``cluster_semantic``: the reference's ``ClusterSemanticChunker``. Pieces of at most
  ``min_size`` tokens; their dot-product similarity matrix, minus the mean of its off-diagonal
  entries, diagonal set to zero; a dynamic programme picks the segmentation into runs of at most
  ``max_size // min_size`` pieces that maximises the summed similarity inside the runs.

Pieces and what is embedded
---------------------------
Pieces of ``kamradt_modified`` and ``cluster_semantic`` come from :func:`recursive` with
``size=min_size, overlap=0`` and the default separators: exactly the reference's
``RecursiveTokenChunker`` pieces. ``kamradt`` splits sentences with LangChain's default regex
``(?<=[.?!])\\s+`` (``sentence_split="regex"``, the default, sentences kept unstripped as
LangChain keeps them) or with chunkmark's rule-based segmenter (``sentence_split="rules"``,
see :mod:`chunkmark.chunkers.sentences`). A piece combined with its neighbours is embedded as
their texts joined with ``" "``, the text the reference embeds. All of a document's piece texts
go to the embedder in one call: the cell's cached embedder, or the one the ``embedder`` spec
names (cached under the run's cache folder). Pieces are the same for every ``max_size`` or
``avg_size``, so trying another size embeds nothing new.

Distances are cosine distances (vectors normalised first); ``cluster_semantic`` uses the plain
dot product, as the reference does (the same for embedders that return unit vectors).

The dynamic programme
---------------------
For piece ``i`` and each run length ``s = 1..max_size // min_size`` that fits, the candidate is
the run's reward (the sum of the adjusted matrix over the run's square block) plus the best score
of the pieces before it (0 if none). As in the reference, the best score starts at 0 and only a
strictly greater candidate replaces it, shorter runs first: among equal candidates the shortest
run wins, and when no candidate is positive the piece keeps the initial choice, a run starting at
the document's first piece. That can make a document's first chunk longer than
``max_size // min_size`` pieces (only the first: once a score is positive, extending the
previous segmentation by a one-piece run always stays positive). With one piece per run every
candidate is 0 and the whole text would be one chunk, so ``max_size`` must be at least
``2 * min_size``. Block sums come from prefix
sums along the matrix's first ``max_size // min_size`` diagonals, so the work is
``O(pieces * max_size // min_size)`` and the full matrix is never built; its mean comes from the
sum of the vectors. Sums are therefore added in another order than the reference's, which can
only matter for candidates equal to within rounding (about 1e-12).

Chunks are spans
----------------
The reference builds each chunk's text by joining its pieces with ``" "``; its evaluation then
searches the document for that string, whitespace-insensitively, dropping a final ``"."`` first.
Here a chunk is the span from its first piece's start to its last piece's end (surrounding
whitespace removed): the document's own text between the pieces stays as it is (line breaks, or
no space at all where a piece starts with a separator such as ``"."``), nothing is searched, and
no chunk lands on an earlier copy of its text. Retrieval embeds the span's text; a model whose
tokenizer ignores the kind and amount of whitespace (all-MiniLM-L6-v2 and other BERT-style
models) sees the same input as the joined text, except where pieces were cut inside a word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers.base import CHUNKERS, Chunk, ChunkerContext, trimmed
from chunkmark.chunkers.recursive import recursive
from chunkmark.chunkers.sentences import sentence_spans
from chunkmark.embedders.base import Embedder
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens, get_encoding

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# LangChain SemanticChunker's default sentence boundary: whitespace after ".", "?" or "!".
SENTENCE_SPLIT = re.compile(r"(?<=[.?!])\s+")
THRESHOLD_TOLERANCE = 1e-6  # width at which the reference's bisection stops
_NO_BREAKS: IntArray = np.zeros(0, dtype=np.int64)


@CHUNKERS.register("kamradt", embeds=True, needs=("context",))
def kamradt(
    breakpoint_percentile: float = 95,
    buffer_size: int = 1,
    sentence_split: Literal["regex", "rules"] = "regex",
    embedder: str | None = None,
    *,
    context: ChunkerContext,
) -> Callable[[str], list[Span]]:
    """Sentences split where embedding distance is above a percentile (Kamradt, LangChain).

    Args:
        breakpoint_percentile: a chunk ends after a sentence whose distance to the next is above
            this percentile (0-100, linear interpolation) of the document's distances.
        buffer_size: neighbours on each side embedded with each sentence.
        sentence_split: ``"regex"`` (LangChain's ``(?<=[.?!])\\s+``) or ``"rules"``
            (chunkmark's rule-based sentence segmenter).
        embedder: embedder spec for the sentences; None uses the cell's embedder.
        context: supplies the embedders (not part of the spec).
    """
    if not 0 <= breakpoint_percentile <= 100:
        raise ValueError(f"breakpoint_percentile must be in [0, 100], got {breakpoint_percentile}")
    _check_at_least("buffer_size", buffer_size, 0)
    split = _regex_sentences if sentence_split == "regex" else _rule_sentences

    def chunk(text: str) -> list[Span]:
        model = context.resolve_embedder(embedder)  # fails early when there is none
        starts, ends = split(text)
        if len(starts) < 3:  # a percentile of one distance is that distance: no break
            return _group_spans(text, starts, ends, _NO_BREAKS)
        _, distances = _neighbour_distances(model, text, starts, ends, buffer_size)
        breaks = percentile_breaks(distances, breakpoint_percentile)
        return _group_spans(text, starts, ends, breaks)

    return chunk


@CHUNKERS.register("kamradt_modified", embeds=True, needs=("context",))
def kamradt_modified(
    avg_size: int = 400,
    min_size: int = 50,
    buffer_size: int = 3,
    embedder: str | None = None,
    encoding: str = "cl100k_base",
    *,
    context: ChunkerContext,
) -> Callable[[str], list[Span]]:
    """Recursive pieces split at the distance threshold giving chunks of about avg_size tokens.

    Args:
        avg_size: wanted average chunk size in tokens; the document gets about
            ``total tokens // avg_size`` cuts.
        min_size: size in tokens of the pieces (recursive splitter, no overlap).
        buffer_size: neighbours on each side embedded with each piece (3 in the reference).
        embedder: embedder spec for the pieces; None uses the cell's embedder.
        encoding: tiktoken encoding that measures pieces and the document.
        context: supplies the embedders (not part of the spec).
    """
    _check_at_least("avg_size", avg_size, 1)
    _check_at_least("min_size", min_size, 1)
    _check_at_least("buffer_size", buffer_size, 0)
    pieces = recursive(size=min_size, overlap=0, encoding=encoding)
    enc = get_encoding(encoding)

    def chunk(text: str) -> list[Span]:
        model = context.resolve_embedder(embedder)  # fails early when there is none
        starts, ends = _piece_bounds(pieces(text))
        if len(starts) < 2:
            return _group_spans(text, starts, ends, _NO_BREAKS)
        texts, distances = _neighbour_distances(model, text, starts, ends, buffer_size)
        cuts = sum(count_tokens(texts, enc)) // avg_size
        breaks = np.flatnonzero(distances > cut_threshold(distances, cuts)).astype(np.int64)
        return _group_spans(text, starts, ends, breaks)

    return chunk


@CHUNKERS.register("cluster_semantic", embeds=True, needs=("context",))
def cluster_semantic(
    max_size: int = 400,
    min_size: int = 50,
    embedder: str | None = None,
    encoding: str = "cl100k_base",
    *,
    context: ChunkerContext,
) -> Callable[[str], list[Span]]:
    """Recursive pieces grouped by dynamic programming to maximise similarity within chunks.

    Args:
        max_size: chunks hold at most ``max_size // min_size`` pieces (except, possibly, a
            document's first chunk: see the module documentation); at least ``2 * min_size``.
        min_size: size in tokens of the pieces (recursive splitter, no overlap).
        embedder: embedder spec for the pieces; None uses the cell's embedder.
        encoding: tiktoken encoding that measures the pieces.
        context: supplies the embedders (not part of the spec).
    """
    _check_at_least("min_size", min_size, 1)
    if max_size < 2 * min_size:
        raise ValueError(
            f"max_size ({max_size}) must be at least 2 * min_size ({2 * min_size}): with one "
            "piece per chunk no segmentation scores above 0 and the whole text is one chunk"
        )
    max_pieces = max_size // min_size
    pieces = recursive(size=min_size, overlap=0, encoding=encoding)

    def chunk(text: str) -> list[Span]:
        model = context.resolve_embedder(embedder)  # fails early when there is none
        starts, ends = _piece_bounds(pieces(text))
        if len(starts) < 2:
            return _group_spans(text, starts, ends, _NO_BREAKS)
        vectors = _embed(model, _piece_texts(text, starts, ends))
        lasts = np.array([last for _, last in cluster_segments(vectors, max_pieces)])
        return _group_spans(text, starts, ends, lasts[:-1].astype(np.int64))

    return chunk


# --- segmentation, usable on their own --------------------------------------------------------


def neighbour_texts(texts: Sequence[str], buffer_size: int) -> list[str]:
    """Each text joined by ``" "`` with up to ``buffer_size`` texts before and after it."""
    n = len(texts)
    return [
        " ".join(texts[max(0, i - buffer_size) : min(n, i + buffer_size + 1)]) for i in range(n)
    ]


def consecutive_distances(vectors: npt.ArrayLike) -> FloatArray:
    """Cosine distance from each row to the next (``n - 1`` values)."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = v / np.where(norms == 0, 1.0, norms)
    out: FloatArray = 1.0 - np.einsum("ij,ij->i", unit[:-1], unit[1:])
    return out


def percentile_breaks(distances: npt.ArrayLike, percentile: float) -> IntArray:
    """Indices ``i`` whose distance (piece ``i`` to ``i + 1``) is above the percentile."""
    d = np.asarray(distances, dtype=np.float64)
    if len(d) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(d > np.percentile(d, percentile)).astype(np.int64)


def cut_threshold(distances: npt.ArrayLike, cuts: int) -> float:
    """The reference's bisection for a threshold with about ``cuts`` distances above it.

    The interval ``[0, 1]`` is halved until at most 1e-6 wide: the lower bound moves up while
    more than ``cuts`` distances are strictly above the midpoint. The last midpoint is returned.
    """
    ordered = np.sort(np.asarray(distances, dtype=np.float64))
    low, high = 0.0, 1.0
    threshold = (low + high) / 2.0
    while high - low > THRESHOLD_TOLERANCE:
        threshold = (low + high) / 2.0
        above = len(ordered) - int(np.searchsorted(ordered, threshold, side="right"))
        if above > cuts:
            low = threshold
        else:
            high = threshold
    return threshold


def cluster_segments(vectors: npt.ArrayLike, max_pieces: int) -> list[tuple[int, int]]:
    """The reference's optimal segmentation of pieces: ``(first, last)`` piece of each run."""
    v = np.asarray(vectors, dtype=np.float64)
    if len(v) == 0:
        return []
    starts = _best_run_starts(run_rewards(v, max_pieces))
    out: list[tuple[int, int]] = []
    last = len(v) - 1
    while last >= 0:
        first = int(starts[last])
        out.append((first, last))
        last = first - 1
    out.reverse()
    return out


def run_rewards(vectors: npt.ArrayLike, max_pieces: int) -> FloatArray:
    """``rewards[i, s - 1]``: reward of the run of ``s`` pieces ending at piece ``i``.

    The reward is the sum over the run's block of the similarity matrix minus the mean of its
    off-diagonal entries, with the diagonal zeroed: ``2 * (sum over pairs) - s * (s - 1) * mean``.
    Runs that would start before the first piece get ``-inf``.
    """
    v = np.asarray(vectors, dtype=np.float64)
    n = len(v)
    width = max(1, min(max_pieces, n))
    # right[a, d]: similarity of piece a with piece a + d (d = 1 .. width - 1).
    right = np.zeros((n, width))
    for d in range(1, width):
        right[: n - d, d] = np.einsum("ij,ij->i", v[:-d], v[d:])
    reach = np.cumsum(right, axis=1)  # reach[a, t]: piece a with the t pieces after it
    pairs = np.zeros((n, width))  # pairs[i, s - 1]: sum over the pairs of the run
    for s in range(2, width + 1):
        ends = np.arange(s - 1, n)
        pairs[s - 1 :, s - 1] = pairs[s - 1 :, s - 2] + reach[ends - (s - 1), s - 1]
    sizes = np.arange(1, width + 1, dtype=np.float64)
    rewards: FloatArray = 2.0 * pairs - sizes * (sizes - 1.0) * _mean_pair_similarity(v)
    rewards[np.arange(n)[:, None] < sizes[None, :] - 1] = -np.inf
    return rewards


def _mean_pair_similarity(v: FloatArray) -> float:
    """Mean dot product over pairs of distinct pieces (0 for fewer than two pieces)."""
    n = len(v)
    if n < 2:
        return 0.0
    total = v.sum(axis=0)
    return float((total @ total - np.einsum("ij,ij->", v, v)) / (n * (n - 1)))


def _best_run_starts(rewards: FloatArray) -> IntArray:
    """First piece of the best run ending at each piece (the reference's recurrence)."""
    n, width = rewards.shape
    best = np.zeros(n + 1)  # best[i + 1]: best score of pieces 0..i; best[0] = 0 (nothing before)
    starts = np.zeros(n, dtype=np.int64)  # the initial choice: a run from the first piece
    before = np.maximum(np.arange(n)[:, None] + 1 - np.arange(1, width + 1)[None, :], 0)
    for i in range(n):
        totals = rewards[i] + best[before[i]]
        k = int(np.argmax(totals))  # the first maximum: the shortest of equal runs
        if totals[k] > 0.0:
            best[i + 1] = totals[k]
            starts[i] = i - k
    return starts


# --- helpers -----------------------------------------------------------------------------------


def _check_at_least(name: str, value: int, low: int) -> None:
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")


def _embed(embedder: Embedder, texts: list[str]) -> FloatArray:
    return np.asarray(embedder.embed(texts, kind="document"), dtype=np.float64)


def _piece_texts(text: str, starts: IntArray, ends: IntArray) -> list[str]:
    return [text[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


def _neighbour_distances(
    model: Embedder, text: str, starts: IntArray, ends: IntArray, buffer_size: int
) -> tuple[list[str], FloatArray]:
    """The pieces' texts, and the distance between each piece and the next, each embedded with
    ``buffer_size`` neighbours on each side."""
    texts = _piece_texts(text, starts, ends)
    return texts, consecutive_distances(_embed(model, neighbour_texts(texts, buffer_size)))


def _piece_bounds(spans: Sequence[Span | Chunk]) -> tuple[IntArray, IntArray]:
    starts = np.array([s.start for s in spans], dtype=np.int64)
    ends = np.array([s.end for s in spans], dtype=np.int64)
    return starts, ends


def _regex_sentences(text: str) -> tuple[IntArray, IntArray]:
    """LangChain's sentences: the text between matches of the split regex, unstripped."""
    cuts = [(m.start(), m.end()) for m in SENTENCE_SPLIT.finditer(text)]
    starts = np.array([0] + [e for _, e in cuts], dtype=np.int64)
    ends = np.array([s for s, _ in cuts] + [len(text)], dtype=np.int64)
    return starts, ends


def _rule_sentences(text: str) -> tuple[IntArray, IntArray]:
    return _piece_bounds(sentence_spans(text))


def _group_spans(text: str, starts: IntArray, ends: IntArray, breaks: IntArray) -> list[Span]:
    """One span per run of pieces, a run ending after each index in ``breaks`` and at the end.

    Each span runs from its first piece's start to its last piece's end, without surrounding
    whitespace; runs holding only whitespace are dropped.
    """
    if len(starts) == 0:
        return []
    lasts = np.append(breaks, len(starts) - 1)
    firsts = np.append(0, breaks + 1)
    spans = (
        trimmed(text, s, e)
        for s, e in zip(starts[firsts].tolist(), ends[lasts].tolist(), strict=True)
    )
    return [span for span in spans if span is not None]
