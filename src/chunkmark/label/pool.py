"""Suggested passages for a question: a pool of several rankers over several chunkings.

Information retrieval's *pooling*: judges confirm candidates that several systems retrieved
instead of hunting through the corpus. Here each chunking of the corpus (``chunkers``) is
ranked by BM25, by dense similarity (one cached embedder) and by their hybrid (reciprocal-rank
fusion of the two), each list cut at ``depth``. Every list gives each chunk it ranks
``w / (rrf_k + rank)``, ``w`` its ranker's weight (the dense lists weigh half by default).
Chunks whose spans overlap in one document are merged into one passage (at most ``max_chars``
long), which scores each list's best contribution, so a passage several chunkings and rankers
agree on rises to the top; no character is suggested twice (see :func:`fuse`). Passages are
returned best first, with the lists that found them (``sources``), so the labeler can see why.
The document's opening (its first ``opening`` characters: a title, the parties, dates, an
abstract) is suggested at place ``opening_at`` unless better suggestions already show it
(:func:`place_opening`): questions about a whole document need it, and rankers seldom rank it.

The same object answers literal search (:meth:`Pool.search`) within one document or across the
corpus: what a labeler uses when no suggestion holds the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers import CHUNKERS
from chunkmark.chunkers.base import chunk_documents
from chunkmark.datasets import Document
from chunkmark.embedders.base import Embedder
from chunkmark.label.store import LabelError
from chunkmark.retrieval.bm25 import BM25Retriever

# The defaults were chosen out of sample: on other documents of the suite's sets than those
# docs/label.md reports (benchmarks/label_pool.py --tune --seed 1 --exclude-seed 0, then the
# passage length and the opening with --tune passages|weights|opening --seed 1 2).
DEFAULT_CHUNKERS = (
    "sentences(n=3)",
    "recursive(size=256)",
    "recursive(size=512)",
    "paragraphs()",
    "recursive(size=1024)",
)
RANKERS = ("bm25", "dense", "hybrid")
DEFAULT_DEPTH = 10
DEFAULT_MAX_CHARS = 5000
RRF_K = 60
DEFAULT_WEIGHTS: dict[str, float] = {"dense": 0.5}
DEFAULT_JOIN: int | None = None  # only overlapping chunks merge
DEFAULT_OPENING = 1000  # characters of the document's opening suggested (0: none)
DEFAULT_OPENING_AT = 10  # its place among the suggestions, from 1
OPENING = "opening"  # the source named by the opening's suggestion
HYBRID_RRF_K = 60  # the hybrid list fuses as the ``hybrid`` retriever does by default
HYBRID_READ = 40  # it fuses the first 40 (or 2 x depth) of BM25's and the dense ranking

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Passage:
    """A suggested passage: ``[start, end)`` of document ``doc_id``, its fused score and the
    ranked lists (``chunker/ranker``) that put one of its chunks within their depth."""

    doc_id: str
    start: int
    end: int
    score: float
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Hit:
    """A literal search hit: ``[start, end)`` of document ``doc_id``."""

    doc_id: str
    start: int
    end: int


@dataclass
class _Chunking:
    spec: str
    doc_ids: list[str]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    bm25: BM25Retriever
    vectors: F32 | None
    rows_of: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)


class Pool:
    """The rankers over the chunkings of ``documents``, built once; :meth:`suggest` per question.

    Args:
        documents: the corpus.
        embedder: embeds chunks and questions (L2-normalised rows); None leaves out the dense
            and hybrid rankers (BM25 alone).
        chunkers: chunker specs, one chunking each.
        rankers: which of ``bm25``, ``dense`` and ``hybrid`` to pool.
        depth: how deep each ranked list is read.
        max_chars: the longest passage a merge may make.
        rrf_k: the fusion's rank offset, ``1 / (rrf_k + rank)``.
        weights: multipliers on lists in the fusion, keyed by ranker (``{"dense": 0.5}``),
            chunker spec or list name (``chunker/ranker``); a list weighs the product of the
            ones that name it, 1 when none does (:data:`DEFAULT_WEIGHTS` by default).
        join: a chunk at most this many characters from a passage of its document joins it
            (when the union stays within ``max_chars``); None joins only overlapping chunks.
        opening: the first ``opening`` characters of the question's document (or, across the
            corpus, of the first suggestion's) are suggested at place ``opening_at`` unless
            better suggestions already show them (see :func:`place_opening`); 0 leaves it out.
    """

    def __init__(
        self,
        documents: Sequence[Document],
        embedder: Embedder | None,
        chunkers: Sequence[str] = DEFAULT_CHUNKERS,
        rankers: Sequence[str] = RANKERS,
        *,
        depth: int = DEFAULT_DEPTH,
        max_chars: int = DEFAULT_MAX_CHARS,
        rrf_k: int = RRF_K,
        weights: Mapping[str, float] | None = None,
        join: int | None = DEFAULT_JOIN,
        opening: int = DEFAULT_OPENING,
        opening_at: int = DEFAULT_OPENING_AT,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        unknown = sorted(set(rankers) - set(RANKERS))
        if unknown:
            raise LabelError(
                f"unknown ranker(s) {', '.join(unknown)}.", f"Use {', '.join(RANKERS)}."
            )
        if depth < 1 or max_chars < 1 or opening_at < 1:
            raise ValueError("depth, max_chars and opening_at must be at least 1")
        if rrf_k < 0 or opening < 0 or (join is not None and join < 0):
            raise ValueError("rrf_k, join and opening must be at least 0")
        self.documents = {d.id: d.text for d in documents}
        self.embedder = embedder
        self.rankers = tuple(r for r in RANKERS if r in rankers and (r == "bm25" or embedder))
        self.depth = depth
        self.max_chars = max_chars
        self.rrf_k = rrf_k
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        self.join = join
        self.opening = opening
        self.opening_at = opening_at
        say = progress or (lambda line: None)
        self._chunkings: list[_Chunking] = []
        pairs = [(d.id, d.text) for d in documents]
        for spec in chunkers:
            chunker, _ = CHUNKERS.build(spec)
            chunks = chunk_documents(chunker, pairs)
            texts = [self.documents[c.doc_id][c.start : c.end] for c in chunks]
            bm25 = BM25Retriever()
            bm25.index(np.zeros((len(texts), 1), dtype=np.float32), texts)
            vectors = None
            if embedder is not None and {"dense", "hybrid"} & set(self.rankers):
                say(f"embedding {len(texts)} chunks of {spec}")
                vectors = np.asarray(embedder.embed(texts, "document"), dtype=np.float32)
            doc_ids = [c.doc_id for c in chunks]
            one = _Chunking(
                spec,
                doc_ids,
                np.array([c.start for c in chunks], dtype=np.int64),
                np.array([c.end for c in chunks], dtype=np.int64),
                bm25,
                vectors,
            )
            ids = np.array(doc_ids, dtype=object)
            for doc_id in self.documents:
                one.rows_of[doc_id] = np.flatnonzero(ids == doc_id).astype(np.int64)
            self._chunkings.append(one)

    @property
    def lists(self) -> list[str]:
        """The names of the pooled ranked lists, ``chunker/ranker``."""
        return [f"{c.spec}/{r}" for c in self._chunkings for r in self.rankers]

    def rankings(self, question: str, doc_id: str | None = None) -> dict[str, list[Hit]]:
        """Every pooled list's top ``depth`` chunks for ``question`` (within ``doc_id`` when
        given), by list name: what :meth:`suggest` fuses, and what a benchmark compares it with."""
        qvec = None
        if self.embedder is not None and {"dense", "hybrid"} & set(self.rankers):
            qvec = np.asarray(self.embedder.embed([question], "query"), dtype=np.float32)[0]
        out: dict[str, list[Hit]] = {}
        for c in self._chunkings:
            rows = c.rows_of.get(doc_id, np.zeros(0, np.int64)) if doc_id else None
            ranked = self._ranked(c, question, qvec, rows)
            for name, order in ranked.items():
                out[f"{c.spec}/{name}"] = [
                    Hit(c.doc_ids[i], int(c.starts[i]), int(c.ends[i])) for i in order
                ]
        return out

    def _ranked(
        self,
        c: _Chunking,
        question: str,
        qvec: F32 | None,
        rows: npt.NDArray[np.int64] | None,
    ) -> dict[str, npt.NDArray[np.int64]]:
        n = len(c.doc_ids)
        keep = np.arange(n, dtype=np.int64) if rows is None else rows
        if len(keep) == 0:
            return {r: np.zeros(0, np.int64) for r in self.rankers}
        out: dict[str, npt.NDArray[np.int64]] = {}
        bm = c.bm25.scores([question])[0][keep]
        read = max(2 * self.depth, HYBRID_READ)
        bm_order = keep[_best(bm, read)]
        if "bm25" in self.rankers:
            out["bm25"] = bm_order[: self.depth]
        if qvec is not None and c.vectors is not None:
            dense = c.vectors[keep] @ qvec
            dense_order = keep[_best(dense, read)]
            if "dense" in self.rankers:
                out["dense"] = dense_order[: self.depth]
            if "hybrid" in self.rankers:
                fused: dict[int, float] = {}
                for order in (bm_order, dense_order):
                    for rank, i in enumerate(order.tolist()):
                        fused[i] = fused.get(i, 0.0) + 1.0 / (HYBRID_RRF_K + rank + 1)
                best = sorted(fused, key=lambda i: (-fused[i], i))[: self.depth]
                out["hybrid"] = np.array(best, dtype=np.int64)
        return out

    def suggest(self, question: str, doc_id: str | None = None, n: int = 10) -> list[Passage]:
        """The ``n`` best passages for ``question`` (within ``doc_id`` when given), best first."""
        if not question.strip():
            return []
        return self.fuse(self.rankings(question, doc_id), doc_id)[:n]

    def fuse(self, rankings: dict[str, list[Hit]], doc_id: str | None = None) -> list[Passage]:
        """:func:`fuse` with this pool's passage length, rank offset, ranker weights and join,
        then the opening of ``doc_id`` (else of the first passage's document) placed by
        :func:`place_opening`."""
        passages = fuse(rankings, self.max_chars, self.rrf_k, self.weights, self.join)
        if self.opening == 0 or not passages:
            return passages
        doc = doc_id if doc_id is not None else passages[0].doc_id
        length = min(self.opening, len(self.documents.get(doc, "")))
        return place_opening(passages, doc, length, self.opening_at)

    def search(
        self, text: str, doc_id: str | None = None, *, limit: int = 50, words: bool = False
    ) -> list[Hit]:
        """Where ``text`` occurs (case-insensitive; whitespace runs match any whitespace), in
        ``doc_id`` or in every document, at most ``limit`` hits in document order."""
        terms = text.split()
        if not terms:
            return []
        pattern = r"\s+".join(re.escape(t) for t in terms)
        if words:
            pattern = rf"\b{pattern}\b"
        compiled = re.compile(pattern, re.IGNORECASE)
        ids = [doc_id] if doc_id is not None else list(self.documents)
        hits: list[Hit] = []
        for each in ids:
            doc_text = self.documents.get(each)
            if doc_text is None:
                continue
            for match in compiled.finditer(doc_text):
                hits.append(Hit(each, match.start(), match.end()))
                if len(hits) >= limit:
                    return hits
        return hits


def _best(scores: npt.NDArray[np.floating], k: int) -> npt.NDArray[np.int64]:
    """Indices of the ``k`` highest scores, best first, equal scores by index."""
    k = min(k, len(scores))
    order = np.lexsort((np.arange(len(scores)), -scores.astype(np.float64)))
    return order[:k].astype(np.int64)


def fuse(
    rankings: dict[str, list[Hit]],
    max_chars: int = DEFAULT_MAX_CHARS,
    rrf_k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    join: int | None = None,
) -> list[Passage]:
    """Reciprocal-rank fusion of ranked chunk lists into merged, de-duplicated passages.

    A chunk earns ``w / (rrf_k + rank)`` from each list that ranks it (rank from 1), ``w`` the
    list's weight: the product of the ``weights`` of its ranker (the part of its name after
    the last ``/``), its chunker (the part before) and its whole name, each 1 unless named. Chunks are
    taken best first: one overlapping a passage of its document joins it (the passage grows to
    the union when that stays within ``max_chars``), any other starts a passage. With ``join``
    (characters), a chunk that does not overlap but lies within ``join`` characters of a
    passage (0: touching it) joins it too, when the union stays within ``max_chars``; else it
    starts its own passage, so that nothing it ranked goes unshown. A passage
    scores, for each list, the best its chunks earned there (so a list counts once, however
    many neighbouring chunks it ranked). Then, best first, each passage loses what better ones
    already show, and one left with less than a fifth of its text is dropped: no character is
    suggested twice. Equal scores order by document and offset.
    """
    weigh = weights or {}
    earned: dict[tuple[str, int, int], dict[str, float]] = {}
    for name, hits in rankings.items():
        chunker, _, ranker = name.rpartition("/")
        weight = weigh.get(ranker, 1.0) * weigh.get(chunker, 1.0) * weigh.get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            lists = earned.setdefault((hit.doc_id, hit.start, hit.end), {})
            lists[name] = max(lists.get(name, 0.0), weight / (rrf_k + rank))
    total = {key: sum(lists.values()) for key, lists in earned.items()}
    by_doc: dict[str, list[_Open]] = {}
    for key in sorted(total, key=lambda k: (-total[k], k)):
        doc_id, start, end = key
        mine = by_doc.setdefault(doc_id, [])
        overlapping = [p for p in mine if p.start < end and start < p.end]
        if not overlapping and join is not None:
            overlapping = [
                p
                for p in mine
                if p.start <= end + join
                and start <= p.end + join
                and max(p.end, end) - min(p.start, start) <= max_chars
            ]
        if not overlapping:
            mine.append(_Open(doc_id, start, end, dict(earned[key])))
            continue
        target = max(overlapping, key=lambda p: min(p.end, end) - max(p.start, start))
        lo, hi = min(target.start, start), max(target.end, end)
        if hi - lo <= max_chars:
            target.start, target.end = lo, hi
        for name, value in earned[key].items():
            target.lists[name] = max(target.lists.get(name, 0.0), value)
    ranked = sorted(
        (p for mine in by_doc.values() for p in mine),
        key=lambda p: (-p.score, p.doc_id, p.start),
    )
    shown: dict[str, list[tuple[int, int]]] = {}
    out: list[Passage] = []
    for p in ranked:
        taken = shown.setdefault(p.doc_id, [])
        piece = _largest_free_piece(p.start, p.end, taken)
        if piece is None or (piece[1] - piece[0]) * 5 < p.end - p.start:
            continue
        taken.append(piece)
        out.append(Passage(p.doc_id, piece[0], piece[1], p.score, tuple(sorted(p.lists))))
    return out


def place_opening(passages: list[Passage], doc_id: str, length: int, at: int) -> list[Passage]:
    """``passages`` with ``[0, length)`` of ``doc_id`` (a document's opening: its title,
    parties, dates or abstract, which questions about the whole document need and rankers
    seldom rank) suggested at place ``at`` (from 1; last when fewer passages come before).

    Only the part of the opening that the passages before ``at`` do not show is suggested, and
    nothing when that is less than a fifth of it; the passages after it lose what it shows (one
    left with less than a fifth of its text is dropped), so no character is suggested twice.
    The opening takes the score of the passage it displaces (the order stays best first) and
    names :data:`OPENING` as its source.
    """
    if length <= 0:
        return passages
    before = passages[: at - 1]
    taken = [(p.start, p.end) for p in before if p.doc_id == doc_id]
    piece = _largest_free_piece(0, length, taken)
    if piece is None or (piece[1] - piece[0]) * 5 < length:
        return passages
    after = passages[at - 1 :]
    score = after[0].score if after else (before[-1].score if before else 0.0)
    out = [*before, Passage(doc_id, piece[0], piece[1], score, (OPENING,))]
    taken.append(piece)
    for p in after:
        if p.doc_id == doc_id:
            free = _largest_free_piece(p.start, p.end, taken)
            if free is None or (free[1] - free[0]) * 5 < p.end - p.start:
                continue
            if free != (p.start, p.end):
                p = Passage(p.doc_id, free[0], free[1], p.score, p.sources)
            taken.append(free)
        out.append(p)
    return out


def _largest_free_piece(
    start: int, end: int, taken: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """The longest part of ``[start, end)`` outside every span of ``taken``."""
    pieces = [(start, end)]
    for a, b in taken:
        nxt: list[tuple[int, int]] = []
        for s, e in pieces:
            if b <= s or e <= a:
                nxt.append((s, e))
                continue
            if s < a:
                nxt.append((s, a))
            if b < e:
                nxt.append((b, e))
        pieces = nxt
    return max(pieces, key=lambda p: (p[1] - p[0], -p[0]), default=None)


@dataclass
class _Open:
    """A passage while it is being merged: its extent and each list's best contribution."""

    doc_id: str
    start: int
    end: int
    lists: dict[str, float]

    @property
    def score(self) -> float:
        return sum(self.lists.values())


def coverage(evidence: Sequence[tuple[int, int]], shown: Sequence[tuple[int, int]]) -> float:
    """Share of the characters of ``evidence`` (spans of one document) inside ``shown``."""
    marks_len = max([e for _, e in evidence] + [e for _, e in shown] + [0])
    need = np.zeros(marks_len, dtype=bool)
    have = np.zeros(marks_len, dtype=bool)
    for s, e in evidence:
        need[s:e] = True
    for s, e in shown:
        have[s:e] = True
    total = int(need.sum())
    return float((need & have).sum()) / total if total else 0.0
