"""The data model of relation evaluation: gold entities and relations over a chunkmark dataset,
what an extractor returns for one chunk, and the extractor contract.

A *relation set* is a folder that chunkmark already loads as a dataset (``documents.jsonl`` and
``questions.jsonl``: one templated question per relation, whose excerpts are the relation's
support spans), plus two files:

- ``entities.jsonl``: ``{"id": str, "doc_id": str, "type": str, "aliases": [str, ...],
  "mentions": [{"start": int, "end": int}, ...]}``; ``doc_id`` names a document of the dataset
  (a corpus file), mentions are character spans into its text (``text[start:end]`` is one of the
  aliases); entity ids are unique across the set;
- ``relations.jsonl``: ``{"id": str, "doc_id": str, "head": str, "tail": str, "property": str,
  "label": str, "support": [{"start": int, "end": int}, ...], "support_kind": "evidence" |
  "window" | "silver", "same_sentence": bool}``; ``head``/``tail`` are entity ids of that
  document, ``property`` the Wikidata id (``P17``) or another type id, ``label`` its name
  (``country``); ``support`` the spans that state it (the evidence sentences, else the smallest
  window of sentences holding a head and a tail mention); ``same_sentence`` whether some
  sentence holds a mention of both ends. The question of relation ``id`` has the same id.

Metrics work on *unordered entity pairs* (``frozenset({head, tail})``), with directed
(``(head, tail)``) and typed (``(head, tail, property_id)``) variants. In Python a relation's
type is ``Relation.property_id`` (``property`` in the file).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from chunkmark.datasets.jsonl import parsed_lines
from chunkmark.datasets.model import Dataset, Question
from chunkmark.errors import DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.spans import Span

StatsT = TypeVar("StatsT")

ENTITIES_FILE = "entities.jsonl"
RELATIONS_FILE = "relations.jsonl"
SupportKind = Literal["evidence", "window", "silver"]
SUPPORT_KINDS: tuple[SupportKind, ...] = ("evidence", "window", "silver")
Pair = frozenset[str]


@dataclass(frozen=True, slots=True)
class Entity:
    """A gold entity of one document: every name it goes by and every mention's span."""

    id: str
    doc_id: str
    type: str
    aliases: tuple[str, ...]
    mentions: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class Relation:
    """A gold relation between two entities of one document, with the spans that support it."""

    id: str
    doc_id: str
    head: str
    tail: str
    property_id: str
    label: str
    support: tuple[Span, ...]
    support_kind: SupportKind
    same_sentence: bool

    @property
    def pair(self) -> Pair:
        """The unordered entity pair."""
        return frozenset((self.head, self.tail))


@dataclass(frozen=True)
class RelationSet:
    """Gold entities and relations over ``dataset`` (whose questions are the relations)."""

    dataset: Dataset
    entities: Mapping[str, Entity]
    relations: tuple[Relation, ...]
    silver: bool = False
    source: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.dataset.name

    @cached_property
    def entities_by_doc(self) -> Mapping[str, tuple[Entity, ...]]:
        """Each document's entities, in id order."""
        out: dict[str, list[Entity]] = {d.id: [] for d in self.dataset.documents}
        for entity in sorted(self.entities.values(), key=lambda e: e.id):
            out.setdefault(entity.doc_id, []).append(entity)
        return {doc: tuple(items) for doc, items in out.items()}

    @cached_property
    def gold_pairs(self) -> frozenset[Pair]:
        """Every unordered gold entity pair (pairs never cross documents: ids are unique)."""
        return frozenset(r.pair for r in self.relations)

    @cached_property
    def by_id(self) -> Mapping[str, Relation]:
        return {r.id: r for r in self.relations}


# --- what an extractor returns ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    name: str
    type: str = ""
    description: str = ""


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """A relationship record: names as the extractor wrote them (matched to gold entities later),
    its type (a relation label or property id when the extractor gives one, else empty)."""

    source: str
    target: str
    type: str = ""
    description: str = ""
    strength: float | None = None


