"""The caches under the cache folder, reported, cleared and pruned (``chunkmark cache`` prints
and asks; this module decides and deletes).

Three caches share the folder: embedding vectors (``embeddings.sqlite3``), LLM answers
(``llm.sqlite3``) and chunks (``chunks/``). ``info`` also lists, and counts in the folder's
size, every other entry there (models built on first use in ``models/``, downloaded datasets,
...), which ``clear`` and ``prune`` leave alone. Rows are deleted inside SQLite write transactions
(a run writing to the same cache waits for them and keeps its own batches whole) and chunk files
are renamed away before they are deleted, so a cache in use by another process is never
damaged. Freed SQLite pages are reused by later writes; ``--vacuum`` also shrinks the files, and
does so only when no other process is writing. Nothing here deletes the cache files themselves.

What ``prune`` can go by is what the caches record: an LLM answer its write time, a chunk file
its modification time and the chunkmark version that wrote it (its key includes the version, so
another version's files are never read again). An embedding vector records neither when it was
written nor when it was last read, so vectors are pruned by model only. A write-time column
would need a new format, which older chunkmark versions sharing the folder could not open, and
would say little (a vector written long ago may be read by every run); a last-read time would
turn every cache read into a write that contends with the processes filling the cache.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from chunkmark.embedders.cache import DB_NAME as EMBEDDINGS_DB
from chunkmark.embedders.cache import EmbeddingCache, identity_name
from chunkmark.errors import ConfigError
from chunkmark.experiments.chunk_store import FOLDER as CHUNKS_FOLDER
from chunkmark.experiments.chunk_store import STORE_FORMAT, ChunkStore, StoredChunking
from chunkmark.llm.cache import DB_NAME as LLM_DB
from chunkmark.llm.cache import LLMCache
from chunkmark.paths import resolve_cache_dir

CACHES = ("embeddings", "llm", "chunks")
Which = Literal["embeddings", "llm", "chunks", "all"]
SECONDS_PER_DAY = 86_400


def cache_report(root: Path) -> dict[str, Any]:
    """What :func:`info` prints, as JSON-ready data: every size in bytes, times in ISO 8601.
    ``bytes_on_disk`` counts every file of the folder: the three caches and every other entry
    (``others``: models built on first use, downloaded datasets, a local LLM server, ...)."""
    caches = {
        "embeddings": _embeddings_report(root),
        "llm": _llm_report(root),
        "chunks": _chunks_report(root),
    }
    others = _others_report(root)
    return {
        "cache_dir": str(root),
        "bytes_on_disk": sum(c["bytes_on_disk"] for c in [*caches.values(), *others]),
        "caches": caches,
        "others": others,
    }


# What the other entries of a cache folder hold (those chunkmark writes there itself).
OTHERS = {
    "models": "models built on first use (model2vec's distilled all-MiniLM-L6-v2)",
    "datasets": "downloaded and converted datasets",
    "llama.cpp": "the local LLM server and its models",
}


def _others_report(root: Path) -> list[dict[str, Any]]:
    """Every entry of the folder that is none of the three caches: its files and bytes."""
    mine = {EMBEDDINGS_DB, LLM_DB, CHUNKS_FOLDER}
    mine |= {f"{db}{suffix}" for db in (EMBEDDINGS_DB, LLM_DB) for suffix in ("-wal", "-shm")}
    found = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name in mine:
            continue
        files = [entry] if not entry.is_dir() else [p for p in entry.rglob("*") if p.is_file()]
        found.append(
            {
                "path": str(entry),
                "holds": OTHERS.get(entry.name, ""),
                "files": len(files),
                "bytes_on_disk": sum(_file_bytes(p) for p in files),
            }
        )
    return found


def _file_bytes(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:  # removed since it was listed
        return 0


def _embeddings_report(root: Path) -> dict[str, Any]:
    return _database_report(
        root / EMBEDDINGS_DB,
        lambda: EmbeddingCache(root),
        lambda u: {
            "name": u.name,
            "dimension": u.dimension or u.identity.get("dimension") or u.identity.get("dimensions"),
            "vectors": u.vectors,
            "bytes": u.bytes,
            "identity": u.identity,
        },
        "vectors",
    )


def _llm_report(root: Path) -> dict[str, Any]:
    return _database_report(
        root / LLM_DB,
        lambda: LLMCache(root),
        lambda u: {
            "provider": u.provider,
            "model": u.model,
            "answers": u.answers,
            "bytes": u.bytes,
            "oldest": _iso(u.oldest),
            "newest": _iso(u.newest),
            "identity": u.identity,
        },
        "answers",
    )


def _database_report(
    path: Path, open_cache: Callable[[], Any], row: Callable[[Any], dict[str, Any]], count: str
) -> dict[str, Any]:
    """One SQLite cache's report: its rows per model (``row`` of each usage entry), entries
    summed from each row's ``count`` field; never creates the file."""
    if not path.exists():
        return _absent(path)
    with open_cache() as cache:
        usage = cache.usage()
        found = cache.stored_format()
    size = cache.disk_bytes()  # once closed: the last connection to close folds the WAL in
    models = [row(u) for u in usage]
    return {
        "path": str(path),
        "exists": True,
        "format": int(found),
        "bytes_on_disk": size,
        "entries": sum(m[count] for m in models),
        "models": models,
    }


