"""What a grid runner hands around: a cell to run, and what became of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from chunkmark.datasets.model import Dataset
from chunkmark.specs import Spec


@dataclass
class CellOutcome:
    """One cell of a run: its rows and facts, or, when it failed, its error in ``facts``."""

    id: str
    dataset: str
    chunker: str
    embedder: str
    table: pa.Table | None
    facts: dict[str, Any]
    resumed: bool

    @property
    def failed(self) -> bool:
        return self.table is None


def chunker_name(spec: Spec) -> str:
    """The name of a chunker's results (the chunker column, a cell's id): its canonical spec
    without what cannot change its chunks, such as the transport settings (``timeout``,
    ``max_retries``, ``concurrency``) of an LLM it calls (:meth:`Registry.identity`)."""
    from chunkmark.chunkers import CHUNKERS

    return str(CHUNKERS.identity(spec))


@dataclass(frozen=True, eq=False)
class CellTask:
    """A cell to run: one dataset, chunker spec and embedder spec (canonical)."""

    dataset: Dataset
    chunker: Spec
    embedder: Spec

    @property
    def names(self) -> tuple[str, str, str]:
        """Dataset, chunker and embedder as results name them (:func:`chunker_name`)."""
        return self.dataset.name, chunker_name(self.chunker), str(self.embedder)
