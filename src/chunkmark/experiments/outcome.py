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


@dataclass(frozen=True, eq=False)
class CellTask:
    """A cell to run: one dataset, chunker spec and embedder spec (canonical)."""

    dataset: Dataset
    chunker: Spec
    embedder: Spec

    @property
    def names(self) -> tuple[str, str, str]:
        return self.dataset.name, str(self.chunker), str(self.embedder)
