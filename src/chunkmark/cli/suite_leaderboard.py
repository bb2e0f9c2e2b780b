"""``chunkmark suite leaderboard``: the suite's leaderboard (markdown and one offline HTML page)
from a suite folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from chunkmark.cli import options

LEADERBOARD_HELP = """Write OUT/leaderboard.md and OUT/leaderboard.html (one self-contained page
that opens from disk, offline) from a folder of `chunkmark suite run`.

Per set: recall, IoU and containment recall of every chunker x embedder x retrieval setting with
their 95% bootstrap intervals, at equal token budgets, and the chunks, tokens embedded and index
time. Across sets, at --budget tokens: the mean rank with a bootstrap interval, how often each
cell is tied with the best (Holm-adjusted paired permutation tests), Kendall's tau between the
sets, the share of the variance the set, embedder, chunker and retrieval setting explain, and
Spearman's rho of the chunk diagnostics against recall and IoU. Each set's winner beside the
board's pick; on the page, recall against token budget per set for the top cells and every
cell's rank in every set as a heatmap (plotly.js inside the page: needs the report extra).
See docs/suite.md.
"""


def leaderboard_command(
    suite_dir: Annotated[
        Path,
        typer.Argument(
            metavar="SUITE_DIR", help="Folder of `chunkmark suite run` (holds suite.json)."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder to write leaderboard.md and leaderboard.html into. [default: SUITE_DIR]",
        ),
    ] = None,
    budget: Annotated[
        int, typer.Option(help="Token budget (of the suite's settings) the cells are ranked at.")
    ] = 1024,
    metric: Annotated[
        str, typer.Option(help="The metric cells are ranked by: recall, iou or containment_recall.")
    ] = "recall",
    resamples: Annotated[
        int, typer.Option(min=100, help="Bootstrap resamples of every interval.")
    ] = 1000,
    add: Annotated[
        list[Path] | None,
        typer.Option(
            "--add",
            metavar="FOLDER",
            help="Another `chunkmark suite run` folder over the board's sets and samples (say, a "
            'closed model\'s: `suite run -e "openai(...)"`), repeatable: its cells join the '
            "board, with the model, versions and cost they were run with.",
            show_default=False,
        ),
    ] = None,
    permutations: options.Permutations = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation draws.")] = 0,
    as_json: options.Json = False,
    quiet: options.Quiet = False,
) -> None:
    """Build the suite's leaderboard and print its top cells."""
    from chunkmark.report.data import short_name
    from chunkmark.suite.leaderboard import build_leaderboard, write_leaderboard
    from chunkmark.suite.render import summary

    console = Console(stderr=True)

    def say(message: str) -> None:
        if not quiet and not as_json:
            console.print(message, markup=False)

    board = build_leaderboard(
        suite_dir,
        budget=budget,
        metric=metric,
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        progress=say,
        add=add or [],
    )
    files = write_leaderboard(board, out if out is not None else suite_dir)
    if as_json:
        typer.echo(json.dumps(summary(board, files), indent=2))
        return
    typer.echo(
        f"Top {len(board.top)} of {len(board.ranking)} cells at {budget:,} tokens, by mean rank of {metric} over {len(board.sets)} sets:"
    )
    for i, row in enumerate(board.top, 1):
        rank = row.mean_rank
        typer.echo(
            f"{i}. {short_name('chunker', row.chunker)} x {short_name('embedder', row.embedder)} x "
            f"{row.setting}: mean rank {rank.value:.2f} "
            f"[{rank.low:.2f}, {rank.high:.2f}], tied with the best in {row.tied_sets} of {row.sets} sets"
        )
    for a in board.added:
        cost = "no price known" if a.cost is None else f"${a.cost:.4f}"
        typer.echo(
            f"added: {short_name('embedder', a.embedder)} from {a.folder} on "
            f"{len(a.sets)} sets, {a.tokens_embedded:,} tokens embedded, {cost}"
        )
    for note in board.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"wrote {files['markdown']} and {files['html']}")


def register(group: typer.Typer) -> None:
    """Add ``leaderboard`` to the ``suite`` command group."""
    group.command("leaderboard", help=options.help_text(LEADERBOARD_HELP))(leaderboard_command)
