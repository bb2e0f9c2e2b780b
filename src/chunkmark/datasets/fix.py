"""``chunkmark datasets validate PATH --fix OUT``: excerpts given as text become exact offsets.

A JSONL-layout dataset is read line by line, as written. Each excerpt whose ``text`` is not
already the document's text at its ``start``/``end`` (text only, or offsets that do not hold
it) is looked for in its question's document, whitespace aside (:func:`chunkmark.placement.candidates`:
every run of whitespace read as one space, the text's outer whitespace left out):

- found at **one** place, it gets that place's offsets, and its ``text`` becomes the document's
  text there (whitespace as the document has it);
- found at **several** places it is ambiguous: every place is listed, none is chosen;
- found **nowhere**, the nearest fuzzy match is listed (rapidfuzz, when installed).

OUT gets ``documents.jsonl`` (every document inline), ``questions.jsonl`` (the questions whose
excerpts all have exact offsets, every other key as written) and ``unplaced.jsonl`` (the
questions with an excerpt left to place, their placed excerpts placed). The source is never
written; OUT must not exist yet. Lines that are not questions of a known document are copied to
``questions.jsonl`` as they are, so validating OUT still lists their problems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from chunkmark.datasets.jsonl import JSONL_DOCUMENTS, join_lines, read_documents
from chunkmark.datasets.validate import JSONL_QUESTIONS, Problem, brief, read_text
from chunkmark.errors import DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.placement import Nearest, NormalisedText, candidates, nearest_match
from chunkmark.spans import Span

UNPLACED = "unplaced.jsonl"
SHOWN = 10  # candidates listed per ambiguous excerpt


@dataclass(frozen=True)
class Unplaced:
    """An excerpt left to place: where it is, its text, and the places it could be
    (``candidates``, when ambiguous) or the nearest fuzzy match (when found nowhere)."""

    line: int
    question_id: str
    doc_id: str
    excerpt: int
    text: str
    candidates: tuple[Span, ...] = ()
    nearest: Nearest | None = None
    count: int = 0  # occurrences (0 when found nowhere)


@dataclass
class Fixed:
    """What ``--fix`` did: excerpts placed by their text, excerpts already exact, excerpts left
    to place, and the questions written to each file."""

    placed: int = 0
    exact: int = 0
    unplaced: list[Unplaced] = field(default_factory=list)
    written: int = 0
    left: int = 0
    fuzzy_available: bool = True
    texts: dict[str, str] = field(default_factory=dict)


def fix_jsonl(folder: Path, out: Path) -> Fixed:
    """Place the excerpts of the JSONL dataset in ``folder`` by their text, writing the result
    to the new folder ``out`` (see the module docstring)."""
    if out.exists():
        raise DatasetError(
            f"{out} already exists.",
            "Name a new folder for --fix OUT; the dataset is never changed in place.",
        )
    problems: list[Problem] = []
    found = read_documents(folder, folder / JSONL_DOCUMENTS, problems.append)
    content = read_text(folder / JSONL_QUESTIONS, problems.append)
    if found is None or content is None:
        first = problems[0] if problems else None
        raise DatasetError(
            f"{first.where}: {first.message}" if first else f"{folder}: no documents.",
            f"{first.fix if first else ''} Then run --fix again.".strip(),
        )
    texts = found[0]
    fuzz = _rapidfuzz()
    result = Fixed(fuzzy_available=fuzz is not None, texts=texts)
    normalised: dict[str, NormalisedText] = {}
    kept: list[str] = []
    left: list[str] = []
    for number, raw in enumerate(content.removeprefix("\ufeff").split("\n"), start=1):
        if not raw.strip():
            continue
        obj = _object(raw)
        doc_id = obj.get("doc_id") if obj is not None else None
        excerpts = obj.get("excerpts") if obj is not None else None
        if obj is None or not isinstance(doc_id, str) or doc_id not in texts:
            kept.append(raw)
            continue
        if not isinstance(excerpts, list):
            kept.append(raw)
            continue
        document = texts[doc_id]
        norm = normalised.setdefault(doc_id, NormalisedText(document))
        missing = 0
        for index, item in enumerate(excerpts, start=1):
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                continue
            if _holds(document, item):
                result.exact += 1
                continue
            places = candidates(document, item["text"], norm)
            if len(places) == 1:
                span = places[0]
                item.update(start=span.start, end=span.end, text=document[span.start : span.end])
                result.placed += 1
                continue
            missing += 1
            nearest = (
                _trimmed(document, nearest_match(fuzz, document, item["text"]))
                if not places and fuzz is not None and item["text"].strip()
                else None
            )
            result.unplaced.append(
                Unplaced(
                    number,
                    str(obj.get("id")),
                    doc_id,
                    index,
                    item["text"],
                    places[:SHOWN],
                    nearest,
                    len(places),
                )
            )
        line = json.dumps(obj, ensure_ascii=False)
        (left if missing else kept).append(line)
    out.mkdir(parents=True)
    docs = (json.dumps({"id": d, "text": t}, ensure_ascii=False) for d, t in texts.items())
    write_bytes_atomic(out / JSONL_DOCUMENTS, join_lines(docs))
    write_bytes_atomic(out / JSONL_QUESTIONS, join_lines(kept))
    if left:
        write_bytes_atomic(out / UNPLACED, join_lines(left))
    result.written, result.left = len(kept), len(left)
    return result


def describe(item: Unplaced, texts: dict[str, str]) -> str:
    """One line: which excerpt is left to place and where it could be (``texts``: the
    documents by id)."""
    where = f"line {item.line}: question {item.question_id!r}, excerpt {item.excerpt}"
    if item.count:
        spans = ", ".join(f"[{s.start}, {s.end})" for s in item.candidates)
        more = f" and {item.count - len(item.candidates)} more" if item.count > SHOWN else ""
        return f"{where} occurs {item.count} times in {item.doc_id!r}: {spans}{more}."
    if item.nearest is None:
        return f"{where} is not in {item.doc_id!r}."
    span = item.nearest.span
    text = texts[item.doc_id][span.start : span.end]
    return (
        f"{where} is not in {item.doc_id!r}; nearest match [{span.start}, {span.end}) "
        f"{brief(text, 60)} (score {item.nearest.score:g})."
    )


def _trimmed(document: str, found: Nearest | None) -> Nearest | None:
    """``found`` without the whitespace at its ends (None when that leaves nothing)."""
    if found is None:
        return None
    start, end = found.span.start, found.span.end
    while start < end and document[start].isspace():
        start += 1
    while end > start and document[end - 1].isspace():
        end -= 1
    return Nearest(Span(start, end), found.score) if end > start else None


def _holds(document: str, item: dict[str, Any]) -> bool:
    start, end = item.get("start"), item.get("end")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        return False
    assert isinstance(start, int) and isinstance(end, int)
    return 0 <= start < end <= len(document) and document[start:end] == item["text"]


def _object(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _rapidfuzz() -> Any:
    try:
        return import_module("rapidfuzz.fuzz")
    except ImportError:
        return None
