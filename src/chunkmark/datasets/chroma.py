"""Chroma's dataset layout: ``corpora/*.md|*.txt`` plus ``questions_df.csv``.

``questions_df.csv`` has the columns ``question,references,corpus_id``; ``references`` is a JSON
list of ``{"content", "start_index", "end_index"}`` (character offsets, end exclusive, into the
corpus file) and ``corpus_id`` is the corpus file's stem. Corpus files are read as strict UTF-8
with Python's text-mode newline translation, as the reference implementation reads them.

Question ids are CSV row numbers (``"0"`` for the first data row, file order). Documents come
in the order their ``corpus_id`` first appears in the CSV, then any other corpus files sorted by
name: the reference indexes corpora in that order, and chunk order breaks retrieval ties.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections.abc import Iterator
from pathlib import Path

from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.datasets.validate import (
    CHROMA_QUESTIONS,
    Problem,
    Report,
    blank_document,
    blank_question,
    check_folder,
    dataset_of,
    excerpt_problem,
    has_files,
    json_type,
    load_strict,
    missing_keys,
    not_an_integer,
    read_text,
)
from chunkmark.errors import DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.spans import Span

CORPORA = "corpora"
CORPUS_SUFFIXES = (".md", ".txt")
COLUMNS = ("question", "references", "corpus_id")
REFERENCE_KEYS = ("content", "start_index", "end_index")
_OFFSET_KEYS = ("start_index", "end_index")


def load_chroma(path: str | Path) -> Dataset:
    """Load a dataset in Chroma's layout; the dataset is named after the folder.

    Raises :class:`DatasetError` naming the file, line and fix of the first problem.
    """
    return load_strict(Path(path), scan_chroma, "Chroma")


def read_corpus(folder: str | Path) -> list[Document]:
    """The documents in ``folder/corpora/`` (``*.md`` and ``*.txt``), sorted by file name.

    Each file is one document named after its stem, read as strict UTF-8 with text-mode newline
    translation, exactly as the Chroma loader reads corpora; any question file is ignored.
    Raises :class:`DatasetError` naming the file and fix of the first problem (no folder, no
    corpus files, bad UTF-8, an empty document, two files with one stem).
    """
    root = Path(folder)
    corpora_dir = root / CORPORA
    report = _raise_problem
    if not corpora_dir.is_dir():
        check_folder(root, report)
        report(
            Problem(
                str(corpora_dir),
                None,
                "missing the corpora folder.",
                f"Create {CORPORA}/ in the folder with one .md or .txt file per document.",
            )
        )
    texts, _ = _read_corpora(corpora_dir, report)
    return [Document(doc_id, text) for doc_id, text in texts.items()]


def read_documents(folder: str | Path) -> list[Document]:
    """The ``*.md`` and ``*.txt`` files directly in ``folder`` (subfolders are not read), one
    document each, read and checked as :func:`read_corpus` reads ``corpora/``."""
    root = Path(folder)
    check_folder(root, _raise_problem)
    texts, _ = _read_corpora(root, _raise_problem)
    return [Document(doc_id, text) for doc_id, text in texts.items()]


def has_documents(folder: str | Path) -> bool:
    """Whether ``folder`` holds ``*.md`` or ``*.txt`` files directly (what
    :func:`read_documents` reads)."""
    root = Path(folder)
    return root.is_dir() and any(
        p.suffix.lower() in CORPUS_SUFFIXES and p.is_file() for p in root.iterdir()
    )


def _raise_problem(problem: Problem) -> None:
    """A reporter that raises the first problem as a one-line :class:`DatasetError`."""
    raise DatasetError(f"{problem.where}: {problem.message}", problem.fix)


def write_chroma(dataset: Dataset, folder: str | Path) -> None:
    """Write ``dataset`` in Chroma's layout (``corpora/<doc id>.md`` + ``questions_df.csv``).

    The layout has no question ids (they become row numbers on reading) and orders documents
    by first use, so a dataset read from this layout survives the round trip unchanged.
    """
    out = Path(folder)
    for doc in dataset.documents:
        _check_writable(doc)
    corpora = out / CORPORA
    corpora.mkdir(parents=True, exist_ok=True)
    for doc in dataset.documents:
        write_bytes_atomic(corpora / f"{doc.id}.md", doc.text.encode("utf-8"))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    by_id = dataset.by_id
    for q in dataset.questions:
        text = by_id[q.doc_id].text
        refs = [
            {"content": text[s.start : s.end], "start_index": s.start, "end_index": s.end}
            for s in q.excerpts
        ]
        writer.writerow([q.text, json.dumps(refs), q.doc_id])
    write_bytes_atomic(out / CHROMA_QUESTIONS, buffer.getvalue().encode("utf-8"))


def _check_writable(doc: Document) -> None:
    name = f"{doc.id}.md"
    if not doc.id or doc.id.startswith(".") or Path(name).name != name or "\\" in doc.id:
        raise DatasetError(
            f"document id {doc.id!r} cannot be a corpus file name in the Chroma layout.",
            "Use document ids without path separators or a leading dot, or write the JSONL "
            "layout instead.",
        )
    if "\r" in doc.text:
        raise DatasetError(
            f"document {doc.id!r} contains carriage returns, which the Chroma layout does not "
            "keep (corpus files are read with newline translation).",
            "Write the JSONL layout instead, or normalise the document's newlines to \\n.",
        )


def scan_chroma(folder: Path, report: Report) -> Dataset | None:
    """Check a Chroma-layout folder, reporting every problem; the dataset, or None if unusable."""
    if not check_folder(folder, report):
        return None
    csv_path = folder / CHROMA_QUESTIONS
    corpora_dir = folder / CORPORA
    usable = has_files(folder, report, (CHROMA_QUESTIONS, "the questions file"))
    texts: dict[str, str] = {}
    unreadable: set[str] = set()
    if corpora_dir.is_dir():
        texts, unreadable = _read_corpora(corpora_dir, report)
    else:
        report(
            Problem(
                str(corpora_dir),
                None,
                "missing the corpora folder.",
                f"Create {CORPORA}/ in the dataset folder with one .md or .txt file per corpus.",
            )
        )
        usable = False
    if not usable:
        return None
    questions = _read_questions(csv_path, texts, unreadable, report)
    if questions is None:
        return None
    # texts is in file-name order: corpora no question uses follow the used ones in that order.
    order = dict.fromkeys(q.doc_id for q in questions)
    order.update(dict.fromkeys(texts))
    return dataset_of(folder, {doc_id: texts[doc_id] for doc_id in order}, questions)


def _read_corpora(corpora_dir: Path, report: Report) -> tuple[dict[str, str], set[str]]:
    texts: dict[str, str] = {}
    names: dict[str, str] = {}
    unreadable: set[str] = set()
    files = sorted(
        p for p in corpora_dir.iterdir() if p.suffix.lower() in CORPUS_SUFFIXES and p.is_file()
    )
    if not files:
        report(
            Problem(
                str(corpora_dir),
                None,
                "no corpus files (.md or .txt) in the corpora folder.",
                "Put one UTF-8 .md or .txt file per corpus in the folder; its stem is the "
                "corpus_id.",
            )
        )
    for path in files:
        stem = path.stem
        if stem in names:
            report(
                Problem(
                    str(path),
                    None,
                    f"corpus id {stem!r} has two files: {names[stem]} and {path.name}.",
                    "Keep one file per corpus id.",
                )
            )
            continue
        names[stem] = path.name
        text = read_text(path, report, universal_newlines=True)
        if text is None:
            unreadable.add(stem)
            continue
        if not text.strip():
            report(blank_document(str(path), None, stem))
        texts[stem] = text
    return texts, unreadable


def _read_questions(
    csv_path: Path, texts: dict[str, str], unreadable: set[str], report: Report
) -> list[Question] | None:
    content = read_text(csv_path, report)
    if content is None:
        return None
    file = str(csv_path)
    reader = csv.reader(io.StringIO(content.removeprefix("\ufeff"), newline=""))
    header = _read_header(reader, file, report)
    if header is None:
        return None
    columns = [header.index(name) for name in COLUMNS]
    questions: list[Question] = []
    row_number = 0
    line = reader.line_num + 1
    while True:
        try:
            row = next(reader, None)
        except csv.Error as exc:
            report(
                Problem(
                    file,
                    line,
                    f"malformed CSV ({exc}); rows from here on cannot be read.",
                    "Close every quoted field with a double quote and double any quote inside "
                    'it ("").',
                )
            )
            break
        if row is None:
            break
        if row:  # blank lines are skipped and do not count as rows
            label = f"row {row_number}"
            if len(row) != len(header):
                report(
                    Problem(
                        file,
                        line,
                        f"{label} has {len(row)} fields; the header has {len(header)} "
                        f"({','.join(header)}).",
                        "Quote fields that contain commas with double quotes, and double any "
                        'quote inside a quoted field ("").',
                    )
                )
            else:
                fields = [row[i] for i in columns]
                question = _read_row(fields, str(row_number), texts, unreadable, file, line, report)
                if question is not None:
                    questions.append(question)
            row_number += 1
        line = reader.line_num + 1
    return questions


def _read_header(reader: Iterator[list[str]], file: str, report: Report) -> list[str] | None:
    try:
        header = next(reader, None)
    except csv.Error as exc:
        header = None
        reason = f"the header is not valid CSV ({exc})"
    else:
        reason = "the file is empty"
    if header is not None:
        header = [name.strip() for name in header]
        absent = [name for name in COLUMNS if name not in header]
        if not absent:
            return header
        reason = f"the header lacks the column(s) {', '.join(absent)}"
    report(
        Problem(
            file,
            1,
            f"{reason}; expected the columns {','.join(COLUMNS)}.",
            f"Start the file with the header line {','.join(COLUMNS)}.",
        )
    )
    return None


def _read_row(
    fields: list[str],
    question_id: str,
    texts: dict[str, str],
    unreadable: set[str],
    file: str,
    line: int,
    report: Report,
) -> Question | None:
    question, references, corpus_id = fields
    label = f"row {question_id}"
    ok = True
    if not question.strip():
        report(blank_question(file, line, label))
        ok = False
    text = texts.get(corpus_id)
    if text is None and corpus_id not in unreadable:
        report(_unknown_corpus(file, line, label, corpus_id, texts))
        ok = False
    refs, refs_ok = _parse_references(references, file, line, label, report)
    ok = ok and refs_ok
    spans: list[Span] = []
    for number, (content, start, end) in enumerate(refs, start=1):
        if text is None:
            continue
        problem = excerpt_problem(text, start, end, content, _OFFSET_KEYS)
        if problem is not None:
            report(Problem(file, line, f"{label}, excerpt {number}: {problem[0]}", problem[1]))
            ok = False
        else:
            spans.append(Span(start, end))
    if not ok or text is None:
        return None
    return Question(question_id, question, corpus_id, tuple(spans))


def _unknown_corpus(
    file: str, line: int, label: str, corpus_id: str, texts: dict[str, str]
) -> Problem:
    if not corpus_id:
        return Problem(file, line, f"{label} has an empty corpus_id.", "Name the corpus file stem.")
    close = difflib.get_close_matches(corpus_id, list(texts), n=1)
    fix = (
        f"Did you mean {close[0]!r}? Correct the corpus_id."
        if close
        else f"Add {CORPORA}/{corpus_id}.md, or correct the corpus_id."
    )
    return Problem(
        file,
        line,
        f"{label}: corpus_id {corpus_id!r} has no corpus file ({CORPORA}/{corpus_id}.md or .txt).",
        fix,
    )


def _parse_references(
    raw: str, file: str, line: int, label: str, report: Report
) -> tuple[list[tuple[str, int, int]], bool]:
    """The well-formed references, and whether all of them were."""
    shape_fix = (
        'Write references as a JSON list of {"content": ..., "start_index": ..., '
        '"end_index": ...} objects.'
    )
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        message = f"{label}: references is not valid JSON ({exc.msg} at character {exc.pos})."
        report(Problem(file, line, message, shape_fix))
        return [], False
    if not isinstance(value, list) or not value:
        what = "an empty list" if value == [] else json_type(value)
        report(
            Problem(
                file, line, f"{label}: references is {what}, not a list of excerpts.", shape_fix
            )
        )
        return [], False
    refs: list[tuple[str, int, int]] = []
    for number, item in enumerate(value, start=1):
        where = f"{label}, excerpt {number}"
        if not isinstance(item, dict):
            report(Problem(file, line, f"{where} is not a JSON object.", shape_fix))
            continue
        absent = missing_keys(item, REFERENCE_KEYS)
        if absent:
            report(Problem(file, line, f"{where} lacks the key(s) {', '.join(absent)}.", shape_fix))
            continue
        content, start, end = (item[key] for key in REFERENCE_KEYS)
        bad = [m for m in (not_an_integer(k, item[k]) for k in _OFFSET_KEYS) if m]
        if not isinstance(content, str):
            bad.append(f"content is {json_type(content)}, not a string")
        if bad:
            report(
                Problem(
                    file,
                    line,
                    f"{where}: {'; '.join(bad)}.",
                    "Offsets are whole character positions; content is a string.",
                )
            )
            continue
        refs.append((content, start, end))
    return refs, len(refs) == len(value)
