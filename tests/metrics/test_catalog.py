"""The metric catalog: order, intervals, labels, and what a bad metric gets."""

from __future__ import annotations

import numpy as np
import pytest

from chunkmark.metrics import (
    METRICS,
    ChunkTable,
    MetricCatalog,
    QuestionTable,
    ScoreInputs,
    score_chunking,
    score_retrieval,
)


def _inputs() -> ScoreInputs:
    questions = QuestionTable.from_lists([0, 0], [[(10, 20)], [(50, 60), (70, 75)]])
    chunks = ChunkTable.from_rows([(0, 0, 30), (0, 30, 65), (0, 65, 100)])
    ranking = np.array([[0, 1], [2, 1]], dtype=np.int64)
    omega = score_chunking(questions, chunks)
    scores = score_retrieval(questions, chunks, ranking, 2, omega.n_relevant)
    return ScoreInputs(questions, chunks, ranking, scores.k, scores, omega)


def test_builtin_metrics_in_result_order_with_intervals_where_the_summary_has_them() -> None:
    assert METRICS.names()[:8] == [
        "recall", "precision", "precision_omega", "iou", "f1", "hit", "mrr", "ndcg",
    ]  # fmt: skip
    assert METRICS.with_interval()[:5] == ["recall", "precision", "precision_omega", "iou", "f1"]
    assert METRICS["precision_omega"].label == "prec. Ω"
    assert all(m.description for m in METRICS)


def test_scores_are_the_span_metrics() -> None:
    inputs = _inputs()
    values = METRICS.score(inputs)
    np.testing.assert_array_equal(values["recall"], inputs.retrieval.recall)
    np.testing.assert_array_equal(values["precision_omega"], inputs.chunking.precision_omega)
    # Question 0: excerpt [10, 20) lies in chunk 0, ranked first.
    assert values["recall"][0] == 1.0 and values["mrr"][0] == 1.0
    # Question 1: excerpts [50, 60) and [70, 75); chunk 2 [65, 100) holds only the second.
    assert values["recall"][1] == pytest.approx(1.0)  # chunk 1 [30, 65) holds the first


def test_a_metric_registered_twice_or_returning_the_wrong_shape_is_refused() -> None:
    catalog = MetricCatalog()

    @catalog.register("ones")
    def ones(s: ScoreInputs) -> np.ndarray:
        return np.ones(3)

    with pytest.raises(ValueError, match="registered twice"):
        catalog.register("ones")(ones)
    with pytest.raises(ValueError, match=r"returned shape \(3,\), expected \(2,\)"):
        catalog.score(_inputs())
    with pytest.raises(ValueError, match="identifier"):
        catalog.register("not a name")
