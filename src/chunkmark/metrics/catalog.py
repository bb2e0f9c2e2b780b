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

Registration order is column order in ``results.parquet`` and ``summary.csv``. Plugin packages
register metrics the same way (:mod:`chunkmark.plugins`); they are imported the first time the
catalog is listed or asked for a name it does not hold, after the built-ins.

The relation metrics (:data:`chunkmark.relations.metrics.RELATION_METRICS`) are a second
catalog of this type: their entries are :class:`Metric` too, with a ``unit`` (what their
interval is over), a ``family`` (which scores they read) and whether they need an
``extractor``; they read relation scores, not :class:`ScoreInputs`, and take no plugins.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from chunkmark import plugins as _plugins
from chunkmark.metrics.span_metrics import (
    ChunkTable,
    OmegaScores,
    QuestionTable,
    RetrievalScores,
    share,
)
from chunkmark.plugins import Plugin
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


Compute = TypeVar("Compute", bound=Callable[..., Any])


@dataclass(frozen=True)
class Metric:
    """One metric: its column name, a short label for tables, whether higher is better, whether
    the summary gives it a 95% bootstrap interval, how it is computed (from its catalog's inputs:
    :class:`ScoreInputs` for a per-question metric), its definition (the first paragraph of its
    function's docstring) and how it is shown on screen.

    Relation metrics also say the ``unit`` their per-unit values (and so their interval) are
    over (``""``: a ratio with no unit and no interval), their ``family`` (which scores they
    read: ``chunking`` or ``retrieval``) and whether they need an ``extractor``; a per-question
    metric leaves these at their defaults."""

    name: str
    label: str
    direction: Direction
    interval: bool
    compute: Callable[[Any], Any]
    description: str
    on_screen: bool = False
    digits: int = 1  # decimals when shown as percent
    plugin: Plugin | None = None  # the plugin that registered it; None for chunkmark's own
    unit: str = ""
    family: str | None = None
    extractor: bool = False

    @property
    def origin(self) -> str | None:
        """The package of the plugin that registered it (None: chunkmark or code it imports)."""
        return None if self.plugin is None else self.plugin.origin

    def columns(self) -> list[str]:
        """Its columns in the table its catalog fills: for a relation metric (one with a
        ``family``), its relations.csv columns: ``<name>_mean`` and ``<name>_ci_low``/``_ci_high``
        with an interval, else ``<name>``; for a per-question metric, its summary.csv columns:
        ``<name>_mean``, ``<name>_std`` and, with an interval, ``_ci_low``/``_ci_high``."""
        ci = [f"{self.name}_ci_low", f"{self.name}_ci_high"] if self.interval else []
        if self.family is not None:
            return [f"{self.name}_mean", *ci] if self.interval else [self.name]
        return [f"{self.name}_mean", f"{self.name}_std", *ci]


class MetricCatalog:
    """Metrics by name, in registration order.

    ``plugins=False`` makes a catalog of chunkmark's own metrics only (the relation metrics):
    listing it imports no plugin package.
    """

    def __init__(self, *, plugins: bool = True) -> None:
        self._metrics: dict[str, Metric] = {}
        self._plugins = plugins
        if plugins:
            _plugins.track(self._drop)

    def _drop(self, plugin: Plugin) -> None:
        self._metrics = {k: m for k, m in self._metrics.items() if m.plugin != plugin}

    def register(
        self,
        name: str,
        *,
        label: str | None = None,
        direction: Direction = "higher",
        interval: bool = False,
        on_screen: bool = False,
        digits: int = 1,
        unit: str = "",
        family: str | None = None,
        extractor: bool = False,
    ) -> Callable[[Compute], Compute]:
        """Add the decorated function as metric ``name``; its docstring's first paragraph is
        its description. ``unit``, ``family`` and ``extractor`` are for relation metrics (see
        :class:`Metric`); a relation metric with a ``unit`` gets an interval."""
        if not name.isidentifier():
            raise ValueError(f"metric name {name!r} must be a Python identifier")

        def decorate(fn: Compute) -> Compute:
            plugin = _plugins.loading() if self._plugins else None
            held = self._metrics.get(name)
            if held is not None and not _plugins.may_register("metric", name, held.plugin, plugin):
                return fn
            doc = inspect.getdoc(fn) or ""
            summary = " ".join(doc.split("\n\n")[0].split())
            self._metrics[name] = Metric(
                name,
                label or name,
                direction,
                interval or (family is not None and bool(unit)),
                fn,
                summary,
                on_screen,
                digits,
                plugin,
                unit,
                family,
                extractor,
            )
            return fn

        return decorate

    def unregister(self, name: str) -> None:
        """Remove a metric (for tests and plugins that register metrics temporarily)."""
        self._metrics.pop(name, None)

    def __iter__(self) -> Iterator[Metric]:
        """Every metric, plugins' included, in registration order."""
        return iter(self._listed())

    def __contains__(self, name: object) -> bool:
        if name not in self._metrics:
            self._discover()
        found = name in self._metrics
        if found:
            self._announce()
        return found

    def __getitem__(self, name: str) -> Metric:
        if name not in self._metrics:
            self._discover()
        found = self._metrics[name]
        self._announce()
        return found

    def __len__(self) -> int:
        return len(self._listed())

    def names(self) -> list[str]:
        return [m.name for m in self._listed()]

    def values(self) -> list[Metric]:
        """Every metric, in registration order (as :meth:`__iter__`)."""
        return self._listed()

    def with_interval(self) -> list[str]:
        """Names of the metrics that get bootstrap intervals in the summary."""
        return [m.name for m in self._listed() if m.interval]

    def _listed(self) -> list[Metric]:
        self._discover()
        self._announce()
        return list(self._metrics.values())

    def _discover(self) -> None:
        if self._plugins:
            _plugins.discover()

    def _announce(self) -> None:
        if self._plugins:
            _plugins.announce()

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


