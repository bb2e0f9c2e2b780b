"""Silver relation sets: the relations an LLM extracts from each question's excerpts alone.

Any chunkmark dataset (a built-in name such as ``demo``, a Chroma or JSONL folder) becomes a
relation set (see :mod:`chunkmark.relations.model`) whose relations all have
``support_kind="silver"``, so that runs on it report *silver* support:

- every distinct excerpt (document and span) of the questions is read by the ``llm`` extractor
  of :mod:`chunkmark.relations.extract`; equal excerpt texts are asked once (and the LLM's answer
  cache makes a rerun ask nothing);
- per document, the names of the entity and relationship records of its excerpts are grouped
  by :func:`~chunkmark.relations.matching.normalise`. A group is an entity when one of the
  forms written for it occurs in the document text as whole words, found deterministically
  and case-sensitively like the cooccurrence extractor does (``(?<!\\w)name(?!\\w)``); a group
  none of whose forms occurs is dropped and counted, never placed. Entity ``d{index}e{j}``
  (``index`` the document's position in the dataset, ``j`` counting its entities in order of
  their first mention, longer first at one position, then by normalised name) has as aliases
  the forms written (those occurring by first occurrence, then the others as first seen), as
  mentions every whole-word occurrence of an alias in the document (each span once), and as
  type the most common type of its entity records (ties: the first seen; ``""`` when only
  relationship records name it);
- a relationship record whose ends are both entities is a relation typed with the record's
  type normalised (``property`` and ``label``; :data:`UNTYPED` when that is empty) and
  supported by the span of the excerpt it came from. Records of one document with the same
  head, tail and type are one relation, their supports united (distinct spans in order,
  overlapping ones merged); the others are counted as merged duplicates. A record with an end
  that was dropped is counted and skipped. ``same_sentence`` says whether some sentence of the
  document (:func:`~chunkmark.chunkers.sentences.sentence_spans`) holds a mention of both ends.
  Relation ``d{index}r{k}``: a document's relations in order of their first support character,
  then head, tail and type;
- the dataset keeps its documents unchanged; its questions are replaced by one per relation,
  ``What is the {label} of {head}?`` (the head's first alias) with the support spans as
  excerpts and the relation's id.

The written folder is read back with :func:`~chunkmark.relations.model.load_relation_set` and
compared with what was built.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from chunkmark.chunkers.sentences import sentence_spans
from chunkmark.datasets.model import Dataset, Document
from chunkmark.datasets.suite.base import merge_spans
from chunkmark.errors import DatasetError
from chunkmark.relations.matching import normalise
from chunkmark.relations.model import (
    BuiltSet,
    ChunkInput,
    Entity,
    Extraction,
    Extractor,
    Relation,
    RelationSet,
    extraction_costs,
    relation_question,
)
from chunkmark.spans import Span

if TYPE_CHECKING:
    from chunkmark.chunkers import ChunkerContext
    from chunkmark.costs.llm_prices import LLMPrices
    from chunkmark.relations.extract import ExtractionEstimate, LLMExtractor

Progress = Callable[[str], None]
UNTYPED = "relation"  # the type of a relationship record written without one
BATCH = 25  # distinct excerpt texts extracted between two progress lines


@dataclass(frozen=True, slots=True)
class SilverStats:
    """What :func:`build_silver` read, asked, kept, dropped and merged.

    ``excerpts`` counts the excerpts of the questions read, ``distinct_excerpts`` the distinct
    (document, span) pairs among them and ``texts`` their distinct texts (one extraction each).
    ``calls`` are requests sent (answers from the cache are ``cache_hits``). ``names`` counts
    the distinct normalised names per document: ``entities`` of them occur in the document,
    ``names_dropped`` do not. Of the ``relation_records`` (over every distinct excerpt),
    ``records_dropped`` had an end that was dropped, ``duplicates_merged`` repeated a relation
    already made, and the rest are the ``relations``.
    """

    documents: int
    questions: int
    excerpts: int
    distinct_excerpts: int
    texts: int
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    malformed: int
    incomplete: int
    names: int
    entities: int
    names_dropped: int
    mentions: int
    relation_records: int
    records_dropped: int
    relations: int
    duplicates_merged: int
    same_sentence: int


# A silver relation set built in memory, before it is written.
SilverSet = BuiltSet[SilverStats]


# --- excerpts ---------------------------------------------------------------------------------


def excerpt_inputs(dataset: Dataset) -> list[ChunkInput]:
    """Every distinct excerpt (document, span) of the questions, in question order, as the
    extractor's input (its text, document and span; no gold entities)."""
    by_id = dataset.by_id
    seen = dict.fromkeys((q.doc_id, s) for q in dataset.questions for s in q.excerpts)
    return [ChunkInput(by_id[doc].text[s.start : s.end], doc, s.start, s.end) for doc, s in seen]