def _chunks_report(root: Path) -> dict[str, Any]:
    store = ChunkStore(root)
    if not store.folder.is_dir():
        return _absent(store.folder)
    entries = store.entries()
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in entries:
        embedder = None if e.embedder is None else identity_name(e.embedder)
        at = (e.chunker, e.dataset, embedder, e.chunkmark)
        group = groups.setdefault(
            at,
            {
                "chunker": e.chunker,
                "dataset": e.dataset,
                "embedder": embedder,
                "chunkmark": e.chunkmark,
                "current": e.current(),
                "chunkings": 0,
                "chunks": 0,
                "bytes": 0,
            },
        )
        group["chunkings"] += 1
        group["chunks"] += e.chunks or 0
        group["bytes"] += e.bytes
    return {
        "path": str(store.folder),
        "exists": True,
        "format": STORE_FORMAT,
        "bytes_on_disk": store.disk_bytes(),
        "entries": len(entries),
        "chunkers": list(groups.values()),
    }


def _absent(path: Path) -> dict[str, Any]:
    return {"path": str(path), "exists": False, "format": None, "bytes_on_disk": 0, "entries": 0}


@dataclasses.dataclass
class Step:
    """What one cache will lose: a description for the prompt, and the deletion itself."""

    cache: str
    planned: int
    noun: str
    run: Callable[[], int]
    close: Callable[[], None] = lambda: None


def _embeddings_step(root: Path, model: str | None) -> Step:
    cache = EmbeddingCache(root)
    match = None if model is None else _identity_matches(model, identity_name)
    planned = sum(u.vectors for u in cache.usage() if match is None or match(u.identity))
    return Step("embeddings", planned, "vectors", lambda: cache.delete(match), cache.close)


def _llm_step(root: Path, model: str | None, before: float | None) -> Step:
    cache = LLMCache(root)
    match = None if model is None else _identity_matches(model, lambda i: str(i.get("model")))
    planned = cache.count(match, before=before)
    return Step(
        "llm", planned, "LLM answers", lambda: cache.delete(match, before=before), cache.close
    )


def _chunks_step(root: Path, goes: Callable[[StoredChunking], bool]) -> Step:
    store = ChunkStore(root)
    chosen = [e for e in store.entries() if goes(e)]
    return Step("chunks", len(chosen), "chunkings", lambda: store.remove(chosen))


