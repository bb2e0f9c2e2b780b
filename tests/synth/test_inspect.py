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
from dataclasses import replace
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
    # The cosines come from float32 products of other shapes (one vector pair here, a block of
    # rows in nearest_pairs), which BLAS may round differently: a float32 sum of d products is
    # within d * 2**-24 of the exact dot of the same inputs (unit vectors: sum|x_i y_i| <= 1),
    # so two paths agree within twice that.
    tolerance = 2 * fake.dimension * 2**-24
    pairs = nearest_pairs(dataset, fake, 3)
    assert [(p.first, p.second) for p in pairs] == [(ids[i], ids[j]) for _, i, j in expected[:3]]
    cosines = [-c for c, _, _ in expected[:3]]
    assert [p.cosine for p in pairs] == pytest.approx(cosines, rel=0, abs=tolerance)
    assert len(nearest_pairs(dataset, fake, 50)) == 10
    monkeypatch.setattr(inspect_module, "_PAIR_BLOCK", 2)  # several row blocks, same answer
    blocked = nearest_pairs(dataset, fake, 3)
    assert [replace(p, cosine=0.0) for p in blocked] == [replace(p, cosine=0.0) for p in pairs]
    assert [p.cosine for p in blocked] == pytest.approx(cosines, rel=0, abs=tolerance)


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


# Excerpt starts over document length, question order: t1 27/88, t2 56/88, t3 31/92,
# t4 60/92, t5 0/88 and 56/88.
POSITIONS = [27 / 88, 56 / 88, 31 / 92, 60 / 92, 0 / 88, 56 / 88]
# Words (two or more \w characters, lower-cased, bm25s's English stop words such as "a", "and",
# "in", "into" removed) of each question, and those found among its excerpts' words:
# t1 {where, do, bananas, ripen}: bananas, ripen -> 2/4
# t2 {which, fruit, likes, chilly, climate}: none -> 0/5
# t3 {what, do, saws, cut}: saws, cut -> 2/4
# t4 {do, hammers, drive, nails, steel}: steel -> 1/5
# t5 {what, do, apples, cherries, need}: apples, cherries, need -> 3/5
OVERLAPS = [0.5, 0.0, 0.5, 0.2, 0.6]


def test_positions_and_lexical_overlap(dataset: Dataset) -> None:
    assert inspect_module.excerpt_positions(dataset) == pytest.approx(POSITIONS)
    assert inspect_module.lexical_overlaps(dataset) == pytest.approx(OVERLAPS)
    result = inspect_dataset(dataset, chunker=CHUNKER)
    # sorted positions 0, 27/88, 31/92, 56/88, 56/88, 60/92: quartiles at 1.25, 2.5, 3.75
    position = result.excerpt_position
    assert (position.count, position.min, position.max) == (6, 0.0, pytest.approx(60 / 92))
    assert position.q1 == pytest.approx(27 / 88 + 0.25 * (31 / 92 - 27 / 88))
    assert position.median == pytest.approx((31 / 92 + 56 / 88) / 2)
    assert position.q3 == pytest.approx(56 / 88)
    # sorted overlaps 0, 0.2, 0.5, 0.5, 0.6: quartiles at positions 1, 2, 3
    overlap = result.lexical_overlap
    assert (overlap.count, overlap.min, overlap.q1, overlap.median, overlap.q3, overlap.max) == (
        5,
        0.0,
        pytest.approx(0.2),
        0.5,
        0.5,
        0.6,
    )


def test_a_question_without_words_has_no_overlap() -> None:
    doc = Document("d", "Wheat grows in fields of gold.")
    questions = (
        Question("q1", "? !", "d", (Span(0, 12),)),  # no word at all
        Question("q2", "Where does wheat grow?", "d", (Span(0, 12),)),  # "Wheat grows": 1/4
    )
    data = Dataset("w", (doc,), questions)
    assert inspect_module.lexical_overlaps(data) == [None, pytest.approx(0.25)]
    result = inspect_dataset(data, chunker=CHUNKER)
    assert result.lexical_overlap.count == 1
    # BM25 has no word of q1 to search for (not answered); q2 finds "Wheat grows"
    assert (result.keyword.questions, result.keyword.answered) == (2, 1)


def test_excerpt_tokens_are_cl100k(dataset: Dataset) -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base")
    texts = [excerpt for _, _, _, excerpts in QUESTIONS for excerpt in excerpts]
    counts = sorted(len(encoding.encode(t)) for t in texts)
    tokens = inspect_dataset(dataset, chunker=CHUNKER).excerpt_tokens
    assert (tokens.count, tokens.min, tokens.max) == (6, counts[0], counts[-1])
    assert tokens.median == pytest.approx((counts[2] + counts[3]) / 2)


