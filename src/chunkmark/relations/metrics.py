"""Relation metrics: which chunking lets a Graph-RAG pipeline extract, and retrieve, the entity
pairs that questions need.

Three families, each a pure function of arrays:

- :func:`support_containment` (no LLM): per gold relation, 1 when every span of its support
  lies inside one single chunk;
- :func:`score_extraction`: the records an extractor returned per chunk, mapped to gold entity
  ids with the document's entity matcher, merged per document and compared with the gold
  pairs (recall, mapped precision, F1; directed and typed variants; recall split by support
  and by sentence; density, unmatched names, cost);
- :func:`score_retrieval`: per question (one per relation; excerpts = its support spans) and
  retrieval depth, the pairs extracted from the retrieved chunks against the question's gold
  pairs (RelRecall@k, RelPrecision@k) and, without any LLM, whether the pairs' support lies in
  the retrieved chunks (SupportRecall@k).

Every metric with a unit (a relation, a pair, an extracted pair, a question) gets the 95%
percentile bootstrap interval the rest of chunkmark uses
(:func:`chunkmark.metrics.bootstrap_ci`, same seed), over that unit. The metrics are listed,
with their definitions, in :data:`RELATION_METRICS`: they read relation sets, extractions and
rankings, which the per-question catalog :data:`chunkmark.metrics.METRICS` does not hand its
metrics (and registering them there would change every cell's id), so they have this catalog
of their own, a second :class:`~chunkmark.metrics.catalog.MetricCatalog`, whose entries are the
same :class:`~chunkmark.metrics.catalog.Metric` type with a ``unit``, a ``family`` and
``extractor`` set; ``chunkmark relations metrics`` lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from chunkmark.metrics import bootstrap_ci
from chunkmark.metrics.catalog import MetricCatalog
from chunkmark.metrics.span_metrics import share
from chunkmark.relations.matching import EntityMatcher, normalise
from chunkmark.relations.model import Entity, Extraction, Pair, RelationSet, extraction_costs

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Unit = Literal["relation", "pair", "directed pair", "typed relation", "extracted", "question", ""]
Directed = tuple[str, str]
Typed = tuple[str, str, str]


# --- the catalog ----------------------------------------------------------------------------

Family = Literal["chunking", "retrieval"]


RELATION_METRICS = MetricCatalog(plugins=False)
"""The relation metrics: entries of the one metric catalog type (:class:`chunkmark.metrics.Metric`),
each with its ``unit``, ``family`` and whether it needs an ``extractor``."""


def _metric(
    name: str,
    label: str,
    unit: Unit,
    family: Family,
    *,
    extractor: bool = True,
    on_screen: bool = False,
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    return RELATION_METRICS.register(
        name, label=label, unit=unit, family=family, extractor=extractor, on_screen=on_screen
    )


# --- inputs ---------------------------------------------------------------------------------


class NameMatcher(Protocol):
    """Maps an extracted name to a gold entity id of one document (None: no entity)."""

    def match(self, name: str, chunk_start: int, chunk_end: int) -> str | None: ...


MatcherFactory = Callable[[Sequence[Entity]], NameMatcher]


@dataclass(frozen=True)
class Chunking:
    """One chunking of a relation set's documents, in the cell's chunk order: each chunk's
    document id, span and cl100k tokens (as the cell counts them)."""

    doc_ids: tuple[str, ...]
    start: IntArray
    end: IntArray
    tokens: IntArray

    @classmethod
    def of(
        cls,
        doc_ids: Sequence[str],
        start: Sequence[int] | IntArray,
        end: Sequence[int] | IntArray,
        tokens: Sequence[int] | IntArray | None = None,
    ) -> Chunking:
        s = np.asarray(start, dtype=np.int64).reshape(-1)
        e = np.asarray(end, dtype=np.int64).reshape(-1)
        t = np.zeros(len(s), np.int64) if tokens is None else np.asarray(tokens, np.int64)
        if not (len(doc_ids) == len(s) == len(e) == len(t)):
            raise ValueError("doc_ids, start, end and tokens must have one entry per chunk")
        return cls(tuple(doc_ids), s, e, t.reshape(-1))

    def __len__(self) -> int:
        return len(self.doc_ids)

    def texts(self, rs: RelationSet) -> list[str]:
        """Each chunk's span text."""
        docs = rs.dataset.by_id
        return [
            docs[d].text[s:e]
            for d, s, e in zip(self.doc_ids, self.start.tolist(), self.end.tolist(), strict=True)
        ]


