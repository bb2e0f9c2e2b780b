"""chunkmark's own dataset layout: a folder with ``documents.jsonl`` and ``questions.jsonl``.

One JSON object per line (UTF-8; blank lines are ignored):

- ``documents.jsonl``: ``{"id": str, "text": str}``, or ``{"id": str, "path": str}`` with the
  path relative to the folder (the file is read as strict UTF-8, byte for byte: no newline
  translation).
- ``questions.jsonl``: ``{"id": str, "question": str, "doc_id": str, "excerpts": [{"start":
  int, "end": int, "text": str}]}``; offsets are character offsets into the document, end
  exclusive; ``text`` is optional and, when present, must equal the document slice.

Both kinds of line may carry a ``"metadata"`` object: a question's is kept in
:attr:`Question.metadata` (and written back), a document's is ignored; any other key is an error
(it is usually a typo). Documents and questions keep their file order. The dataset is
named after the folder. docs/formats.md is the full description.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.datasets.validate import (
    JSONL_QUESTIONS,
    Problem,
    Report,
    blank_document,
    blank_question,
    check_folder,
    dataset_of,
    did_you_mean,
    excerpt_problem,
    has_files,
    json_type,
    load_strict,
    missing_keys,
    not_an_integer,
    raise_first,
    read_text,
    text_only,
)
from chunkmark.files import write_bytes_atomic
from chunkmark.spans import Span

JSONL_DOCUMENTS = "documents.jsonl"
_DOC_KEYS = frozenset({"id", "text", "path", "metadata"})
_QUESTION_KEYS = ("id", "question", "doc_id", "excerpts")
_EXCERPT_KEYS = frozenset({"start", "end", "text"})
_OFFSET_KEYS = ("start", "end")


def load_jsonl(path: str | Path) -> Dataset:
    """Load a dataset in chunkmark's JSONL layout; the dataset is named after the folder.

    Raises :class:`DatasetError` naming the file, line and fix of the first problem.
    """
    return load_strict(Path(path), scan_jsonl, "JSONL")


def write_jsonl(dataset: Dataset, folder: str | Path) -> None:
    """Write ``dataset`` in the JSONL layout: document texts inline, excerpts with their text.

    Each file is replaced atomically; reading the folder back gives the same fingerprint.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    doc_lines = (
        json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) for d in dataset.documents
    )
    write_bytes_atomic(out / JSONL_DOCUMENTS, join_lines(doc_lines))
    by_id = dataset.by_id
    question_lines = (
        json.dumps(_question_object(q, by_id[q.doc_id].text), ensure_ascii=False)
        for q in dataset.questions
    )
    write_bytes_atomic(out / JSONL_QUESTIONS, join_lines(question_lines))


def _question_object(q: Question, doc_text: str) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "id": q.id,
        "question": q.text,
        "doc_id": q.doc_id,
        "excerpts": [
            {"start": s.start, "end": s.end, "text": doc_text[s.start : s.end]} for s in q.excerpts
        ],
    }
    if q.metadata:
        obj["metadata"] = dict(q.metadata)
    return obj


def join_lines(lines: Iterable[str]) -> bytes:
    """JSON lines as a file's bytes: each line ended by a newline, UTF-8."""
    return "".join(line + "\n" for line in lines).encode("utf-8")


def scan_jsonl(folder: Path, report: Report) -> Dataset | None:
    """Check a JSONL-layout folder, reporting every problem; the dataset, or None if unusable."""
    files = (JSONL_DOCUMENTS, "the documents file"), (JSONL_QUESTIONS, "the questions file")
    if not check_folder(folder, report) or not has_files(folder, report, *files):
        return None
    docs = read_documents(folder, folder / JSONL_DOCUMENTS, report)
    if docs is None:
        return None
    texts, unreadable = docs
    questions = _read_questions(folder / JSONL_QUESTIONS, texts, unreadable, report)
    return None if questions is None else dataset_of(folder, texts, questions)


