"""The chunker contract and registry.

A chunker is built by a registered factory from a spec string and is a callable
``str -> Sequence[Span | Chunk]``. Spans index the text that was passed in; ``Chunk.embed_text``
lets a chunker embed more than its span (e.g. a heading) while metrics still count the span.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from chunkmark.errors import ChunkingError, ConfigError
from chunkmark.spans import Span
from chunkmark.specs import Registry


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk of one document: a span plus, optionally, the text to embed for it."""

    doc_id: str
    start: int
    end: int
    embed_text: str | None = None

    def text(self, document_text: str) -> str:
        """The text the embedder sees: ``embed_text`` if set, else the span's text."""
        return (
            self.embed_text if self.embed_text is not None else document_text[self.start : self.end]
        )


ChunkerFn = Callable[[str], Sequence[Span | Chunk]]

if TYPE_CHECKING:
    from chunkmark.embedders.base import Embedder
    from chunkmark.llm.base import LLM
    from chunkmark.llm.estimate import Asking, LLMUsage


@dataclass
class ChunkerContext:
    """What a chunker may need besides its parameters; never part of its spec.

    A factory that needs it declares a keyword-only parameter ``context: ChunkerContext`` and
    :meth:`Registry.build` passes it (``CHUNKERS.build(spec, context=...)``). Semantic chunkers
    embed with ``embedder`` (the cell's embedder, already cached) unless their spec names
    another; LLM-based chunkers build their client with :meth:`llm`, cached under ``cache_dir``
    and seeded with ``seed``.
    """

    embedder: Embedder | None = None
    cache_dir: Path | None = None
    seed: int = 0
    _built: dict[str, Any] = field(default_factory=dict, repr=False)

    def resolve_embedder(self, spec: str | None) -> Embedder:
        """The embedder a semantic chunker uses: ``spec`` if given, else the cell's embedder."""
        if spec is None:
            if self.embedder is None:
                raise ConfigError(
                    "This chunker embeds text but was given no embedder.",
                    "Name one in its spec, e.g. embedder='sentence_transformers', "
                    "or run it inside an experiment, where it uses the cell's embedder.",
                )
            return self.embedder
        key = f"embedder:{spec}"
        if key not in self._built:
            from chunkmark.embedders import EMBEDDERS
            from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache

            inner, _ = EMBEDDERS.build(spec)
            cache = None if self.cache_dir is None else EmbeddingCache(self.cache_dir)
            self._built[key] = CachedEmbedder(inner, cache)
        embedder: Embedder = self._built[key]
        return embedder

    def llm(self, spec: str) -> Any:
        """The LLM client a spec names (see ``chunkmark.llm``), cached and seeded."""
        key = f"llm:{spec}"
        if key not in self._built:
            from chunkmark.llm import build_llm

            self._built[key] = build_llm(spec, cache_dir=self.cache_dir, seed=self.seed)
        return self._built[key]


CHUNKERS: Registry[ChunkerFn] = Registry("chunker")


def llm_identity(values: dict[str, Any]) -> dict[str, Any]:
    """The ``identity`` of a chunker that holds an LLM spec (``llm``) or wraps another chunker
    (``chunker``): the LLM spec without its transport parameters
    (:func:`chunkmark.llm.identity_spec`), the wrapped chunker by its own identity (short)."""
    out = dict(values)
    if isinstance(out.get("llm"), str):
        from chunkmark.llm import identity_spec

        out["llm"] = identity_spec(out["llm"])
    if isinstance(out.get("chunker"), str):
        out["chunker"] = CHUNKERS.short(CHUNKERS.identity(out["chunker"]))
    return out


def chunk_document(chunker: ChunkerFn, doc_id: str, text: str) -> list[Chunk]:
    """Run a chunker on one document and check its output: every span within the text, non-empty."""
    return _checked(chunker(text), doc_id, text)


def chunk_documents(chunker: ChunkerFn, documents: Sequence[tuple[str, str]]) -> list[Chunk]:
    """Every ``(doc_id, text)`` document's chunks, in order, checked as :func:`chunk_document`
    checks them. A chunker with a ``chunk_texts(texts)`` method (the LLM chunkers: it gives
    what calling the chunker on each text in turn gives, but asks the LLM about all of them
    at once, concurrently) is handed every text in one call."""
    batch = getattr(chunker, "chunk_texts", None)
    if batch is None:
        return [c for doc_id, text in documents for c in chunk_document(chunker, doc_id, text)]
    found = batch([text for _, text in documents])
    out: list[Chunk] = []
    for (doc_id, text), pieces in zip(documents, found, strict=True):
        out.extend(_checked(pieces, doc_id, text))
    return out


def _checked(pieces: Sequence[Span | Chunk], doc_id: str, text: str) -> list[Chunk]:
    out: list[Chunk] = []
    for i, piece in enumerate(pieces):
        if isinstance(piece, Span):
            chunk = Chunk(doc_id, piece.start, piece.end)
        else:
            chunk = Chunk(doc_id, piece.start, piece.end, piece.embed_text)
        if not 0 <= chunk.start < chunk.end <= len(text):
            raise ChunkingError(
                f"Chunker returned an invalid span [{chunk.start}, {chunk.end}) as chunk {i} of "
                f"document {doc_id!r} (length {len(text)}).",
                "Chunkers must return non-empty spans inside the document.",
            )
        out.append(chunk)
    return out


def trimmed(text: str, start: int, end: int) -> Span | None:
    """``[start, end)`` of ``text`` without surrounding whitespace, or None when nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Span(start, end) if end > start else None


def whole_overlap(overlap: float, size: int) -> int:
    """An overlap as a whole count: a value below 1 (and above 0) is a fraction of ``size``,
    rounded half up (``0.25`` of ``400`` is ``100``); a whole number is itself."""
    if 0 < overlap < 1:
        return int(overlap * size + 0.5)
    if float(overlap).is_integer():
        return int(overlap)
    raise ValueError(
        f"overlap must be a whole number, or a fraction of size below 1, got {overlap}"
    )


def overlap_fraction(size_param: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The canonical form of a chunker whose ``overlap`` may be given as a fraction of its
    ``size_param``: ``fixed_tokens(size=400, overlap=0.25)`` is ``fixed_tokens(size=400,
    overlap=100)``, one cell, one row name."""

    def canonical(values: dict[str, Any]) -> dict[str, Any]:
        return {**values, "overlap": whole_overlap(values["overlap"], values[size_param])}

    return canonical


@runtime_checkable
class RequestEstimator(Protocol):
    """A chunker that calls an LLM and can say what it would ask without asking
    (:mod:`chunkmark.llm.estimate`)."""

    def estimate_llm(self) -> LLM | None:
        """The LLM client it would ask; None when, as configured, it asks none."""
        ...

    def estimate_wraps(self) -> str | None:
        """The spec of the chunker whose chunks it sends to the LLM; None when it reads the
        text itself."""
        ...

    def estimate_requests(
        self, text: str, chunks: Sequence[Chunk] | None, asking: Asking
    ) -> LLMUsage:
        """The calls and tokens of chunking ``text``, without asking: cached answers replayed
        through ``asking``, the rest at the fewest and the most. ``chunks`` are the wrapped
        chunker's chunks of ``text`` (for a wrapper; None when not known to the caller)."""
        ...
