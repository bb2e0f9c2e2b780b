"""Argilla records, both ways, with exact spans past the Basic Multilingual Plane.

``data/argilla_records.json`` was written by argilla 2.8.0's own serialiser
(``GenericIO.to_list(records, flatten=False)``, what ``dataset.records.to_json`` writes) from
``rg.Record`` objects: record r1 (document d1, metadata ``doc_id``) holds two annotators'
responses to the span question ``evidence``; record r2 (no ``doc_id``, document d2 by its text)
holds only a suggestion of another model. The offsets below come from the lengths of the parts
the documents are built from, not from searching them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from chunkmark.label.interop import from_argilla, to_argilla
from chunkmark.label.store import LabelError
from cli.app_runner import error_line, invoke

BEFORE = "Emoji 😀 first, then the answer: "
ANSWER = "forty-two 🎉"
DOCS = {"d1": BEFORE + ANSWER + " done.", "d2": "Plain text only."}
AT = len(BEFORE)  # code points: the emoji before counts one
RECORDS = Path(__file__).parent / "data" / "argilla_records.json"


def records() -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = json.loads(RECORDS.read_text("utf-8"))
    return value


def test_records_written_by_argilla_are_read_with_exact_spans() -> None:
    (question,) = from_argilla(records(), DOCS)
    emoji = len("Emoji ")
    assert question == {
        "id": "r1",
        "question": "What is the answer?",
        "doc_id": "d1",
        "excerpts": [  # both annotators' spans, the one they share once
            {"start": emoji, "end": emoji + 1, "text": "😀"},
            {"start": AT, "end": AT + len(ANSWER), "text": ANSWER},
        ],
    }


def test_only_chunkmarks_own_suggestions_count_and_a_document_is_found_by_its_text() -> None:
    edited = records()
    edited[1]["suggestions"]["evidence"]["agent"] = "chunkmark"
    questions = from_argilla(edited, DOCS)
    assert [q["id"] for q in questions] == ["r1", "r2"]
    assert questions[1]["doc_id"] == "d2"
    assert questions[1]["excerpts"] == [{"start": 0, "end": 5, "text": "Plain"}]


def test_a_round_trip_gives_the_same_questions_in_code_points() -> None:
    questions = [
        {
            "id": "q1",
            "question": "What is it?",
            "doc_id": "d1",
            "excerpts": [{"start": AT, "end": AT + len(ANSWER), "text": ANSWER}],
        },
        {
            "id": "q2",
            "question": "Plain?",
            "doc_id": "d2",
            "excerpts": [
                {"start": 0, "end": 5, "text": "Plain"},
                {"start": 6, "end": 10, "text": "text"},
            ],
        },
    ]
    exported = to_argilla(questions, DOCS)
    span = exported[0]["suggestions"]["evidence"]["value"][0]
    assert (span["start"], span["end"]) == (AT, AT + len(ANSWER))  # not UTF-16 units (AT + 1)
    assert exported[0]["fields"]["text"][span["start"] : span["end"]] == ANSWER
    assert from_argilla(json.loads(json.dumps(exported)), DOCS) == questions


def test_bad_records_name_themselves() -> None:
    past = copy.deepcopy(records())
    past[0]["responses"]["evidence"][0]["value"][0]["end"] = len(DOCS["d1"]) + 1
    end = len(DOCS["d1"]) + 1
    with pytest.raises(
        LabelError, match=rf"^x\.json, record 1: the span \[{AT}, {end}\) runs past"
    ):
        from_argilla(past, DOCS, "x.json")
    stranger = copy.deepcopy(records())
    stranger[1]["fields"]["text"] = "Another text."
    with pytest.raises(LabelError, match=r"record 2: none of its fields is one of the documents"):
        from_argilla(stranger, DOCS)
    with pytest.raises(LabelError, match=r"not a list of records"):
        from_argilla({"records": []}, DOCS)


def test_the_command_line_exports_and_imports_argilla_records(tmp_path: Path) -> None:
    from chunkmark.datasets import find_problems, load_dataset
    from chunkmark.label.store import QuestionStore, open_documents

    first = tmp_path / "first"
    first.mkdir()
    (first / "a.md").write_text(DOCS["d1"], "utf-8")
    store = QuestionStore(first, open_documents(first))
    store.save("What is the answer?", "a", [(AT, AT + len(ANSWER))])
    store.save("Which emoji?", "a", [(len("Emoji "), len("Emoji ") + 1), (AT, AT + 9)])
    export = tmp_path / "argilla.json"
    done = invoke("label", str(first), "--export-argilla", str(export))
    assert done.exit_code == 0, done.output
    assert len(json.loads(export.read_text("utf-8"))) == 2
    second = tmp_path / "second"
    second.mkdir()
    (second / "a.md").write_text(DOCS["d1"], "utf-8")
    done = invoke(
        "label",
        str(second),
        "--import-argilla",
        str(export),
        "--export-argilla",
        str(tmp_path / "again.json"),
    )
    assert done.exit_code == 0, done.output
    assert find_problems(second) == []
    before = [(q.text, q.doc_id, q.excerpts) for q in load_dataset(first).questions]
    after = [(q.text, q.doc_id, q.excerpts) for q in load_dataset(second).questions]
    assert after == before
    assert [q.metadata.get("from") for q in load_dataset(second).questions] == ["argilla"] * 2
    bad = tmp_path / "bad.json"
    bad.write_text("[{", "utf-8")
    done = invoke(
        "label", str(second), "--import-argilla", str(bad), "--export-argilla", str(export)
    )
    assert error_line(done).startswith(f"error: {bad}: cannot be read as JSON")
    assert "dataset.records.to_json(path)" in error_line(done)