@dataclass(frozen=True)
class Gold:
    """A relation set's gold relations, pairs and questions as arrays, built once per set.

    Pair ids ``0..n_pairs-1`` number the unordered gold pairs (sorted); ``pair_of[r]`` is
    relation ``r``'s. A pair counts as *contained* when one of its relations' support lies in
    one chunk, and as *same-sentence* when one of its relations is ``same_sentence``.
    """

    rs: RelationSet
    pairs: tuple[Pair, ...]
    pair_id: Mapping[Pair, int]
    pair_of: IntArray
    pair_doc: tuple[str, ...]
    pair_same_sentence: BoolArray
    relation_doc: IntArray  # document index (dataset order)
    relation_lo: IntArray  # first support character
    relation_hi: IntArray  # last support character + 1
    directed: tuple[Directed, ...]
    typed: tuple[Typed, ...]  # (head, tail, property id), distinct
    type_names: Mapping[Directed, frozenset[str]]  # normalised labels and property ids
    question_ptr: IntArray  # CSR over the dataset's questions: their gold pair ids
    question_pairs: IntArray

    @classmethod
    def of(cls, rs: RelationSet) -> Gold:
        relations = rs.relations
        pairs = tuple(sorted(rs.gold_pairs, key=lambda p: tuple(sorted(p))))
        pair_id = {p: i for i, p in enumerate(pairs)}
        pair_of = np.fromiter((pair_id[r.pair] for r in relations), np.int64, len(relations))
        same = np.zeros(len(pairs), dtype=bool)
        np.logical_or.at(same, pair_of, [r.same_sentence for r in relations])
        doc_index = {d.id: i for i, d in enumerate(rs.dataset.documents)}
        pair_doc = [""] * len(pairs)
        for r, p in zip(relations, pair_of.tolist(), strict=True):
            pair_doc[p] = r.doc_id
        type_names: dict[Directed, set[str]] = {}
        for r in relations:
            type_names.setdefault((r.head, r.tail), set()).update(
                {normalise(r.label), normalise(r.property_id)}
            )
        ptr, members = _question_pairs(rs, pair_of)
        return cls(
            rs=rs,
            pairs=pairs,
            pair_id=pair_id,
            pair_of=pair_of,
            pair_doc=tuple(pair_doc),
            pair_same_sentence=same,
            relation_doc=np.fromiter(
                (doc_index[r.doc_id] for r in relations), np.int64, len(relations)
            ),
            relation_lo=np.fromiter(
                (min(s.start for s in r.support) for r in relations), np.int64, len(relations)
            ),
            relation_hi=np.fromiter(
                (max(s.end for s in r.support) for r in relations), np.int64, len(relations)
            ),
            directed=tuple(dict.fromkeys((r.head, r.tail) for r in relations)),
            typed=tuple(dict.fromkeys((r.head, r.tail, r.property_id) for r in relations)),
            type_names={k: frozenset(v) for k, v in type_names.items()},
            question_ptr=ptr,
            question_pairs=members,
        )

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @cached_property
    def doc_index(self) -> Mapping[str, int]:
        return {d.id: i for i, d in enumerate(self.rs.dataset.documents)}


def _question_pairs(rs: RelationSet, pair_of: IntArray) -> tuple[IntArray, IntArray]:
    """Per question (dataset order), the gold pairs of its document's relations whose support
    overlaps one of its excerpts by a character or more: CSR ``(ptr, pair ids)``."""
    by_doc: dict[str, list[int]] = {}
    for i, r in enumerate(rs.relations):
        by_doc.setdefault(r.doc_id, []).append(i)
    found: list[IntArray] = []
    for q in rs.dataset.questions:
        rel = by_doc.get(q.doc_id, [])
        if not rel or not q.excerpts:
            found.append(np.zeros(0, np.int64))
            continue
        owner, spans = _flat_spans([rs.relations[i].support for i in rel])
        ex = np.asarray([(s.start, s.end) for s in q.excerpts], np.int64)
        inter = np.minimum(spans[:, None, 1], ex[None, :, 1]) - np.maximum(
            spans[:, None, 0], ex[None, :, 0]
        )
        hit = np.zeros(len(rel), dtype=bool)
        np.logical_or.at(hit, owner, (inter > 0).any(axis=1))
        found.append(np.unique(pair_of[np.asarray(rel)[hit]]))
    ptr = np.zeros(len(found) + 1, np.int64)
    ptr[1:] = np.cumsum([len(f) for f in found])
    members = np.concatenate(found) if found else np.zeros(0, np.int64)
    return ptr, members.astype(np.int64)