def _distinct_texts(inputs: Sequence[ChunkInput]) -> list[ChunkInput]:
    """The first input of each distinct text."""
    first: dict[str, ChunkInput] = {}
    for item in inputs:
        first.setdefault(item.text, item)
    return list(first.values())


def estimate_silver(dataset: Dataset, extractor: LLMExtractor) -> ExtractionEstimate:
    """Calls, tokens and dollars of extracting every distinct excerpt text, with no request."""
    return extractor.estimate(_distinct_texts(excerpt_inputs(dataset)))


def extract_excerpts(
    dataset: Dataset, extractor: Extractor, progress: Progress | None = None
) -> tuple[list[ChunkInput], dict[str, Extraction]]:
    """The distinct excerpts of ``dataset`` and the extraction of each distinct excerpt text
    (one per text, asked in batches of :data:`BATCH` texts with a ``progress`` line after
    each)."""
    inputs = excerpt_inputs(dataset)
    distinct = _distinct_texts(inputs)
    found: dict[str, Extraction] = {}
    for at in range(0, len(distinct), BATCH):
        batch = distinct[at : at + BATCH]
        for item, extraction in zip(batch, extractor.extract(batch), strict=True):
            found[item.text] = extraction
        if progress is not None:
            cost = extraction_costs(found.values())
            progress(
                f"extracted {len(found):,} of {len(distinct):,} distinct excerpt texts "
                f"({cost['calls']:,} requests, {cost['cache_hits']:,} answers from the cache)"
            )
    return inputs, found


# --- building ---------------------------------------------------------------------------------


@dataclass
class _Name:
    """The records of one document that name one normalised name."""

    forms: dict[str, None] = field(default_factory=dict)  # as written, first seen first
    types: Counter[str] = field(default_factory=Counter)
    type_order: dict[str, None] = field(default_factory=dict)

    def add(self, form: str, kind: str | None = None) -> None:
        self.forms.setdefault(form.strip(), None)
        if kind is not None and kind.strip():
            self.types[kind.strip()] += 1
            self.type_order.setdefault(kind.strip(), None)

    def type(self) -> str:
        if not self.types:
            return ""
        best = max(self.types.values())
        return next(t for t in self.type_order if self.types[t] == best)


@dataclass
class _Doc:
    """One document's names and relationship records, gathered over its excerpts."""

    names: dict[str, _Name] = field(default_factory=dict)
    records: list[tuple[str, str, str, Span]] = field(default_factory=list)

    def name(self, form: str, kind: str | None = None) -> str:
        """The normalised name of ``form``, recorded ("" and nothing recorded when empty)."""
        key = normalise(form)
        if key:
            self.names.setdefault(key, _Name()).add(form, kind)
        return key


def occurrences(form: str, text: str) -> list[Span]:
    """Every whole-word, case-sensitive occurrence of ``form`` in ``text`` (overlapping ones
    too), in order."""
    if not form:
        return []
    pattern = re.compile(r"(?<!\w)" + re.escape(form) + r"(?!\w)")
    out: list[Span] = []
    at = 0
    while (hit := pattern.search(text, at)) is not None:
        out.append(Span(hit.start(), hit.end()))
        at = hit.start() + 1
    return out


def unite(spans: Iterable[Span]) -> tuple[Span, ...]:
    """Distinct spans in order, overlapping ones merged into one (touching ones are kept)."""
    return merge_spans(set(spans))


def _sentence_ids(
    sentences: Sequence[Span], starts: Sequence[int], mentions: Iterable[Span]
) -> set[int]:
    """The sentences that hold one of ``mentions`` whole."""
    out: set[int] = set()
    for mention in mentions:
        i = bisect.bisect_right(starts, mention.start) - 1
        if i >= 0 and mention.end <= sentences[i].end:
            out.add(i)
    return out


