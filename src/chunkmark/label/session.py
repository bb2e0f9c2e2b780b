"""Open a folder for labeling: its documents, the pool over them, its question store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from chunkmark.embedders.base import Embedder
from chunkmark.label.pool import DEFAULT_CHUNKERS, DEFAULT_MAX_CHARS, RANKERS, Pool
from chunkmark.label.queries import read_queries
from chunkmark.label.server import LabelSession
from chunkmark.label.store import MAX_DOCUMENT_CHARS, QuestionStore, open_documents

AUTO = "auto"
NONE = "none"
MINILM = 'sentence_transformers(model="all-MiniLM-L6-v2")'


def default_embedder_spec(cache_dir: Path | None = None) -> str:
    """``model2vec()`` when the distilled MiniLM is already in the cache (fast, no
    transformer), else MiniLM itself from the offline package."""
    from chunkmark.embedders.model2vec import distilled_minilm_dir

    ready = (distilled_minilm_dir(cache_dir) / "model.safetensors").is_file()
    return "model2vec()" if ready else MINILM


def build_embedder(
    spec: str, cache_dir: Path | None = None, no_cache: bool = False
) -> Embedder | None:
    """The cached embedder ``spec`` names (``auto``: :func:`default_embedder_spec`; ``none``:
    no embedder, BM25 alone)."""
    if spec == NONE:
        return None
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
    from chunkmark.paths import resolve_cache_dir

    inner, _ = EMBEDDERS.build(default_embedder_spec(cache_dir) if spec == AUTO else spec)
    cache = None if no_cache else EmbeddingCache(resolve_cache_dir(cache_dir))
    return CachedEmbedder(inner, cache)


def open_session(
    folder: Path,
    *,
    embedder: Embedder | None,
    queries: Path | None = None,
    column: str | None = None,
    chunkers: Sequence[str] = DEFAULT_CHUNKERS,
    rankers: Sequence[str] = RANKERS,
    passage_chars: int | None = None,
    max_chars: int = MAX_DOCUMENT_CHARS,
    progress: Callable[[str], None] | None = None,
) -> LabelSession:
    """Everything the page needs for ``folder``; a one-line error for anything unusable,
    before any model is loaded or file written."""
    documents = open_documents(folder, max_chars)
    store = QuestionStore(folder, documents)
    wanted = read_queries(queries, column) if queries is not None else []
    pool = Pool(
        documents,
        embedder,
        chunkers,
        rankers,
        max_chars=passage_chars or DEFAULT_MAX_CHARS,
        progress=progress,
    )
    return LabelSession(folder.resolve(), pool, store, wanted)