def _flat_spans(supports: Sequence[Sequence[Any]]) -> tuple[IntArray, IntArray]:
    """``(owner, (n, 2) spans)`` of a list of span lists."""
    owner = np.repeat(np.arange(len(supports)), [len(s) for s in supports]).astype(np.int64)
    spans = np.asarray(
        [(s.start, s.end) for support in supports for s in support], np.int64
    ).reshape(-1, 2)
    return owner, spans


# --- support containment --------------------------------------------------------------------


def support_containment(gold: Gold, chunking: Chunking) -> FloatArray:
    """Share of gold relations whose support lies inside one chunk.

    Per relation 1 when one chunk of its document holds every span of its support (``start <=``
    the first support character and the last ``< end``; for several spans, all of them in one
    single chunk), else 0; the mean over relations is the metric. No extractor is involved:
    it bounds what a chunk-by-chunk extractor can read in one piece.
    """
    n = len(gold.rs.relations)
    if n == 0:
        return np.zeros(0)
    if len(chunking) == 0:
        return np.zeros(n)
    width = 1 + int(max(chunking.end.max(initial=0), gold.relation_hi.max(initial=0)))
    c_doc = np.fromiter(
        (gold.doc_index.get(d, -1) for d in chunking.doc_ids), np.int64, len(chunking)
    )
    start_key = c_doc * width + chunking.start
    end_key = c_doc * width + chunking.end
    order = np.argsort(start_key, kind="stable")
    start_key, end_key, c_doc = start_key[order], end_key[order], c_doc[order]
    # Documents are in key order, so the running maximum of end keys restarts per document.
    reach = np.maximum.accumulate(end_key)
    lo_key = gold.relation_doc * width + gold.relation_lo
    at = np.searchsorted(start_key, lo_key, side="right") - 1
    ok = at >= 0
    at_c = np.clip(at, 0, None)
    ok &= c_doc[at_c] == gold.relation_doc
    ok &= reach[at_c] >= gold.relation_doc * width + gold.relation_hi
    return ok.astype(np.float64)


def pair_contained(gold: Gold, per_relation: FloatArray) -> BoolArray:
    """Per gold pair: some relation of the pair has its support inside one chunk."""
    out = np.zeros(gold.n_pairs, dtype=bool)
    np.logical_or.at(out, gold.pair_of, per_relation > 0)
    return out


# --- extraction -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MatchedRecords:
    """A chunking's extraction, mapped to gold entities.

    ``per_chunk[i]`` are chunk ``i``'s relationship records whose source and target matched
    distinct entities of its document, as ``(source id, target id, normalised type)``.
    Counters: records returned, names looked up (two per record), names matched to no entity,
    records whose ends matched one same entity, malformed records; and the extraction's cost
    summed over distinct chunk texts (an equal text is extracted once).
    """

    per_chunk: tuple[tuple[Typed, ...], ...]
    records: int = 0
    names: int = 0
    unmatched_names: int = 0
    same_entity_records: int = 0
    malformed: int = 0
    incomplete: int = 0
    distinct_texts: int = 0
    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def counts(self) -> dict[str, int]:
        """Every counter by its name (the cost columns of relations.csv)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "per_chunk"}


def match_records(
    rs: RelationSet,
    chunking: Chunking,
    extractions: Sequence[Extraction],
    matcher: MatcherFactory | None = None,
) -> MatchedRecords:
    """Map each chunk's relationship records to gold entity ids with the entity matcher of the
    chunk's document (the chunk's span breaks ties between entities of one name).

    A record counts when both names matched and matched *distinct* entities; its type is
    normalised like names. Cost counters are summed once per distinct chunk text.
    """
    if len(extractions) != len(chunking):
        raise ValueError(f"{len(extractions)} extractions for {len(chunking)} chunks")
    make = matcher or EntityMatcher
    matchers: dict[str, NameMatcher] = {}
    texts = chunking.texts(rs)
    distinct: dict[str, Extraction] = {}  # each text's first extraction: its cost counts once
    out: list[tuple[Typed, ...]] = []
    n_records = names = unmatched = same = 0
    for i, extraction in enumerate(extractions):
        doc = chunking.doc_ids[i]
        if doc not in matchers:
            matchers[doc] = make(rs.entities_by_doc.get(doc, ()))
        m = matchers[doc]
        lo, hi = int(chunking.start[i]), int(chunking.end[i])
        kept: list[Typed] = []
        for rec in extraction.relations:
            n_records += 1
            names += 2
            src, tgt = m.match(rec.source, lo, hi), m.match(rec.target, lo, hi)
            unmatched += (src is None) + (tgt is None)
            if src is None or tgt is None:
                continue
            if src == tgt:
                same += 1
                continue
            kept.append((src, tgt, normalise(rec.type) if rec.type else ""))
        out.append(tuple(kept))
        distinct.setdefault(texts[i], extraction)
    return MatchedRecords(
        tuple(out),
        n_records,
        names,
        unmatched,
        same,
        distinct_texts=len(distinct),
        **extraction_costs(distinct.values()),
    )


@dataclass(frozen=True)
class ExtractionScores:
    """Per-unit 0/1 values of the extraction metrics of one chunking (see
    :data:`RELATION_METRICS`), and the ratios without a unit."""

    pair_found: FloatArray  # per gold pair
    pair_correct: FloatArray  # per extracted (matched, distinct) unordered pair
    directed_found: FloatArray  # per gold (head, tail)
    directed_correct: FloatArray  # per extracted (source, target)
    typed_found: FloatArray  # per gold (head, tail, property)
    typed_correct: FloatArray  # per extracted (source, target, type)
    contained: BoolArray  # per gold pair
    same_sentence: BoolArray  # per gold pair
    relations_per_1k_tokens: float
    unmatched_name_rate: float


def extracted_sets(records: MatchedRecords, chunking: Chunking) -> dict[str, set[Typed]]:
    """Every document's extracted (source, target, type) records, merged over its chunks."""
    out: dict[str, set[Typed]] = {}
    for doc, items in zip(chunking.doc_ids, records.per_chunk, strict=True):
        out.setdefault(doc, set()).update(items)
    return out


