"""``chunkmark report``: one self-contained HTML page from one or more results folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

REPORT_HELP = """Write one HTML file (it opens from disk, offline): a recommendation computed from
the numbers, a sortable leaderboard, interactive plots, paired comparisons and an inspector of
chunks, excerpts and rankings. A run also writes it as OUT/report.html.
"""


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to the app."""
    app.command("report", help=REPORT_HELP)(report)


def report(
    runs: Annotated[
        list[Path], typer.Argument(help="Results folders of `chunkmark run` (one or more).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    metric: Annotated[
        str, typer.Option(help="The metric the recommendation and comparisons use.")
    ] = "iou",
    k: Annotated[
        str | None, typer.Option(help="The k they use. [default: 5, else the first]")
    ] = None,
    token_budget: Annotated[
        float,
        typer.Option(help="Tokens retrieved per question for 'best recall within a budget'."),
    ] = 1000.0,
    prices: Annotated[
        Path | None,
        typer.Option(
            help="Embedding prices (YAML or JSON: 'models: {name: dollars per 1M tokens}'), "
            "replacing or adding to the shipped table."
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(help="Significance level of the tests.")] = 0.05,
    permutations: Annotated[
        int, typer.Option(help="Sign flips of each randomisation test.")
    ] = 10_000,
    bootstrap: Annotated[
        int, typer.Option(help="Resamples of each paired-bootstrap interval.")
    ] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the permutation and bootstrap draws.")] = 0,
    title: Annotated[str | None, typer.Option(help="The page's title.")] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="html (the report), or the leaderboard as markdown, latex or csv on stdout "
            "(with --k, only that k).",
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
        _export(runs, fmt, k, prices, mlflow)
        return

    options = ReportOptions(
        metric=metric,
        k=k,
        token_budget=token_budget,
        prices=prices,
        alpha=alpha,
        permutations=permutations,
        bootstrap=bootstrap,
        seed=seed,
        title=title,
    )
    result = build_report(runs, out, options)
    console = Console(stderr=True)
    for rec in result.recommendations:
        if rec.best is None:
            continue
        cells = result.data.cells
        best, cheap = (
            cells[rec.best.cell],
            cells[rec.cheapest_tied.cell] if rec.cheapest_tied else None,
        )
        line = (
            f"{rec.dataset}: best {rec.metric} at k={rec.k}: {best.label} "
            f"({100 * rec.best.mean:.2f}%)"
        )
        if cheap is not None and cheap.index != best.index:
            line += f"; cheapest tied with it: {cheap.label}"
        if rec.budget is not None:
            line += (
                f"; best recall within {rec.token_budget:g} tokens: "
                f"{cells[rec.budget.cell].label} at k={rec.budget.k}"
            )
        console.print(line, markup=False, highlight=False)
    for note in result.data.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    console.print(
        f"report written to {result.path} ({result.bytes / 1e6:.1f} MB in {result.seconds:.1f}s)",
        markup=False,
        highlight=False,
    )
    if mlflow is not None:
        from chunkmark.report.exports import log_to_mlflow

        ids = log_to_mlflow(result.data, result.path, mlflow)
        console.print(f"logged {len(ids)} cells to MLflow at {mlflow}", markup=False)


def _export(
    runs: list[Path], fmt: str, k: str | None, prices: Path | None, mlflow: str | None
) -> None:
    """The leaderboard as markdown, LaTeX or CSV on stdout (and to MLflow when asked)."""
    from chunkmark.errors import ConfigError
    from chunkmark.report.data import load_runs
    from chunkmark.report.exports import FORMATS, export_table, log_to_mlflow
    from chunkmark.report.prices import load_prices

    if fmt not in FORMATS:
        raise ConfigError(
            f"Unknown --format {fmt!r}.", f"Use html or one of: {', '.join(FORMATS)}."
        )
    data = load_runs(runs, load_prices(prices) if prices is not None else None)
    if k is not None and k not in data.ks:
        raise ConfigError(f"k={k} is not in the runs.", f"Use one of: {', '.join(data.ks)}.")
    typer.echo(export_table(data, fmt, k), nl=False)
    if mlflow is not None:
        ids = log_to_mlflow(data, None, mlflow)
        Console(stderr=True).print(f"logged {len(ids)} cells to MLflow at {mlflow}", markup=False)
