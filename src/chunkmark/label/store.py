"""The labeled questions of one folder: ``questions.jsonl`` written at once, atomically, checked.

A folder is labeled in place. A JSONL dataset (``documents.jsonl``, with or without
``questions.jsonl``) keeps its documents; a corpus folder (``corpora/`` as ``chunkmark datasets
import`` writes it, or ``.md``/``.txt`` files) gets a ``documents.jsonl`` holding the texts as
read, so that the folder becomes a dataset every chunkmark command loads. Each question is
written the moment it is saved: the whole file is checked by the rules of ``chunkmark datasets
validate`` (:func:`chunkmark.datasets.jsonl.check_question_object`) and replaced through a
temporary file and a rename, so the file on disk always validates. Questions that the
documents do not answer go to ``unanswered.jsonl`` beside it: kept and counted, never mixed
into the evaluation set (a question needs at least one excerpt there).

Every change reads the files again under a lock before it writes, so two pages open on one
folder (or an edit made by hand between two saves) lose nothing; :meth:`QuestionStore.undo`
puts back both files as they were before the last change of this session.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from chunkmark.datasets.chroma import read_corpus, read_documents
from chunkmark.datasets.jsonl import (
    JSONL_DOCUMENTS,
    check_question_object,
    join_lines,
    parsed_lines,
    read_documents_file,
)
from chunkmark.datasets.model import Document
from chunkmark.datasets.validate import CHROMA_QUESTIONS, JSONL_QUESTIONS, Problem, read_text
from chunkmark.errors import ChunkmarkError
from chunkmark.files import write_bytes_atomic

UNANSWERED = "unanswered.jsonl"
MAX_DOCUMENT_CHARS = 2_000_000


class LabelError(ChunkmarkError):
    """A labeling request or folder that cannot be used; one line with its fix."""


def json_lines(path: Path, content: str, fix: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of the JSONL text ``content`` (of ``path``) with its 1-based number,
    parsed; a line that is not JSON is a LabelError naming it, with ``fix``."""

    def bad(number: int, exc: json.JSONDecodeError) -> None:
        raise LabelError(
            f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno}).", fix
        ) from None

    return parsed_lines(content, bad)


@dataclass(frozen=True)
class Counts:
    """How many questions are labeled and how many the documents do not answer."""

    answered: int
    unanswered: int


def open_documents(folder: Path, max_chars: int = MAX_DOCUMENT_CHARS) -> list[Document]:
    """The documents of a folder to label (see the module docstring), each at most
    ``max_chars`` characters; raises a one-line error naming the problem and its fix."""
    if not folder.is_dir():
        raise LabelError(
            f"{folder}: not a folder.",
            "Give a dataset folder (documents.jsonl) or a folder of .md/.txt documents.",
        )
    if (folder / CHROMA_QUESTIONS).is_file():
        raise LabelError(
            f"{folder} holds {CHROMA_QUESTIONS} (the Chroma layout); labeling writes "
            f"{JSONL_QUESTIONS}, and one folder cannot hold both.",
            "Label a folder holding only the documents (corpora/ or .md/.txt files).",
        )
    if (folder / JSONL_DOCUMENTS).is_file():
        documents = read_documents_file(folder)
    elif (folder / "corpora").is_dir():
        documents = read_corpus(folder)
    else:
        documents = read_documents(folder)
    for doc in documents:
        if len(doc.text) > max_chars:
            raise LabelError(
                f"document {doc.id!r} has {len(doc.text):,} characters, more than the page "
                f"shows ({max_chars:,}).",
                "Split it into smaller documents, or raise the limit with --max-chars.",
            )
    return documents


