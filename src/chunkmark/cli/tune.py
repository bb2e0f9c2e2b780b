"""``chunkmark tune``: a Bayesian search over the ranges of an experiment's chunker specs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import options

if TYPE_CHECKING:
    from chunkmark.experiments.tune import TuneResult

DEFAULT_RETRIEVAL = "top_k(k=5)"  # chunkmark.experiments.tune's, imported late: the CLI starts fast

TUNE_HELP = """Search chunker parameters for the best retrieval, one cell per trial.

Give ranges or lists in the experiment's chunker specs, e.g.
'fixed_tokens(size=range(100, 1000, 50), overlap=range(0, 0.5))'; Optuna's TPE sampler
(seeded) picks a setting per trial. The objective is --metric at --pick-retrieval (mean over
questions, then datasets); a trial whose recall there is below --recall-floor is infeasible
and ranked below every feasible one. Every trial is an ordinary cell in OUT/cells/, so a rerun
with the same --seed and --out replays the trials without recomputing. Writes the usual
results.parquet, summary.csv, manifest.json and report, plus OUT/tune.json (the trial history;
--json prints it).
Needs the tune extra: pip install 'chunkmark[tune]'.
"""


def register(app: typer.Typer) -> None:
    """Add the ``tune`` command to the app."""
    app.command("tune", help=TUNE_HELP)(options.grouped(tune))


def tune(
    *,
    config_file: Annotated[
        Path,
        typer.Argument(
            metavar="EXPERIMENT",
            help="Experiment YAML whose chunkers hold range(...) or lists.",
            show_default=False,
        ),
    ],
    trials: Annotated[int, typer.Option(help="Number of trials.", show_default=False)],
    metric: Annotated[str, typer.Option(help="The metric maximised.")] = "iou",
    retrieval: Annotated[
        str | None,
        typer.Option(
            "--pick-retrieval",
            help="The retrieval setting whose score is the objective (one of the experiment's). "
            f"[default: {DEFAULT_RETRIEVAL}]",
            show_default=False,
        ),
    ] = None,
    recall_floor: Annotated[
        float,
        typer.Option(
            help="Least recall (0 to 1) of a feasible trial at --pick-retrieval; 0: none."
        ),
    ] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the sampler.")] = 0,
    spend: options.SpendFlags,
    out: Annotated[
        Path | None, typer.Option(help="Results folder. [default: results/tune-DATE-TIME]")
    ] = None,
    dataset: options.Datasets = None,
    caches: options.CacheFlags,
    no_report: options.NoReport = False,
    as_json: options.Json = False,
    quiet: options.Quiet = False,
) -> None:
    from chunkmark.answers.analysis import answer_analyses
    from chunkmark.experiments.tune import tune as run_tune
    from chunkmark.report import write_run_report

    given: dict[str, Any] = {"out": out, "datasets": dataset or None, "cache_dir": caches.cache_dir}
    given |= {
        "price_file": spend.price_file,
        "no_cache": caches.no_cache or None,
        "report": False if no_report else None,
    }
    overrides = {key: value for key, value in given.items() if value is not None}
    console = Console(stderr=True, quiet=quiet or as_json, log_path=False)
    result = run_tune(
        config_file,
        trials,
        metric=metric,
        retrieval=retrieval or DEFAULT_RETRIEVAL,
        recall_floor=recall_floor,
        seed=seed,
        max_cost=spend.max_cost,
        overrides=overrides,
        progress=console.log,
        report_writer=write_run_report,
        analyses_for=answer_analyses,
    )
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
        return
    screen = Console(width=None if sys.stdout.isatty() else 160)
    screen.print(history_table(result))
    for line in best_lines(result):
        screen.print(line)
    console.print(
        f"[bold]{result.cells_computed}[/] cells computed, [bold]{result.cells_resumed}[/] "
        f"resumed. Files: {result.out}/tune.json, summary.csv, results.parquet, manifest.json"
    )


def history_table(result: TuneResult) -> Table:
    """One row per trial: its chunker spec, the metric and recall in percent, its state."""
    from chunkmark.chunkers import CHUNKERS

    s = result.settings
    best = result.best
    table = Table(
        title=f"{s.trials} trials: {s.metric} and recall at {result.retrieval}, percent "
        f"(recall floor {100 * s.recall_floor:g})",
        title_justify="left",
    )
    table.add_column("#", justify="right")
    table.add_column("chunker", justify="left", overflow="fold")
    for name in (s.metric, "recall"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("", justify="left", no_wrap=True)
    for t in result.trials:
        spec = CHUNKERS.short(t.chunker) if t.chunker else _params(t.params)
        if t.state == "failed":
            note = f"[red]failed[/]: {t.error}"
        elif t.state == "infeasible":
            note = "[yellow]infeasible[/]"
        else:
            note = "[bold green]best[/]" if best is not None and t.number == best.number else ""
        if t.repeat_of is not None:
            note = f"{note} (= #{t.repeat_of + 1})".strip()
        elif t.resumed:
            note = f"{note} (resumed)".strip()
        table.add_row(str(t.number + 1), spec, _pct(t.value), _pct(t.recall), note)
    return table


def best_lines(result: TuneResult) -> list[str]:
    """The best feasible setting (or why there is none), and why the search stopped early."""
    s = result.settings
    best = result.best
    lines = []
    if best is None:
        lines.append(
            f"[yellow]No trial reached recall {s.recall_floor:g} at {result.retrieval}[/]: "
            "lower --recall-floor, widen the ranges or add trials."
        )
    else:
        lines.append(
            f"best: [bold]{best.chunker}[/] (trial {best.number + 1}): {s.metric} "
            f"{_pct(best.value)}, recall {_pct(best.recall)} at {result.retrieval}"
        )
        lines.append(f"params: {_params(best.params)}")
    if result.stopped:
        lines.append(f"[yellow]stopped early[/]: {result.stopped}")
    return lines


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.2f}"


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())
