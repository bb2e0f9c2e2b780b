"""``chunkmark report``: one self-contained HTML page from one or more results folders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from chunkmark.cli import options

if TYPE_CHECKING:
    from chunkmark.report import Report

REPORT_HELP = """Write OUT/report.html, one HTML file (it opens from disk, offline): a
recommendation computed from the numbers, a sortable leaderboard, interactive plots, paired
comparisons and an inspector of chunks, excerpts and rankings. A run also writes it as
OUT/report.html.

The --pick-... options choose which rows of the runs the recommendation reads; they never add
to a grid (that is what run's --retrieval and --k do). --prices adds to the embedding price
table behind the cost columns.
"""


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to the app."""
    app.command("report", help=REPORT_HELP)(report)


def report(
    runs: options.Runs,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder to write report.html into (created if missing)."),
    ] = Path("."),
    metric: Annotated[
        str | None,
        typer.Option(
            help="The metric the recommendation and comparisons use. [default: recall at the "
            "first token_budget(...) setting when the runs hold one, else iou at top_k(k=5)]",
            show_default=False,
        ),
    ] = None,
    retrieval: options.PickRetrieval = None,
    k: options.PickK = None,
    max_context_tokens: Annotated[
        float,
        typer.Option(
            "--max-context-tokens",
            help="The report's pick 'best recall within N context tokens': cells whose mean "
            "retrieved tokens per question are at most this (it filters cells; the "
            "token_budget(tokens=...) retrieval setting cuts each question's context instead).",
        ),
    ] = 1000.0,
    prices: options.Prices = None,
    alpha: Annotated[float, typer.Option(help="Significance level of the tests.")] = 0.05,
    permutations: options.Permutations = 10_000,
    bootstrap: Annotated[
        int, typer.Option(help="Resamples of each paired-bootstrap interval.")
    ] = 10_000,
    seed: options.DrawSeed = 0,
    min_p_best: options.MinPBest = 0.9,
    title: Annotated[str | None, typer.Option(help="The page's title.")] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="html (the report), or the leaderboard as markdown, latex or csv on stdout "
            "(with --pick-retrieval or --pick-k, only that setting).",
        ),
    ] = "html",
    mlflow: Annotated[
        str | None,
        typer.Option(
            help="Also log every cell (params, metrics at every k, the report) to this MLflow "
            "tracking URI (needs the mlflow extra).",
        ),
    ] = None,
) -> None:
    """Build the HTML report and print what it recommends."""
    from chunkmark.report import ReportOptions, build_report

    if fmt != "html":
        _export(runs, fmt, retrieval, k, prices, mlflow)
        return

    settings = ReportOptions(
        metric=metric,
        retrieval=retrieval,
        k=k,
        max_context_tokens=max_context_tokens,
        prices=prices,
        alpha=alpha,
        permutations=permutations,
        bootstrap=bootstrap,
        seed=seed,
        title=title,
        min_p_best=min_p_best,
    )
    result = build_report(runs, out / "report.html", settings)
    console = Console(stderr=True)
    _print_recommendations(result, console)
    if mlflow is not None:
        from chunkmark.report.exports import log_to_mlflow

        ids = log_to_mlflow(result.data, result.path, mlflow)
        console.print(f"logged {len(ids)} cells to MLflow at {mlflow}", markup=False)


def _print_recommendations(result: Report, console: Console) -> None:
    """One line per dataset: the best cell, the cheapest tied with it, the best within the
    budget; then the failures, the notes and where the page went."""
    from chunkmark.report.settings import Scoring

    short = result.data.short_retrievals()
    for rec in result.recommendations[:1]:
        console.print(
            f"retrieval {rec.retrieval}; scoring {Scoring.from_key(rec.scoring).label}",
            markup=False,
            highlight=False,
        )
    for rec in result.recommendations:
        if rec.best is None:
            continue
        cells = result.data.cells
        best, cheap = (
            cells[rec.best.cell],
            cells[rec.cheapest_tied.cell] if rec.cheapest_tied else None,
        )
        line = (
            f"{rec.dataset}: best {rec.metric} with {short[rec.retrieval]}: {best.label} "
            f"({100 * rec.best.mean:.2f}%, P(best) {rec.p_best_of(rec.best.option):.2f})"
        )
        if rec.winner is None and len(rec.best.tied) > 1:
            line += (
                f"; no single winner ({rec.verdict}): choose on cost among the "
                f"{len(rec.best.tied)} tied"
            )
        elif rec.winner is None and rec.top_two is not None:
            line += f"; no single winner: P(best) below {rec.min_p_best:g}, none tied with it"
        if cheap is not None and cheap.index != best.index:
            line += f"; cheapest tied with it: {cheap.label}"
        if rec.winner is None and rec.top_two is not None:
            needed = rec.top_two.needed
            line += (
                f"; questions to separate the top two: {needed.n:,}"
                if needed.n is not None
                else "; no realistic number of questions would separate the top two: decide on cost"
            )
        if rec.budget is not None:
            line += (
                f"; best recall within {rec.max_context_tokens:g} context tokens: "
                f"{cells[rec.budget.cell].label}"
            )
        console.print(line, markup=False, highlight=False)
    for failure in result.data.failures:
        console.print(
            f"failed: {failure.dataset}: {failure.chunker} x {failure.embedder}: {failure.error}",
            markup=False,
            highlight=False,
        )
    for note in result.data.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    console.print(
        f"report written to {result.path} ({result.bytes / 1e6:.1f} MB in {result.seconds:.1f}s)",
        markup=False,
        highlight=False,
    )


def _export(
    runs: list[Path],
    fmt: str,
    retrieval: str | None,
    k: str | None,
    prices: Path | None,
    mlflow: str | None,
) -> None:
    """The leaderboard as markdown, LaTeX or CSV on stdout (and to MLflow when asked)."""
    from chunkmark.report.exports import export_runs, log_to_mlflow

    data, table = export_runs(runs, fmt, retrieval, k, prices)
    typer.echo(table, nl=False)
    if mlflow is not None:
        ids = log_to_mlflow(data, None, mlflow)
        Console(stderr=True).print(f"logged {len(ids)} cells to MLflow at {mlflow}", markup=False)
