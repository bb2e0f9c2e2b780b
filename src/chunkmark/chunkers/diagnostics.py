"""Boundary diagnostics of a chunking: what its boundaries do to the excerpts, and to topics.

Everything here reads spans only (no model, no retrieval), so it costs milliseconds beside a
cell and explains its numbers: a chunking that cuts many excerpts, or scatters them over many
chunks, cannot retrieve them whole at small k.

- :func:`diagnose`: the share of excerpts *cut* (no single chunk of their document contains the
  excerpt whole), *fragments* per excerpt (how many chunks hold at least one of its
  characters: 0 when it lies in a gap between chunks), and the chunk length distribution in
  characters and ``cl100k_base`` tokens. Lengths are those of the spans (what metrics count),
  not of ``Chunk.embed_text``.
- :func:`boundary_agreement`: a chunking's boundaries against known topic boundaries (those of
  a corpus built by :func:`chunkmark.datasets.stitch.stitch`): Pk and WindowDiff (nltk, over
  fixed character units, see :func:`segmentation`) and boundary precision / recall / F1 within
  a tolerance in characters (one-to-one matching).

A chunk's *boundary* is its start offset; the first chunk of a document starts the document and
is not a boundary. For chunkers with overlap every window start is a boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers.base import Chunk
from chunkmark.datasets.model import Dataset
from chunkmark.errors import ChunkingError, DatasetError
from chunkmark.optional import import_optional

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ChunkLike = Chunk | tuple[str, int, int]

DEFAULT_ENCODING = "cl100k_base"
DEFAULT_TOLERANCE = 100
DEFAULT_UNIT = 100


@dataclass(frozen=True, slots=True)
class Distribution:
    """Summary of a set of values: count, mean, 5th/50th/95th percentiles (linear
    interpolation), min and max. All zero when ``count`` is 0."""

    count: int
    mean: float
    p5: float
    p50: float
    p95: float
    min: float
    max: float

    @classmethod
    def of(cls, values: npt.ArrayLike) -> Distribution:
        arr = np.asarray(values, dtype=np.float64).ravel()
        if arr.size == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        p5, p50, p95 = (float(x) for x in np.percentile(arr, [5, 50, 95]))
        return cls(arr.size, float(arr.mean()), p5, p50, p95, float(arr.min()), float(arr.max()))


@dataclass(frozen=True, slots=True)
class ExcerptDiagnostics:
    """How a chunking treats the excerpts of a dataset's questions.

    ``fragment_counts`` maps a number of fragments to how many excerpts have that many.
    """

    excerpts: int
    cut: int
    fragments: Distribution
    fragment_counts: dict[int, int]

    @property
    def cut_share(self) -> float:
        """Share of excerpts that no single chunk contains whole (0 when there are none)."""
        return self.cut / self.excerpts if self.excerpts else 0.0

    def share_with(self, fragments: int, *, or_more: bool = False) -> float:
        """Share of excerpts in exactly ``fragments`` chunks (or at least, with ``or_more``)."""
        if not self.excerpts:
            return 0.0
        n = sum(
            count
            for k, count in self.fragment_counts.items()
            if k == fragments or (or_more and k > fragments)
        )
        return n / self.excerpts


@dataclass(frozen=True, slots=True)
class ChunkingDiagnostics:
    """The diagnostics of one chunking of one dataset (see :func:`diagnose`)."""

    chunks: int
    excerpts: ExcerptDiagnostics
    chars: Distribution
    tokens: Distribution | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, the cut share included."""
        excerpts = asdict(self.excerpts)
        excerpts["cut_share"] = self.excerpts.cut_share
        excerpts["fragment_counts"] = {str(k): v for k, v in self.excerpts.fragment_counts.items()}
        return {
            "chunks": self.chunks,
            "excerpts": excerpts,
            "chars": asdict(self.chars),
            "tokens": None if self.tokens is None else asdict(self.tokens),
        }


@dataclass(frozen=True, slots=True)
class BoundaryAgreement:
    """A chunking's boundaries against the true topic boundaries of some documents.

    ``pk`` and ``windowdiff`` are means over the documents (lower is better, 0 is perfect);
    precision, recall and F1 pool every document's boundaries (``matched`` one-to-one within
    ``tolerance`` characters).
    """

    documents: int
    true_boundaries: int
    predicted_boundaries: int
    matched: int
    tolerance: int
    unit: int
    pk: float
    windowdiff: float

    @property
    def precision(self) -> float:
        return self.matched / self.predicted_boundaries if self.predicted_boundaries else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.true_boundaries if self.true_boundaries else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


# --- excerpts and lengths ---------------------------------------------------------------------


