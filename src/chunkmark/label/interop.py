"""Span annotations made elsewhere: Label Studio's JSON export, in and out.

A Label Studio text-labeling project exports a list of tasks, each with its text in
``data["text"]`` and the annotators' spans in ``annotations[*].result[*].value`` (``start``,
``end``, ``text``, ``labels``). Label Studio counts offsets in JavaScript string units
(UTF-16), chunkmark in Unicode code points; both directions convert, so a text with characters
outside the Basic Multilingual Plane (emoji, some CJK) keeps its exact spans.

:func:`to_label_studio` writes one task per labeled question (the document's text, the
question, its ``doc_id`` and ``question_id`` in ``data``; its excerpts as one annotation);
:func:`from_label_studio` reads such tasks back into question objects of chunkmark's JSONL
layout, finding each task's document by ``data["doc_id"]`` or by its exact text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chunkmark.label.store import LabelError

LABEL = "Evidence"


def utf16_offset(text: str, index: int) -> int:
    """The UTF-16 offset of code point ``index`` of ``text``."""
    return index + sum(1 for ch in text[:index] if ord(ch) > 0xFFFF)


def code_point_offset(text: str, offset: int) -> int:
    """The code point index of UTF-16 offset ``offset`` of ``text``."""
    units = 0
    for i, ch in enumerate(text):
        if units >= offset:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def to_label_studio(
    questions: Sequence[Mapping[str, Any]], documents: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Label Studio tasks for chunkmark question objects (see the module docstring)."""
    tasks: list[dict[str, Any]] = []
    for number, q in enumerate(questions, start=1):
        text = documents[q["doc_id"]]
        result = [
            {
                "id": f"{q['id']}-{i}",
                "from_name": "label",
                "to_name": "text",
                "type": "labels",
                "value": {
                    "start": utf16_offset(text, e["start"]),
                    "end": utf16_offset(text, e["end"]),
                    "text": text[e["start"] : e["end"]],
                    "labels": [LABEL],
                },
            }
            for i, e in enumerate(q["excerpts"], start=1)
        ]
        tasks.append(
            {
                "id": number,
                "data": {
                    "text": text,
                    "question": q["question"],
                    "doc_id": q["doc_id"],
                    "question_id": q["id"],
                },
                "annotations": [{"result": result}],
            }
        )
    return tasks


def from_label_studio(
    tasks: object, documents: Mapping[str, str], where: str = "the export"
) -> list[dict[str, Any]]:
    """chunkmark question objects from Label Studio tasks; one line naming the task for
    anything that cannot be read. Tasks without a span are left out."""
    if not isinstance(tasks, list):
        raise LabelError(f"{where}: not a list of tasks.", "Export the project as JSON.")
    by_text = {text: doc_id for doc_id, text in documents.items()}
    out: list[dict[str, Any]] = []
    for number, task in enumerate(tasks, start=1):
        at = f"{where}, task {number}"
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise LabelError(
                f"{at}: no data.text.", "Export text tasks (data.text holds the text)."
            )
        doc_id = (
            data.get("doc_id") if data.get("doc_id") in documents else by_text.get(data["text"])
        )
        if doc_id is None:
            raise LabelError(
                f"{at}: its text is none of the documents.",
                "Import into the folder whose documents were labeled, or add data.doc_id.",
            )
        question = next(
            (data[k] for k in ("question", "query") if isinstance(data.get(k), str)), None
        )
        if question is None:
            raise LabelError(
                f"{at}: no data.question.", "Put each task's question in data.question."
            )
        text = documents[str(doc_id)]
        spans: set[tuple[int, int]] = set()
        for annotation in task.get("annotations") or []:
            for item in annotation.get("result") or []:
                value = item.get("value") if isinstance(item, dict) else None
                if not isinstance(value, dict) or "start" not in value or "end" not in value:
                    continue
                start = code_point_offset(text, int(value["start"]))
                end = code_point_offset(text, int(value["end"]))
                if "text" in value and text[start:end] != value["text"]:
                    raise LabelError(
                        f"{at}: the span [{value['start']}, {value['end']}) does not hold its text "
                        f"{str(value['text'])[:40]!r}.",
                        "Export from the project that labeled this very text.",
                    )
                spans.add((start, end))
        if spans:
            out.append(
                {
                    "id": str(data.get("question_id") or task.get("id", number)),
                    "question": question,
                    "doc_id": str(doc_id),
                    "excerpts": [
                        {"start": s, "end": e, "text": text[s:e]} for s, e in sorted(spans)
                    ],
                }
            )
    return out