@dataclass(frozen=True)
class Extraction:
    """Everything extracted from one chunk text, and what it cost.

    ``malformed`` counts records the parser could not read (they are skipped, never guessed);
    ``complete`` is False when the answer lacked the completion marker (the records before the
    cut are kept). ``calls`` counts LLM calls made for this chunk in this process (0 when every
    answer came from the cache or the extractor needs no model); tokens are as the endpoint
    reported them.
    """

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    malformed: int = 0
    complete: bool = True
    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


def extraction_costs(extractions: Iterable[Extraction]) -> dict[str, int]:
    """What the extractions cost, summed: malformed records, answers without the completion
    marker (``incomplete``), calls, cache hits and tokens in and out."""
    found = list(extractions)
    return {
        "malformed": sum(x.malformed for x in found),
        "incomplete": sum(not x.complete for x in found),
        "calls": sum(x.calls for x in found),
        "cache_hits": sum(x.cache_hits for x in found),
        "input_tokens": sum(x.input_tokens for x in found),
        "output_tokens": sum(x.output_tokens for x in found),
    }


@dataclass(frozen=True, slots=True)
class ChunkInput:
    """One chunk to extract from: its text, its document, and that document's gold entities
    (an oracle extractor reads them; an LLM extractor must not)."""

    text: str
    doc_id: str
    start: int
    end: int
    entities: tuple[Entity, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Turns chunks into entity and relationship records."""

    @property
    def name(self) -> str: ...

    def identity(self) -> dict[str, Any]:
        """Everything that changes the records (model, prompt version, gleanings)."""
        ...

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        """One :class:`Extraction` per chunk, in order. Equal chunk texts are extracted once."""
        ...


def relation_question(relation: Relation, entities: Mapping[str, Entity]) -> Question:
    """The question a relation's support answers: "What is the <label> of <head>?"."""
    head = entities[relation.head].aliases[0]
    return Question(
        relation.id, f"What is the {relation.label} of {head}?", relation.doc_id, relation.support
    )


# --- files --------------------------------------------------------------------------------------


def _spans(items: Sequence[Span]) -> list[dict[str, int]]:
    return [{"start": s.start, "end": s.end} for s in items]


def write_relation_files(
    folder: str | Path, entities: Sequence[Entity], relations: Sequence[Relation]
) -> None:
    """Write ``entities.jsonl`` and ``relations.jsonl`` into ``folder`` (atomically each)."""
    root = Path(folder)
    lines = [json.dumps(asdict(e), ensure_ascii=False) for e in entities]
    write_bytes_atomic(root / ENTITIES_FILE, ("\n".join(lines) + "\n").encode())
    lines = [
        json.dumps(
            {
                "id": r.id,
                "doc_id": r.doc_id,
                "head": r.head,
                "tail": r.tail,
                "property": r.property_id,
                "label": r.label,
                "support": _spans(r.support),
                "support_kind": r.support_kind,
                "same_sentence": r.same_sentence,
            },
            ensure_ascii=False,
        )
        for r in relations
    ]
    write_bytes_atomic(root / RELATIONS_FILE, ("\n".join(lines) + "\n").encode())


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DatasetError(
            f"{path} is missing.",
            "Point at a folder written by `chunkmark relations prepare`.",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{path} is not UTF-8 (byte {exc.start}).", "Write the file as UTF-8."
        ) from None

    def bad(number: int, exc: json.JSONDecodeError) -> None:
        raise DatasetError(
            f"{path}, line {number}: not JSON ({exc.msg}).", "Fix or remove that line."
        ) from None

    for number, item in parsed_lines(text, bad):
        if not isinstance(item, dict):
            raise DatasetError(f"{path}, line {number}: not a JSON object.", "Fix that line.")
        yield number, item


def _read_spans(value: Any, where: str) -> tuple[Span, ...]:
    try:
        return tuple(Span(int(s["start"]), int(s["end"])) for s in value)
    except (TypeError, KeyError, ValueError) as exc:
        raise DatasetError(
            f"{where}: bad spans ({exc}).", 'Spans are [{"start": int, "end": int}, ...].'
        ) from None


@dataclass(frozen=True)
class BuiltSet(Generic[StatsT]):
    """A relation set built in memory (from Re-DocRED, or by an LLM for a silver set): the
    dataset, its entities and relations, and the counts of how it was built."""

    dataset: Dataset
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    stats: StatsT

    def write(self, folder: str | Path, *, silver: bool = False) -> RelationSet:
        """Write the set into ``folder`` (the dataset in the JSONL layout, ``entities.jsonl``,
        ``relations.jsonl``), read it back with :func:`load_relation_set` and return what was
        read. A DatasetError when what was read back differs from what was written (or, for a
        ``silver`` set, does not read as silver)."""
        from chunkmark.datasets.jsonl import write_jsonl

        out = Path(folder)
        write_jsonl(self.dataset, out)
        write_relation_files(out, self.entities, self.relations)
        loaded = load_relation_set(out)
        if (
            loaded.dataset.fingerprint != self.dataset.fingerprint
            or loaded.relations != self.relations
            or tuple(loaded.entities.values()) != self.entities
            or (silver and not loaded.silver)
        ):
            raise DatasetError(
                f"{out} does not read back as the relation set written into it.",
                "Write into a new or empty folder.",
            )
        return loaded


def load_relation_set(folder: str | Path) -> RelationSet:
    """Load a relation set: the dataset in ``folder`` plus its entities and relations, every
    span and reference checked (a clear error naming the file and line otherwise)."""
    from chunkmark.datasets.jsonl import load_jsonl

    root = Path(folder)
    dataset = load_jsonl(root)
    texts = {d.id: d.text for d in dataset.documents}
    entities: dict[str, Entity] = {}
    path = root / ENTITIES_FILE
    for number, item in _lines(path):
        where = f"{path}, line {number}"
        try:
            entity = Entity(
                str(item["id"]),
                str(item["doc_id"]),
                str(item.get("type", "")),
                tuple(str(a) for a in item["aliases"]),
                _read_spans(item.get("mentions", []), where),
            )
        except KeyError as exc:
            raise DatasetError(
                f"{where}: no {exc} key.", "Every entity has id, doc_id, aliases."
            ) from None
        if entity.doc_id not in texts:
            raise DatasetError(
                f"{where}: doc_id {entity.doc_id!r} is not a document of {root}.",
                "Use the id of a line of documents.jsonl.",
            )
        if entity.id in entities:
            raise DatasetError(f"{where}: entity id {entity.id!r} repeats.", "Ids are unique.")
        text = texts[entity.doc_id]
        for span in entity.mentions:
            if span.end > len(text) or text[span.start : span.end] not in entity.aliases:
                raise DatasetError(
                    f"{where}: mention [{span.start}, {span.end}) is not one of the aliases "
                    f"of {entity.id!r} in document {entity.doc_id!r}.",
                    "Mentions are character spans of the document whose text is an alias.",
                )
        entities[entity.id] = entity
    relations: list[Relation] = []
    path = root / RELATIONS_FILE
    silver = False
    for number, item in _lines(path):
        where = f"{path}, line {number}"
        try:
            kind = str(item["support_kind"])
            relation = Relation(
                str(item["id"]),
                str(item["doc_id"]),
                str(item["head"]),
                str(item["tail"]),
                str(item["property"]),
                str(item.get("label", item["property"])),
                _read_spans(item["support"], where),
                kind,  # type: ignore[arg-type]
                bool(item.get("same_sentence", False)),
            )
        except KeyError as exc:
            raise DatasetError(
                f"{where}: no {exc} key.",
                "Every relation has id, doc_id, head, tail, property, support, support_kind.",
            ) from None
        if kind not in SUPPORT_KINDS:
            raise DatasetError(
                f"{where}: support_kind {kind!r} is not one of {', '.join(SUPPORT_KINDS)}.",
                "Fix that line.",
            )
        silver = silver or kind == "silver"
        for end in (relation.head, relation.tail):
            found = entities.get(end)
            if found is None or found.doc_id != relation.doc_id:
                raise DatasetError(
                    f"{where}: entity {end!r} is not an entity of document {relation.doc_id!r}.",
                    f"Use ids from {ENTITIES_FILE} of the same document.",
                )
        text = texts[relation.doc_id]
        if not relation.support or any(s.end > len(text) for s in relation.support):
            raise DatasetError(
                f"{where}: support spans are empty or past the end of {relation.doc_id!r}.",
                "Every relation has at least one support span inside its document.",
            )
        relations.append(relation)
    return RelationSet(dataset, entities, tuple(relations), silver=silver, source=str(root))