def parsed_lines(
    content: str, bad: Callable[[int, json.JSONDecodeError], None]
) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of the JSONL text ``content`` (a leading byte-order mark dropped)
    with its 1-based number, parsed; a line that is not JSON is handed to ``bad`` with its
    number and error (which raises, or reports it and the line is passed over)."""
    for number, raw in enumerate(content.removeprefix("\ufeff").split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            bad(number, exc)
            continue
        yield number, value


def _lines(path: Path, report: Report) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line that is a JSON object."""
    content = read_text(path, report)
    if content is None:
        return
    file = str(path)

    def bad(number: int, exc: json.JSONDecodeError) -> None:
        report(
            Problem(
                file,
                number,
                f"not valid JSON ({exc.msg} at column {exc.colno}).",
                "Write one complete JSON object per line.",
            )
        )

    for number, value in parsed_lines(content, bad):
        if not isinstance(value, dict):
            report(
                Problem(
                    file,
                    number,
                    f"the line is {json_type(value)}, not a JSON object.",
                    "Write one JSON object per line.",
                )
            )
            continue
        yield number, value


def read_documents(
    folder: Path, path: Path, report: Report
) -> tuple[dict[str, str], set[str]] | None:
    """The texts of ``documents.jsonl`` by id and the ids whose text cannot be read, after
    reporting every problem; None when the file gives no document."""
    file = str(path)
    texts: dict[str, str] = {}
    first_line: dict[str, int] = {}
    unreadable: set[str] = set()
    shape = 'Write {"id": "...", "text": "..."} or {"id": "...", "path": "relative/file.md"}.'
    for line, obj in _lines(path, report):
        problems: list[str] = []
        unknown = sorted(set(obj) - _DOC_KEYS)
        if unknown:
            problems.append(f"unknown key(s) {', '.join(unknown)}")
        doc_id = obj.get("id")
        if not isinstance(doc_id, str) or not doc_id:
            problems.append(f"id is {json_type(doc_id)}, not a non-empty string")
        if ("text" in obj) == ("path" in obj):
            problems.append('a document needs exactly one of "text" and "path"')
        elif not isinstance(obj.get("text", obj.get("path")), str):
            key = "text" if "text" in obj else "path"
            problems.append(f"{key} is {json_type(obj[key])}, not a string")
        if problems or not isinstance(doc_id, str):
            report(Problem(file, line, "; ".join(problems) + ".", shape))
            continue
        if doc_id in first_line:
            report(_duplicate(file, line, "document", doc_id, first_line[doc_id]))
            continue
        first_line[doc_id] = line
        text = obj["text"] if "text" in obj else _read_document_file(folder, obj["path"], report)
        if text is None:
            unreadable.add(doc_id)
            continue
        if not text.strip():
            report(blank_document(file, line, doc_id))
        texts[doc_id] = text
    if not texts and not unreadable:
        report(Problem(file, None, "no documents.", "Add one JSON line per document."))
        return None
    return texts, unreadable


def _read_document_file(folder: Path, relative: str, report: Report) -> str | None:
    path = folder / relative
    if not path.is_file():
        report(
            Problem(
                str(path),
                None,
                "the document file named in documents.jsonl does not exist.",
                "Correct the path (relative to the dataset folder) or add the file.",
            )
        )
        return None
    return read_text(path, report)


def _read_questions(
    path: Path, texts: dict[str, str], unreadable: set[str], report: Report
) -> list[Question] | None:
    file = str(path)
    questions: list[Question] = []
    first_line: dict[str, int] = {}
    for line, obj in _lines(path, report):
        question = _read_question(obj, texts, unreadable, file, line, first_line, report)
        if question is not None:
            questions.append(question)
    if not first_line:
        report(Problem(file, None, "no questions.", "Add one JSON line per question."))
        return None
    return questions


