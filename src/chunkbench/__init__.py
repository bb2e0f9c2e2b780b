"""chunkbench: which chunking strategy and embedding model retrieve the text your questions need.

The public API is re-exported here and imported lazily, so ``import chunkbench`` stays light
(no torch, no pyarrow until used).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "chunkbench.experiments.runner",
    "Results": "chunkbench.experiments.runner",
    "ExperimentConfig": "chunkbench.experiments.config",
    "load_config": "chunkbench.experiments.config",
    "load_dataset": "chunkbench.datasets",
    "Dataset": "chunkbench.datasets.model",
    "Document": "chunkbench.datasets.model",
    "Question": "chunkbench.datasets.model",
    "Span": "chunkbench.spans",
    "Spec": "chunkbench.specs",
    "Chunk": "chunkbench.chunkers",
    "CHUNKERS": "chunkbench.chunkers",
    "EMBEDDERS": "chunkbench.embedders",
    "ChunkbenchError": "chunkbench.errors",
}

__all__ = [
    "CHUNKERS",
    "EMBEDDERS",
    "Chunk",
    "ChunkbenchError",
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
]

if TYPE_CHECKING:
    from chunkbench.chunkers import CHUNKERS, Chunk
    from chunkbench.datasets import load_dataset
    from chunkbench.datasets.model import Dataset, Document, Question
    from chunkbench.embedders import EMBEDDERS
    from chunkbench.errors import ChunkbenchError
    from chunkbench.experiments.config import ExperimentConfig, load_config
    from chunkbench.experiments.runner import Results, evaluate
    from chunkbench.spans import Span
    from chunkbench.specs import Spec


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkbench' has no attribute {name!r}")
    return getattr(import_module(module), name)