class _Builder:
    """Turns the extractions of each document's excerpts into entities and relations."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.width = max(3, len(str(len(dataset.documents) - 1)))
        self.counts: Counter[str] = Counter()

    def build(
        self, inputs: Sequence[ChunkInput], found: Mapping[str, Extraction]
    ) -> tuple[list[Entity], list[Relation]]:
        docs: dict[str, _Doc] = {}
        for item in inputs:
            doc = docs.setdefault(item.doc_id, _Doc())
            extraction = found[item.text]
            span = Span(item.start, item.end)
            for entity in extraction.entities:
                doc.name(entity.name, entity.type)
            for record in extraction.relations:
                head, tail = doc.name(record.source), doc.name(record.target)
                doc.records.append((head, tail, normalise(record.type) or UNTYPED, span))
        entities: list[Entity] = []
        relations: list[Relation] = []
        for index, document in enumerate(self.dataset.documents):
            gathered = docs.get(document.id)
            if gathered is None:
                continue
            prefix = f"d{index:0{self.width}d}"
            by_name = self._entities(prefix, document.id, document.text, gathered)
            entities.extend(by_name.values())
            relations.extend(self._relations(prefix, document, gathered, by_name))
        return entities, relations

    def _entities(self, prefix: str, doc_id: str, text: str, doc: _Doc) -> dict[str, Entity]:
        """The document's entities by normalised name, in id order; dropped names counted."""
        placed: list[tuple[int, int, str, tuple[str, ...], tuple[Span, ...]]] = []
        for key, name in doc.names.items():
            self.counts["names"] += 1
            found = {form: occurrences(form, text) for form in name.forms}
            mentions = sorted({s for spans in found.values() for s in spans})
            if not mentions:
                self.counts["names_dropped"] += 1
                continue
            occurring = sorted(
                (f for f in name.forms if found[f]), key=lambda f: (found[f][0].start, -len(f))
            )
            aliases = (*occurring, *(f for f in name.forms if not found[f]))
            start, longest = min((m.start, m.start - m.end) for m in mentions)
            placed.append((start, longest, key, aliases, tuple(mentions)))
        out: dict[str, Entity] = {}
        for j, (*_, key, names, spans) in enumerate(sorted(placed, key=lambda p: p[:3])):
            out[key] = Entity(f"{prefix}e{j}", doc_id, doc.names[key].type(), names, spans)
            self.counts["mentions"] += len(spans)
        return out

    def _relations(
        self, prefix: str, document: Document, doc: _Doc, entities: Mapping[str, Entity]
    ) -> list[Relation]:
        """The document's relations in id order; dropped and merged records counted."""
        supports: dict[tuple[str, str, str], list[Span]] = {}
        for head, tail, kind, span in doc.records:
            self.counts["relation_records"] += 1
            if head not in entities or tail not in entities or head == tail:
                self.counts["records_dropped"] += 1
                continue
            key = (entities[head].id, entities[tail].id, kind)
            if key in supports:
                self.counts["duplicates_merged"] += 1
            supports.setdefault(key, []).append(span)
        sentences = sentence_spans(document.text)
        starts = [s.start for s in sentences]
        in_sentences = {
            e.id: _sentence_ids(sentences, starts, e.mentions) for e in entities.values()
        }
        number = {e.id: j for j, e in enumerate(entities.values())}
        united = {key: unite(spans) for key, spans in supports.items()}
        order = sorted(united, key=lambda k: (united[k][0].start, number[k[0]], number[k[1]], k[2]))
        out = []
        for k, key in enumerate(order):
            head, tail, kind = key
            same = bool(in_sentences[head] & in_sentences[tail])
            self.counts["same_sentence"] += int(same)
            out.append(
                Relation(
                    f"{prefix}r{k}",
                    document.id,
                    head,
                    tail,
                    kind,
                    kind,
                    united[key],
                    "silver",
                    same,
                )
            )
        return out


def build_silver(
    dataset: Dataset,
    extractor: Extractor,
    *,
    name: str | None = None,
    progress: Progress | None = None,
) -> SilverSet:
    """The silver relation set of ``dataset`` with the records ``extractor`` writes for its
    excerpts (see the module docs); ``name`` names the new dataset (default: the old name).

    Raises :class:`DatasetError` when the dataset has no question or no relation survives.
    """
    if not dataset.questions:
        raise DatasetError(
            f"Dataset {dataset.name!r} has no question, so it has no excerpt to extract from.",
            "Give a dataset with questions and their excerpts.",
        )
    inputs, found = extract_excerpts(dataset, extractor, progress)
    builder = _Builder(dataset)
    entities, relations = builder.build(inputs, found)
    by_id = {e.id: e for e in entities}
    questions = tuple(relation_question(r, by_id) for r in relations)
    counts = builder.counts
    stats = SilverStats(
        documents=len(dataset.documents),
        questions=len(dataset.questions),
        excerpts=sum(len(q.excerpts) for q in dataset.questions),
        distinct_excerpts=len(inputs),
        texts=len(found),
        **extraction_costs(found.values()),
        names=counts["names"],
        entities=len(entities),
        names_dropped=counts["names_dropped"],
        mentions=counts["mentions"],
        relation_records=counts["relation_records"],
        records_dropped=counts["records_dropped"],
        relations=len(relations),
        duplicates_merged=counts["duplicates_merged"],
        same_sentence=counts["same_sentence"],
    )
    if not relations:
        raise DatasetError(
            f"No relation of dataset {dataset.name!r} survived: over {stats.texts} excerpt "
            f"texts the LLM wrote {stats.relation_records} relationship records "
            f"({stats.records_dropped} naming something that does not occur in the document "
            f"text) and {stats.malformed} malformed ones.",
            "Check the model's answers (kept in the LLM cache unless --no-cache), or try "
            "another --llm or --gleanings.",
        )
    new = Dataset(name or dataset.name, dataset.documents, questions, source=dataset.source)
    return SilverSet(new, tuple(entities), tuple(relations), stats)


