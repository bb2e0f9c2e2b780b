"""The embedder contract and registry.

An embedder turns texts into float32, L2-normalised rows. It declares its identity (everything
that changes its output) so results and the embedding cache can name it exactly. Models are
loaded lazily: building an embedder is cheap, the first ``embed`` call loads the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chunkbench.specs import Registry

Kind = Literal["document", "query"]
FloatArray = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """What every embedder provides."""

    @property
    def name(self) -> str:
        """Public model name, e.g. ``all-MiniLM-L6-v2``."""
        ...

    def identity(self) -> dict[str, Any]:
        """Everything that changes the vectors (name, revision, dimensions, prompts, normalisation).

        It keys the embedding cache and is recorded in the manifest.
        """
        ...

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        """Embed ``texts`` into an ``(len(texts), dim)`` float32 array of L2-normalised rows."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counters of the work done so far (inputs embedded, truncated inputs, API calls...)."""
        ...


EMBEDDERS: Registry[Embedder] = Registry("embedder")


def l2_normalise(x: npt.NDArray[Any]) -> FloatArray:
    arr: FloatArray = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: FloatArray = (arr / norms).astype(np.float32, copy=False)
    return out