# Argilla (2.x): a dataset's records as ``dataset.records.to_json(path)`` writes them (a JSON
# list, ``to_list(flatten=False)``): ``fields`` (the text fields), ``metadata``, ``responses``
# (per question, one ``{"value", "user_id"}`` per annotator) and ``suggestions`` (per question,
# ``{"value", "score", "agent"}``). A span question's value is a list of ``{"label", "start",
# "end"}`` in code points of the field's text (Argilla's server checks them against the
# field's Python length), so no conversion is needed.
ARGILLA_QUESTION = "evidence"
ARGILLA_AGENT = "chunkmark"


def to_argilla(
    questions: Sequence[Mapping[str, Any]], documents: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Argilla records for chunkmark question objects: the document in ``fields.text``, the
    question in ``fields.question``, ``doc_id`` and ``question_id`` in ``metadata``, the
    excerpts as the suggestion of the span question ``evidence`` (agent ``chunkmark``), for
    annotators to confirm."""
    return [
        {
            "id": str(q["id"]),
            "fields": {"text": documents[q["doc_id"]], "question": q["question"]},
            "metadata": {"doc_id": q["doc_id"], "question_id": q["id"]},
            "suggestions": {
                ARGILLA_QUESTION: {
                    "value": [
                        {"label": ARGILLA_QUESTION, "start": e["start"], "end": e["end"]}
                        for e in q["excerpts"]
                    ],
                    "score": None,
                    "agent": ARGILLA_AGENT,
                }
            },
            "responses": {},
            "vectors": {},
            "status": "pending",
        }
        for q in questions
    ]


def from_argilla(
    records: object, documents: Mapping[str, str], where: str = "the export"
) -> list[dict[str, Any]]:
    """chunkmark question objects from Argilla records (see :func:`to_argilla`): every span of
    every annotator's response (duplicates once), or, for a record nobody answered, the spans
    chunkmark suggested; records with neither are left out. The document is
    ``metadata.doc_id``, else the field whose text is a document; the question is
    ``fields.question`` (or ``query``, or ``metadata.question``)."""
    if not isinstance(records, list):
        raise LabelError(
            f"{where}: not a list of records.", "Export with dataset.records.to_json(path)."
        )
    by_text = {text: doc_id for doc_id, text in documents.items()}
    out: list[dict[str, Any]] = []
    for number, record in enumerate(records, start=1):
        at = f"{where}, record {number}"
        fields = record.get("fields") if isinstance(record, dict) else None
        if not isinstance(fields, dict):
            raise LabelError(f"{at}: no fields.", "Export the records with their fields.")
        metadata = record.get("metadata") or {}
        doc_id = metadata.get("doc_id") if isinstance(metadata, dict) else None
        if doc_id not in documents:
            doc_id = next((by_text[v] for v in fields.values() if v in by_text), None)
        if doc_id is None:
            raise LabelError(
                f"{at}: none of its fields is one of the documents.",
                "Import into the folder whose documents were labeled, or add metadata.doc_id.",
            )
        question = next(
            (
                source[k]
                for source in (fields, metadata if isinstance(metadata, dict) else {})
                for k in ("question", "query")
                if isinstance(source.get(k), str)
            ),
            None,
        )
        if question is None:
            raise LabelError(f"{at}: no fields.question.", "Give each record a question field.")
        text = documents[str(doc_id)]
        spans = _argilla_spans(record, text, at)
        if spans:
            out.append(
                {
                    "id": str(metadata.get("question_id") or record.get("id") or number),
                    "question": question,
                    "doc_id": str(doc_id),
                    "excerpts": [
                        {"start": s, "end": e, "text": text[s:e]} for s, e in sorted(spans)
                    ],
                }
            )
    return out


def _argilla_spans(record: dict[str, Any], text: str, at: str) -> set[tuple[int, int]]:
    """The spans of a record's responses, else of chunkmark's own suggestions."""
    values: list[object] = []
    for answers in (record.get("responses") or {}).values():
        values += [a.get("value") for a in answers or [] if isinstance(a, dict)]
    if not any(_span_items(v) for v in values):
        values = [
            s.get("value")
            for s in (record.get("suggestions") or {}).values()
            if isinstance(s, dict) and s.get("agent") == ARGILLA_AGENT
        ]
    spans: set[tuple[int, int]] = set()
    for value in values:
        for item in _span_items(value):
            start, end = item["start"], item["end"]
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end):
                raise LabelError(
                    f"{at}: the span {start!r}-{end!r} is not a pair of offsets.",
                    "Export the span question's values as Argilla writes them.",
                )
            if end > len(text):
                raise LabelError(
                    f"{at}: the span [{start}, {end}) runs past the document's {len(text)} "
                    "characters.",
                    "Import into the folder whose documents were labeled.",
                )
            spans.add((start, end))
    return spans


def _span_items(value: object) -> list[dict[str, Any]]:
    """The items of a span question's value (dicts with start and end); none otherwise."""
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict) and "start" in v and "end" in v]
