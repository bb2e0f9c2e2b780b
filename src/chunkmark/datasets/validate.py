"""Dataset checks shared by the loaders: problems, where they are and how to fix them.

The layout loaders (:mod:`~chunkmark.datasets.chroma`, :mod:`~chunkmark.datasets.jsonl`) scan a
folder and hand each :class:`Problem` to a reporter. :func:`chunkmark.datasets.find_problems`
collects every problem in a folder of either layout (Chroma's ``questions_df.csv`` +
``corpora/``, or chunkmark's JSONL); the loaders run the very same checks through a reporter
that raises :class:`~chunkmark.errors.DatasetError` at the first problem, so a dataset that
validates always loads and a loader's error is one of the lines ``chunkmark datasets validate
PATH`` prints. This module imports neither loader, so both can import it.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.errors import DatasetError, with_fix

CHROMA_QUESTIONS = "questions_df.csv"
JSONL_QUESTIONS = "questions.jsonl"

Layout = Literal["chroma", "jsonl"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in a dataset: the file, the 1-based line (None for the whole file), what is
    wrong and how to fix it."""

    file: str
    line: int | None
    message: str
    fix: str

    @property
    def where(self) -> str:
        return self.file if self.line is None else f"{self.file}, line {self.line}"

    def __str__(self) -> str:
        return f"{self.where}: {with_fix(self.message, self.fix)}"


Report = Callable[[Problem], None]


def detect_layout(folder: Path, report: Report) -> Layout | None:
    """Which layout ``folder`` holds; reports a problem and returns None when it holds neither."""
    if not check_folder(folder, report):
        return None
    has_csv = (folder / CHROMA_QUESTIONS).is_file()
    has_jsonl = (folder / JSONL_QUESTIONS).is_file()
    if has_csv and has_jsonl:
        report(
            Problem(
                str(folder),
                None,
                f"the folder holds both {CHROMA_QUESTIONS} and {JSONL_QUESTIONS}, so its layout "
                "is ambiguous.",
                "Keep one layout per folder: move one of the two files elsewhere.",
            )
        )
        return None
    if has_csv:
        return "chroma"
    if has_jsonl:
        return "jsonl"
    report(
        Problem(
            str(folder),
            None,
            f"no {CHROMA_QUESTIONS} (Chroma layout) or {JSONL_QUESTIONS} (chunkmark JSONL "
            "layout) in the folder.",
            "Point to a dataset folder; docs/formats.md describes both layouts.",
        )
    )
    return None


def check_folder(folder: Path, report: Report) -> bool:
    """True when ``folder`` is an existing directory; reports a problem otherwise."""
    if folder.is_dir():
        return True
    what = "is not a folder" if folder.exists() else "does not exist"
    report(
        Problem(
            str(folder),
            None,
            f"the dataset folder {what}.",
            "Check the path; it must be a folder holding a dataset (see docs/formats.md).",
        )
    )
    return False


def raise_first(folder: Path) -> Report:
    """A reporter that raises a one-line :class:`DatasetError` for the first problem."""

    def report(problem: Problem) -> None:
        raise DatasetError(
            f"{problem.where}: {problem.message}",
            f"{problem.fix} To list every problem: chunkmark datasets validate "
            f"{shlex.quote(str(folder))}",
        )

    return report


def load_strict(
    folder: Path, scan: Callable[[Path, Report], Dataset | None], layout: str
) -> Dataset:
    """Run a layout's scanner, raising a one-line :class:`DatasetError` at the first problem."""
    dataset = scan(folder, raise_first(folder))
    if dataset is None:  # pragma: no cover - raise_first raises before this
        raise DatasetError(f"{folder}: not a {layout} dataset.", "Run chunkmark datasets validate.")
    return dataset


def has_files(folder: Path, report: Report, *files: tuple[str, str]) -> bool:
    """Whether ``folder`` holds every ``(name, what)`` file; each one missing is reported."""
    missing = [(name, what) for name, what in files if not (folder / name).is_file()]
    for name, what in missing:
        report(
            Problem(
                str(folder / name),
                None,
                f"missing {what}.",
                f"Create {name} in the dataset folder (see docs/formats.md).",
            )
        )
    return not missing


def dataset_of(folder: Path, texts: Mapping[str, str], questions: Sequence[Question]) -> Dataset:
    """A scanned folder's dataset: ``texts``' documents in their order, named after the folder."""
    documents = tuple(Document(doc_id, text) for doc_id, text in texts.items())
    return Dataset(folder.resolve().name, documents, tuple(questions), source=str(folder))


