from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkmark.datasets import (
    Dataset,
    Document,
    Question,
    find_problems,
    load_chroma,
    load_dataset,
    load_demo,
    load_jsonl,
    write_jsonl,
)
from chunkmark.errors import DatasetError
from chunkmark.spans import Span

TEXT = "Line one.\nLine two has the answer.\n"


def write_lines(path: Path, rows: list[object]) -> None:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )


def make_jsonl(folder: Path, docs: list[object], questions: list[object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_lines(folder / "documents.jsonl", docs)
    write_lines(folder / "questions.jsonl", questions)
    return folder


def question(qid: str = "q1", **changes: object) -> dict[str, object]:
    start = TEXT.index("the answer")
    row: dict[str, object] = {
        "id": qid,
        "question": "Where is the answer?",
        "doc_id": "d1",
        "excerpts": [{"start": start, "end": start + 10, "text": "the answer"}],
    }
    row.update(changes)
    return row


def load_error(folder: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_jsonl(folder)
    message = str(info.value)
    assert "\n" not in message
    assert "Fix: " in message
    assert "chunkmark datasets validate" in message
    return message


def test_inline_and_path_documents(tmp_path: Path) -> None:
    (tmp_path / "ds" / "docs").mkdir(parents=True)
    (tmp_path / "ds" / "docs" / "two.md").write_bytes(b"Second\r\ndocument.\n")
    folder = make_jsonl(
        tmp_path / "ds",
        [{"id": "d1", "text": TEXT}, {"id": "d2", "path": "docs/two.md", "metadata": {"a": 1}}],
        [question(), question("q2", doc_id="d2", excerpts=[{"start": 0, "end": 6}])],
    )
    dataset = load_jsonl(folder)
    assert dataset.name == "ds"
    assert [d.id for d in dataset.documents] == ["d1", "d2"]
    assert dataset.by_id["d2"].text == "Second\r\ndocument.\n"  # read byte for byte
    assert dataset.questions[1].excerpts == (Span(0, 6),)
    assert load_dataset(folder).fingerprint == dataset.fingerprint
    assert find_problems(folder) == []


def test_round_trip_keeps_the_fingerprint(tmp_path: Path) -> None:
    original = Dataset(
        "x",
        (Document("a", "caf\u00e9 \U0001f600 text\r\nmore"), Document("b", "second doc")),
        (
            Question("first", "Q one?", "a", (Span(0, 4), Span(7, 11))),
            Question("second", "Q two?", "b", (Span(0, 6),)),
        ),
    )
    write_jsonl(original, tmp_path / "out")
    again = load_jsonl(tmp_path / "out")
    assert again.fingerprint == original.fingerprint
    assert again.documents == original.documents
    assert again.questions == original.questions
    line = json.loads((tmp_path / "out" / "questions.jsonl").read_text().splitlines()[0])
    assert line["excerpts"][0] == {"start": 0, "end": 4, "text": "caf\u00e9"}


def test_question_metadata_is_read_written_back_and_not_fingerprinted(tmp_path: Path) -> None:
    meta = {"split": "val", "answers": ["one", "two"], "scope": "document", "n": {"k": 1}}
    folder = make_jsonl(
        tmp_path / "m", [{"id": "d1", "text": TEXT}], [question(metadata=meta), question("q2")]
    )
    loaded = load_jsonl(folder)
    assert dict(loaded.questions[0].metadata) == meta
    assert dict(loaded.questions[1].metadata) == {}
    plain = make_jsonl(tmp_path / "p", [{"id": "d1", "text": TEXT}], [question(), question("q2")])
    assert load_jsonl(plain).fingerprint == loaded.fingerprint  # metadata is not content
    write_jsonl(loaded, tmp_path / "out")
    lines = [json.loads(x) for x in (tmp_path / "out/questions.jsonl").read_text().splitlines()]
    assert lines[0]["metadata"] == meta
    assert "metadata" not in lines[1]  # written only when there is some
    bad = make_jsonl(tmp_path / "b", [{"id": "d1", "text": TEXT}], [question(metadata=[1])])
    assert "metadata is a list, not a JSON object" in load_error(bad)


def test_round_trip_of_the_demo(tmp_path: Path) -> None:
    demo = load_demo()
    write_jsonl(demo, tmp_path / "demo_copy")
    assert load_jsonl(tmp_path / "demo_copy").fingerprint == demo.fingerprint


@pytest.mark.integration
def test_round_trip_of_the_benchmark(chroma_general_dir: Path, tmp_path: Path) -> None:
    dataset = load_chroma(chroma_general_dir)
    write_jsonl(dataset, tmp_path / "general")
    assert load_jsonl(tmp_path / "general").fingerprint == dataset.fingerprint


def test_write_replaces_files_without_leftovers(tmp_path: Path) -> None:
    demo = load_demo()
    write_jsonl(demo, tmp_path / "out")
    write_jsonl(demo.subset(["tidewell-01"]), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "documents.jsonl",
        "questions.jsonl",
    ]
    assert len(load_jsonl(tmp_path / "out").questions) == 1


def test_missing_documents_file(tmp_path: Path) -> None:
    folder = make_jsonl(tmp_path / "ds", [], [question()])
    (folder / "documents.jsonl").unlink()
    assert f"{folder / 'documents.jsonl'}: missing the documents file" in load_error(folder)


def test_invalid_json_line(tmp_path: Path) -> None:
    folder = make_jsonl(tmp_path / "ds", [{"id": "d1", "text": TEXT}], [question(), "{oops"])
    message = load_error(folder)
    assert "questions.jsonl, line 2: not valid JSON" in message


def test_excerpt_text_must_equal_the_slice(tmp_path: Path) -> None:
    start = TEXT.index("answer")
    bad = question(excerpts=[{"start": 0, "end": 6, "text": "answer"}])
    folder = make_jsonl(tmp_path / "ds", [{"id": "d1", "text": TEXT}], [bad])
    message = load_error(folder)
    assert "questions.jsonl, line 1: question 'q1', excerpt 1: content 'answer'" in message
    assert f"set start to {start} and end to {start + 6}" in message


def test_duplicate_ids(tmp_path: Path) -> None:
    folder = make_jsonl(
        tmp_path / "ds",
        [{"id": "d1", "text": TEXT}, {"id": "d1", "text": "again"}],
        [question(), question()],
    )
    problems = find_problems(folder)
    assert [(Path(p.file).name, p.line) for p in problems] == [
        ("documents.jsonl", 2),
        ("questions.jsonl", 2),
    ]
    assert problems[0].message == "duplicate document id 'd1' (first on line 1)."
    assert problems[1].message == "duplicate question id 'q1' (first on line 1)."


def test_unknown_doc_id_and_bad_shapes(tmp_path: Path) -> None:
    folder = make_jsonl(
        tmp_path / "ds",
        [{"id": "d1", "text": TEXT}, {"id": "d2"}, {"id": 3, "text": "x"}, {"id": "e", "text": ""}],
        [
            question(doc_id="nope"),
            question("q2", excerpts=[]),
            question("q3", excerpts=[{"start": 1.5, "end": 4}]),
            question("q4", question=" "),
            question("q5", answer="typo key"),
            question("q6", excerpts=[{"start": 5, "end": 2}]),
        ],
    )
    messages = [p.message for p in find_problems(folder)]
    assert messages == [
        'a document needs exactly one of "text" and "path".',
        "id is a number, not a non-empty string.",
        "document 'e' is empty.",
        "question 'q1': doc_id 'nope' is not a document in documents.jsonl.",
        "question 'q2': excerpts is an empty list, not a list of one or more excerpts.",
        "question 'q3', excerpt 1: start is 1.5, not an integer.",
        "question 'q4' has an empty question text.",
        "question 'q5': unknown key(s) answer.",
        "question 'q6', excerpt 1: start 5 is not less than end 2 (an empty excerpt).",
    ]


def test_missing_document_file(tmp_path: Path) -> None:
    folder = make_jsonl(tmp_path / "ds", [{"id": "d1", "path": "gone.md"}], [question()])
    message = load_error(folder)
    assert f"{folder / 'gone.md'}: the document file named in documents.jsonl" in message


def test_non_utf8_document_file(tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "d.md").write_bytes(b"line one\nna\xefve\n")
    folder = make_jsonl(tmp_path / "ds", [{"id": "d1", "path": "d.md"}], [question()])
    message = load_error(folder)
    assert f"{folder / 'd.md'}, line 2: not valid UTF-8: byte 0xef at byte offset 11" in message


def test_folder_with_no_layout(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    problems = find_problems(tmp_path / "empty")
    assert len(problems) == 1
    assert "no questions_df.csv (Chroma layout) or questions.jsonl" in problems[0].message
    with pytest.raises(DatasetError, match=r"no questions_df\.csv"):
        load_dataset(tmp_path / "empty")


def test_load_dataset_rejects_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="neither a dataset folder nor a built-in"):
        load_dataset(str(tmp_path / "absent"))


@st.composite
def datasets(draw: st.DrawFn) -> Dataset:
    alphabet = st.characters(blacklist_categories=("Cs",))
    text = st.text(alphabet, min_size=1, max_size=40).filter(str.strip)  # blank is a problem
    texts = draw(st.lists(text, min_size=1, max_size=3))
    documents = tuple(Document(f"doc{i}", t) for i, t in enumerate(texts))
    questions = []
    for i in range(draw(st.integers(1, 4))):
        doc = draw(st.sampled_from(documents))
        spans = []
        for _ in range(draw(st.integers(1, 3))):
            start = draw(st.integers(0, len(doc.text) - 1))
            spans.append(Span(start, draw(st.integers(start + 1, len(doc.text)))))
        questions.append(
            Question(str(i), draw(st.text(alphabet, min_size=1)) + "?", doc.id, tuple(spans))
        )
    return Dataset("generated", documents, tuple(questions))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(dataset=datasets())
def test_any_dataset_survives_the_jsonl_round_trip(tmp_path: Path, dataset: Dataset) -> None:
    write_jsonl(dataset, tmp_path / "rt")
    again = load_jsonl(tmp_path / "rt")
    assert again.documents == dataset.documents
    assert again.questions == dataset.questions
    assert again.fingerprint == dataset.fingerprint