def chunk_arrays(dataset: Dataset, chunks: Iterable[ChunkLike]) -> tuple[IntArray, IntArray]:
    """Chunk starts and ends as arrays in one coordinate system over the whole dataset.

    Document ``i`` starts at the sum of the lengths (plus one) of the documents before it, so
    spans of different documents never touch. A chunk may be a :class:`Chunk` or a
    ``(doc_id, start, end)`` tuple.
    """
    offsets = _doc_offsets(dataset)
    starts: list[int] = []
    ends: list[int] = []
    for i, chunk in enumerate(chunks):
        doc_id, start, end = (
            (chunk.doc_id, chunk.start, chunk.end) if isinstance(chunk, Chunk) else chunk
        )
        base = offsets.get(doc_id)
        if base is None:
            raise DatasetError(
                f"chunk {i} names document {doc_id!r}, which is not in dataset {dataset.name!r}.",
                "Chunk the dataset's own documents (chunk ids are document ids).",
            )
        length = len(dataset.by_id[doc_id].text)
        if not 0 <= start < end <= length:
            raise ChunkingError(
                f"chunk {i} of document {doc_id!r} is the span [{start}, {end}), not a "
                f"non-empty span inside the document (length {length}).",
                "Chunks must be non-empty spans inside their document.",
            )
        starts.append(base + start)
        ends.append(base + end)
    return np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)


def excerpt_arrays(dataset: Dataset) -> tuple[IntArray, IntArray]:
    """Every excerpt's start and end, question by question, in :func:`chunk_arrays`'s
    coordinates."""
    offsets = _doc_offsets(dataset)
    pairs = [
        (offsets[q.doc_id] + s.start, offsets[q.doc_id] + s.end)
        for q in dataset.questions
        for s in q.excerpts
    ]
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def excerpt_cover(
    chunk_starts: IntArray, chunk_ends: IntArray, excerpt_starts: IntArray, excerpt_ends: IntArray
) -> tuple[BoolArray, IntArray]:
    """For each excerpt: whether one chunk contains it whole, and how many chunks overlap it.

    Vectorised: with chunks sorted by start, an excerpt is contained when the largest end among
    chunks starting at or before it reaches its end; the chunks overlapping ``[s, e)`` are those
    starting before ``e`` less those ending at or before ``s`` (a chunk that only touches the
    excerpt holds none of its characters).
    """
    if chunk_starts.size == 0:
        n = excerpt_starts.size
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
    order = np.argsort(chunk_starts, kind="stable")
    starts = chunk_starts[order]
    reach = np.maximum.accumulate(chunk_ends[order])
    last = np.searchsorted(starts, excerpt_starts, side="right") - 1
    contained = (last >= 0) & (reach[np.maximum(last, 0)] >= excerpt_ends)
    before_end = np.searchsorted(starts, excerpt_ends, side="left")
    done_before = np.searchsorted(np.sort(chunk_ends), excerpt_starts, side="right")
    return contained, (before_end - done_before).astype(np.int64)


def diagnose(
    dataset: Dataset,
    chunks: Sequence[ChunkLike],
    *,
    encoding: str | None = DEFAULT_ENCODING,
    tokens: npt.ArrayLike | None = None,
) -> ChunkingDiagnostics:
    """The excerpt and length diagnostics of one chunking of ``dataset``.

    ``tokens`` gives each chunk's token count when already known; otherwise the span texts are
    counted with ``encoding`` (None: no token distribution).
    """
    chunk_starts, chunk_ends = chunk_arrays(dataset, chunks)
    excerpt_starts, excerpt_ends = excerpt_arrays(dataset)
    contained, fragments = excerpt_cover(chunk_starts, chunk_ends, excerpt_starts, excerpt_ends)
    values, counts = np.unique(fragments, return_counts=True)
    excerpts = ExcerptDiagnostics(
        excerpts=int(fragments.size),
        cut=int((~contained).sum()),
        fragments=Distribution.of(fragments),
        fragment_counts={int(v): int(c) for v, c in zip(values, counts, strict=True)},
    )
    token_counts: npt.ArrayLike | None = tokens
    if token_counts is None and encoding is not None:
        token_counts = _count_tokens(dataset, chunks, encoding)
    return ChunkingDiagnostics(
        chunks=int(chunk_starts.size),
        excerpts=excerpts,
        chars=Distribution.of(chunk_ends - chunk_starts),
        tokens=None if token_counts is None else Distribution.of(token_counts),
    )


def _count_tokens(dataset: Dataset, chunks: Sequence[ChunkLike], encoding: str) -> list[int]:
    from chunkmark.tokenizers import count_tokens

    by_id = dataset.by_id
    texts = [by_id[doc_id].text[start:end] for doc_id, start, end in map(_triple, chunks)]
    return count_tokens(texts, encoding)


def _triple(chunk: ChunkLike) -> tuple[str, int, int]:
    return (chunk.doc_id, chunk.start, chunk.end) if isinstance(chunk, Chunk) else chunk


def _doc_offsets(dataset: Dataset) -> dict[str, int]:
    offsets: dict[str, int] = {}
    position = 0
    for doc in dataset.documents:
        offsets[doc.id] = position
        position += len(doc.text) + 1
    return offsets


