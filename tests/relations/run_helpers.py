"""A tiny relation set (two documents, seven entities, five relations) for the relation metric
and ``relations run`` tests, and a scripted extractor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.relations.model import (
    ChunkInput,
    Entity,
    ExtractedRelation,
    Extraction,
    Relation,
    RelationSet,
    write_relation_files,
)
from chunkmark.spans import Span

D1 = "Alice met Bob in Paris. Bob works at Acme."
D2 = "Carol lives in Rome. Dave visited Rome."
S1, S2 = Span(0, 23), Span(24, 42)  # the sentences of d1
T1, T2 = Span(0, 20), Span(21, 39)  # the sentences of d2


def _mentions(text: str, alias: str) -> tuple[Span, ...]:
    out, at = [], text.find(alias)
    while at >= 0:
        out.append(Span(at, at + len(alias)))
        at = text.find(alias, at + 1)
    return tuple(out)


def _entity(eid: str, doc: str, text: str, alias: str, kind: str = "MISC") -> Entity:
    return Entity(eid, doc, kind, (alias,), _mentions(text, alias))


ENTITIES = (
    _entity("e1", "d1", D1, "Alice", "PER"),
    _entity("e2", "d1", D1, "Bob", "PER"),
    _entity("e3", "d1", D1, "Paris", "LOC"),
    _entity("e4", "d1", D1, "Acme", "ORG"),
    _entity("e5", "d2", D2, "Carol", "PER"),
    _entity("e6", "d2", D2, "Rome", "LOC"),
    _entity("e7", "d2", D2, "Dave", "PER"),
)
RELATIONS = (
    Relation("r1", "d1", "e1", "e2", "P1", "knows", (S1,), "evidence", True),
    Relation("r2", "d1", "e2", "e4", "P108", "employer", (S2,), "evidence", True),
    Relation("r3", "d1", "e1", "e4", "P9", "customer of", (S1, S2), "evidence", False),
    Relation("r4", "d2", "e5", "e6", "P551", "residence", (T1,), "evidence", True),
    Relation("r5", "d2", "e7", "e6", "P9", "visited", (T2,), "window", False),
)


def tiny_dataset() -> Dataset:
    questions = tuple(
        Question(r.id, f"What links {r.head} and {r.tail}?", r.doc_id, r.support) for r in RELATIONS
    )
    return Dataset("tiny", (Document("d1", D1), Document("d2", D2)), questions)


def tiny_set() -> RelationSet:
    return RelationSet(tiny_dataset(), {e.id: e for e in ENTITIES}, RELATIONS)


def write_tiny_set(folder: Path) -> Path:
    """The tiny set as a relation-set folder (JSONL dataset plus entities and relations)."""
    write_jsonl(tiny_dataset(), folder)
    write_relation_files(folder, ENTITIES, RELATIONS)
    return folder


class ScriptedExtractor:
    """Returns the records scripted for each chunk text (none for other texts)."""

    def __init__(self, script: Mapping[str, Sequence[tuple[str, str, str]]], **costs: int) -> None:
        self.script = script
        self.costs = costs
        self.seen: list[str] = []

    @property
    def name(self) -> str:
        return "scripted"

    def identity(self) -> dict[str, Any]:
        return {"extractor": "scripted"}

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        out = []
        for chunk in chunks:
            self.seen.append(chunk.text)
            records = tuple(ExtractedRelation(*r) for r in self.script.get(chunk.text, ()))
            out.append(
                Extraction(
                    relations=records,
                    calls=self.costs.get("calls", 0),
                    input_tokens=self.costs.get("input_tokens", 0),
                    output_tokens=self.costs.get("output_tokens", 0),
                )
            )
        return out


SENTENCES = "sentences(n=1)"
WHOLE = "fixed_tokens(size=1000)"


def run_args(folder: Path, out: Path, *extra: str) -> list[str]:
    """``chunkmark relations run`` on the tiny set: one sentence per chunk and one chunk per
    document, the fake embedder, k 1 and 4, no cache."""
    return [
        "relations",
        "run",
        "--dataset",
        str(folder),
        "-c",
        SENTENCES,
        "-c",
        WHOLE,
        "-e",
        "fake()",
        "--k",
        "1,4",
        "--out",
        str(out),
        "--no-cache",
        *extra,
    ]
