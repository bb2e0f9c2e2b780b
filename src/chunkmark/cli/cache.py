"""``chunkmark cache``: see, clear and prune the caches under the cache folder (embedding
vectors, LLM answers, chunks, and every other entry there). What is reported and what goes is
decided in :mod:`chunkmark.service.caches`; this module prints and asks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import options
from chunkmark.service.caches import (
    Step,
    Which,
    cache_report,
    cache_root,
    clear_steps,
    compact,
    prune_steps,
)

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
    root = cache_root(cache_dir)
    report = cache_report(root)
    if as_json:
        import json

        typer.echo(json.dumps(report, indent=1))
        return
    _print_report(report)


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
    from chunkmark.report.data import short_name

    for g in cache["chunkers"]:
        chunker = "?" if g["chunker"] is None else short_name("chunker", g["chunker"])
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


_TABLES: dict[str, Callable[[dict[str, Any]], Table]] = {
    "embeddings": _embeddings_table,
    "llm": _llm_table,
    "chunks": _chunks_table,
}


# --- clear and prune ----------------------------------------------------------------------


def clear(
    which: WhichArg = "all",
    model: Model = None,
    cache_dir: options.CacheDir = None,
    yes: Yes = False,
    vacuum: Vacuum = False,
) -> None:
    """Delete every entry of a cache (or of all three), or only one model's entries. Asks for
    confirmation unless --yes."""
    root = cache_root(cache_dir)
    _confirm_and_run(root, clear_steps(root, which, model), yes=yes, vacuum=vacuum)


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
    root = cache_root(cache_dir)
    steps, notes = prune_steps(root, which, model, older_than)
    note = Console(stderr=True, highlight=False, soft_wrap=True)
    for line in notes:
        note.print(line)
    _confirm_and_run(root, steps, yes=yes, vacuum=vacuum)


def _confirm_and_run(root: Path, steps: list[Step], *, yes: bool, vacuum: bool) -> None:
    try:
        _run_steps(root, [s for s in steps if s.planned], yes=yes, vacuum=vacuum)
    finally:
        for step in steps:
            step.close()


def _run_steps(root: Path, steps: list[Step], *, yes: bool, vacuum: bool) -> None:
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
        size = compact(root, name)
        if size is not None:
            console.print(f"{name}: compacted to {_size(size)}.")
        else:
            console.print(f"{name}: not compacted, another process is writing to it.")


def _confirmed(prompt: str) -> bool:
    try:
        return bool(typer.confirm(prompt, default=False))
    except typer.Abort:  # no answer (end of input)
        return False


# --- shared -------------------------------------------------------------------------------


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1000
    raise AssertionError  # the loop always returns


def _day(iso: str | None) -> str:
    return "" if iso is None else iso[:10]