# --- topic boundaries -------------------------------------------------------------------------


def chunk_boundaries(chunks: Iterable[ChunkLike]) -> dict[str, IntArray]:
    """Each document's chunk boundaries: the distinct chunk starts after its first chunk's."""
    by_doc: dict[str, list[int]] = {}
    for doc_id, start, _ in map(_triple, chunks):
        by_doc.setdefault(doc_id, []).append(start)
    return {doc_id: np.unique(starts)[1:] for doc_id, starts in by_doc.items()}


def match_boundaries(true: npt.ArrayLike, predicted: npt.ArrayLike, tolerance: int) -> int:
    """The most pairs (true, predicted) at most ``tolerance`` apart, each boundary in one pair.

    Both sorted, a greedy sweep is optimal here: the true boundaries a predicted one may pair
    with form an interval that moves right with it, so pairing the leftmost compatible
    boundaries never costs a pair.
    """
    t = np.sort(np.asarray(true, dtype=np.int64))
    p = np.sort(np.asarray(predicted, dtype=np.int64))
    i = j = matched = 0
    while i < t.size and j < p.size:
        if abs(int(t[i]) - int(p[j])) <= tolerance:
            matched += 1
            i += 1
            j += 1
        elif p[j] < t[i]:
            j += 1
        else:
            i += 1
    return matched


def segmentation(boundaries: npt.ArrayLike, length: int, unit: int) -> str:
    """A document of ``length`` characters as a segmentation string over units of ``unit``
    characters: ``"1"`` at unit ``j`` when a boundary offset lies in ``[j * unit, (j + 1) *
    unit)``, else ``"0"``. Offsets at or beyond ``length`` (and at 0) are ignored; several
    boundaries in one unit count once."""
    if unit < 1:
        raise ValueError(f"unit must be at least 1 character, got {unit}")
    n = max(1, -(-length // unit))
    marks = np.zeros(n, dtype=bool)
    b = np.asarray(boundaries, dtype=np.int64)
    b = b[(b > 0) & (b < length)]
    marks[b // unit] = True
    return "".join(np.where(marks, "1", "0").tolist())


def window_size(reference: str) -> int:
    """Half the mean reference segment length in units (nltk's default for Pk), at least 1."""
    return max(1, round(len(reference) / (2 * max(reference.count("1"), 1))))


def pk_windowdiff(reference: str, hypothesis: str, k: int | None = None) -> tuple[float, float]:
    """nltk's Pk and WindowDiff of two segmentation strings, both with window ``k``
    (default :func:`window_size` of the reference)."""
    nltk_segmentation = import_optional(
        "nltk.metrics.segmentation", "nltk", "boundaries", "Pk and WindowDiff"
    )
    k = window_size(reference) if k is None else k
    pk = float(nltk_segmentation.pk(reference, hypothesis, k))
    return pk, float(nltk_segmentation.windowdiff(reference, hypothesis, k))


def boundary_agreement(
    dataset: Dataset,
    chunks: Sequence[ChunkLike],
    true_boundaries: Mapping[str, Sequence[int]],
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    unit: int = DEFAULT_UNIT,
) -> BoundaryAgreement:
    """Compare a chunking of ``dataset`` with the true topic boundaries of its documents.

    ``true_boundaries`` maps a document id to the character offsets where its topics change
    (not 0); documents it does not name are left out. Pk and WindowDiff are computed per
    document over ``unit``-character units, with nltk's default window (half the mean true
    segment length), and averaged over documents.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be 0 or more characters, got {tolerance}")
    predicted = chunk_boundaries(chunks)
    by_id = dataset.by_id
    n_true = n_pred = matched = 0
    pks: list[float] = []
    wds: list[float] = []
    for doc_id, true in true_boundaries.items():
        doc = by_id.get(doc_id)
        if doc is None:
            raise DatasetError(
                f"the true boundaries name document {doc_id!r}, which is not in dataset "
                f"{dataset.name!r}.",
                "Use the boundaries file written with the dataset (chunkmark datasets stitch).",
            )
        t = np.asarray(sorted(true), dtype=np.int64)
        p = predicted.get(doc_id, np.zeros(0, dtype=np.int64))
        n_true += t.size
        n_pred += p.size
        matched += match_boundaries(t, p, tolerance)
        reference = segmentation(t, len(doc.text), unit)
        pk_value, wd_value = pk_windowdiff(reference, segmentation(p, len(doc.text), unit))
        pks.append(pk_value)
        wds.append(wd_value)
    return BoundaryAgreement(
        documents=len(pks),
        true_boundaries=n_true,
        predicted_boundaries=n_pred,
        matched=matched,
        tolerance=tolerance,
        unit=unit,
        pk=float(np.mean(pks)) if pks else 0.0,
        windowdiff=float(np.mean(wds)) if wds else 0.0,
    )
