"""The metric functions reproduce the reference's own per-question numbers (the golden oracle)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from chunkmark.metrics import (
    ChunkTable,
    QuestionTable,
    min_k_depth,
    score_chunking,
    score_retrieval,
)

GOLDEN_FILES = ["fixed_400_0.json", "recursive_200_0.json"]


def _load(chroma_general_dir: Path, golden: Path) -> tuple[QuestionTable, ChunkTable, dict]:
    with (chroma_general_dir / "questions_df.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    data = json.loads(golden.read_text())
    docs: dict[str, int] = {}
    for r in rows:
        docs.setdefault(r["corpus_id"], len(docs))
    chunks = ChunkTable.from_rows([(docs[c], s, e) for c, s, e in data["chunks"]])
    questions = QuestionTable.from_lists(
        [docs[r["corpus_id"]] for r in rows],
        [[(x["start_index"], x["end_index"]) for x in json.loads(r["references"])] for r in rows],
    )
    return questions, chunks, data


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_metrics_equal_reference_per_question(
    chroma_general_dir: Path, golden_dir: Path, name: str
) -> None:
    questions, chunks, data = _load(chroma_general_dir, golden_dir / name)
    gq = data["questions"]
    assert len(gq) == len(questions) == 472
    ranking = np.array([q["ranking"] for q in gq], dtype=np.int64)

    omega = score_chunking(questions, chunks)
    assert omega.n_touching.tolist() == [q["min_k"] for q in gq]
    np.testing.assert_allclose(
        omega.precision_omega, [q["precision_omega"] for q in gq], rtol=0, atol=1e-9
    )

    at5 = score_retrieval(questions, chunks, ranking, 5)
    at_min = score_retrieval(questions, chunks, ranking, min_k_depth(omega.n_touching))
    for key, scores in (("k5", at5), ("kmin", at_min)):
        for metric in ("recall", "precision", "iou"):
            expected = [q[key][metric] for q in gq]
            np.testing.assert_allclose(
                getattr(scores, metric), expected, rtol=0, atol=1e-9, err_msg=f"{key} {metric}"
            )

    for metric in ("recall", "precision", "iou"):
        assert getattr(at5, metric).mean() == pytest.approx(data["means_k5"][metric], abs=1e-9)
        assert getattr(at_min, metric).mean() == pytest.approx(data["means_kmin"][metric], abs=1e-9)
    assert omega.precision_omega.mean() == pytest.approx(
        data["means_k5"]["precision_omega"], abs=1e-9
    )
