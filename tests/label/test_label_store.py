"""The question store: written at once and atomically, checked as datasets validate checks."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from chunkmark.datasets import find_problems, load_dataset
from chunkmark.errors import ChunkmarkError
from chunkmark.label.store import LabelError, QuestionStore, open_documents

TEXTS = {
    "boiler": "The boiler is serviced in May. A technician checks the valve.\n\nCosts are shared.",
    "roof": "The roof was replaced in 2019. Its warranty runs for ten years 🏠 and covers leaks.",
}


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "corpora").mkdir(parents=True)
    for name, text in TEXTS.items():
        (folder / "corpora" / f"{name}.md").write_text(text, "utf-8")
    return folder


def store_of(folder: Path) -> QuestionStore:
    return QuestionStore(folder, open_documents(folder))


def span(doc: str, words: str) -> tuple[int, int]:
    start = TEXTS[doc].index(words)
    return start, start + len(words)


def test_a_corpus_folder_becomes_a_dataset_that_validates(tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    store = store_of(folder)
    store.save("When is the boiler serviced?", "boiler", [span("boiler", "serviced in May")])
    store.save("How long is the warranty?", "roof", [span("roof", "ten years 🏠"), (0, 8)])
    assert find_problems(folder) == []
    dataset = load_dataset(folder)
    got = {
        q.text: [TEXTS[q.doc_id][s.start : s.end] for s in q.excerpts] for q in dataset.questions
    }
    assert got == {
        "When is the boiler serviced?": ["serviced in May"],
        "How long is the warranty?": ["The roof", "ten years 🏠"],  # sorted by offset
    }
    lines = [json.loads(x) for x in (folder / "questions.jsonl").read_text("utf-8").splitlines()]
    assert [e["text"] for e in lines[1]["excerpts"]] == ["The roof", "ten years 🏠"]


def test_a_bad_excerpt_is_refused_with_the_validators_words_and_nothing_written(
    tmp_path: Path,
) -> None:
    folder = corpus(tmp_path)
    store = store_of(folder)
    store.save("When?", "boiler", [span("boiler", "in May")])
    before = (folder / "questions.jsonl").read_bytes()
    with pytest.raises(LabelError) as raised:
        store.save("Where?", "boiler", [(10, 500)])
    assert (folder / "questions.jsonl").read_bytes() == before
    # the same line, written by hand, is what datasets validate reports
    (folder / "questions.jsonl").write_text(
        before.decode()
        + json.dumps(
            {
                "id": "q2",
                "question": "Where?",
                "doc_id": "boiler",
                "excerpts": [{"start": 10, "end": 500}],
            }
        )
        + "\n",
        "utf-8",
    )
    (problem,) = find_problems(folder)
    assert problem.message in str(raised.value)
    assert "\n" not in str(raised.value)
    (folder / "questions.jsonl").write_bytes(before)
    with pytest.raises(LabelError, match="no evidence"):
        store_of(folder).save("Why?", "boiler", [])


def test_edit_delete_undo_and_not_answered(tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    store = store_of(folder)
    first = store.save("When is it serviced?", "boiler", [span("boiler", "May")])
    second = store.save("What is checked?", "boiler", [span("boiler", "the valve")])
    saved = (folder / "questions.jsonl").read_bytes()
    store.save(
        "When exactly is it serviced?", "boiler", [span("boiler", "in May")], qid=first["id"]
    )
    assert [q["question"] for q in store.questions()] == [
        "When exactly is it serviced?",
        "What is checked?",
    ]
    assert store.undo()
    assert (folder / "questions.jsonl").read_bytes() == saved
    store.mark_unanswered("Who pays for the garden?")
    store.mark_unanswered("What is checked?", qid=second["id"])  # moved out of the set
    assert [q["id"] for q in store.questions()] == [first["id"]]
    assert [q["question"] for q in store.unanswered()] == [
        "Who pays for the garden?",
        "What is checked?",
    ]
    assert (store.counts().answered, store.counts().unanswered) == (1, 2)
    store.delete(first["id"])
    assert store.questions() == []
    assert store.undo() and [q["id"] for q in store.questions()] == [first["id"]]
    with pytest.raises(LabelError, match="no question 'nope'"):
        store.delete("nope")
    ids = [q["id"] for q in store.questions() + store.unanswered()]
    assert len(ids) == len(set(ids))


def test_reopening_resumes_and_two_stores_lose_nothing(tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    one, two = store_of(folder), store_of(folder)
    barrier = threading.Barrier(2)

    def label(store: QuestionStore, tag: str) -> None:
        barrier.wait()
        for i in range(10):
            store.save(f"{tag} question {i}?", "roof", [span("roof", "2019")])

    threads = [threading.Thread(target=label, args=(s, t)) for s, t in ((one, "a"), (two, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    again = store_of(folder)
    texts = {q["question"] for q in again.questions()}
    assert texts == {f"{t} question {i}?" for t in "ab" for i in range(10)}
    assert find_problems(folder) == []


def test_a_file_that_does_not_validate_stops_the_store(tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    store_of(folder).save("When?", "boiler", [span("boiler", "May")])
    path = folder / "questions.jsonl"
    path.write_text(path.read_text("utf-8").replace('"boiler"', '"boiler2"'), "utf-8")
    with pytest.raises(
        LabelError, match=r"line 1: question 'q1': doc_id 'boiler2' is not a document"
    ):
        store_of(folder)


def test_folders_that_cannot_be_labeled(tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    (folder / "corpora" / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ChunkmarkError, match=r"latin.txt, line 1: not valid UTF-8"):
        open_documents(folder)
    (folder / "corpora" / "latin.txt").unlink()
    with pytest.raises(
        LabelError, match=r"document 'boiler' has 80 characters, more than the page shows \(50\)"
    ):
        open_documents(folder, max_chars=50)  # boiler, the first file, has 80
    (folder / "questions_df.csv").write_text("question\n", "utf-8")
    with pytest.raises(LabelError, match="Chroma layout"):
        open_documents(folder)
    with pytest.raises(LabelError, match="not a folder"):
        open_documents(tmp_path / "missing")
