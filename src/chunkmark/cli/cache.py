"""``chunkmark cache``: see, clear and prune the caches under the cache folder.

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
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import options
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

WhichArg = Annotated[
    Which,
    typer.Argument(help="The cache: embeddings, llm, chunks or all.", show_default=True),
]
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Only the entries of this model: embedding vectors of an embedder model, answers "
        "of an LLM model, chunkings made with an embedder model (semantic chunkers). A name "
        "matches in full or after its last '/' (all-MiniLM-L6-v2 matches "
        "sentence-transformers/all-MiniLM-L6-v2).",
        show_default=False,
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
Vacuum = Annotated[
    bool,
    typer.Option(
        "--vacuum",
        help="Shrink the SQLite files afterwards (VACUUM); skipped while another process "
        "writes to them. Without it freed space is reused by later writes.",
    ),
]


def register(app: typer.Typer) -> None:
    """Add the ``cache`` command group to ``app``."""
    group = typer.Typer(
        help="See, clear and prune the caches (embeddings, LLM answers, chunks).",
        no_args_is_help=True,
        add_completion=False,
    )
    group.command("info")(info)
    group.command("clear")(clear)
    group.command("prune")(prune)
    app.add_typer(group, name="cache")


# --- info ---------------------------------------------------------------------------------


def info(
    cache_dir: options.CacheDir = None,
    as_json: options.Json = False,
) -> None:
    """Each cache's path, size on disk (WAL files included), format and entries, per model;
    then every other folder and file of the cache folder (models built on first use, downloaded
    datasets, ...) with its size. The folder's size counts every file."""
    root = _cache_root(cache_dir)
    report = cache_report(root)
    if as_json:
        import json

        typer.echo(json.dumps(report, indent=1))
        return
    _print_report(report)


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


def _print_report(report: dict[str, Any]) -> None:
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"Cache folder {report['cache_dir']}: {_size(report['bytes_on_disk'])} on disk")
    titles = {"embeddings": "Embeddings", "llm": "LLM answers", "chunks": "Chunks"}
    nouns = {"embeddings": "vectors", "llm": "answers", "chunks": "chunkings"}
    for name, cache in report["caches"].items():
        console.print()
        if not cache["exists"]:
            console.print(f"[bold]{titles[name]}[/bold]  {cache['path']}  (none yet)")
            continue
        console.print(
            f"[bold]{titles[name]}[/bold]  {cache['path']}  format {cache['format']}, "
            f"{_size(cache['bytes_on_disk'])} on disk, {cache['entries']:,} {nouns[name]}"
        )
        table = _TABLES[name](cache)
        if table.row_count:
            console.print(table)
    if report["others"]:
        console.print()
        console.print("[bold]Other folders and files[/bold]")
        table = Table(box=None, pad_edge=False)
        for column in ("path", "files", "bytes", "holds"):
            table.add_column(column, justify="right" if column in ("files", "bytes") else "left")
        for o in report["others"]:
            table.add_row(o["path"], f"{o['files']:,}", _size(o["bytes_on_disk"]), o["holds"])
        console.print(table)