# --- metrics of other chunking and retrieval evaluations, on the same spans -----------------------


@METRICS.register("containment_recall", label="contain@k", interval=True)
def _containment_recall(s: ScoreInputs) -> FloatArray:
    """Share of the excerpts' characters in excerpts found whole inside one retrieved chunk.

    Source: chonkie's MTCB and LumberChunker's GutenQA count a relevant passage as retrieved
    when it appears, whole, in a retrieved chunk. On spans: excerpt ``e`` is found when one
    counted chunk of the question's document has ``start <= e.start`` and ``e.end <= end`` (a
    last chunk cut to a budget counts as cut; with ``excerpts="text"``, a chunk wholly holding
    a copy of the excerpt's text also finds it). The value is |∪ found excerpts| / Σ|e|: with
    one excerpt per question, as in both benchmarks, it is 1 or 0; weighting by characters over
    recall's denominator keeps it at most recall for every question.
    """
    return s.retrieval.containment


@METRICS.register("failure", label="fail@k", direction="lower")
def _failure(s: ScoreInputs) -> FloatArray:
    """1 - recall: the share of the excerpts' characters not retrieved (lower is better).

    Source: Anthropic's "Introducing Contextual Retrieval" reports the retrieval failure rate,
    1 - recall@20, where recall@20 is the share of relevant chunks in the top 20. On spans it is
    per question 1 - span recall, the excerpt characters the counted chunks miss, so its mean
    is 1 - mean recall.
    """
    return 1.0 - s.retrieval.recall


@METRICS.register("dcg", label="DCG@k")
def _dcg(s: ScoreInputs) -> FloatArray:
    """DCG@k: Σ over counted ranks i = 1..k of rel_i / log2(i + 1), rel_i = 1 when the chunk
    overlaps an excerpt, else 0.

    Source: LumberChunker's GutenQA reports DCG@k. The relevance is nDCG's (a counted chunk of
    the question's document overlapping an excerpt by a character or more; with
    ``excerpts="text"`` also one wholly holding a copy of an excerpt), so DCG@k divided by the
    ideal DCG of min(k, relevant chunks) relevant ranks is nDCG@k.
    """
    return s.retrieval.dcg


@METRICS.register("doc_precision", label="doc P@k")
def _doc_precision(s: ScoreInputs) -> FloatArray:
    """Share of the retrieved chunks that belong to the question's document.

    Source: Vectara's "Is Semantic Chunking Worth the Computational Cost?" scores retrieval at
    document level: a retrieved chunk is correct when it comes from the question's document.
    Spans do not matter, only each counted chunk's document; 0 when no chunk is counted.
    """
    same = _same_document(s)
    return share(same.sum(axis=1), s.depth)


@METRICS.register("doc_recall", label="doc R@k", interval=True)
def _doc_recall(s: ScoreInputs) -> FloatArray:
    """1 if a retrieved chunk belongs to the question's document, else 0.

    Source: the document-level recall of Vectara's "Is Semantic Chunking Worth the
    Computational Cost?" (one relevant document per question). A chunk of the document counts
    whether or not it overlaps an excerpt, so it is at least hit@k.
    """
    return np.asarray(_same_document(s).any(axis=1), dtype=np.float64)


@METRICS.register("doc_f1", label="doc F1@k")
def _doc_f1(s: ScoreInputs) -> FloatArray:
    """Harmonic mean of document-level precision and recall.

    Source: Vectara's "Is Semantic Chunking Worth the Computational Cost?", document level.
    """
    precision, recall = _doc_precision(s), _doc_recall(s)
    return share(2 * precision * recall, precision + recall)


@METRICS.register("oracle_recall", label="oracle R", interval=True)
def _oracle_recall(s: ScoreInputs) -> FloatArray:
    """Upper bound on the recall any retriever could reach with this chunking and as many
    characters as the retrieved chunks hold.

    Source: the oracle retriever of chunking studies (one that picks the best chunks for each
    question), here held to this setting's context budget so that it bounds what a better
    ranking could still gain. The budget B is Σ|r| over the counted chunks taken whole, any
    document, in the scoring's unit (characters by default, tokens with ``unit="tokens"``); a
    last chunk cut to a token budget counts whole, so the setting's own chunks stay a feasible
    choice.

    The bound is the fractional-knapsack relaxation of "choose chunks of the question's document
    with Σ|c| <= B covering most of ∪E": each relevant chunk is an item of weight |c| and value
    its gain (the part of ∪E it covers on its own), items are taken by value per character, the
    last one in part; the total, capped at |∪E|, is divided by recall's denominator Σ|e|. A set
    of chunks covers at most the sum of their gains, and the relaxation's optimum is at least
    the gain of every selection of whole chunks within B, the retrieved chunks included; so
    recall <= oracle_recall <= 1 for every question.
    """
    lengths = s.chunks.length[s.ranking]
    counted = np.arange(s.ranking.shape[1])[None, :] < s.depth[:, None]
    budget = (lengths * counted).sum(axis=1)
    cover = np.minimum(s.chunking.gains.best_cover(budget), s.questions.merged_total)
    return share(cover, s.questions.excerpt_total)


def _same_document(s: ScoreInputs) -> npt.NDArray[np.bool_]:
    """``(n_q, K)``: the counted chunk at that rank belongs to the question's document."""
    counted = np.arange(s.ranking.shape[1])[None, :] < s.depth[:, None]
    return np.asarray(counted & (s.chunks.doc[s.ranking] == s.questions.doc[:, None]))
