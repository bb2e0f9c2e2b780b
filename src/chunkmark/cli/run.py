"""``chunkmark run``: evaluate a grid and show the results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from chunkmark.experiments.config import DEFAULT_DATASET, load_config, make_config

RUN_HELP = """Chunk, embed, retrieve and score: one cell per (chunker, embedder), all k at once.

Writes OUT/results.parquet (one row per question x cell x k), OUT/summary.csv (one row per
cell x k x scope) and OUT/manifest.json (resolved specs, versions, fingerprint, timings).
Finished cells are kept in OUT/cells/: rerunning with the same --out resumes.
"""


def register(app: typer.Typer) -> None:
    app.command("run", help=RUN_HELP)(run)


def run(
    config_file: Annotated[
        Path | None,
        typer.Argument(help="Experiment YAML (keys: dataset, chunkers, embedders, k, out, ...)."),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            help=f"Dataset folder (Chroma or JSONL layout), or a built-in name: demo, chroma-general. [default: {DEFAULT_DATASET}]"
        ),
    ] = None,
    chunker: Annotated[
        list[str] | None,
        typer.Option(
            "--chunker",
            "-c",
            help="Chunker spec, repeatable, e.g. 'fixed_tokens(size=200, overlap=0)'.",
        ),
    ] = None,
    embedder: Annotated[
        list[str] | None,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec, repeatable, e.g. 'sentence_transformers(model=\"all-MiniLM-L6-v2\")'.",
        ),
    ] = None,
    k: Annotated[
        str | None,
        typer.Option(
            help="Retrieval depths: positive integers and/or 'min'. [default: 1,3,5,10,min]"
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Results folder. [default: results/run-DATE-TIME]")
    ] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Embedding cache folder. [default: $CHUNKMARK_CACHE_DIR or the user cache dir]"
        ),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the embedding cache.")
    ] = False,
    no_report: Annotated[
        bool, typer.Option("--no-report", help="Do not write OUT/report.html.")
    ] = False,
    seed: Annotated[
        int | None, typer.Option(help="Seed for bootstrap intervals. [default: 0]")
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only print the results table.")
    ] = False,
) -> None:
    from chunkmark.experiments.runner import evaluate

    overrides: dict[str, Any] = {
        key: value
        for key, value in {
            "dataset": dataset,
            "chunkers": chunker or None,
            "embedders": embedder or None,
            "k": k,
            "out": out,
            "cache_dir": cache_dir,
            "seed": seed,
        }.items()
        if value is not None
    }
    if no_cache:
        overrides["no_cache"] = True
    if no_report:
        overrides["report"] = False
    config = load_config(config_file, overrides) if config_file else make_config(overrides)
    console = Console(stderr=True, quiet=quiet, log_path=False)
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def progress(message: str) -> None:
        console.log(message)

    def embed_progress(what: str, done: int, total: int) -> None:
        if what not in tasks:
            tasks[what] = bar.add_task(f"embedding {what}", total=total)
        bar.update(tasks[what], completed=done)

    with bar:
        results = evaluate(config, progress=progress, embed_progress=embed_progress)
    screen = Console(width=None if sys.stdout.isatty() else 140)
    for table in results_tables(results.overall()):
        screen.print(table)
    for spec, entry in results.manifest["embedding"].items():
        for line in embedding_lines(_short_embedder(spec), entry["stats"]):
            console.print(line)
    for line in chunking_lines(results.manifest["cells"]):
        console.print(line)
    timings = results.manifest["timings"]
    console.print(
        f"[bold]{results.cells_computed}[/] cells computed, [bold]{results.cells_resumed}[/] resumed "
        f"in {timings['wall']:.1f}s. Files: {results.out}/results.parquet, summary.csv, manifest.json"
    )


def embedding_lines(embedder: str, stats: dict[str, Any]) -> list[str]:
    """What the embedder did (``EmbedderStats.to_dict()``): one line on the cache's work
    (texts asked for, distinct, cached, model inputs, embedded) and a note on truncation."""
    lines = []
    cache = stats.get("cache") or {}
    if cache.get("requested"):
        parts = [
            f"{cache['requested']} texts (chunks and questions)",
            f"{cache['distinct']} distinct",
            f"{cache['hits']} found in the cache",
        ]
        if cache.get("inputs"):
            parts.append(
                f"{cache['inputs']} model inputs after truncation, "
                f"{cache.get('input_hits', 0)} of them already embedded"
            )
        parts.append(
            f"[bold]{cache['embedded']}[/] embedded in {cache.get('model_seconds', 0):.1f}s"
        )
        lines.append(f"{embedder}: " + " -> ".join(parts))
    if stats.get("truncated"):
        window = f"{stats['window']}-token" if stats.get("window") else "input"
        lines.append(
            f"[yellow]note:[/] {stats['truncated']} of {stats['measured']} texts measured by "
            f"{embedder} were longer than its {window} window and were truncated "
            "(the model never saw their ends)."
        )
    return lines


def chunking_lines(cells: list[dict[str, Any]]) -> list[str]:
    """One line per cell whose chunker called an LLM or fell back (``ChunkerStats``)."""
    lines = []
    for cell in cells:
        stats = cell.get("chunking")
        if not stats or not (stats.get("llm") or stats.get("fallbacks")):
            continue
        parts = []
        llm = stats.get("llm")
        if llm:
            parts.append(
                f"{llm['calls']} LLM calls ({llm['cache_hits']} cached, {llm['requests']} "
                f"requests, {llm['retries']} retries)"
            )
        if stats.get("fallbacks"):
            why = f": {stats['error']}" if stats.get("error") else ""
            parts.append(f"[yellow]{stats['fallbacks']} fallbacks[/]{why}")
        lines.append(f"{_short_chunker(cell['chunker'])}: " + ", ".join(parts))
    return lines


def results_tables(rows: list[dict[str, Any]]) -> list[Table]:
    """One table per (dataset, embedder): a row per chunker x k, the catalog's on-screen metrics
    in percent."""
    from chunkmark.metrics import METRICS

    shown = [m for m in METRICS if m.on_screen]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["embedder"]), []).append(r)
    tables = []
    for (dataset, embedder), group in groups.items():
        table = Table(
            title=f"{dataset} x {_short_embedder(embedder)}: percent, mean over questions",
            title_justify="left",
        )
        table.add_column("chunker", justify="left", overflow="fold")
        for name in ("k", "chunks", "tok/chunk", *(m.label for m in shown)):
            table.add_column(name, justify="right", no_wrap=True)
        for r in group:
            table.add_row(
                _short_chunker(r["chunker"]),
                str(r["k"]),
                str(r["n_chunks"]),
                f"{r['mean_chunk_tokens']:.0f}",
                *(_pct(r[f"{m.name}_mean"], m.digits) for m in shown),
            )
        tables.append(table)
    return tables


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"


def _short_chunker(spec: str) -> str:
    from chunkmark.chunkers import CHUNKERS

    return CHUNKERS.short(spec)


def _short_embedder(spec: str) -> str:
    from chunkmark.embedders import EMBEDDERS

    return EMBEDDERS.short(spec)