def score_extraction(
    gold: Gold, chunking: Chunking, records: MatchedRecords, per_relation: FloatArray
) -> ExtractionScores:
    """Recall, mapped precision and their variants for one chunking's merged records.

    Records are merged into one set per document (a pair found in two chunks counts once).
    ``per_relation`` is :func:`support_containment`'s, for the split by support.
    """
    typed: set[Typed] = set()
    for items in extracted_sets(records, chunking).values():
        typed |= items
    directed = {(s, t) for s, t, _ in typed}
    pairs = {frozenset(d) for d in directed}
    found = np.fromiter((p in pairs for p in gold.pairs), np.float64, gold.n_pairs)
    gold_pairs = gold.pair_id
    correct = np.fromiter((p in gold_pairs for p in sorted(pairs, key=sorted)), np.float64)
    gold_directed = set(gold.directed)
    d_found = np.fromiter((d in directed for d in gold.directed), np.float64)
    d_correct = np.fromiter((d in gold_directed for d in sorted(directed)), np.float64)
    types_at: dict[Directed, set[str]] = {}
    for s, t, kind in typed:
        types_at.setdefault((s, t), set()).add(kind)
    accepted: dict[Typed, set[str]] = {}
    for r in gold.rs.relations:
        accepted.setdefault((r.head, r.tail, r.property_id), set()).update(
            {normalise(r.label), normalise(r.property_id)}
        )
    t_found = np.fromiter(
        (bool(types_at.get((h, t), set()) & accepted[(h, t, p)]) for h, t, p in gold.typed),
        np.float64,
        len(gold.typed),
    )
    t_correct = np.fromiter(
        (
            bool(kind) and kind in gold.type_names.get((s, t), frozenset())
            for s, t, kind in sorted(typed)
        ),
        np.float64,
    )
    tokens = int(chunking.tokens.sum())
    return ExtractionScores(
        pair_found=found,
        pair_correct=correct,
        directed_found=d_found,
        directed_correct=d_correct,
        typed_found=t_found,
        typed_correct=t_correct,
        contained=pair_contained(gold, per_relation),
        same_sentence=gold.pair_same_sentence,
        relations_per_1k_tokens=_ratio(1000.0 * records.records, tokens),
        unmatched_name_rate=_ratio(records.unmatched_names, records.names),
    )