def clear_steps(root: Path, which: Which, model: str | None) -> list[Step]:
    """What ``chunkmark cache clear`` deletes: every entry of the caches ``which`` names, or
    only ``model``'s."""
    names = _chosen(which)
    steps = []
    if "embeddings" in names and (root / EMBEDDINGS_DB).exists():
        steps.append(_embeddings_step(root, model))
    if "llm" in names and (root / LLM_DB).exists():
        steps.append(_llm_step(root, model, None))
    if "chunks" in names:
        steps.append(_chunks_step(root, lambda e: _chunking_matches(e, model)))
    return steps


def prune_steps(
    root: Path, which: Which, model: str | None, older_than: float | None
) -> tuple[list[Step], list[str]]:
    """What ``chunkmark cache prune`` deletes: the entries matching every criterion given
    (written more than ``older_than`` days ago, of ``model``), and always the chunk files this
    chunkmark can no longer read; with a note for each cache a criterion cannot apply to."""
    names = _chosen(which)
    before = None if older_than is None else time.time() - older_than * SECONDS_PER_DAY
    criteria = model is not None or before is not None
    notes: list[str] = []
    steps: list[Step] = []
    if "embeddings" in names and (root / EMBEDDINGS_DB).exists():
        if before is not None:
            notes.append(
                "embeddings: not pruned by age, vectors record no time; "
                "'chunkmark cache clear embeddings --model NAME' removes one model's vectors."
            )
        elif model is not None:
            steps.append(_embeddings_step(root, model))
    if "llm" in names and (root / LLM_DB).exists() and criteria:
        steps.append(_llm_step(root, model, before))

    def chunk_goes(e: StoredChunking) -> bool:
        if not _chunking_matches(e, model):
            return False
        old = before is None or e.modified < before
        return e.current() is False or (criteria and old)

    if "chunks" in names:
        steps.append(_chunks_step(root, chunk_goes))
    return steps, notes


def compact(root: Path, name: str) -> int | None:
    """Shrink cache ``name``'s SQLite file (VACUUM): its bytes on disk afterwards, or None when
    another process is writing to it (then nothing is done)."""
    store = EmbeddingCache(root) if name == "embeddings" else LLMCache(root)
    with store:
        shrunk = store.compact()
    # Measured once closed: the last connection to close folds the WAL in.
    return store.disk_bytes() if shrunk else None


def _identity_matches(
    model: str, name_of: Callable[[dict[str, Any]], str]
) -> Callable[[dict[str, Any]], bool]:
    def match(identity: dict[str, Any]) -> bool:
        return _name_matches(name_of(identity), model)

    return match


def _name_matches(name: str, model: str) -> bool:
    return name == model or name.rsplit("/", 1)[-1] == model


def _chunking_matches(entry: StoredChunking, model: str | None) -> bool:
    if model is None:
        return True
    return entry.embedder is not None and _name_matches(identity_name(entry.embedder), model)


def _chosen(which: str) -> tuple[str, ...]:
    return CACHES if which == "all" else (which,)


def cache_root(cache_dir: Path | None) -> Path:
    """The resolved cache folder; a missing folder, or one holding nothing of chunkmark's,
    is a one-line error (so nothing is ever deleted in a folder chunkmark did not fill)."""
    root = resolve_cache_dir(cache_dir)
    fix = "Pass the folder runs used with --cache-dir (or set CHUNKMARK_CACHE_DIR)."
    if not root.exists():
        raise ConfigError(f"There is no cache folder at {root}.", fix)
    if not root.is_dir():
        raise ConfigError(f"The cache folder {root} is not a folder.", fix)
    marks = (EMBEDDINGS_DB, LLM_DB, CHUNKS_FOLDER, *OTHERS)
    if not any((root / mark).exists() for mark in marks):
        raise ConfigError(
            f"{root} is not a chunkmark cache folder: it has no {EMBEDDINGS_DB}, {LLM_DB} "
            f"or {CHUNKS_FOLDER}/.",
            fix,
        )
    return root


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds")
