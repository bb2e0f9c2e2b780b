"""The query check on small question sets: below ``MIN_QUESTIONS`` a missing signal is a neutral
note (the check cannot tell), not a warning about the embedder; from it on, a warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.cli.run import query_check_lines
from chunkmark.datasets import Dataset, load_dataset, write_jsonl
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.experiments.cell import chunk_dataset, question_table
from chunkmark.experiments.checks import MIN_QUESTIONS, query_signal
from chunkmark.metrics import ChunkTable
from cli.app_runner import invoke


def first_questions(n: int) -> Dataset:
    demo = load_dataset("demo")
    return Dataset("small", demo.documents, demo.questions[:n])


def check_of(dataset: Dataset, queries: str) -> dict[str, Any] | None:
    chunker, _ = CHUNKERS.build("fixed_tokens(size=200)")
    chunks = chunk_dataset(dataset, chunker)
    index = {d.id: i for i, d in enumerate(dataset.documents)}
    table = ChunkTable.from_rows([(index[c.doc_id], c.start, c.end) for c in chunks])
    embedder = FakeEmbedder()
    docs = embedder.embed([c.text(dataset.by_id[c.doc_id].text) for c in chunks])
    texts = [q.text for q in dataset.questions]
    if queries == "real":
        vectors = embedder.embed(texts, "query")
    elif queries == "constant":
        vectors = np.repeat(docs[:1], len(texts), axis=0)
    else:
        rng = np.random.default_rng(1)
        v = rng.standard_normal((len(texts), docs.shape[1])).astype(np.float32)
        vectors = v / np.linalg.norm(v, axis=1, keepdims=True)
    return query_signal(question_table(dataset), table, vectors, docs)


@pytest.mark.parametrize("n", [6, MIN_QUESTIONS - 1])
def test_random_queries_below_the_minimum_are_inconclusive_not_flagged(n: int) -> None:
    check = check_of(first_questions(n), "random")
    assert check is not None and check["questions"] == n
    assert check["p_value"] >= 0.01
    assert check["inconclusive"] and not check["flagged"]


def test_random_queries_from_the_minimum_on_are_flagged() -> None:
    check = check_of(first_questions(MIN_QUESTIONS), "random")
    assert check is not None and check["questions"] == MIN_QUESTIONS
    assert check["flagged"] and not check["inconclusive"]


def test_constant_queries_are_flagged_with_few_questions_too() -> None:
    check = check_of(first_questions(6), "constant")
    assert check is not None and check["flagged"] and not check["inconclusive"]


def test_a_clear_signal_counts_below_the_minimum() -> None:
    check = check_of(first_questions(22), "real")
    assert check is not None and check["p_value"] < 0.01
    assert not check["flagged"] and not check["inconclusive"]


def test_run_on_a_small_set_prints_a_neutral_note(tmp_path: Path) -> None:
    # Six questions: the smallest two-sided p of six sign flips is 2/64, so the check cannot
    # reach 0.01 whatever the embedder does.
    write_jsonl(first_questions(6), tmp_path / "small")
    result = invoke(
        "run", "--dataset", str(tmp_path / "small"), "-c", "fixed_tokens(size=200)",
        "--embedder", "fake()", "--k", "5", "--out", str(tmp_path / "out"), "--no-cache",
        "--no-report",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output and "is the query embedder real" not in result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: small:")]
    assert len(notes) == 1
    assert notes[0].startswith(
        "note: small: fixed_tokens(size=200) x fake(dimension=64): the query check cannot tell with 6 "
        "questions (p="
    )
    assert notes[0].endswith(
        f"); it needs {MIN_QUESTIONS} to tell a working query embedder from a broken one."
    )


def test_the_note_and_the_warning_lines() -> None:
    cell = {"dataset": "d", "chunker": "fixed_tokens(size=200)", "embedder": "fake()"}
    check = {"questions": 9, "p_value": 0.073, "min_questions": MIN_QUESTIONS}
    note = {**check, "flagged": False, "inconclusive": True}
    warning = {**check, "flagged": True, "inconclusive": False}
    assert query_check_lines([{**cell, "query_check": note}]) == [
        "note: d: fixed_tokens(size=200) x fake(dimension=64): the query check cannot tell with 9 "
        f"questions (p=0.073); it needs {MIN_QUESTIONS} to tell a working query embedder from a "
        "broken one."
    ]
    assert query_check_lines([{**cell, "query_check": warning}]) == [
        "[yellow]warning:[/] d: fixed_tokens(size=200) x fake(dimension=64): questions are no closer to "
        "their answers than shuffled questions (p=0.073); check the query embedder."
    ]
