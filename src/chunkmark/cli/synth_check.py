"""``chunkmark synth check SYNTHETIC --against REAL``: do the synthetic questions rank the cells
like the real ones? Printed before a grid is trusted to them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from chunkmark.cli import options

CHECK_HELP = "\n\n".join(
    [
        "Check synthetic questions against a few real ones before trusting a grid to them.",
        "SYNTHETIC and REAL are dataset folders over the same documents (the synthetic set "
        "generated from the real set's folder, say). Both are merged into one dataset, the real "
        "questions labelled metadata.source = human and the synthetic ones synthetic (or their "
        "own source), and a small grid runs on it (--chunker x --embedder; by default the "
        "suite's nine fast-grid chunkers x model2vec at the run's default settings).",
        "Prints, as 'chunkmark run' does after its recommendation: which questions the "
        "recommendation would rest on, each source's best cells, Kendall's tau between the "
        "synthetic and the real ranking with its 95% bootstrap interval, and the real set's own "
        "split-half ceiling. Writes the merged set and the grid to --out (a temporary folder, "
        "removed afterwards, when not given).",
    ]
)

Against = Annotated[
    Path,
    typer.Option("--against", help="The real questions: a dataset folder.", show_default=False),
]
Embedder = Annotated[str, typer.Option("--embedder", "-e", help="Embedder spec of the grid.")]
CheckOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Folder for the merged set and the grid (new or empty); default: a temporary one.",
        show_default=False,
    ),
]


def register(group: typer.Typer) -> None:
    """Add ``check`` to the ``synth`` command group."""
    group.command("check", help=CHECK_HELP)(check_command)


def check_command(
    synthetic: Annotated[
        Path, typer.Argument(help="The synthetic questions: a dataset folder.", show_default=False)
    ],
    against: Against,
    chunker: options.Chunkers = None,
    embedder: Embedder = "model2vec()",
    retrieval: options.Retrieval = None,
    out: CheckOut = None,
    cache_dir: options.CacheDir = None,
) -> None:
    from chunkmark.service.synth_check import check_against
    from chunkmark.suite.run import DEFAULT_CHUNKERS

    folder = out if out is not None else Path(tempfile.mkdtemp(prefix="chunkmark-synth-check-"))
    try:
        found = check_against(
            synthetic,
            against,
            folder,
            chunkers=chunker or DEFAULT_CHUNKERS,
            embedder=embedder,
            retrieval=retrieval or (),
            cache_dir=cache_dir,
        )
        if not found.checks:
            typer.echo("No check: the grid scored fewer than two cells.")
        for check in found.checks:
            for line in check.lines():
                typer.echo(line)
        if out is not None:
            typer.echo(f"Merged set: {found.dataset}; grid: {found.runs}")
    finally:
        if out is None:
            shutil.rmtree(folder, ignore_errors=True)
