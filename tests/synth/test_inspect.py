"""``synth inspect`` on a hand-built set whose numbers are computed by hand below.

Two documents of three 5-word sentences; ``words(n=5)`` cuts each sentence into its own chunk.

fruit (88 characters): "Apples grow on tall trees." [0, 26) "Bananas ripen in warm sheds."
[27, 55) "Cherries need very cold winters." [56, 88)
tools (92 characters): "Hammers drive nails into wood." [0, 30) "Saws cut planks along lines."
[31, 59) "Drills bore holes through steel." [60, 92)

Questions and what BM25's top chunk does with them:
- t1 "Where do bananas ripen?" -> the bananas sentence: answered (keywords).
- t2 "Which fruit likes a chilly climate?" -> no word in any chunk, score 0: not answered.
- t3 "What do saws cut?" -> the saws sentence: answered.
- t4 "Do hammers drive nails into steel?", excerpt the drills sentence -> three words match the
  hammers sentence, one the drills sentence: not answered (keywords mislead).
- t5 "What do apples and cherries need?", excerpts apples + cherries -> the cherries sentence
  (two words) beats the apples one (one word): answered.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner, Result

from chunkmark.chunkers import CHUNKERS, chunk_document
from chunkmark.cli import synth_filter
from chunkmark.datasets import Dataset, Document, Question, write_jsonl
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import MissingDependencyError
from chunkmark.spans import Span
from chunkmark.synth import inspect as inspect_module
from chunkmark.synth.inspect import SCHEMA, inspect_dataset, nearest_pairs

FRUIT = "Apples grow on tall trees. Bananas ripen in warm sheds. Cherries need very cold winters."
TOOLS = (
    "Hammers drive nails into wood. Saws cut planks along lines. Drills bore holes through steel."
)
DOCS = {"fruit": FRUIT, "tools": TOOLS}
QUESTIONS = [
    ("t1", "fruit", "Where do bananas ripen?", ["Bananas ripen in warm sheds."]),
    ("t2", "fruit", "Which fruit likes a chilly climate?", ["Cherries need very cold winters."]),
    ("t3", "tools", "What do saws cut?", ["Saws cut planks along lines."]),
    ("t4", "tools", "Do hammers drive nails into steel?", ["Drills bore holes through steel."]),
    (
        "t5",
        "fruit",
        "What do apples and cherries need?",
        ["Apples grow on tall trees.", "Cherries need very cold winters."],
    ),
]
CHUNKER = "words(n=5)"


def build_dataset() -> Dataset:
    documents = tuple(Document(doc_id, text) for doc_id, text in DOCS.items())
    questions = []
    for qid, doc_id, text, excerpts in QUESTIONS:
        spans = []
        for excerpt in excerpts:
            start = DOCS[doc_id].index(excerpt)
            spans.append(Span(start, start + len(excerpt)))
        questions.append(Question(qid, text, doc_id, tuple(spans)))
    return Dataset("hand", documents, tuple(questions))


@pytest.fixture
def dataset() -> Dataset:
    return build_dataset()


def run_cli(*args: str) -> Result:
    group = typer.Typer()
    synth_filter.register(group)
    app = typer.Typer()
    app.add_typer(group, name="synth")
    return CliRunner().invoke(app, ["synth", *args], env={"COLUMNS": "200"})


def test_counts_lengths_and_coverage(dataset: Dataset) -> None:
    result = inspect_dataset(dataset, chunker=CHUNKER)
    fruit, tools = result.documents
    assert (fruit.id, fruit.characters, fruit.questions, fruit.excerpts) == ("fruit", 88, 3, 4)
    assert (tools.id, tools.characters, tools.questions, tools.excerpts) == ("tools", 92, 2, 2)
    # fruit: all three sentences (26 + 28 + 32; the cherries one counted once); tools: 28 + 32
    assert fruit.covered_characters == 86 and fruit.coverage == pytest.approx(86 / 88)
    assert tools.covered_characters == 60 and tools.coverage == pytest.approx(60 / 92)
    assert result.coverage == pytest.approx(146 / 180)
    assert result.excerpts_per_question == {1: 4, 2: 1}
    # lengths 28, 32, 28, 32, 26, 32 -> sorted 26 28 28 32 32 32; linear interpolation at
    # positions 1.25, 2.5, 3.75 gives 28, 30, 32
    length = result.excerpt_length
    assert (length.count, length.min, length.q1, length.median, length.q3, length.max) == (
        6,
        26,
        28,
        30,
        32,
        32,
    )


def test_bm25_top_chunk(dataset: Dataset) -> None:
    chunker, _ = CHUNKERS.build(CHUNKER)
    chunks = [c for d in dataset.documents for c in chunk_document(chunker, d.id, d.text)]
    assert len(chunks) == 6
    assert inspect_module.keyword_answers(dataset, chunks) == [True, False, True, False, True]
    keyword = inspect_dataset(dataset, chunker=CHUNKER).keyword
    assert (keyword.chunks, keyword.questions, keyword.answered) == (6, 5, 3)
    assert keyword.share == pytest.approx(0.6)
    assert keyword.chunker.startswith("words(n=5")


def test_bm25_missing_names_the_extra(dataset: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'chunkmark\[synth\]'"):
        inspect_dataset(dataset, chunker=CHUNKER)


def test_nearest_pairs_are_the_highest_cosines(
    dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEmbedder()
    vectors = fake.embed([q[2] for q in QUESTIONS], kind="query")
    ids = [q[0] for q in QUESTIONS]
    expected = sorted(
        (
            (-float(vectors[i] @ vectors[j]), i, j)
            for i in range(len(ids))
            for j in range(i + 1, len(ids))
        ),
    )
    pairs = nearest_pairs(dataset, fake, 3)
    assert [(p.first, p.second) for p in pairs] == [(ids[i], ids[j]) for _, i, j in expected[:3]]
    assert [p.cosine for p in pairs] == pytest.approx([-c for c, _, _ in expected[:3]], abs=1e-6)
    assert len(nearest_pairs(dataset, fake, 50)) == 10
    monkeypatch.setattr(inspect_module, "_PAIR_BLOCK", 2)  # several row blocks, same answer
    assert nearest_pairs(dataset, fake, 3) == pairs


def test_equal_cosines_go_to_the_earlier_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = np.array([[1, 0], [1, 0], [0, 1], [1, 0]], dtype=np.float32)
    for block in (1024, 1, 3):
        monkeypatch.setattr(inspect_module, "_PAIR_BLOCK", block)
        i, j, c = inspect_module._top_pairs(vectors, 4)
        assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 1), (0, 3), (1, 3), (0, 2)]
        assert c.tolist() == [1, 1, 1, 0]


def test_cli_json(dataset: Dataset, tmp_path: Path) -> None:
    folder = tmp_path / "set"
    write_jsonl(dataset, folder)
    result = run_cli(
        "inspect",
        str(folder),
        "--json",
        "-c",
        CHUNKER,
        "-e",
        "fake()",
        "--pairs",
        "2",
        "--no-cache",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == SCHEMA
    assert data["dataset"] == "set"
    assert [d["id"] for d in data["documents"]] == ["fruit", "tools"]
    assert data["documents"][0]["coverage"] == pytest.approx(86 / 88)
    assert data["totals"] == {
        "documents": 2,
        "questions": 5,
        "excerpts": 6,
        "characters": 180,
        "covered_characters": 146,
        "coverage": pytest.approx(146 / 180),
    }
    assert data["questions_per_document"]["min"] == 2 and data["questions_per_document"]["max"] == 3
    assert data["excerpts_per_question"] == {"counts": {"1": 4, "2": 1}, "mean": 1.2}
    assert data["excerpt_length"] == {
        "count": 6,
        "min": 26,
        "q1": 28,
        "median": 30,
        "q3": 32,
        "max": 32,
    }
    assert data["bm25"]["answered"] == 3 and data["bm25"]["share"] == pytest.approx(0.6)
    assert data["embedder"] == "fake"
    assert len(data["nearest_pairs"]) == 2
    assert set(data["nearest_pairs"][0]) == {
        "first",
        "second",
        "cosine",
        "first_doc",
        "second_doc",
        "first_text",
        "second_text",
    }


def test_cli_text_and_no_embed(dataset: Dataset, tmp_path: Path) -> None:
    folder = tmp_path / "set"
    write_jsonl(dataset, folder)
    text = run_cli("inspect", str(folder), "-c", CHUNKER, "-e", "fake()", "--no-cache")
    assert text.exit_code == 0, text.output
    assert "5 questions, 6 excerpts" in text.output
    assert "excerpts per question: 1: 4, 2: 1 (mean 1.20)" in text.output
    assert "min 26, q1 28, median 30, q3 32, max 32" in text.output
    assert "81.1% of all document characters" in text.output  # 146 / 180
    assert "BM25 top chunk answers 3 of 5 questions (60.0%)" in text.output
    assert "nearest question pairs (fake)" in text.output
    quiet = run_cli("inspect", str(folder), "--json", "-c", CHUNKER, "--no-embed", "--no-cache")
    assert quiet.exit_code == 0, quiet.output
    data = json.loads(quiet.output)
    assert data["nearest_pairs"] is None and data["embedder"] is None
