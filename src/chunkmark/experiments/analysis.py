"""Analyses a run carries: work over every finished cell whose results go into the run's own
files.

An :class:`Analysis` is handed to :class:`chunkmark.experiments.runner.Session` (or
:func:`~chunkmark.experiments.runner.evaluate`). The runner calls :meth:`Analysis.cell` once
per finished cell of the run, computed or resumed, with the cell's rows, facts, chunks and
rankings in memory (a resumed cell's are read by the runner from ``OUT/cells/``, the same
tables a computed cell wrote there, so an analysis sees the same data either way and never
reads the results folder itself). At the end the runner calls :meth:`Analysis.finish` and
writes what it returns: its files into ``OUT/``, and its section into ``manifest.json`` under
the analysis's name, in the one write of the manifest.

``chunkmark relations run`` is the runner with the relations analysis
(:class:`chunkmark.relations.runner.RelationsAnalysis`); a config with ``answers:`` runs with
the answers analysis (:func:`chunkmark.answers.analysis.answer_analyses`), handed in by the
caller like any other: the runner imports no analysis. An analysis that asks an LLM at the end
says what it would ask (:class:`PlansRequests`), so :func:`chunkmark.experiments.plan.plan_grid`
prices it with the grid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pyarrow as pa

from chunkmark.datasets.model import Dataset
from chunkmark.errors import ConfigError
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.outcome import CellOutcome

if TYPE_CHECKING:
    from chunkmark.costs.llm_prices import LLMPrices
    from chunkmark.experiments.cell import CellResult
    from chunkmark.experiments.plan_model import AnswerPlan
    from chunkmark.llm.cache import LLMCache


@dataclass(frozen=True, eq=False)
class FinishedCell:
    """One finished cell as an analysis sees it.

    ``chunks`` has the columns of ``OUT/cells/<id>.chunks.parquet`` (``doc_id``, ``start``,
    ``end``, ``tokens``, ``embed_text``) and ``rankings`` those of ``<id>.ranking.parquet``
    (``ranker``, ``question_id``, ``chunks``, ``scores``); ``outcome`` holds the cell's rows
    (``table``) and facts. ``result`` is the full in-memory result of a cell computed in this
    run (None for a resumed cell)."""

    outcome: CellOutcome
    chunks: pa.Table
    rankings: pa.Table
    result: CellResult | None = None

    @property
    def id(self) -> str:
        return self.outcome.id

    @property
    def table(self) -> pa.Table:
        assert self.outcome.table is not None  # a finished cell has rows
        return self.outcome.table

    @property
    def facts(self) -> dict[str, Any]:
        return self.outcome.facts


@dataclass(frozen=True, eq=False)
class FinishedRun:
    """What an analysis's :meth:`Analysis.finish` reads: the run's config, results folder,
    datasets and outcomes (failed cells included, in the run's order), and the cache folder
    it uses (None with ``no_cache``)."""

    config: ExperimentConfig
    out: Path
    datasets: Sequence[Dataset]
    outcomes: Sequence[CellOutcome]
    progress: Callable[[str], None]
    cache_dir: Path | None = None


@dataclass
class AnalysisOutput:
    """What an analysis adds to a run: ``section`` goes into ``manifest.json`` under the
    analysis's name; ``files`` maps a file name (relative to ``OUT``) to its bytes; ``report``
    is an optional payload for a report section (the page itself reads the run's folder)."""

    section: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    report: dict[str, Any] | None = None


class Analysis(Protocol):
    """Work over a run's finished cells (see the module docs)."""

    @property
    def name(self) -> str:
        """The manifest section's key (``relations``)."""
        ...

    def cell(self, cell: FinishedCell) -> None:
        """Hear one finished cell (computed or resumed), in the order cells finish."""
        ...

    def finish(self, run: FinishedRun) -> AnalysisOutput:
        """The files and manifest section, once every cell has finished."""
        ...


@runtime_checkable
class PlansRequests(Protocol):
    """An analysis that asks an LLM once the cells are done, and says beforehand what it would
    ask (``chunkmark plan``, ``--max-cost``)."""

    def plan(
        self, dataset: Dataset, cells: int, prices: LLMPrices, answers: LLMCache | None
    ) -> tuple[list[AnswerPlan], list[str]]:
        """The requests over ``dataset``'s ``cells`` cells (cached ``answers`` replayed), and
        what is unknown."""
        ...


def check_handed(config: ExperimentConfig, analyses: Sequence[Analysis]) -> None:
    """Refuse a config with ``answers:`` when no answers analysis was handed in: the runner
    builds none itself, and running without it would drop the answers silently."""
    if config.answers is not None and not any(a.name == "answers" for a in analyses):
        raise ConfigError(
            "The experiment asks for answers (answers:), but no answers analysis was handed "
            "to the runner.",
            "Run it with chunkmark.evaluate or `chunkmark run`, or pass "
            "analyses=answer_analyses(config) (chunkmark.answers.analysis).",
        )
