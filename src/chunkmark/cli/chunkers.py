"""``chunkmark chunkers`` (the chunker listing), ``chunkmark chunkers diagnose`` (what chunk
boundaries do to excerpts and topics) and ``chunkmark chunk`` (chunk one file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chunkmark.chunkers import Chunk
from chunkmark.chunkers.diagnostics import (
    DEFAULT_TOLERANCE,
    DEFAULT_UNIT,
    Distribution,
)
from chunkmark.cli import listing, options
from chunkmark.errors import SpecError
from chunkmark.service import catalog
from chunkmark.service.replies import cut
from chunkmark.service.runs import Grid
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.service.chunking import DiagnosisRow

_PREVIEW_CHARS = 60


def register(app: typer.Typer) -> None:
    """Add the ``chunkers`` group (a listing; ``diagnose``) and the ``chunk`` command to the
    app."""
    group = typer.Typer(invoke_without_command=True, add_completion=False)
    group.callback()(chunkers_group)
    group.command("diagnose", help=DIAGNOSE_HELP)(diagnose_command)
    app.add_typer(group, name="chunkers")
    app.command("chunk")(chunk_file)


def chunkers_group(ctx: typer.Context, as_json: options.Json = False) -> None:
    """List the registered chunkers, their parameters and what they do.

    `chunkmark chunkers diagnose` measures what their boundaries do to excerpts and topics.
    """
    if ctx.invoked_subcommand is None:
        listing.show(catalog.chunkers(), as_json)


def chunk_file(
    file: Annotated[Path, typer.Argument(help="A UTF-8 text file.", show_default=False)],
    chunker: Annotated[
        str,
        typer.Option(
            "--chunker",
            "-c",
            help="Chunker spec, e.g. 'fixed_tokens(size=200, overlap=0)'.",
            show_default=False,
        ),
    ],
    as_json: options.Json = False,
    embedder: Annotated[
        str,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec for chunkers that embed (semantic chunkers); others ignore it.",
        ),
    ] = "sentence_transformers",
    cache_dir: options.CacheDir = None,
) -> None:
    """Chunk one file and show its chunks (character offsets into the file's text).

    With --json, only a JSON list of {"start", "end"}.
    """
    from chunkmark.service.chunking import chunk_file as chunked

    text, spec, chunks = chunked(file, chunker, embedder, cache_dir)
    if as_json:
        typer.echo(json.dumps([{"start": c.start, "end": c.end} for c in chunks]))
        return
    _print_chunks(chunks, text, str(spec), file, spec.kwargs.get("encoding", "cl100k_base"))


def _print_chunks(chunks: list[Chunk], text: str, spec: str, path: Path, encoding: Any) -> None:
    texts = [c.text(text) for c in chunks]
    try:
        tokens: list[int] | None = count_tokens(texts, str(encoding))
    except SpecError:  # the encoding cannot be loaded offline: show offsets only
        tokens = None
    table = Table(title=f"{spec} on {path.name}: {len(chunks)} chunks")
    for name in ("#", "start", "end") + (("tokens",) if tokens is not None else ()):
        table.add_column(name, justify="right")
    table.add_column("preview")
    for i, (chunk, chunk_text) in enumerate(zip(chunks, texts, strict=True)):
        row = [str(i), str(chunk.start), str(chunk.end)]
        if tokens is not None:
            row.append(str(tokens[i]))
        table.add_row(*row, Text(cut(chunk_text, _PREVIEW_CHARS)))
    Console().print(table)


# --- chunkmark chunkers diagnose ----------------------------------------------------------------

DIAGNOSE_HELP = """Show what each chunker's boundaries do, without a model or retrieval.

Per dataset and chunker: the share of excerpts cut by a chunk boundary (no single chunk holds
the excerpt whole), fragments per excerpt (how many chunks hold its characters), and chunk
lengths in characters and cl100k_base tokens (mean, p5/p50/p95, min-max). With --boundaries
STITCHED (a folder from `chunkmark datasets stitch`), also how the chunk boundaries agree with
its true topic boundaries: Pk and WindowDiff (nltk, over --unit-character units; lower is
better) and boundary precision/recall/F1 (a chunk start within --tolerance characters of a
topic start, one-to-one). Chunkers that embed use --embedder (cached). See docs/boundaries.md.
"""


def diagnose_command(
    config_file: Annotated[
        Path | None,
        typer.Argument(
            metavar="[EXPERIMENT]",
            help="Experiment YAML: its datasets, chunkers and first embedder (options given "
            "here win).",
            show_default=False,
        ),
    ] = None,
    dataset: options.Datasets = None,
    chunker: options.Chunkers = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec for chunkers that embed. [default: the experiment's first, "
            "all-MiniLM-L6-v2]",
            show_default=False,
        ),
    ] = None,
    boundaries: Annotated[
        Path | None,
        typer.Option(
            "--boundaries",
            help="A stitched dataset folder (chunkmark datasets stitch): compare chunk "
            "boundaries with its true topic boundaries. Diagnosed with the --dataset ones.",
            show_default=False,
        ),
    ] = None,
    tolerance: Annotated[
        int, typer.Option(help="Characters a chunk start may be from a topic start to match it.")
    ] = DEFAULT_TOLERANCE,
    unit: Annotated[
        int, typer.Option(help="Characters per unit of the Pk / WindowDiff segmentations.")
    ] = DEFAULT_UNIT,
    cache_dir: options.CacheDir = None,
    no_cache: options.NoCache = False,
    as_json: options.Json = False,
) -> None:
    from chunkmark.service.chunking import diagnose_grid

    if tolerance < 0 or unit < 1:
        raise SpecError(
            f"--tolerance {tolerance} / --unit {unit} are out of range.",
            "Give --tolerance 0 or more and --unit 1 or more (characters).",
        )
    names = list(dataset or [])
    if boundaries is not None and not names and config_file is None:
        names = [str(boundaries)]
    grid = Grid(names or None, chunker, [embedder] if embedder else None, experiment=config_file)
    config = grid.config(no_cache=no_cache, cache_dir=cache_dir)
    note = Console(stderr=True, highlight=False)
    rows = diagnose_grid(config, boundaries, tolerance, unit, note.print)
    if as_json:
        typer.echo(json.dumps([row.to_dict() for row in rows], indent=1))
        return
    _print_diagnoses(rows, tolerance, unit)


def _print_diagnoses(rows: list[DiagnosisRow], tolerance: int, unit: int) -> None:
    console = Console()
    many = len({row.dataset for row in rows}) > 1
    first = ("dataset", "chunker") if many else ("chunker",)
    title = "" if many else f" ({rows[0].dataset})" if rows else ""

    cuts = Table(title=f"Excerpts and chunk boundaries{title}")
    for name in first:
        cuts.add_column(name)
    for name in ("chunks", "excerpts", "cut", "fragments", "in 1", "in 2", "in 3+", "max", "s"):
        cuts.add_column(name, justify="right")
    lengths = Table(title=f"Chunk lengths: characters | cl100k tokens{title}")
    for name in first:
        lengths.add_column(name)
    for unit_name in ("chars", "tokens"):
        for stat in ("mean", "p5/p50/p95", "min-max"):
            lengths.add_column(f"{unit_name} {stat}", justify="right")
    for row in rows:
        d, e = row.diagnostics, row.diagnostics.excerpts
        head = [row.dataset, row.label] if many else [row.label]
        cuts.add_row(
            *head,
            str(d.chunks),
            str(e.excerpts),
            f"{e.cut_share:.1%}",
            f"{e.fragments.mean:.2f}",
            f"{e.share_with(1):.1%}",
            f"{e.share_with(2):.1%}",
            f"{e.share_with(3, or_more=True):.1%}",
            f"{e.fragments.max:.0f}",
            f"{row.seconds:.2f}",
        )
        cells = _distribution_cells(d.chars) + (
            _distribution_cells(d.tokens) if d.tokens is not None else ["-"] * 3
        )
        lengths.add_row(*head, *cells)
    console.print(cuts)
    console.print(lengths)
    agreeing = [(row, row.boundaries) for row in rows if row.boundaries is not None]
    if not agreeing:
        return
    table = Table(
        title=f"Agreement with true topic boundaries ({agreeing[0][0].dataset}; "
        f"F1 within {tolerance} characters; Pk, WindowDiff over {unit}-character units)"
    )
    table.add_column("chunker")
    for name in (
        "true",
        "chunk starts",
        "matched",
        "precision",
        "recall",
        "F1",
        "Pk",
        "WindowDiff",
    ):
        table.add_column(name, justify="right")
    for row, b in agreeing:
        table.add_row(
            row.label,
            str(b.true_boundaries),
            str(b.predicted_boundaries),
            str(b.matched),
            f"{b.precision:.3f}",
            f"{b.recall:.3f}",
            f"{b.f1:.3f}",
            f"{b.pk:.3f}",
            f"{b.windowdiff:.3f}",
        )
    console.print(table)


def _distribution_cells(d: Distribution) -> list[str]:
    return [f"{d.mean:.0f}", f"{d.p5:.0f}/{d.p50:.0f}/{d.p95:.0f}", f"{d.min:.0f}-{d.max:.0f}"]