class _FolderLock:
    """One lock per folder: shared by every store of this process on that folder, and held
    across processes too (``flock`` on ``.label.lock`` in the folder) where the system has it."""

    _locks: ClassVar[dict[Path, threading.Lock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, folder: Path) -> None:
        self.path = folder.resolve() / ".label.lock"
        with self._guard:
            self.lock = self._locks.setdefault(self.path, threading.Lock())
        self._handle: Any = None

    def __enter__(self) -> None:
        self.lock.acquire()
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: this process's lock only
            return
        try:
            self._handle = self.path.open("a")
            fcntl.flock(self._handle, fcntl.LOCK_EX)
        except OSError:  # a read-only folder: reading still works, writing will say why
            self._handle = None

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()  # closing releases the flock
            self._handle = None
        self.lock.release()


class QuestionStore:
    """The labeled questions of ``folder`` (see the module docstring). Thread-safe."""

    def __init__(self, folder: Path, documents: Sequence[Document]) -> None:
        self.folder = folder
        self.texts = {d.id: d.text for d in documents}
        self._documents = list(documents)
        self._lock = _FolderLock(folder)
        self._undo: list[tuple[bytes | None, bytes | None]] = []
        self.questions_path = folder / JSONL_QUESTIONS
        self.unanswered_path = folder / UNANSWERED
        with self._lock:
            self._read()  # a file that does not validate stops here, before any write

    # --- reading ---
    def _read(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        questions = _objects(self.questions_path)
        _check_all(questions, self.texts, str(self.questions_path))
        return questions, _objects(self.unanswered_path)

    def questions(self) -> list[dict[str, Any]]:
        """The labeled questions, in file order, as written."""
        with self._lock:
            return self._read()[0]

    def unanswered(self) -> list[dict[str, Any]]:
        """The questions marked as not answered in these documents, in order."""
        with self._lock:
            return self._read()[1]

    def counts(self) -> Counts:
        with self._lock:
            questions, unanswered = self._read()
        return Counts(len(questions), len(unanswered))

    # --- changing ---
    def save(
        self,
        question: str,
        doc_id: str,
        excerpts: Sequence[tuple[int, int]],
        *,
        qid: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write a question with its evidence (a new one, or ``qid`` replaced in place) and
        return it as written; nothing is written when it breaks a rule of ``datasets validate``."""
        with self._lock:
            questions, unanswered = self._read()
            spans = sorted({(int(s), int(e)) for s, e in excerpts})
            doc_text = self.texts.get(doc_id, "")
            obj: dict[str, Any] = {
                "id": qid or _next_id(questions, unanswered),
                "question": question.strip(),
                "doc_id": doc_id,
                "excerpts": [
                    {"start": s, "end": e, "text": doc_text[s:e]}
                    if 0 <= s < e <= len(doc_text)
                    else {"start": s, "end": e}  # the check below says what is wrong
                    for s, e in spans
                ],
            }
            if metadata:
                obj["metadata"] = dict(metadata)
            if not spans:
                raise LabelError(
                    f"question {obj['id']!r} has no evidence.",
                    "Select the text that answers it, or mark it as not answered.",
                )
            kept = [q for q in questions if q["id"] != obj["id"]]
            at = next((i for i, q in enumerate(questions) if q["id"] == obj["id"]), len(kept))
            kept.insert(at, obj)
            _check_all(kept, self.texts, str(self.questions_path))
            rest = [u for u in unanswered if u["id"] != obj["id"]]
            self._write(kept, rest, questions, unanswered)
            return obj

    def mark_unanswered(
        self, question: str, *, qid: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Keep ``question`` as not answered in these documents (``qid`` replaces a labeled
        question or an earlier mark)."""
        if not question.strip():
            raise LabelError("the question is empty.", "Type the question first.")
        with self._lock:
            questions, unanswered = self._read()
            obj: dict[str, Any] = {
                "id": qid or _next_id(questions, unanswered),
                "question": question.strip(),
            }
            if metadata:
                obj["metadata"] = dict(metadata)
            rest = [u for u in unanswered if u["id"] != obj["id"]] + [obj]
            kept = [q for q in questions if q["id"] != obj["id"]]
            self._write(kept, rest, questions, unanswered)
            return obj

    def delete(self, qid: str) -> None:
        """Remove the question (labeled or unanswered) with id ``qid``."""
        with self._lock:
            questions, unanswered = self._read()
            kept = [q for q in questions if q["id"] != qid]
            rest = [u for u in unanswered if u["id"] != qid]
            if len(kept) == len(questions) and len(rest) == len(unanswered):
                raise LabelError(f"no question {qid!r}.", "Reload the page: it may be gone.")
            self._write(kept, rest, questions, unanswered)

    def undo(self) -> bool:
        """Put both files back as they were before this session's last change; False when
        there is nothing to undo."""
        with self._lock:
            if not self._undo:
                return False
            questions, unanswered = self._undo.pop()
            for path, data in (
                (self.questions_path, questions),
                (self.unanswered_path, unanswered),
            ):
                if data is None:
                    path.unlink(missing_ok=True)
                else:
                    write_bytes_atomic(path, data)
            return True

    def _write(
        self,
        questions: list[dict[str, Any]],
        unanswered: list[dict[str, Any]],
        old_questions: list[dict[str, Any]],
        old_unanswered: list[dict[str, Any]],
    ) -> None:
        before = (_bytes_or_none(self.questions_path), _bytes_or_none(self.unanswered_path))
        documents = self.folder / JSONL_DOCUMENTS
        if not documents.is_file():
            lines = (
                json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False)
                for d in self._documents
            )
            write_bytes_atomic(documents, join_lines(lines))
        if questions != old_questions:
            write_bytes_atomic(self.questions_path, join_lines(_dumps(questions)))
        if unanswered != old_unanswered:
            write_bytes_atomic(self.unanswered_path, join_lines(_dumps(unanswered)))
        self._undo.append(before)


def _dumps(objects: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(o, ensure_ascii=False) for o in objects]


def _bytes_or_none(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _objects(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (none when it does not exist)."""
    if not path.is_file():
        return []

    def report(problem: Problem) -> None:
        raise LabelError(f"{problem.where}: {problem.message}", problem.fix)

    content = read_text(path, report) or ""
    out: list[dict[str, Any]] = []
    fix = "Correct or remove the line; chunkmark datasets validate lists every problem."
    for number, value in json_lines(path, content, fix):
        if not isinstance(value, dict):
            raise LabelError(
                f"{path}, line {number}: not a JSON object.", "Write one JSON object per line."
            )
        out.append(value)
    return out


def _check_all(questions: list[dict[str, Any]], texts: dict[str, str], file: str) -> None:
    seen: dict[str, int] = {}
    for line, obj in enumerate(questions, start=1):
        _, problems = check_question_object(obj, texts, file, line, seen)
        if problems:
            first = problems[0]
            raise LabelError(f"{first.where}: {first.message}", first.fix)


def _next_id(questions: list[dict[str, Any]], unanswered: list[dict[str, Any]]) -> str:
    taken = {str(o.get("id")) for o in [*questions, *unanswered]}
    n = len(taken) + 1
    while f"q{n}" in taken:
        n += 1
    return f"q{n}"
