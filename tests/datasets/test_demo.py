from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from chunkmark.datasets import find_problems, load_dataset, load_demo

DEMO_DIR = Path(str(resources.files("chunkmark.datasets").joinpath("demo_data")))


def test_demo_loads_with_enough_questions() -> None:
    demo = load_demo()
    assert demo.name == "demo"
    assert 3 <= len(demo.documents) <= 4
    assert len(demo.questions) >= 48
    assert all(1 <= len(q.excerpts) <= 3 for q in demo.questions)
    assert any(len(q.excerpts) == 3 for q in demo.questions)
    assert len({q.id for q in demo.questions}) == len(demo.questions)
    assert load_dataset("demo").fingerprint == demo.fingerprint


def test_demo_validates_clean() -> None:
    assert find_problems(DEMO_DIR) == []


def test_every_stored_excerpt_is_the_exact_slice() -> None:
    demo = load_demo()
    lines = (DEMO_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    stored = [json.loads(line) for line in lines]
    assert len(stored) == len(demo.questions)
    for row, q in zip(stored, demo.questions, strict=True):
        text = demo.by_id[q.doc_id].text
        for excerpt in row["excerpts"]:
            assert text[excerpt["start"] : excerpt["end"]] == excerpt["text"]
            assert excerpt["text"] == excerpt["text"].strip()


def test_documents_have_markdown_structure() -> None:
    demo = load_demo()
    for doc in demo.documents:
        assert 4_000 <= len(doc.text.encode("utf-8")) <= 10_000, doc.id
        assert re.search(r"^## ", doc.text, re.M), doc.id
        assert re.search(r"^### ", doc.text, re.M), doc.id
    everything = "\n".join(d.text for d in demo.documents)
    assert re.search(r"^#### ", everything, re.M)
    assert re.search(r"^\|---\|", everything, re.M)  # a markdown table
    assert "\n```" in everything  # a fenced code block
    assert re.search(r"^1\. ", everything, re.M)  # a numbered list
    assert re.search(r"^- ", everything, re.M)  # a bullet list


def test_some_answers_sit_in_tables_code_and_lists() -> None:
    demo = load_demo()
    places = {"table": 0, "code": 0, "list": 0, "multi-sentence": 0}
    for q in demo.questions:
        text = demo.by_id[q.doc_id].text
        for span in q.excerpts:
            excerpt = text[span.start : span.end]
            line_start = text.rfind("\n", 0, span.start) + 1
            prefix = text[line_start : span.start]
            if excerpt.startswith("|"):
                places["table"] += 1
            if text.count("```", 0, span.start) % 2 == 1:
                places["code"] += 1
            if re.match(r"\s*(-|\d+\.)\s", prefix):
                places["list"] += 1
            if re.search(r"[.;:] \S", excerpt):
                places["multi-sentence"] += 1
    assert all(count >= 3 for count in places.values()), places
