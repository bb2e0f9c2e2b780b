"""``chunkmark suite``: one grid over the suite's sets, and the leaderboard that reads it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from chunkmark.cli import options, suite_leaderboard
from chunkmark.experiments.runner import Results
from chunkmark.suite import sets as suite_sets
from chunkmark.suite.run import GRIDS, own_sets, run_suite


def register(app: typer.Typer) -> None:
    """Add the ``suite`` command group to ``app``."""
    group = typer.Typer(add_completion=False, no_args_is_help=True)
    group.callback()(suite_group)
    group.command("run")(options.grouped(run_command))
    suite_leaderboard.register(group)
    app.add_typer(group, name="suite")


def progress_console() -> Console:
    """Where the suite's progress goes (stderr): the lines of `chunkmark run`'s runner carry
    rich markup (a warning's colour), which is rendered, as `chunkmark run` renders it."""
    return Console(soft_wrap=True, highlight=False, stderr=True)


def suite_group() -> None:
    """The benchmark suite: seven sets of human- and LLM-marked evidence (docs/suite.md).

    `chunkmark suite run` runs one grid over the sets; `chunkmark suite leaderboard` turns the
    results into a leaderboard page and table.
    """


SetNames = Annotated[
    list[str] | None,
    typer.Argument(
        help="The sets to run (default: suite, all seven, or none when --dataset is given): "
        + ", ".join(suite_sets.names())
        + ".",
        show_default=False,
        metavar="[SET...]",
    ),
]
OwnDatasets = Annotated[
    list[Path] | None,
    typer.Option(
        "--dataset",
        "-d",
        help="A dataset folder of your own (Chroma or JSONL layout), repeatable: a set named "
        "by its folder, run whole beside the SETs given (instead of the suite when none is).",
        metavar="FOLDER",
        show_default=False,
    ),
]
SuiteOut = Annotated[
    Path,
    typer.Option(
        "--out",
        help="The suite folder: one results folder per set, suite.json and combined.csv.",
    ),
]
GridName = Annotated[
    str,
    typer.Option(
        "--grid",
        help="default: fixed tokens 128-1024, recursive 256/512, sentences, paragraphs, "
        "cluster_semantic x MiniLM, MiniLM with late chunking, model2vec; fast: the same "
        "chunkers x model2vec only. Both read top_k(5), dense token budgets 512/1024/2048 "
        "and BM25 and hybrid at 1024 tokens.",
    ),
]
DocsPerSet = Annotated[
    int | None,
    typer.Option(
        "--docs",
        min=1,
        help="Documents to draw per set (default: a per-set sample of about 100k-500k "
        "characters; see docs/suite.md).",
        show_default=False,
    ),
]
Full = Annotated[bool, typer.Option("--full", help="Run the full sets (hours on a laptop).")]
Seed = Annotated[int, typer.Option("--seed", help="Random seed for drawing documents.")]
WriteReports = Annotated[bool, typer.Option("--report", help="Write each set's report.html too.")]


def run_command(
    *,
    names: SetNames = None,
    datasets: OwnDatasets = None,
    out: SuiteOut = Path("results/suite"),
    grid: GridName = "default",
    chunkers: options.Chunkers = None,
    embedders: options.Embedders = None,
    from_dir: options.FromDir = None,
    docs: DocsPerSet = None,
    full: Full = False,
    seed: Seed = 0,
    report: WriteReports = False,
    cache_dir: options.CacheDir = None,
    spend: options.SpendFlags,
    as_json: options.Json = False,
    quiet: options.Quiet = False,
) -> None:
    """Run one grid over the suite's sets, one results folder per set (resumable).

    Each set is converted first if needed (downloaded at its pinned commit, or from --from);
    --dataset adds a folder of your own, so your data sits beside the suite's sets in one
    leaderboard (`chunkmark suite leaderboard OUT`). A set whose questions are asked of one
    document each searches only that document (the in_document ranker); the others search
    their corpus. --chunker and --embedder replace the
    grid's chunkers or embedders. A set that fails is one line and the
    others go on (exit code 1).
    """
    if grid not in GRIDS:
        raise typer.BadParameter(f"{grid!r} is not a suite grid: use one of {', '.join(GRIDS)}.")
    if full and docs is not None:
        raise typer.BadParameter("--full and --docs contradict each other: give one of them.")
    console = progress_console()
    say = (lambda line: None) if quiet else console.print
    wanted = suite_sets.expand(names or ([] if datasets else [suite_sets.SUITE]))
    own = own_sets(datasets or [], taken=wanted)  # checked before anything is downloaded
    started = time.perf_counter()
    sets, failures = suite_sets.for_run(
        wanted, docs=docs, full=full, seed=seed, from_dir=from_dir, progress=say
    )
    for name, line in failures.items():
        console.print(f"failed: {escape(name)}: {escape(line)}")
    sets.extend(own)
    writer = None
    if report:
        from chunkmark.report import write_run_report

        writer = write_run_report
    result = run_suite(
        sets,
        out,
        GRIDS[grid].replacing(chunkers or (), embedders or ()),
        cache_dir=cache_dir,
        report_writer=writer,
        progress=say,
        **spend.settings(),
    )
    for name, line in result.failures.items():
        console.print(f"failed: {escape(name)}: {escape(line)}")
    summary = result.summary(grid, list(failures), time.perf_counter() - started)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        for line in summary_lines(summary, result.results):
            typer.echo(line)
    if summary["failed"]:
        raise typer.Exit(code=1)


def summary_lines(summary: dict[str, Any], results: dict[str, Results]) -> list[str]:
    """What a suite run did, as lines: the cells, each set's folder, the leaderboard command."""
    computed, resumed = summary["cells_computed"], summary["cells_resumed"]
    ran = len(summary["sets"])
    lines = [
        f"{ran} set{'s' if ran != 1 else ''} run with the {summary['grid']} grid in "
        f"{summary['seconds']:.1f} s: {computed} cells computed, {resumed} resumed."
    ]
    for name, folder in summary["sets"].items():
        failed = len(results[name].failures)
        note = f", {failed} failed cells" if failed else ""
        lines.append(f"{name}: {folder} ({summary['scopes'][name]} scope{note})")
    if summary["failed"]:
        lines.append(f"Failed: {', '.join(summary['failed'])} (the lines above say why).")
    if ran:
        lines.append(f"Leaderboard: chunkmark suite leaderboard {summary['out']}")
    return lines
