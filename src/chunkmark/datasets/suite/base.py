"""What every converter of the suite shares: the seeded document sample, the result of a
conversion (a kept question added to it), a question's evidence placed piece by piece, span
helpers and the strict readers of the raw files."""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from chunkmark.datasets.model import Document, Question
from chunkmark.datasets.suite.locate import Miss, Placement
from chunkmark.datasets.suite.manifest import MISSES, Reason, Tally
from chunkmark.errors import DatasetError
from chunkmark.spans import Span
from chunkmark.specs import Catalog

Scope = Literal["corpus", "document"]

# Every question of the five human-evidence sets was written, and its evidence marked, while
# reading one document: passages of other documents that answer it were never marked. Their
# questions carry ``metadata["scope"] = "document"`` (search that document's chunks only).
DOCUMENT_SCOPE: Scope = "document"


@dataclass(frozen=True, slots=True)
class Sample:
    """``docs`` documents drawn with ``seed`` (all when None): the source's document ids are
    shuffled with ``random.Random(seed)``, the first ``docs`` kept, in source order."""

    docs: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.docs is not None and self.docs < 1:
            raise DatasetError(
                f"--docs {self.docs} is below 1.", "Give --docs 1 or more, or leave it out."
            )

    def pick(self, ids: Sequence[str]) -> list[str]:
        if self.docs is None or self.docs >= len(ids):
            return list(ids)
        order = list(range(len(ids)))
        random.Random(self.seed).shuffle(order)
        return [ids[i] for i in sorted(order[: self.docs])]


@dataclass
class Converted:
    """A converted set before it is written: its documents and questions, the tally, notes."""

    documents: list[Document] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)
    documents_in_source: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    def keep(
        self,
        qid: str,
        text: str,
        doc_id: str,
        spans: Sequence[Span],
        metadata: dict[str, Any],
        *,
        split: str | None = None,
        structural: bool = False,
    ) -> None:
        """A question kept, its evidence ``spans`` merged (:func:`merge_spans`), and counted (in
        its ``split``); ``structural``: each span was placed by the set's own structure (turns,
        sections), and is counted so."""
        self.questions.append(Question(qid, text, doc_id, merge_spans(spans), metadata))
        for _ in spans if structural else ():
            self.tally.place("structural")
        self.tally.keep(split=split)


@dataclass
class Evidence:
    """A question's evidence placed piece by piece, each piece tallied: the spans placed, and
    the first piece that was not (its reason, and which piece it was)."""

    tally: Tally
    spans: list[Span] = field(default_factory=list)
    problem: tuple[Reason, str] | None = None

    def add(self, found: Placement | Miss, piece: str) -> None:
        if isinstance(found, str):
            reason = MISSES[found]
            self.tally.miss(reason)
            self.problem = self.problem or (reason, piece)
            return
        self.spans.append(found.span)
        self.tally.place(found.method, first_of_several=found.occurrences > 1)

    def dropped(self, qid: str, doc_id: str) -> bool:
        """Whether a piece was not placed: the question is then counted dropped, for the first."""
        if self.problem is not None:
            self.tally.drop(qid, doc_id, *self.problem)
        return self.problem is not None


@dataclass(frozen=True)
class Preparing:
    """How a set is made ready: the ``sample`` of it, whether to fetch and convert again
    (``force``), a local copy of its raw files (``from_dir``), where progress lines go."""

    sample: Sample
    force: bool = False
    from_dir: Path | None = None
    progress: Callable[[str], None] = lambda line: None


class SuiteSetEntry(Protocol):
    """A set of the suite as :data:`SUITE_SETS` holds it: its name, what it is, the documents
    ``chunkmark suite run`` draws by default (``docs``; None: the whole set, said so), whether
    its questions are asked of one document each (``scope``), where a sample of it is kept,
    and how it is made ready there (``prepare`` returns the line saying so; ChunkmarkError
    when it cannot be)."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def docs(self) -> int | None: ...
    @property
    def scope(self) -> Scope: ...

    def folder(self, sample: Sample) -> Path: ...

    def prepare(self, how: Preparing) -> str: ...


# The suite's sets, in the suite's order (``chunkmark datasets download suite``), added with
# ``SUITE_SETS.add(...)`` (a plugin's module too).
SUITE_SETS: Catalog[SuiteSetEntry] = Catalog(
    "suite set",
    error=DatasetError,
    problem="no downloadable dataset named {name!r}.",
    fix="Use one of: {known}, or suite for all of them.",
)


def merge_spans(spans: Iterable[Span]) -> tuple[Span, ...]:
    """The spans sorted, with overlapping ones merged (touching ones stay apart)."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Span(last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return tuple(merged)


def joined(parts: Sequence[str], separator: str) -> tuple[str, list[Span]]:
    """``parts`` joined by ``separator``, and the span of each part in the result."""
    spans: list[Span] = []
    position = 0
    for i, part in enumerate(parts):
        if i:
            position += len(separator)
        spans.append(Span(position, position + len(part)))
        position += len(part)
    return separator.join(parts), spans


def _refetch(problem: str) -> DatasetError:
    """A raw file not as pinned: ``problem`` (naming it), and the fix."""
    return DatasetError(problem, "Fetch the file again: chunkmark datasets download NAME --force.")


def read_text(path: Path) -> str:
    """A raw file's text: strict UTF-8 (a leading BOM dropped), newlines as stored."""
    try:
        return path.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise _refetch(f"{path} is not valid UTF-8 (byte {exc.start}).") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise _refetch(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}).") from None


def read_csv(path: Path, required: Sequence[str]) -> list[dict[str, str]]:
    """The rows of a CSV file as dicts; its header must hold every ``required`` column."""
    rows = list(csv.DictReader(io.StringIO(read_text(path), newline="")))
    header = set(rows[0]) if rows else set()
    missing = [c for c in required if c not in header]
    if missing:
        raise _refetch(f"{path} lacks the column(s) {', '.join(missing)}.")
    return rows


def field_of(row: Mapping[str, Any], key: str, path: Path, where: str) -> Any:
    """``row[key]``, or one line naming the file, the item and the key."""
    try:
        return row[key]
    except (KeyError, TypeError):
        raise _refetch(f"{path}: {where} has no {key!r}.") from None


def files_under(files: Sequence[str], prefix: str, suffix: str) -> list[str]:
    """The pinned files below ``prefix`` ending in ``suffix``, sorted."""
    return sorted(f for f in files if f.startswith(prefix) and f.endswith(suffix))
