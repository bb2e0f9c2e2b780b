"""``chunkmark compare``: two cells of one or more runs, paired over the same questions, at one
retrieval setting and one scoring (:mod:`chunkmark.report.compare`), as a table or JSON."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import options
from chunkmark.metrics import METRICS
from chunkmark.metrics.selection import QuestionsNeeded
from chunkmark.report.compare import Cell, CellComparison, compare_cells, p_text
from chunkmark.specs import short


def register(app: typer.Typer) -> None:
    """Add the ``compare`` command to the app."""
    app.command("compare")(compare)


AOption = Annotated[
    str,
    typer.Option(
        "--a",
        help="Cell A: a chunker or an embedder spec (with --pick-chunker/--pick-embedder "
        "to pin the other part when several cells match); or a retrieval setting of the "
        "runs, with --b another: one cell's two settings compared.",
        show_default=False,
    ),
]
ExcerptsOption = Annotated[
    str | None,
    typer.Option(
        "--pick-excerpts",
        help="The scoring compared: excerpts matched by position or text. [default: position]",
        show_default=False,
    ),
]
UnitOption = Annotated[
    str | None,
    typer.Option(
        "--pick-unit",
        help="The scoring compared: counted in chars or tokens. [default: chars]",
        show_default=False,
    ),
]
DenominatorOption = Annotated[
    str | None,
    typer.Option(
        "--pick-denominator",
        help="The scoring compared: precision over the sum or union. [default: sum]",
        show_default=False,
    ),
]
ChunkerOption = Annotated[
    str | None,
    typer.Option(
        "--pick-chunker",
        help="Pin the chunker of both cells (comparing embedders).",
        show_default=False,
    ),
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--pick-embedder",
        help="Pin the embedder of both cells (comparing chunkers).",
        show_default=False,
    ),
]


def compare(
    runs: options.Runs,
    a: AOption,
    b: Annotated[str, typer.Option("--b", help="Cell B, the same way.", show_default=False)],
    metric: Annotated[str, typer.Option(help="The metric compared.")] = "iou",
    retrieval: options.PickRetrieval = None,
    k: options.PickK = None,
    excerpts: ExcerptsOption = None,
    unit: UnitOption = None,
    denominator: DenominatorOption = None,
    chunker: ChunkerOption = None,
    embedder: EmbedderOption = None,
    dataset: options.PickDataset = None,
    permutations: options.Permutations = 10_000,
    alpha: Annotated[float, typer.Option(help="Significance level of the verdict.")] = 0.05,
    seed: options.DrawSeed = 0,
    as_json: options.Json = False,
) -> None:
    """Is cell A better than cell B? The paired difference over the same questions, its 95%
    interval, the randomisation test's p-value (t-test and Wilcoxon beside it), a verdict, and
    how many questions would give 80% power to detect a difference that large (none below half
    a point: decide on cost).

    With --a 'bm25(k=5)' --b 'top_k(k=5)' (two retrieval settings of the runs), one cell is
    compared at the two settings: pin it with --pick-chunker and --pick-embedder.

    The --pick-... options choose which rows of the runs are compared; they never add to a
    grid (that is what run's --chunker, --embedder, --retrieval and --k do).
    """
    found = compare_cells(
        runs,
        a,
        b,
        metric=metric,
        retrieval=retrieval,
        k=k,
        excerpts=excerpts or "position",
        unit=unit or "chars",
        denominator=denominator or "sum",
        chunker=chunker,
        embedder=embedder,
        dataset=dataset,
        permutations=permutations,
        alpha=alpha,
        seed=seed,
    )
    if as_json:
        typer.echo(json.dumps(found.to_dict(), indent=2))
        return
    _print(found)
    if found.needed is not None:
        Console().print(
            f"[bold]questions needed:[/] {questions_line(found.needed, found.result.n)}"
        )


def _print(found: CellComparison) -> None:
    result, a, b, settings = found.result, found.a, found.b, found.settings
    where = "at two retrieval settings" if settings else f"with {found.retrieval}"
    title = f"{a[0]}: {METRICS[found.metric].label} {where}, {result.n} paired question"
    title += "s" * (result.n != 1)
    if not found.scoring.is_default:
        title += f" ({found.scoring.label})"
    table = Table(title=title)
    table.add_column("", style="bold")
    table.add_column("retrieval" if settings else "cell")
    table.add_column("mean", justify="right")
    names = (short("retrieval", settings[0]), short("retrieval", settings[1])) if settings else None
    table.add_row("A", names[0] if names else _cell(a), f"{100 * result.mean_a:.2f}")
    table.add_row("B", names[1] if names else _cell(b), f"{100 * result.mean_b:.2f}")
    console = Console()
    if settings:
        console.print(f"cell: {_cell(a)}", markup=False, highlight=False)
    console.print(table)
    console.print(
        f"A - B = {100 * result.difference:+.2f} points, {100 * result.level:.0f}% interval "
        f"[{100 * result.ci_low:+.2f}, {100 * result.ci_high:+.2f}] (paired bootstrap); "
        f"p = {p_text(result.p_permutation)} (sign-flip randomisation, {result.permutations:,} "
        f"flips), t-test p = {p_text(result.p_ttest)}, Wilcoxon p = {p_text(result.p_wilcoxon)}; "
        f"A wins {result.wins}, ties {result.ties}, loses {result.losses}"
    )
    console.print(f"[bold]verdict:[/] {found.verdict}")


def questions_line(needed: QuestionsNeeded, n: int) -> str:
    """How many paired questions would detect a difference as large as the one observed."""
    if needed.n is None:
        return (
            f"no realistic number of questions would separate A and B ({needed.reason}): "
            "decide on cost"
        )
    return (
        f"about {needed.n:,} paired questions would detect a difference of "
        f"{100 * abs(needed.difference):.2f} points with {100 * needed.power:.0f}% power at "
        f"alpha {needed.alpha:g} ({needed.method}; these cells share {n})"
    )


def _cell(cell: Cell) -> str:
    return f"{short('chunker', cell[1])} x {short('embedder', cell[2])}"
