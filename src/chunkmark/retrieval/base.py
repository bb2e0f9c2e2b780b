"""The retriever (ranker) contract and registry.

A retriever indexes a cell's chunks once and answers every question with one ranking of chunk
indices, best first, as deep as the deepest setting of the cell needs: ``top_k`` (every k, and
``min``) reads prefixes of that one ranking, never a second search or embedding pass. Retrievers
are built from specs like chunkers and embedders (``exact()``); the ones that need the texts
(keyword search, hybrid, rerankers) get them with the vectors.

Every retriever orders ties by chunk index and gives rankings whose prefix does not depend on
the depth asked for, so one search at the deepest depth serves every setting reading it (see
:mod:`chunkmark.retrieval.settings`). A retriever may also have ``stats() -> dict[str, int |
float]``: facts about its work (pairs a reranker scored, ...), read by :func:`ranker_stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chunkmark.specs import Registry

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
RankerStats = dict[str, int | float]


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


RETRIEVERS: Registry[Retriever] = Registry("retriever", command="retrieval")


def ranker_stats(retriever: Any) -> RankerStats:
    """A retriever's ``stats()``, or ``{}`` when it has none."""
    report = getattr(retriever, "stats", None)
    if report is None:
        return {}
    return dict(report())
