"""The data model: documents, questions with exact answer excerpts, datasets."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from chunkmark.spans import Span


@dataclass(frozen=True, slots=True)
class Document:
    """A document: an id (the corpus id in the Chroma layout) and its full text."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Question:
    """A question whose answer is known: excerpt spans into document ``doc_id``.

    ``metadata`` is free-form JSON-like data carried with the question (the JSONL layout's
    ``"metadata"`` object: a set's split, reference answers, a label, a category, a scope; see
    docs/formats.md). It takes no part in comparisons or in the dataset's fingerprint. Answer
    scoring reads ``metadata["answers"]`` and ``metadata["label"]``/``metadata["labels"]``
    (docs/answers.md).
    """

    id: str
    text: str
    doc_id: str
    excerpts: tuple[Span, ...]
    metadata: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, hash=False
    )


@dataclass(frozen=True)
class Dataset:
    """Documents plus questions. ``fingerprint`` is a stable hash of the whole content."""

    name: str
    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    source: str = field(default="", compare=False)

    @cached_property
    def by_id(self) -> Mapping[str, Document]:
        return {d.id: d for d in self.documents}

    @cached_property
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for d in self.documents:
            h.update(json.dumps(["doc", d.id, d.text], ensure_ascii=False).encode())
        for q in self.questions:
            spans = [[s.start, s.end] for s in q.excerpts]
            h.update(json.dumps(["q", q.id, q.text, q.doc_id, spans], ensure_ascii=False).encode())
        return h.hexdigest()[:16]

    def subset(self, question_ids: Iterable[str]) -> Dataset:
        keep = set(question_ids)
        return Dataset(
            self.name, self.documents, tuple(q for q in self.questions if q.id in keep), self.source
        )