def _embeddings_table(cache: dict[str, Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("model", "dimension", "vectors", "vector bytes"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for m in cache["models"]:
        dimension = "" if m["dimension"] is None else str(m["dimension"])
        table.add_row(m["name"], dimension, f"{m['vectors']:,}", _size(m["bytes"]))
    return table


def _llm_table(cache: dict[str, Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("provider", "model", "answers", "bytes", "oldest", "newest"):
        table.add_column(column, justify="right" if column in ("answers", "bytes") else "left")
    for m in cache["models"]:
        table.add_row(
            m["provider"],
            m["model"],
            f"{m['answers']:,}",
            _size(m["bytes"]),
            _day(m["oldest"]),
            _day(m["newest"]),
        )
    return table


def _chunks_table(cache: dict[str, Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("chunker", "dataset", "embedder", "chunkings", "chunks", "bytes"):
        numeric = column in ("chunkings", "chunks", "bytes")
        table.add_column(column, justify="right" if numeric else "left")
    for g in cache["chunkers"]:
        chunker = _short(g["chunker"])
        if g["current"] is False:
            chunker += f" (chunkmark {g['chunkmark']}: stale)"
        table.add_row(
            chunker,
            (g["dataset"] or "?")[:12],
            g["embedder"] or "",
            f"{g['chunkings']:,}",
            f"{g['chunks']:,}",
            _size(g["bytes"]),
        )
    return table


def _short(spec: str | None) -> str:
    """A chunker spec as the run's tables show it, else as stored."""
    if spec is None:
        return "?"
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.errors import ChunkmarkError

    try:
        return CHUNKERS.short(spec)
    except ChunkmarkError:  # a chunker this installation does not have
        return spec


_TABLES: dict[str, Callable[[dict[str, Any]], Table]] = {
    "embeddings": _embeddings_table,
    "llm": _llm_table,
    "chunks": _chunks_table,
}


# --- clear and prune ----------------------------------------------------------------------


@dataclasses.dataclass
class _Step:
    """What one cache will lose: a description for the prompt, and the deletion itself."""

    cache: str
    planned: int
    noun: str
    run: Callable[[], int]
    close: Callable[[], None] = lambda: None


def clear(
    which: WhichArg = "all",
    model: Model = None,
    cache_dir: options.CacheDir = None,
    yes: Yes = False,
    vacuum: Vacuum = False,
) -> None:
    """Delete every entry of a cache (or of all three), or only one model's entries. Asks for
    confirmation unless --yes."""
    root = _cache_root(cache_dir)
    names = _chosen(which)
    steps = []
    if "embeddings" in names and (root / EMBEDDINGS_DB).exists():
        steps.append(_embeddings_step(root, model))
    if "llm" in names and (root / LLM_DB).exists():
        steps.append(_llm_step(root, model, None))
    if "chunks" in names:
        steps.append(_chunks_step(root, lambda e: _chunking_matches(e, model)))
    _confirm_and_run(root, steps, yes=yes, vacuum=vacuum)


def prune(
    which: WhichArg = "all",
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            min=0,
            help="Only entries written more than DAYS days ago: LLM answers (each records when "
            "it was written) and chunk files (their modification time). Embedding vectors "
            "record no time, so they are not pruned by age.",
            metavar="DAYS",
            show_default=False,
        ),
    ] = None,
    model: Model = None,
    cache_dir: options.CacheDir = None,
    yes: Yes = False,
    vacuum: Vacuum = False,
) -> None:
    """Delete the entries that match every criterion given (--older-than, --model), and
    always the chunk files this chunkmark can no longer read (written by another version).
    Asks for confirmation unless --yes."""
    root = _cache_root(cache_dir)
    names = _chosen(which)
    before = None if older_than is None else time.time() - older_than * SECONDS_PER_DAY
    criteria = model is not None or before is not None
    note = Console(stderr=True, highlight=False, soft_wrap=True)
    steps = []
    if "embeddings" in names and (root / EMBEDDINGS_DB).exists():
        if before is not None:
            note.print(
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
    _confirm_and_run(root, steps, yes=yes, vacuum=vacuum)


def _embeddings_step(root: Path, model: str | None) -> _Step:
    cache = EmbeddingCache(root)
    match = None if model is None else _identity_matches(model, identity_name)
    planned = sum(u.vectors for u in cache.usage() if match is None or match(u.identity))
    return _Step("embeddings", planned, "vectors", lambda: cache.delete(match), cache.close)


def _llm_step(root: Path, model: str | None, before: float | None) -> _Step:
    cache = LLMCache(root)
    match = None if model is None else _identity_matches(model, lambda i: str(i.get("model")))
    planned = cache.count(match, before=before)
    return _Step(
        "llm", planned, "LLM answers", lambda: cache.delete(match, before=before), cache.close
    )


def _chunks_step(root: Path, goes: Callable[[StoredChunking], bool]) -> _Step:
    store = ChunkStore(root)
    chosen = [e for e in store.entries() if goes(e)]
    return _Step("chunks", len(chosen), "chunkings", lambda: store.remove(chosen))


def _confirm_and_run(root: Path, steps: list[_Step], *, yes: bool, vacuum: bool) -> None:
    try:
        _run_steps(root, [s for s in steps if s.planned], yes=yes, vacuum=vacuum)
    finally:
        for step in steps:
            step.close()


def _run_steps(root: Path, steps: list[_Step], *, yes: bool, vacuum: bool) -> None:
    console = Console(highlight=False, soft_wrap=True)
    if not steps:
        console.print(f"Nothing to remove in {root}.")
        return
    listed = ", ".join(f"{s.planned:,} {s.noun}" for s in steps)
    if not yes and not _confirmed(f"Remove {listed} from {root}?"):
        console.print("Nothing removed.")
        raise typer.Exit(code=1)
    done = []
    for step in steps:
        done.append(f"{step.run():,} {step.noun}")
        step.close()
    console.print(f"Removed {', '.join(done)} from {root}.")
    sqlite = [s.cache for s in steps if s.cache in ("embeddings", "llm")]
    if not sqlite:
        return
    if not vacuum:
        console.print("The SQLite files keep their size; later writes reuse the freed space.")
        return
    for name in sqlite:
        store = EmbeddingCache(root) if name == "embeddings" else LLMCache(root)
        with store:
            shrunk = store.compact()
        if shrunk:  # measured once closed: the last connection to close folds the WAL in
            console.print(f"{name}: compacted to {_size(store.disk_bytes())}.")
        else:
            console.print(f"{name}: not compacted, another process is writing to it.")


def _confirmed(prompt: str) -> bool:
    try:
        return bool(typer.confirm(prompt, default=False))
    except typer.Abort:  # no answer (end of input)
        return False


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


# --- shared -------------------------------------------------------------------------------


def _cache_root(cache_dir: Path | None) -> Path:
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


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1000
    raise AssertionError  # the loop always returns


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds")


def _day(iso: str | None) -> str:
    return "" if iso is None else iso[:10]
