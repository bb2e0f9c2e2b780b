"""The embedder contract and registry.

An embedder turns texts into float32, L2-normalised rows. It declares its identity (everything
that changes its output) so results and the embedding cache can name it exactly. Models are
loaded lazily: building an embedder is cheap, the first ``embed`` call loads the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chunkmark.counters import EmbedderStats
from chunkmark.specs import Registry

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

    def stats(self) -> EmbedderStats:
        """The work done so far: inputs embedded, truncated inputs, requests, model seconds."""
        ...


class Wrapper:
    """Base of an embedder around another one, ``inner``: the name and identity (what keys the
    embedding cache) are the inner embedder's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()


@runtime_checkable
class InputAwareEmbedder(Protocol):
    """An embedder that can say exactly what its model reads for a text, and embed that.

    Texts with equal model inputs (e.g. two long chunks that start at the same place and are
    both truncated to the model's window) have equal vectors, so the cache embeds them once.
    """

    def supports_model_inputs(self, kind: Kind = "document") -> bool:
        """Whether :meth:`model_inputs` is exact for this model and kind."""
        ...

    def model_inputs(self, texts: Sequence[str], kind: Kind = "document") -> list[bytes]:
        """One byte string per text: the model's input after prompts, tokenisation, truncation."""
        ...

    def embed_inputs(self, inputs: Sequence[bytes], kind: Kind = "document") -> FloatArray:
        """Embed inputs returned by :meth:`model_inputs`, without tokenising again."""
        ...


@runtime_checkable
class SliceEmbedder(Protocol):
    """An embedder that computes many slices of texts in one job (e.g. batch inference on a
    cluster) and hands them back one by one, in order, as they are done, so the cache can store
    each slice at once."""

    def embed_slices(
        self, parts: Sequence[Sequence[str | bytes]], kind: Kind, *, inputs: bool
    ) -> Iterator[FloatArray]:
        """Each part's vectors, in order. ``inputs``: the parts hold model inputs
        (:meth:`InputAwareEmbedder.model_inputs`), not texts."""
        ...


# A chunk in its document: (the document's text, start, end); the chunk is text[start:end].
DocSpan = tuple[str, int, int]


@runtime_checkable
class SpanEmbedder(Protocol):
    """An embedder that embeds chunks *in their document* (late chunking): a chunk's vector
    depends on the text around it, so it is asked for spans of documents, not for texts.

    Queries still go through :meth:`Embedder.embed`.
    """

    def embeds_spans(self) -> bool:
        """Whether document chunks must go through :meth:`embed_spans` (else ``embed``)."""
        ...

    def embed_spans(self, spans: Sequence[DocSpan]) -> FloatArray:
        """One L2-normalised row per ``(document text, start, end)``, in order."""
        ...


def embeds_spans(embedder: object) -> bool:
    """Whether ``embedder`` embeds document chunks as spans of their documents."""
    return isinstance(embedder, SpanEmbedder) and embedder.embeds_spans()


EMBEDDERS: Registry[Embedder] = Registry("embedder")


def l2_normalise(x: npt.NDArray[Any]) -> FloatArray:
    arr: FloatArray = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: FloatArray = (arr / norms).astype(np.float32, copy=False)
    return out
