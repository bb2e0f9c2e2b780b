"""chunkmark: which chunking strategy and embedding model retrieve the text your questions need.

The public API is re-exported here and imported lazily, so ``import chunkmark`` stays light
(no torch, no pyarrow until used).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from chunkmark.version import __version__

_EXPORTS = {
    "Results": "chunkmark.report.notebook",
    "open_results": "chunkmark.report.notebook",
    "ExperimentConfig": "chunkmark.experiments.config",
    "load_config": "chunkmark.experiments.config",
    "load_dataset": "chunkmark.datasets",
    "Dataset": "chunkmark.datasets.model",
    "Document": "chunkmark.datasets.model",
    "Question": "chunkmark.datasets.model",
    "Span": "chunkmark.spans",
    "Spec": "chunkmark.specs",
    "Chunk": "chunkmark.chunkers",
    "CHUNKERS": "chunkmark.chunkers",
    "EMBEDDERS": "chunkmark.embedders",
    "ChunkmarkError": "chunkmark.errors",
}

__all__ = [
    "CHUNKERS",
    "EMBEDDERS",
    "Chunk",
    "ChunkmarkError",
    "Dataset",
    "Document",
    "ExperimentConfig",
    "Question",
    "Results",
    "Span",
    "Spec",
    "__version__",
    "evaluate",
    "load_config",
    "load_dataset",
    "open_results",
]

if TYPE_CHECKING:
    from chunkmark.chunkers import CHUNKERS, Chunk
    from chunkmark.datasets import load_dataset
    from chunkmark.datasets.model import Dataset, Document, Question
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.errors import ChunkmarkError
    from chunkmark.experiments.config import ExperimentConfig, load_config
    from chunkmark.experiments.runner import EmbedProgress, Progress
    from chunkmark.report.notebook import Results, open_results
    from chunkmark.spans import Span
    from chunkmark.specs import Spec


def evaluate(
    config: ExperimentConfig | None = None,
    progress: Progress | None = None,
    embed_progress: EmbedProgress | None = None,
    **options: Any,
) -> Results:
    """Run a grid and write ``results.parquet``, ``summary.csv``, ``manifest.json`` and, unless
    ``report=False``, ``report.html``: :func:`chunkmark.experiments.runner.evaluate` with the
    answers analysis when the config has ``answers:``, and the report's writer (a report that cannot be built is ``Results.report_error``, the other
    files complete). The :class:`~chunkmark.report.notebook.Results` returned has DataFrames,
    the recommendation and the report's figures for a notebook (docs/notebook.md)."""
    from chunkmark.answers.analysis import answer_analyses
    from chunkmark.experiments.config import run_config
    from chunkmark.experiments.runner import evaluate as run_grid
    from chunkmark.report import write_run_report
    from chunkmark.report.notebook import Results

    config = run_config(config, options)
    analyses = answer_analyses(config)
    ran = run_grid(
        config, progress, embed_progress, analyses=analyses, report_writer=write_run_report
    )
    return Results.of(ran)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkmark' has no attribute {name!r}")
    return getattr(import_module(module), name)