def _read_question(
    obj: dict[str, Any],
    texts: dict[str, str],
    unreadable: set[str],
    file: str,
    line: int,
    first_line: dict[str, int],
    report: Report,
) -> Question | None:
    shape = (
        'Write {"id": "...", "question": "...", "doc_id": "...", '
        '"excerpts": [{"start": 0, "end": 10}]}.'
    )
    problems = [
        f"lacks the key(s) {', '.join(k)}" for k in [missing_keys(obj, _QUESTION_KEYS)] if k
    ]
    unknown = sorted(set(obj) - {*_QUESTION_KEYS, "metadata"})
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}")
    for key in ("id", "question", "doc_id"):
        if key in obj and not isinstance(obj[key], str):
            problems.append(f"{key} is {json_type(obj[key])}, not a string")
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        problems.append(f"metadata is {json_type(metadata)}, not a JSON object")
    excerpts = obj.get("excerpts")
    if "excerpts" in obj and (not isinstance(excerpts, list) or not excerpts):
        what = "an empty list" if excerpts == [] else json_type(excerpts)
        problems.append(f"excerpts is {what}, not a list of one or more excerpts")
    if problems or not isinstance(excerpts, list):
        label = f"question {obj['id']!r}: " if isinstance(obj.get("id"), str) else ""
        report(Problem(file, line, label + "; ".join(problems) + ".", shape))
        return None
    qid, text, doc_id = obj["id"], obj["question"], obj["doc_id"]
    label = f"question {qid!r}"
    ok = True
    if not qid:
        report(Problem(file, line, "the question id is empty.", "Give every question an id."))
        ok = False
    elif qid in first_line:
        report(_duplicate(file, line, "question", qid, first_line[qid]))
        ok = False
    else:
        first_line[qid] = line
    if not text.strip():
        report(blank_question(file, line, label))
        ok = False
    doc_text = texts.get(doc_id)
    if doc_text is None and doc_id not in unreadable:
        report(
            Problem(
                file,
                line,
                f"{label}: doc_id {doc_id!r} is not a document in {JSONL_DOCUMENTS}.",
                did_you_mean(doc_id, texts)
                + f"Correct the doc_id, or add the document to {JSONL_DOCUMENTS}.",
            )
        )
        ok = False
    spans: list[Span] = []
    for number, item in enumerate(excerpts, start=1):
        span = _read_excerpt(item, doc_text, file, line, f"{label}, excerpt {number}", report)
        if span is None:
            ok = False
        else:
            spans.append(span)
    if not ok or doc_text is None:
        return None
    return Question(qid, text, doc_id, tuple(spans), metadata)


def _read_excerpt(
    item: object, doc_text: str | None, file: str, line: int, where: str, report: Report
) -> Span | None:
    fix = 'Write each excerpt as {"start": int, "end": int} with an optional "text".'
    if not isinstance(item, dict):
        report(Problem(file, line, f"{where} is {json_type(item)}, not a JSON object.", fix))
        return None
    if set(item) == {"text"} and isinstance(item["text"], str) and item["text"].strip():
        report(text_only(file, line, where))
        return None
    problems = [f"lacks the key(s) {', '.join(k)}" for k in [missing_keys(item, _OFFSET_KEYS)] if k]
    unknown = sorted(set(item) - _EXCERPT_KEYS)
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}")
    problems += [m for m in (not_an_integer(k, item[k]) for k in _OFFSET_KEYS if k in item) if m]
    content = item.get("text")
    if content is not None and not isinstance(content, str):
        problems.append(f"text is {json_type(content)}, not a string")
    if problems:
        report(Problem(file, line, f"{where}: {'; '.join(problems)}.", fix))
        return None
    start, end = item["start"], item["end"]
    if doc_text is None:
        return None
    problem = excerpt_problem(doc_text, start, end, content, _OFFSET_KEYS)
    if problem is not None:
        report(Problem(file, line, f"{where}: {problem[0]}", problem[1]))
        return None
    return Span(start, end)


def _duplicate(file: str, line: int, kind: str, item_id: str, first: int) -> Problem:
    return Problem(
        file,
        line,
        f"duplicate {kind} id {item_id!r} (first on line {first}).",
        f"Give every {kind} a unique id.",
    )


def read_documents_file(folder: str | Path) -> list[Document]:
    """The documents of ``folder/documents.jsonl`` alone (no questions file needed), checked as
    :func:`load_jsonl` checks them; raises :class:`DatasetError` at the first problem."""
    root = Path(folder)
    path = root / JSONL_DOCUMENTS
    report = raise_first(root)
    has_files(root, report, (JSONL_DOCUMENTS, "the documents file"))
    docs = read_documents(root, path, report)
    texts = docs[0] if docs is not None else {}
    return [Document(doc_id, text) for doc_id, text in texts.items()]


def check_question_object(
    obj: dict[str, Any], texts: dict[str, str], file: str, line: int, seen: dict[str, int]
) -> tuple[Question | None, list[Problem]]:
    """One ``questions.jsonl`` object checked by exactly the rules of ``chunkmark datasets
    validate``: the question (None when it has a problem) and its problems. ``seen`` maps the
    ids already read to their line (a repeated id is a problem) and is updated."""
    problems: list[Problem] = []
    question = _read_question(obj, texts, set(), file, line, seen, problems.append)
    return question, problems
