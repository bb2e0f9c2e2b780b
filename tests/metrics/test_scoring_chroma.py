"""The scoring options on the real Chroma general benchmark (skipped without the data)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.metrics import (
    ChunkTable,
    QuestionTable,
    Scoring,
    TokenUnits,
    count_duplicated_excerpts,
    find_excerpt_copies,
    score_chunking_with,
    score_retrieval_with,
)


@pytest.fixture(scope="module")
def dataset(chroma_general_dir: Path) -> Dataset:
    return load_dataset(chroma_general_dir)


def _questions(dataset: Dataset) -> QuestionTable:
    index = {d.id: i for i, d in enumerate(dataset.documents)}
    return QuestionTable.from_lists(
        [index[q.doc_id] for q in dataset.questions],
        [[(s.start, s.end) for s in q.excerpts] for q in dataset.questions],
    )


def _occurrences(excerpt: str, text: str) -> int:
    """Occurrences of ``excerpt`` in ``text``, overlapping ones included: ``str.count`` when no
    two can overlap (the excerpt has no border, a proper prefix that is also a suffix), else a
    look-ahead regex."""
    if not any(excerpt[:i] == excerpt[-i:] for i in range(1, len(excerpt))):
        return text.count(excerpt)
    return len(re.findall(f"(?={re.escape(excerpt)})", text))


def test_duplicated_excerpts_per_corpus_agree_with_str_count(dataset: Dataset) -> None:
    texts = [d.text for d in dataset.documents]
    questions = _questions(dataset)
    copies = find_excerpt_copies(texts, questions)
    per_question = count_duplicated_excerpts(copies)
    ours: Counter[str] = Counter()
    naive: Counter[str] = Counter()
    overlapping: Counter[str] = Counter()
    for q, n in zip(dataset.questions, per_question.tolist(), strict=True):
        text = dataset.by_id[q.doc_id].text
        ours[q.doc_id] += n
        for s in q.excerpts:
            excerpt = text[s.start : s.end]
            naive[q.doc_id] += text.count(excerpt) > 1
            overlapping[q.doc_id] += _occurrences(excerpt, text) - 1
    assert ours == naive
    assert sum(ours.values()) > 0  # the benchmark does repeat some excerpts
    # Every copy found, overlapping ones included, is one of the regex's occurrences.
    doc_of_question = [q.doc_id for q in dataset.questions]
    found = Counter(np.repeat(doc_of_question, copies.mask.sum(axis=1)).tolist())
    assert found == +overlapping
    for q in range(len(questions)):
        text = texts[int(questions.doc[q])]
        for (s, e), j in zip(
            copies.spans[q][copies.mask[q]], copies.owner[q][copies.mask[q]], strict=True
        ):
            es, ee = questions.excerpts[q, j]
            assert text[s:e] == text[es:ee] and s != es


def test_every_scoring_on_golden_rankings(dataset: Dataset, golden_dir: Path) -> None:
    """Text matching never lowers recall, the union never lowers precision, every value stays
    in [0, 1], on a reference chunking and ranking of the whole benchmark."""
    data = json.loads((golden_dir / "fixed_400_0.json").read_text())
    order = {d.id: i for i, d in enumerate(dataset.documents)}
    chunks = ChunkTable.from_rows([(order[c], s, e) for c, s, e in data["chunks"]])
    ranking = np.array([q["ranking"] for q in data["questions"]], dtype=np.int64)
    texts = [d.text for d in dataset.documents]
    questions = _questions(dataset)
    copies = find_excerpt_copies(texts, questions)
    units = TokenUnits.from_texts(texts)
    results = {}
    for excerpts in ("position", "text"):
        for unit in ("chars", "tokens"):
            for denominator in ("sum", "union"):
                scoring = Scoring(excerpts, unit, denominator)  # type: ignore[arg-type]
                omega = score_chunking_with(scoring, questions, chunks, copies=copies, units=units)
                s = score_retrieval_with(
                    scoring, questions, chunks, ranking, 5, omega.n_relevant,
                    copies=copies, units=units,
                )  # fmt: skip
                for v in (s.recall, s.precision, s.iou, s.f1, s.ndcg, omega.precision_omega):
                    assert np.all((v >= 0) & (v <= 1 + 1e-12)), scoring
                results[excerpts, unit, denominator] = s
    for unit in ("chars", "tokens"):
        pos, txt = results["position", unit, "sum"], results["text", unit, "sum"]
        assert np.all(txt.recall >= pos.recall) and txt.recall.mean() > pos.recall.mean()
        for excerpts in ("position", "text"):
            total, union = results[excerpts, unit, "sum"], results[excerpts, unit, "union"]
            assert np.all(union.precision >= total.precision)
    # The reference's means (the golden file's) come back from the default scoring.
    default = results["position", "chars", "sum"]
    assert default.recall.mean() == pytest.approx(data["means_k5"]["recall"], abs=1e-9)
