"""The data model: documents, questions with exact answer excerpts, datasets."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
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

    ``metadata`` is the JSONL question's optional ``"metadata"`` object, kept as read (not part
    of the dataset's fingerprint). chunkmark reads ``metadata["answers"]`` (reference answer
    strings) and ``metadata["label"]``/``metadata["labels"]`` (a class label and the allowed
    labels) when it scores answers (``docs/answers.md``)."""

    id: str
    text: str
    doc_id: str
    excerpts: tuple[Span, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)


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
