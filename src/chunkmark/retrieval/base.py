"""The retriever contract and registry.

A retriever indexes a cell's chunks once and answers every question with one ranking of chunk
indices, best first, as deep as the deepest setting of the cell needs: ``top_k`` (every k, and
``min``) reads prefixes of that one ranking, never a second search or embedding pass. Retrievers
are built from specs like chunkers and embedders (``exact()``); the ones that need the texts
(keyword search, hybrid, rerankers) get them with the vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chunkmark.specs import Registry

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


@runtime_checkable
class Retriever(Protocol):
    """What every retriever provides."""

    def index(self, vectors: FloatArray, texts: Sequence[str]) -> None:
        """Index the chunks: their L2-normalised vectors and the texts that were embedded."""
        ...

    def search(
        self, vectors: FloatArray, texts: Sequence[str], k: int
    ) -> tuple[IntArray, FloatArray]:
        """Per question (vector and text): the top ``k`` chunk indices (capped at the number of
        chunks) and their scores, best first, ``(questions, k)`` each."""
        ...


RETRIEVERS: Registry[Retriever] = Registry("retriever")
