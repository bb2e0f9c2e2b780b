"""Span metrics (recall, precision, precision Ω, IoU, F1), rank metrics, the metric catalog,
aggregation."""

from chunkmark.metrics.aggregate import bootstrap_ci, mean_std
from chunkmark.metrics.catalog import METRICS, Metric, MetricCatalog, ScoreInputs
from chunkmark.metrics.span_metrics import (
    ChunkTable,
    OmegaScores,
    QuestionTable,
    RetrievalScores,
    min_k_depth,
    score_chunking,
    score_retrieval,
)

__all__ = [
    "METRICS",
    "ChunkTable",
    "Metric",
    "MetricCatalog",
    "OmegaScores",
    "QuestionTable",
    "RetrievalScores",
    "ScoreInputs",
    "bootstrap_ci",
    "mean_std",
    "min_k_depth",
    "score_chunking",
    "score_retrieval",
]