def scoped_dataset() -> Dataset:
    """The hand-built set plus t6 about tools, "Need very cold steel": over the whole corpus
    the cherries sentence (need, very, cold) beats the drills sentence (steel), so the top chunk
    is in the wrong document; within tools only the drills sentence has one of its words."""
    base = build_dataset()
    start = TOOLS.index("Drills")
    extra = Question("t6", "Need very cold steel", "tools", (Span(start, len(TOOLS)),))
    return Dataset("scoped", base.documents, (*base.questions, extra))


def test_document_scope_searches_each_document_alone() -> None:
    data = scoped_dataset()
    chunker, _ = CHUNKERS.build(CHUNKER)
    chunks = [c for d in data.documents for c in chunk_document(chunker, d.id, d.text)]
    assert inspect_module.keyword_answers(data, chunks) == [True, False, True, False, True, False]
    within = inspect_module.keyword_answers_in_documents(data, chunks)
    assert within == [True, False, True, False, True, True]
    corpus = inspect_dataset(data, chunker=CHUNKER).keyword
    assert (corpus.scope, corpus.answered) == ("corpus", 3)
    document = inspect_dataset(data, chunker=CHUNKER, scope="document").keyword
    assert (document.scope, document.answered, document.questions) == ("document", 4, 6)


def with_scope(data: Dataset) -> Dataset:
    marked = tuple(
        Question(q.id, q.text, q.doc_id, q.excerpts, {"scope": "document"}) for q in data.questions
    )
    return Dataset(data.name, data.documents, marked)


def test_default_scope_follows_the_reference() -> None:
    data = scoped_dataset()
    assert inspect_module.default_scope(data) == "corpus"
    assert inspect_module.default_scope(with_scope(data)) == "document"
    # a reference marked document-scoped puts both sets in the document scope
    result = inspect_dataset(data, chunker=CHUNKER, reference=with_scope(build_dataset()))
    assert result.keyword.scope == "document" and result.keyword.answered == 4
    assert result.reference is not None and result.reference.keyword.scope == "document"
    # marked questions alone (no reference) choose it too
    assert inspect_dataset(with_scope(data), chunker=CHUNKER).keyword.answered == 4


def reference_dataset() -> Dataset:
    """t1 and t3 of the hand-built set, as another set about the same documents."""
    base = build_dataset()
    return Dataset("reference", base.documents, (base.questions[0], base.questions[2]))


def test_reference_is_measured_the_same_way(dataset: Dataset) -> None:
    result = inspect_dataset(
        dataset, chunker=CHUNKER, embedder=FakeEmbedder(), reference=reference_dataset()
    )
    ref = result.reference
    assert ref is not None and ref.reference is None
    assert ref.dataset == "reference" and ref.questions == 2
    assert [d.questions for d in ref.documents] == [1, 1]
    # t1 27/88, t3 31/92; overlaps 0.5 and 0.5; BM25 answers both
    assert (ref.excerpt_position.min, ref.excerpt_position.max) == pytest.approx((27 / 88, 31 / 92))
    assert ref.lexical_overlap.median == pytest.approx(0.5)
    assert (ref.keyword.answered, ref.keyword.share) == (2, 1.0)
    assert ref.embedder is None and ref.nearest_pairs is None  # pairs only for the set itself
    assert result.nearest_pairs is not None


def test_cli_compare(dataset: Dataset, tmp_path: Path) -> None:
    folder, other = tmp_path / "set", tmp_path / "human"
    write_jsonl(dataset, folder)
    write_jsonl(reference_dataset(), other)
    args = ("inspect", str(folder), "-c", CHUNKER, "--no-embed", "--no-cache")
    result = run_cli(*args, "--compare", str(other), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["excerpt_position"]["max"] == pytest.approx(60 / 92)
    assert data["lexical_overlap"]["q1"] == pytest.approx(0.2)
    assert data["bm25"]["scope"] == "corpus"
    ref = data["reference"]
    assert ref["dataset"] == "human" and ref["totals"]["questions"] == 2
    assert ref["bm25"]["answered"] == 2 and ref["reference"] is None
    assert ref["nearest_pairs"] is None
    assert run_cli(*args, "--json").exit_code == 0
    assert json.loads(run_cli(*args, "--json").output)["reference"] is None
    text = run_cli(*args, "--compare", str(other), "--scope", "document")
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert "beside the reference set human" in text.output
    assert any(line.split() == ["questions", "5", "2"] for line in lines)
    assert any(
        line.split() == ["answered", "by", "BM25's", "top", "chunk", "60.0%", "100.0%"]
        for line in lines
    )
    assert any(
        line.startswith("  lexical overlap") and "0.50 [0.20, 0.50]" in line for line in lines
    )
    assert "searching each question's own document" in text.output
    assert "excerpt position (start / document length): min 0.000" in text.output