# --- retrieval ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkPairs:
    """Each chunk's extracted unordered pairs as ids (CSR): gold pairs keep their gold ids,
    other matched pairs get ids from ``gold.n_pairs`` on."""

    ptr: IntArray
    ids: IntArray

    @classmethod
    def of(cls, gold: Gold, records: MatchedRecords) -> ChunkPairs:
        extra: dict[Pair, int] = {}
        rows: list[list[int]] = []
        for items in records.per_chunk:
            row: set[int] = set()
            for s, t, _ in items:
                pair = frozenset((s, t))
                pid = gold.pair_id.get(pair)
                if pid is None:
                    pid = extra.setdefault(pair, gold.n_pairs + len(extra))
                row.add(pid)
            rows.append(sorted(row))
        ptr = np.zeros(len(rows) + 1, np.int64)
        ptr[1:] = np.cumsum([len(r) for r in rows])
        ids = np.fromiter((p for r in rows for p in r), np.int64, int(ptr[-1]))
        return cls(ptr, ids)


@dataclass(frozen=True)
class RetrievalScores:
    """Per question (dataset order): RelRecall@k, RelPrecision@k, SupportRecall@k."""

    rel_recall: FloatArray
    rel_precision: FloatArray
    support_recall: FloatArray


@dataclass(frozen=True)
class RankedRelations:
    """What the retrieval metrics of one ranking need at any depth, computed once: per
    (question, gold pair) the depth that covers its support (:func:`support_cover_ranks`), and
    every (question, extracted pair) with the first rank extracting it
    (:func:`first_extraction_ranks`) and whether it is one of the question's gold pairs."""

    n_gold: IntArray
    pair_question: IntArray  # the question of each entry of Gold.question_pairs
    cover: IntArray
    extracted: bool
    key_question: IntArray
    first: IntArray
    gold_hit: BoolArray

    @classmethod
    def of(
        cls,
        gold: Gold,
        chunking: Chunking,
        ranking: IntArray,
        chunk_pairs: ChunkPairs | None = None,
    ) -> RankedRelations:
        """``ranking`` holds chunk indices best first, ``(questions, max depth)`` (negative
        entries are padding); ``chunk_pairs`` None: no extractor."""
        nq = len(gold.question_ptr) - 1
        ranking = np.asarray(ranking, dtype=np.int64).reshape(nq, -1)
        n_gold = np.diff(gold.question_ptr)
        q_of = np.repeat(np.arange(nq, dtype=np.int64), n_gold)
        cover = support_cover_ranks(gold, chunking, ranking)
        if chunk_pairs is None:
            empty = np.zeros(0, np.int64)
            return cls(n_gold, q_of, cover, False, empty, empty, np.zeros(0, bool))
        width = gold.n_pairs + len(chunk_pairs.ids) + 1
        key, first = first_extraction_ranks(ranking, chunk_pairs, width)
        hit = np.isin(key, q_of * width + gold.question_pairs)
        return cls(n_gold, q_of, cover, True, key // width, first, hit)

    def score(self, depth: IntArray) -> RetrievalScores:
        """The metrics when ``depth[q]`` chunks of the ranking count for question ``q``."""
        nq = len(self.n_gold)
        depth = np.asarray(depth, dtype=np.int64).reshape(nq)
        covered = (self.cover <= depth[self.pair_question]).astype(np.float64)
        support = share(np.bincount(self.pair_question, covered, minlength=nq), self.n_gold)
        if not self.extracted:
            return RetrievalScores(np.zeros(nq), np.zeros(nq), support)
        counted = self.first <= depth[self.key_question]
        n_ext = np.bincount(self.key_question[counted], minlength=nq).astype(np.int64)
        hit = counted & self.gold_hit
        hits = np.bincount(self.key_question[hit], minlength=nq).astype(np.float64)
        return RetrievalScores(share(hits, self.n_gold), share(hits, n_ext), support)


def score_retrieval(
    gold: Gold,
    chunking: Chunking,
    ranking: IntArray,
    depth: IntArray,
    chunk_pairs: ChunkPairs | None = None,
) -> RetrievalScores:
    """Relation metrics of one retrieval setting: ``ranking`` holds chunk indices best first,
    ``(questions, max depth)`` (negative entries are padding), ``depth[q]`` of them count.

    With ``chunk_pairs`` None (no extractor), RelRecall and RelPrecision are 0. To score
    several depths of one ranking, build :class:`RankedRelations` once and call its
    :meth:`~RankedRelations.score` per depth.
    """
    return RankedRelations.of(gold, chunking, ranking, chunk_pairs).score(depth)


def first_extraction_ranks(
    ranking: IntArray, chunk_pairs: ChunkPairs, width: int
) -> tuple[IntArray, IntArray]:
    """Every (question, pair) extracted from a ranked chunk, as key ``q * width + pair id``,
    with the first rank (1-based) where it appears: sorted by key."""
    nq, depth = ranking.shape
    flat = ranking.reshape(-1)
    safe = np.where(flat >= 0, flat, 0)
    counts = np.where(flat >= 0, chunk_pairs.ptr[safe + 1] - chunk_pairs.ptr[safe], 0)
    total = int(counts.sum())
    q = np.repeat(np.repeat(np.arange(nq, dtype=np.int64), depth), counts)
    rank = np.repeat(np.tile(np.arange(1, depth + 1, dtype=np.int64), nq), counts)
    begin = np.repeat(chunk_pairs.ptr[safe], counts)
    offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    key = q * width + chunk_pairs.ids[begin + offset]
    order = np.lexsort((rank, key))
    key, rank = key[order], rank[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return key[first], rank[first]


def support_cover_ranks(gold: Gold, chunking: Chunking, ranking: IntArray) -> IntArray:
    """For each (question, gold pair) of :attr:`Gold.question_pairs`, the smallest depth k at
    which the union of the top-k chunks holds, character for character, the whole support of
    one relation of the pair (a big number when no depth of the ranking does).

    Computed per document on elementary segments (the pieces between chunk and support
    boundaries): a segment's rank is the best rank of a retrieved chunk holding it, a span's
    the worst of its segments', a relation's the worst of its spans', a pair's the best of its
    relations'.
    """
    never = np.int64(np.iinfo(np.int64).max // 4)
    nq = len(gold.question_ptr) - 1
    out = np.full(len(gold.question_pairs), never, dtype=np.int64)
    if nq == 0 or len(out) == 0:
        return out
    rs = gold.rs
    ranking = np.asarray(ranking, np.int64).reshape(nq, -1)
    depth = ranking.shape[1]
    q_doc = np.fromiter((gold.doc_index[q.doc_id] for q in rs.dataset.questions), np.int64, nq)
    c_doc = np.fromiter(
        (gold.doc_index.get(d, -1) for d in chunking.doc_ids), np.int64, len(chunking)
    )
    by_doc_rel: dict[int, list[int]] = {}
    for i, d in enumerate(gold.relation_doc.tolist()):
        by_doc_rel.setdefault(d, []).append(i)
    for d in np.unique(q_doc).tolist():
        questions = np.flatnonzero(q_doc == d)
        rel = by_doc_rel.get(d, [])
        if not rel:
            continue
        # The questions' retrieved chunks of this document, best first (others masked).
        sub = ranking[questions]
        valid = sub >= 0
        safe = np.where(valid, sub, 0)
        valid &= c_doc[safe] == d
        top_lo = np.where(valid, chunking.start[safe], 0)
        top_hi = np.where(valid, chunking.end[safe], -1)
        owner, spans = _flat_spans([rs.relations[i].support for i in rel])
        bounds = np.unique(np.concatenate([top_lo[valid], top_hi[valid], spans[:, 0], spans[:, 1]]))
        seg_lo, seg_hi = bounds[:-1], bounds[1:]
        # seg_rank[q, s]: the best rank of a retrieved chunk holding segment s (never: none).
        inside = (
            valid[:, :, None]
            & (top_lo[:, :, None] <= seg_lo[None, None, :])
            & (seg_hi[None, None, :] <= top_hi[:, :, None])
        )
        ranks = np.arange(1, depth + 1, dtype=np.int64)[None, :, None]
        seg_rank = np.where(inside, ranks, never).min(axis=1, initial=never)
        # A span's rank: the worst of its segments' (a contiguous run of segments).
        first = np.searchsorted(bounds, spans[:, 0])
        last = np.searchsorted(bounds, spans[:, 1])
        padded = np.concatenate([seg_rank, np.zeros((len(questions), 1), np.int64)], axis=1)
        ends = np.minimum(np.maximum(last, first + 1), len(bounds) - 1)
        cuts = np.stack([first, ends], axis=1).ravel()
        span_rank = np.maximum.reduceat(padded, cuts, axis=1)[:, 0::2]
        span_rank[:, last <= first] = 0  # an empty span is always held
        rel_rank = np.zeros((len(questions), len(rel)), np.int64)
        np.maximum.at(rel_rank.T, owner, span_rank.T)
        rel_pairs = gold.pair_of[np.asarray(rel)]
        for row, q in enumerate(questions.tolist()):
            lo, hi = int(gold.question_ptr[q]), int(gold.question_ptr[q + 1])
            wanted = gold.question_pairs[lo:hi]
            of_pair = rel_pairs[None, :] == wanted[:, None]
            out[lo:hi] = np.where(of_pair, rel_rank[row][None, :], never).min(axis=1, initial=never)
    return out


# --- rows -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkingScores:
    """What the chunking metrics read: support containment per relation and, with an
    extractor, the extraction's scores."""

    containment: FloatArray
    extraction: ExtractionScores | None = None


def score_chunking(
    gold: Gold, chunking: Chunking, records: MatchedRecords | None = None
) -> ChunkingScores:
    """Support containment and, given matched records, the extraction scores of a chunking."""
    per_relation = support_containment(gold, chunking)
    if records is None:
        return ChunkingScores(per_relation)
    return ChunkingScores(per_relation, score_extraction(gold, chunking, records, per_relation))


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def metric_row(
    family: Family, scores: Any, seed: int = 0, extractor: bool = True
) -> dict[str, Any]:
    """Every metric of ``family`` computed from ``scores`` as relations.csv columns: with a
    unit, the mean over units and its 95% percentile bootstrap interval
    (:func:`chunkmark.metrics.bootstrap_ci`, ``seed``; NaN for no units); else the value.
    Without ``extractor`` the metrics that need one are left out."""
    row: dict[str, Any] = {}
    groups: dict[tuple[str, int], dict[str, FloatArray]] = {}
    for m in RELATION_METRICS.values():
        if m.family != family or (m.extractor and not extractor):
            continue
        value = m.compute(scores)
        if not m.interval:
            row[m.name] = float(value)
            continue
        arr = np.asarray(value, dtype=np.float64)
        row[f"{m.name}_mean"] = float(arr.mean()) if len(arr) else float("nan")
        groups.setdefault((m.unit, len(arr)), {})[m.name] = arr
    for columns in groups.values():  # metrics over the same units share their resamples
        for name, (low, high) in bootstrap_ci(columns, seed=seed).items():
            row[f"{name}_ci_low"], row[f"{name}_ci_high"] = low, high
    return {c: row[c] for c in metric_columns(family, extractor) if c in row}


def metric_columns(family: Family | None = None, extractor: bool = True) -> list[str]:
    """The relations.csv metric columns, in catalog order."""
    return [
        c
        for m in RELATION_METRICS.values()
        if (family is None or m.family == family) and (extractor or not m.extractor)
        for c in m.columns()
    ]


# --- definitions: each function's docstring is its metric's definition ----------------------


def _x(c: ChunkingScores) -> ExtractionScores:
    if c.extraction is None:
        raise ValueError("extraction metrics need matched records")
    return c.extraction


@_metric("support_containment", "contain", "relation", "chunking", extractor=False, on_screen=True)
def _support_containment(c: ChunkingScores) -> FloatArray:
    """Share of gold relations whose support lies inside one chunk (all spans of a multi-span
    support in one single chunk); no extractor. Per relation 0/1.

    It bounds what a chunk-by-chunk extractor can read in one piece.
    """
    return c.containment


@_metric("recall", "R", "pair", "chunking", on_screen=True)
def _recall(c: ChunkingScores) -> FloatArray:
    """Extraction recall: share of the gold unordered entity pairs found in some chunk of
    their document (a record whose source and target matched the pair's two entities, either
    way round). Per gold pair 0/1; relations sharing a pair count once.
    """
    return _x(c).pair_found


@_metric("precision", "P>=", "extracted", "chunking", on_screen=True)
def _precision(c: ChunkingScores) -> FloatArray:
    """Mapped precision, a lower bound: of the distinct unordered pairs extracted (both ends
    matched distinct gold entities of the chunk's document), the share that are gold pairs;
    the gold relations are incomplete, so a true relation left out of them counts as wrong.
    Per extracted pair 0/1.

    Records with an unmatched end are not counted here (see ``unmatched_name_rate``).
    """
    return _x(c).pair_correct


@_metric("f1", "F1", "", "chunking", on_screen=True)
def _f1_metric(c: ChunkingScores) -> float:
    """Harmonic mean of extraction recall and mapped precision (a ratio: no interval)."""
    x = _x(c)
    return _f1(_mean(x.pair_correct), _mean(x.pair_found))


@_metric("directed_recall", "dir R", "directed pair", "chunking")
def _directed_recall(c: ChunkingScores) -> FloatArray:
    """Directed recall: share of the gold (head, tail) pairs extracted as source -> target."""
    return _x(c).directed_found


@_metric("directed_precision", "dir P>=", "extracted", "chunking")
def _directed_precision(c: ChunkingScores) -> FloatArray:
    """Directed mapped precision: share of the extracted (source, target) pairs (both ends
    matched distinct entities) that are a gold (head, tail); a lower bound."""
    return _x(c).directed_correct


@_metric("directed_f1", "dir F1", "", "chunking")
def _directed_f1(c: ChunkingScores) -> float:
    """Harmonic mean of directed recall and directed mapped precision."""
    x = _x(c)
    return _f1(_mean(x.directed_correct), _mean(x.directed_found))


@_metric("typed_recall", "typed R", "typed relation", "chunking")
def _typed_recall(c: ChunkingScores) -> FloatArray:
    """Typed recall: share of the gold (head, tail, property) relations extracted as source ->
    target with a type whose normalised form is the relation's normalised label or property
    id."""
    return _x(c).typed_found


@_metric("typed_precision", "typed P>=", "extracted", "chunking")
def _typed_precision(c: ChunkingScores) -> FloatArray:
    """Typed mapped precision: share of the extracted (source, target, normalised type)
    records that match a gold relation's head, tail and label or property id; a lower bound
    (an empty type never matches)."""
    return _x(c).typed_correct


@_metric("typed_f1", "typed F1", "", "chunking")
def _typed_f1(c: ChunkingScores) -> float:
    """Harmonic mean of typed recall and typed mapped precision."""
    x = _x(c)
    return _f1(_mean(x.typed_correct), _mean(x.typed_found))


@_metric("recall_contained", "R in", "pair", "chunking")
def _recall_contained(c: ChunkingScores) -> FloatArray:
    """Extraction recall over the gold pairs one of whose relations has its support inside one
    chunk."""
    x = _x(c)
    return x.pair_found[x.contained]


@_metric("recall_split", "R split", "pair", "chunking")
def _recall_split(c: ChunkingScores) -> FloatArray:
    """Extraction recall over the gold pairs none of whose relations has its support inside
    one chunk (the support is split across chunks)."""
    x = _x(c)
    return x.pair_found[~x.contained]


@_metric("recall_same_sentence", "R 1-sent", "pair", "chunking")
def _recall_same_sentence(c: ChunkingScores) -> FloatArray:
    """Extraction recall over the gold pairs with a relation whose two ends are mentioned in
    one sentence (``Relation.same_sentence``)."""
    x = _x(c)
    return x.pair_found[x.same_sentence]


@_metric("recall_cross_sentence", "R x-sent", "pair", "chunking")
def _recall_cross_sentence(c: ChunkingScores) -> FloatArray:
    """Extraction recall over the gold pairs none of whose relations has both ends in one
    sentence."""
    x = _x(c)
    return x.pair_found[~x.same_sentence]


@_metric("relations_per_1k_tokens", "rel/1k tok", "", "chunking")
def _density(c: ChunkingScores) -> float:
    """Relationship records returned per 1,000 chunk tokens (cl100k, every chunk counted as
    the cell counts it), matched or not."""
    return _x(c).relations_per_1k_tokens


@_metric("unmatched_name_rate", "unmatched", "", "chunking")
def _unmatched(c: ChunkingScores) -> float:
    """Share of the records' source and target names that the entity matcher of the chunk's
    document mapped to no gold entity."""
    return _x(c).unmatched_name_rate


@_metric("rel_recall", "RelR@k", "question", "retrieval", on_screen=True)
def _rel_recall(r: RetrievalScores) -> FloatArray:
    """RelRecall@k: share of the question's gold pairs extracted from its top-k retrieved
    chunks (the setting's ranking). Per question.

    A question's gold pairs are the pairs of the relations of its document whose support
    overlaps one of its excerpts by a character or more (its own relation's pair among them).
    """
    return r.rel_recall


@_metric("rel_precision", "RelP@k", "question", "retrieval")
def _rel_precision(r: RetrievalScores) -> FloatArray:
    """RelPrecision@k: of the distinct pairs extracted from the question's top-k chunks (both
    ends matched distinct entities, chunks of any document), the share that are the
    question's gold pairs; 0 when none is extracted. Per question."""
    return r.rel_precision


@_metric("support_recall", "SupR@k", "question", "retrieval", extractor=False, on_screen=True)
def _support_recall(r: RetrievalScores) -> FloatArray:
    """SupportRecall@k (no extractor): share of the question's gold pairs whose support (every
    span of one relation of the pair) lies wholly inside the union of its top-k chunks. Per
    question."""
    return r.support_recall


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if len(values) else 0.0