# --- the extractor and the whole preparation ----------------------------------------------


def silver_extractor(
    llm: str,
    *,
    gleanings: int = 0,
    cache_dir: str | Path | None = None,
    no_cache: bool = False,
    max_calls: int | None = None,
    max_cost: float | None = None,
    seed: int = 0,
    price_file: str | Path | None = None,
) -> LLMExtractor:
    """The ``llm`` extractor for the LLM spec ``llm``, its answers cached under the cache
    folder (none with ``no_cache``) and held to ``max_calls`` requests and ``max_cost`` US
    dollars, priced from the shipped LLM price table with ``price_file``'s entries on top."""
    from chunkmark.chunkers import ChunkerContext
    from chunkmark.costs.llm_prices import load_llm_prices
    from chunkmark.errors import ConfigError
    from chunkmark.paths import resolve_cache_dir
    from chunkmark.relations.extract import EXTRACTORS, Budget, LLMExtractor
    from chunkmark.specs import Spec

    cache = None if no_cache else resolve_cache_dir(cache_dir)
    context = ChunkerContext(cache_dir=cache, seed=seed)
    prices = load_llm_prices(price_file, ConfigError)
    if max_cost is not None:
        _check_price(context, llm, max_cost, prices)
    extractor, _ = EXTRACTORS.build(
        Spec.of("llm", llm=llm, gleanings=gleanings),
        context=context,
        budget=Budget(max_calls=max_calls, max_cost=max_cost, prices=prices),
    )
    if not isinstance(extractor, LLMExtractor):  # the registry's "llm" entry builds one
        raise TypeError(f"expected an LLMExtractor, got {type(extractor).__name__}")
    return extractor


def _check_price(context: ChunkerContext, llm: str, max_cost: float, prices: LLMPrices) -> None:
    """Refuse ``max_cost`` for a model without a known price (the client is built once: the
    context keeps it for the extractor)."""
    from chunkmark.costs.budget import usd
    from chunkmark.costs.llm_prices import price_of

    client = context.llm(llm)
    if price_of(client, prices) is None:
        raise _unpriced(str(client.identity().get("model", client.name)), usd(max_cost))


def _unpriced(model: str, limit: str) -> Exception:
    from chunkmark.costs.budget import CostLimitError

    return CostLimitError(
        f"No price is known for {model!r}, so --max-cost {limit} cannot be enforced.",
        "Give its price with --prices FILE (YAML: 'models: {MODEL: {input: 0.15, output: "
        "0.60}}', US dollars per million tokens), use a model with a known price, or run "
        "without --max-cost.",
    )


def check_cost(estimate: ExtractionEstimate, max_cost: float) -> None:
    """Refuse to start when the fewest requests still to send are estimated above
    ``max_cost`` US dollars (the extractor also stops before a request would cross it)."""
    from chunkmark.costs.budget import CostLimitError, usd

    if estimate.usd is None:
        raise _unpriced(estimate.model, usd(max_cost))
    if estimate.usd > max_cost:
        raise CostLimitError(
            f"Extracting {estimate.texts:,} excerpt texts is estimated at {usd(estimate.usd)} "
            f"or more, above --max-cost {usd(max_cost)}.",
            "Raise --max-cost, use a cheaper model, or see --dry-run.",
        )


def prepare_silver(
    source: str | Path,
    out: str | Path,
    extractor: LLMExtractor,
    *,
    max_cost: float | None = None,
    progress: Progress | None = None,
) -> tuple[RelationSet, SilverStats]:
    """Turn the dataset ``source`` (a built-in name or a folder) into a silver relation set in
    ``out`` with ``extractor`` (see the module docs and :func:`silver_extractor`).

    With ``max_cost`` the run is refused before any request when the estimate is above it.
    Returns the set as read back from ``out`` and the counts.
    """
    from chunkmark.datasets import load_dataset

    dataset = load_dataset(source)
    if max_cost is not None:
        check_cost(estimate_silver(dataset, extractor), max_cost)
    silver = build_silver(dataset, extractor, name=Path(out).resolve().name, progress=progress)
    return silver.write(out, silver=True), silver.stats
