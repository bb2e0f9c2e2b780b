"""One way to chunk for an estimate: a chunker's chunks of a dataset, found without a request
and without loading a model, or unknown until the chunker runs.

:func:`estimate_chunks` is what ``chunkmark plan`` (chunk texts, and the chunks a wrapper would
send to its LLM) and the relations dry run and ``--max-cost`` check (the chunks extraction would
read) use:

- a chunker that calls an LLM: unknown (its chunks depend on the answers);
- a chunker whose output the chunk store keeps (deterministic, no LLM), when the store holds it
  (for a chunker that embeds, under the identity of the embedder it would use): read back;
- a chunker that embeds: chunked with the given embedder (the cell's, and any its spec names)
  reading vectors from the embedding cache only. Embedding anything means the cache lacked it,
  and the chunks are unknown; so are they when no embedder is given. Never a request;
- any other chunker: run on the documents (it needs no model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.counters import EmbedderStats
from chunkmark.embedders.base import Embedder, FloatArray, Kind, Wrapper
from chunkmark.errors import ConfigError
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.plan_model import Source
from chunkmark.specs import Spec

if TYPE_CHECKING:
    from chunkmark.datasets.model import Dataset
    from chunkmark.embedders.cache import EmbeddingCache

CALLS_LLM = "it calls an LLM: its chunks are known only once it runs"
EMBEDS = "it embeds: its chunks are known only once it runs"
NOT_CACHED = "it embeds texts the cache does not hold: its chunks are known only once it runs"


@dataclass(frozen=True)
class ChunkEstimate:
    """A chunker's chunks of a dataset (None: known only once it runs), where they came from,
    and why they are unknown."""

    chunks: list[Chunk] | None
    source: Source
    note: str = ""

    def texts(self, dataset: Dataset) -> list[str]:
        """The texts embedded for the chunks (none when they are unknown)."""
        docs = dataset.by_id
        return [c.text(docs[c.doc_id].text) for c in self.chunks or ()]


class NotCached(Exception):
    """A chunker chunking for an estimate asked for a vector the embedding cache does not hold."""


class CacheOnly(Wrapper):
    """An embedder as an estimate sees it: its name and identity (the cache keys), and no model
    and no request. Embedding anything means the cache lacked it."""

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        raise NotCached(f"{len(texts)} {kind} texts")

    def stats(self) -> EmbedderStats:
        return EmbedderStats()


@dataclass
class _CacheOnlyContext(ChunkerContext):
    """A chunker context whose every embedder reads the embedding cache only (the cell's, and
    any a chunker's spec names), and that builds no LLM client."""

    cache: EmbeddingCache | None = None
    _cache_only: dict[str, Embedder] = field(default_factory=dict, repr=False)

    def resolve_embedder(self, spec: str | None) -> Embedder:
        if spec is None:
            return super().resolve_embedder(None)
        if spec not in self._cache_only:
            from chunkmark.embedders import EMBEDDERS

            self._cache_only[spec] = cache_only(EMBEDDERS.build(spec)[0], self.cache)
        return self._cache_only[spec]

    def llm(self, spec: str) -> Any:
        raise ConfigError(
            f"Chunking for an estimate builds no LLM client (asked for {spec}).",
            "This is a bug in chunkmark's estimates: please report it.",
        )


def cache_only(embedder: Embedder, cache: EmbeddingCache | None) -> Embedder:
    """``embedder`` reading vectors from ``cache`` only (nothing at all without one): a miss
    raises :class:`NotCached` instead of embedding."""
    from chunkmark.embedders.cache import CachedEmbedder

    return CachedEmbedder(CacheOnly(embedder), cache)


def estimate_chunks(
    dataset: Dataset,
    spec: Spec | str,
    *,
    embedder: Embedder | None = None,
    identity: dict[str, Any] | None = None,
    store: ChunkStore | None = None,
    cache: EmbeddingCache | None = None,
    seed: int = 0,
) -> ChunkEstimate:
    """``spec``'s chunks of ``dataset`` as an estimate may have them (see the module docs).

    ``embedder`` is the cell's embedder for a chunker that embeds, read through ``cache`` only
    (None: such a chunker's chunks are unknown unless stored); ``identity`` is that embedder's
    identity when it is known without loading a model (the chunk store keys a chunker that
    embeds on it); ``store`` the chunk store to read, if any.
    """
    canonical = CHUNKERS.resolve(spec)
    traits = CHUNKERS.traits(canonical)
    if traits.calls_llm:
        return ChunkEstimate(None, "unknown", CALLS_LLM)
    if store is not None and traits.reusable and (identity is not None or not traits.embeds):
        key = chunk_key(str(canonical), dataset.fingerprint, identity if traits.embeds else None)
        found = store.get(key)
        if found is not None:
            return ChunkEstimate(found[0], "chunk store")
    if traits.embeds and embedder is None:
        return ChunkEstimate(None, "unknown", EMBEDS)
    cell = None if embedder is None else cache_only(embedder, cache)
    context = _CacheOnlyContext(embedder=cell, seed=seed, cache=cache)
    chunker, _ = CHUNKERS.build(canonical, context=context)
    chunks: list[Chunk] = []
    try:
        for doc in dataset.documents:
            chunks.extend(chunk_document(chunker, doc.id, doc.text))
    except NotCached:
        return ChunkEstimate(None, "unknown", NOT_CACHED)
    return ChunkEstimate(chunks, "chunked")
