"""What each embedder of a plan would embed: identity and tokens without loading a model, the
texts semantic chunkers embed while chunking (recorded with a stand-in embedder), the embedding
cache's share, and the dollars for the rest."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkmark.chunkers import CHUNKERS, ChunkerContext
from chunkmark.costs.overrides import PlanPrices
from chunkmark.counters import EmbedderStats
from chunkmark.embedders.base import Embedder, FloatArray, Kind, l2_normalise
from chunkmark.embedders.cache import DB_NAME as EMBEDDING_DB
from chunkmark.embedders.cache import EmbeddingCache
from chunkmark.errors import ChunkmarkError, ConfigError
from chunkmark.experiments.plan_model import EmbedderPlan
from chunkmark.llm.estimate import ENCODING
from chunkmark.specs import Spec
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.datasets.model import Dataset

LOOKUP_BATCH = 4096  # texts per embedding-cache lookup (bounds the vectors read at once)


def setup_needed(embedder: Any) -> str | None:
    """What must be built or downloaded before ``embedder`` runs, and about how long it takes,
    or None when it is ready: its ``setup_needed()`` (a sentence-transformers Hub model not in
    the local cache, model2vec's distilled MiniLM not built yet), which builds nothing."""
    ask = getattr(embedder, "setup_needed", None)
    if not callable(ask):
        return None
    try:
        found = ask()
    except (ChunkmarkError, OSError, ValueError):
        return None
    return None if found is None else str(found)


def identity_without_loading(embedder: Any) -> dict[str, Any] | None:
    """The embedder's identity, or None when getting it would build, load or download a model
    (:func:`setup_needed` says what); every built-in embedder that is set up reads only names
    and small files for it."""
    if setup_needed(embedder) is not None:
        return None
    try:
        identity: dict[str, Any] = embedder.identity()
    except (ChunkmarkError, OSError, ValueError):
        return None
    return identity


TokenCounter = Callable[[list[str], Kind], list[int]]


def embedder_token_counter(embedder: Any) -> tuple[TokenCounter, str]:
    """How to count an embedder's tokens, and what the count is: the model's own input tokens
    through ``prepare()`` where it has one (OpenAI-compatible), else ``cl100k_base``."""
    prepare = getattr(embedder, "prepare", None)
    if callable(prepare):

        def model_tokens(texts: list[str], kind: Kind) -> list[int]:
            return [int(p.tokens) for p in prepare(texts, kind)]

        return model_tokens, "model tokens (prepare(): prompt, cl100k_base, truncation)"

    def cl100k(texts: list[str], kind: Kind) -> list[int]:
        return count_tokens(texts, ENCODING)

    return cl100k, "cl100k_base tokens (an estimate: the model's tokenizer is not loaded)"


class RecordingEmbedder:
    """A stand-in embedder for planning: seeded random vectors (no model), every call's texts
    kept."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @property
    def name(self) -> str:
        return "plan-recorder"

    def identity(self) -> dict[str, Any]:
        return {"embedder": "plan-recorder"}

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        self.calls.append(list(texts))
        rng = np.random.default_rng(len(self.calls))  # any vectors do: only the texts count
        return l2_normalise(rng.standard_normal((len(texts), 16)))

    def stats(self) -> EmbedderStats:
        return EmbedderStats()


@dataclass
class RecordingContext(ChunkerContext):
    """A chunker context whose every embedder is a :class:`RecordingEmbedder` (keyed by the
    spec the chunker names, None for the cell's embedder), and that builds no LLM."""

    recorders: dict[str | None, RecordingEmbedder] = field(default_factory=dict)

    def resolve_embedder(self, spec: str | None) -> Embedder:
        return self.recorders.setdefault(spec, RecordingEmbedder())

    def llm(self, spec: str) -> Any:
        raise ConfigError(
            f"Planning does not build LLM clients (asked for {spec}).",
            "This is a bug in chunkmark's planner: please report it.",
        )


@dataclass
class Bucket:
    """Everything one embedder would be asked to embed."""

    spec: Spec
    embedder: Any
    in_grid: bool
    documents: list[list[str]] = field(default_factory=list)  # one list per embedding call
    queries: list[list[str]] = field(default_factory=list)
    estimated_tokens: int = 0
    estimated_for: list[str] = field(default_factory=list)

    def add(self, kind: Kind, texts: Sequence[str]) -> None:
        if texts:
            (self.queries if kind == "query" else self.documents).append(list(texts))


def distinct(calls: list[list[str]], per_call: bool) -> list[str]:
    """The texts the cache would embed: distinct overall, or distinct within each call."""
    if per_call:
        return [t for call in calls for t in dict.fromkeys(call)]
    return list(dict.fromkeys(t for call in calls for t in call))


def record_chunking(
    dataset: Dataset, c_spec: Spec, seed: int
) -> dict[str | None, RecordingEmbedder]:
    """Run a semantic chunker over the dataset with stand-in embedders; what each was asked
    to embed, call by call (keyed by the embedder spec it names, None for the cell's)."""
    context = RecordingContext(seed=seed)
    chunker, _ = CHUNKERS.build(c_spec, context=context)
    for doc in dataset.documents:
        chunker(doc.text)
    return context.recorders


def cached_mask(
    cache: EmbeddingCache, identity: dict[str, Any], kind: str, texts: list[str]
) -> np.ndarray:
    """Which texts the cache holds under their text key (read only, in batches)."""
    mask = np.zeros(len(texts), dtype=bool)
    for start in range(0, len(texts), LOOKUP_BATCH):
        hits, _ = cache.get_many(identity, kind, texts[start : start + LOOKUP_BATCH])
        mask[start : start + len(hits)] = hits
    return mask


def embedding_model(b: Bucket, identity: dict[str, Any] | None) -> str | None:
    model = b.spec.kwargs.get("model") or (identity or {}).get("name")
    return None if model is None else str(model)


def embedder_plan(
    b: Bucket,
    identity: dict[str, Any] | None,
    *,
    no_cache: bool,
    cache_dir: Path | None,
    prices: PlanPrices,
    unknown: list[str],
) -> EmbedderPlan:
    """What one embedder would embed, the cache's share and the dollars for the rest; a missing
    price is added to ``unknown``. ``identity`` is None when it needs the model."""
    per_call = no_cache
    count, how = embedder_token_counter(b.embedder)
    documents = distinct(b.documents, per_call)
    queries = distinct(b.queries, per_call)
    doc_tokens = count(documents, "document") if documents else []
    query_tokens = count(queries, "query") if queries else []
    cached_tokens: int | None = None
    cached_texts: int | None = None
    note = ""
    if no_cache:
        note = "no_cache: the cache is not read"
    elif identity is None:
        note = "not looked up: the embedder's identity needs its model, which plan never loads"
    elif cache_dir is None or not (cache_dir / EMBEDDING_DB).is_file():
        cached_texts, cached_tokens = 0, 0
        note = "the cache folder holds no embeddings yet"
    else:
        cache = EmbeddingCache(cache_dir)
        hit_docs = cached_mask(cache, identity, "document", documents)
        hit_queries = cached_mask(cache, identity, "query", queries)
        cached_texts = int(hit_docs.sum() + hit_queries.sum())
        cached_tokens = int(
            np.dot(hit_docs, np.asarray(doc_tokens, dtype=np.int64))
            + np.dot(hit_queries, np.asarray(query_tokens, dtype=np.int64))
        )
        cache.close()
    total = sum(doc_tokens) + sum(query_tokens)
    to_embed = total - (cached_tokens or 0) + b.estimated_tokens
    price, source = prices.embedding.lookup(str(b.spec), _with_base_url(b, identity))
    model = embedding_model(b, identity)
    cost = None if price is None else to_embed * price / 1_000_000
    if price is None and to_embed == 0:
        cost = 0.0  # nothing to embed: free whatever the price
    elif price is None:
        unknown.append(f"the price of the embedding model {model!r} ({b.spec.name})")
    return EmbedderPlan(
        spec=str(b.spec),
        model=model,
        in_grid=b.in_grid,
        token_count=how,
        document_texts=len(documents),
        document_tokens=sum(doc_tokens),
        query_texts=len(queries),
        query_tokens=sum(query_tokens),
        cached_texts=cached_texts,
        cached_tokens=cached_tokens,
        cache_note=note,
        estimated_tokens=b.estimated_tokens,
        estimated_for=b.estimated_for,
        tokens_to_embed=to_embed,
        usd_per_million=price,
        price_source=source,
        usd=cost,
    )


def _with_base_url(b: Bucket, identity: dict[str, Any] | None) -> dict[str, Any] | None:
    """The identity, or (when it needs the model) what of it the built embedder tells without
    loading anything: its endpoint, which says whether it runs on this machine."""
    if identity is not None:
        return identity
    base_url = getattr(b.embedder, "base_url", None)
    return {"base_url": base_url} if isinstance(base_url, str) else None
