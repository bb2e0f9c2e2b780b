"""Span metrics (recall, precision, precision Ω, IoU, F1), rank metrics, the named scoring
options, the metric catalog, aggregation."""

from chunkmark.metrics.aggregate import bootstrap_ci, mean_std, mean_std_rows
from chunkmark.metrics.catalog import METRICS, Metric, MetricCatalog, ScoreInputs
from chunkmark.metrics.scoring import (
    Scoring,
    TokenUnits,
    count_duplicated_excerpts,
    find_excerpt_copies,
    score_chunking_with,
    score_retrieval_with,
)
from chunkmark.metrics.span_metrics import (
    ChunkTable,
    ExcerptCopies,
    OmegaScores,
    QuestionTable,
    RelevantGains,
    RetrievalScores,
    min_k_depth,
    score_chunking,
    score_retrieval,
)

__all__ = [
    "METRICS",
    "ChunkTable",
    "ExcerptCopies",
    "Metric",
    "MetricCatalog",
    "OmegaScores",
    "QuestionTable",
    "RelevantGains",
    "RetrievalScores",
    "ScoreInputs",
    "Scoring",
    "TokenUnits",
    "bootstrap_ci",
    "count_duplicated_excerpts",
    "find_excerpt_copies",
    "mean_std",
    "mean_std_rows",
    "min_k_depth",
    "score_chunking",
    "score_chunking_with",
    "score_retrieval",
    "score_retrieval_with",
]
