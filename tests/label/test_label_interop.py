"""Label Studio's JSON export, both ways, with exact spans past the Basic Multilingual Plane."""

from __future__ import annotations

import pytest

from chunkmark.label.interop import (
    code_point_offset,
    from_label_studio,
    to_label_studio,
    utf16_offset,
)
from chunkmark.label.store import LabelError

DOCS = {"d1": "Emoji 😀 first, then the answer: forty-two 🎉 done.", "d2": "Plain text only."}


def question(doc: str, words: str, qid: str = "q1") -> dict[str, object]:
    start = DOCS[doc].index(words)
    return {
        "id": qid,
        "question": "What is it?",
        "doc_id": doc,
        "excerpts": [{"start": start, "end": start + len(words), "text": words}],
    }


def test_offsets_are_utf16_units_as_javascript_counts_them() -> None:
    text = DOCS["d1"]
    (task,) = to_label_studio([question("d1", "forty-two 🎉")], DOCS)
    value = task["annotations"][0]["result"][0]["value"]
    units = text.encode("utf-16-le")
    assert units[2 * value["start"] : 2 * value["end"]].decode("utf-16-le") == "forty-two 🎉"
    assert value["start"] == text.index("forty-two") + 1  # one emoji before: two units
    assert code_point_offset(text, utf16_offset(text, 20)) == 20


def test_a_round_trip_gives_the_same_questions() -> None:
    questions = [question("d1", "forty-two 🎉"), question("d2", "text", "q2")]
    assert from_label_studio(to_label_studio(questions, DOCS), DOCS) == questions


def test_a_task_is_found_by_its_text_and_bad_ones_name_themselves() -> None:
    (task,) = to_label_studio([question("d2", "Plain")], DOCS)
    del task["data"]["doc_id"]
    assert from_label_studio([task], DOCS)[0]["doc_id"] == "d2"
    task["data"]["text"] = "another text"
    with pytest.raises(
        LabelError, match=r"export\.json, task 1: its text is none of the documents"
    ):
        from_label_studio([task], DOCS, "export.json")
    (shifted,) = to_label_studio([question("d2", "Plain")], DOCS)
    shifted["annotations"][0]["result"][0]["value"]["start"] += 1
    with pytest.raises(
        LabelError, match=r"task 1: the span \[1, 5\) does not hold its text 'Plain'"
    ):
        from_label_studio([shifted], DOCS)
    assert (
        from_label_studio(
            [{"data": {"text": DOCS["d2"], "question": "q"}, "annotations": []}], DOCS
        )
        == []
    )
