"""The metric catalog: every per-question metric, with how to compute, name and show it.

The scorer, the summary (means, standard deviations and which metrics get bootstrap
intervals), the results table on screen, ``chunkmark metrics`` and the report all read this
catalog; nothing else lists metric names. A metric is a function of :class:`ScoreInputs` (one
retrieval depth of one cell) returning one value per question::

    from chunkmark.metrics import METRICS, ScoreInputs

    @METRICS.register("recall_at_half", label="R/2", interval=True)
    def recall_at_half(s: ScoreInputs) -> FloatArray:
        \"\"\"Recall, halved (an example).\"\"\"
        return s.retrieval.recall / 2

Registration order is column order in ``results.parquet`` and ``summary.csv``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from chunkmark.metrics.span_metrics import ChunkTable, OmegaScores, QuestionTable, RetrievalScores
from chunkmark.spans import IntArray

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class ScoreInputs:
    """What a metric may read for one retrieval depth of one cell.

    ``ranking`` holds chunk indices into ``chunks``, best first, ``(questions, max depth)``;
    ``depth[q]`` of them count for question ``q``. ``retrieval`` and ``chunking`` are the span
    and rank scores already computed from them.
    """

    questions: QuestionTable
    chunks: ChunkTable
    ranking: IntArray
    depth: IntArray
    retrieval: RetrievalScores
    chunking: OmegaScores


MetricFn = Callable[[ScoreInputs], FloatArray]


@dataclass(frozen=True)
class Metric:
    """One metric: its column name, a short label for tables, whether higher is better, whether
    the summary gives it a 95% bootstrap interval, and how it is shown on screen."""

    name: str
    label: str
    direction: Direction
    interval: bool
    compute: MetricFn
    description: str
    on_screen: bool = False
    digits: int = 1  # decimals when shown as percent


class MetricCatalog:
    """Metrics by name, in registration order."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}

    def register(
        self,
        name: str,
        *,
        label: str | None = None,
        direction: Direction = "higher",
        interval: bool = False,
        on_screen: bool = False,
        digits: int = 1,
    ) -> Callable[[MetricFn], MetricFn]:
        """Add the decorated function as metric ``name``; its docstring's first paragraph is
        its description."""
        if not name.isidentifier():
            raise ValueError(f"metric name {name!r} must be a Python identifier")

        def decorate(fn: MetricFn) -> MetricFn:
            if name in self._metrics:
                raise ValueError(f"metric {name!r} is registered twice")
            doc = inspect.getdoc(fn) or ""
            summary = doc.split("\n\n")[0].replace("\n", " ")
            self._metrics[name] = Metric(
                name, label or name, direction, interval, fn, summary, on_screen, digits
            )
            return fn

        return decorate

    def unregister(self, name: str) -> None:
        """Remove a metric (for tests and plugins that register metrics temporarily)."""
        self._metrics.pop(name, None)

    def __iter__(self) -> Iterator[Metric]:
        return iter(list(self._metrics.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def names(self) -> list[str]:
        return list(self._metrics)

    def with_interval(self) -> list[str]:
        """Names of the metrics that get bootstrap intervals in the summary."""
        return [m.name for m in self._metrics.values() if m.interval]

    def score(self, inputs: ScoreInputs) -> dict[str, FloatArray]:
        """Every metric's per-question values for one depth, in catalog order."""
        n = len(inputs.questions)
        out: dict[str, FloatArray] = {}
        for metric in self:
            values = np.asarray(metric.compute(inputs), dtype=np.float64)
            if values.shape != (n,):
                raise ValueError(
                    f"metric {metric.name!r} returned shape {values.shape}, expected ({n},)"
                )
            out[metric.name] = values
        return out


METRICS = MetricCatalog()


@METRICS.register("recall", interval=True, on_screen=True)
def _recall(s: ScoreInputs) -> FloatArray:
    """Share of the excerpts' characters inside the retrieved chunks."""
    return s.retrieval.recall


@METRICS.register("precision", interval=True, on_screen=True, digits=2)
def _precision(s: ScoreInputs) -> FloatArray:
    """Excerpt characters retrieved over all retrieved characters (overlaps counted twice)."""
    return s.retrieval.precision


@METRICS.register("precision_omega", label="prec. Ω", interval=True, on_screen=True)
def _precision_omega(s: ScoreInputs) -> FloatArray:
    """Precision of every chunk touching an excerpt, no retrieval: the best this chunking allows."""
    return s.chunking.precision_omega


@METRICS.register("iou", label="IoU", interval=True, on_screen=True, digits=2)
def _iou(s: ScoreInputs) -> FloatArray:
    """Excerpt characters retrieved over retrieved characters plus excerpt characters missed."""
    return s.retrieval.iou


@METRICS.register("f1", label="F1", interval=True, on_screen=True, digits=2)
def _f1(s: ScoreInputs) -> FloatArray:
    """Harmonic mean of precision and recall."""
    return s.retrieval.f1


@METRICS.register("hit", label="hit@k")
def _hit(s: ScoreInputs) -> FloatArray:
    """1 if a retrieved chunk overlaps an excerpt, else 0."""
    return s.retrieval.hit


@METRICS.register("mrr", label="MRR", on_screen=True)
def _mrr(s: ScoreInputs) -> FloatArray:
    """Reciprocal rank of the first retrieved chunk that overlaps an excerpt."""
    return s.retrieval.mrr


@METRICS.register("ndcg", label="nDCG@k")
def _ndcg(s: ScoreInputs) -> FloatArray:
    """nDCG@k with "overlaps an excerpt" as binary relevance."""
    return s.retrieval.ndcg