def read_text(path: Path, report: Report, *, universal_newlines: bool = False) -> str | None:
    """The file decoded as strict UTF-8, or None after reporting why it cannot be read.

    With ``universal_newlines``, ``\\r\\n`` and ``\\r`` become ``\\n`` as in Python's text mode.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        report(
            Problem(
                str(path),
                None,
                f"cannot be read ({exc.strerror or exc}).",
                "Check that the file exists and is readable.",
            )
        )
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        report(
            Problem(
                str(path),
                line,
                f"not valid UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start}.",
                "Re-save the file as UTF-8 (for example: iconv -f latin1 -t utf-8).",
            )
        )
        return None
    if universal_newlines and "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def brief(text: str, limit: int = 40) -> str:
    """``text`` quoted on one line, cut to about ``limit`` characters."""
    if len(text) > limit:
        return repr(text[:limit]) + "…"
    return repr(text)


def blank_document(file: str, line: int | None, doc_id: str) -> Problem:
    return Problem(
        file,
        line,
        f"document {doc_id!r} is empty.",
        "Give the document its text, or remove it and the questions that refer to it.",
    )


def blank_question(file: str, line: int | None, label: str) -> Problem:
    return Problem(
        file, line, f"{label} has an empty question text.", "Write the question, or remove it."
    )


def not_an_integer(key: str, value: object) -> str | None:
    """A message when ``value`` is not a JSON integer (booleans and floats are rejected)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    return f"{key} is {value!r}, not an integer"


def json_type(value: object) -> str:
    """How JSON would name the type of ``value``, with an article ("a string", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """ "Did you mean 'a' or 'b'? " naming the ids closest to ``name`` (difflib's ratio of at
    least 0.6), or "" when none is close."""
    close = difflib.get_close_matches(name, list(known), n=n)
    if not close:
        return ""
    return f"Did you mean {' or '.join(repr(c) for c in close)}? "


def text_only(file: str, line: int, where: str) -> Problem:
    """An excerpt given as its text only: ``validate --fix`` can place it."""
    folder = shlex.quote(str(Path(file).parent))
    return Problem(
        file,
        line,
        f"{where}: gives its text only (no start, end).",
        f"Run chunkmark datasets validate {folder} --fix OUT: it writes a copy of the dataset "
        "to OUT with the offsets where the text occurs (once), and lists the texts it cannot "
        'place; or write {"start": int, "end": int} yourself.',
    )


def missing_keys(obj: dict[str, object], required: Iterable[str]) -> list[str]:
    return [key for key in required if key not in obj]


def excerpt_problem(
    text: str, start: int, end: int, content: str | None, keys: tuple[str, str]
) -> tuple[str, str] | None:
    """(message, fix) when ``[start, end)`` is not a valid excerpt of ``text`` whose slice equals
    ``content`` (if given); None when it is. ``keys`` names the offset fields in fixes."""
    start_key, end_key = keys
    found = _nearest(text, content, start) if content else None
    hint = (
        f"The content occurs at [{found}, {found + len(content)}): set {start_key} to {found} "
        f"and {end_key} to {found + len(content)}."
        if found is not None and content
        else None
    )
    if start >= end:
        message = f"{start_key} {start} is not less than {end_key} {end} (an empty excerpt)."
        return message, hint or f"Set {end_key} past {start_key} to cover the answer text."
    if start < 0 or end > len(text):
        message = (
            f"offsets [{start}, {end}) fall outside the document, which has {len(text)} characters."
        )
        return message, hint or "Use character offsets (not bytes or tokens) into the document."
    if content is None:
        return None
    actual = text[start:end]
    if actual == content:
        return None
    at = _common_prefix(actual, content)
    message = (
        f"content {brief(content)} does not equal the document text at [{start}, {end}) "
        f"{brief(actual)} (they differ from character {at})."
    )
    return message, hint or (
        "Make the content equal the document text between the offsets, or correct the offsets "
        "(character offsets, end exclusive)."
    )


def _nearest(text: str, content: str, near: int, limit: int = 10_000) -> int | None:
    best: int | None = None
    i = text.find(content)
    while i != -1 and limit > 0:
        if best is None or abs(i - near) < abs(best - near):
            best = i
        i = text.find(content, i + 1)
        limit -= 1
    return best


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
