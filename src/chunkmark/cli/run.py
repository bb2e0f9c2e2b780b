"""``chunkmark run``: evaluate a grid and show the results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
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

from chunkmark.cli import options
from chunkmark.report.recommendation_text import recommendation_lines
from chunkmark.service.runs import run_grid
from chunkmark.specs import short

RUN_HELP = """Chunk, embed, retrieve and score: one cell per (dataset, chunker, embedder), every
retrieval setting and scoring option from one search per ranker.

A list in a spec is a grid: 'fixed_tokens(size=[200, 400], overlap=[0, 0.25])' is four cells
(an overlap below 1 is a fraction of size); zip(...) pairs lists instead. Retrieval settings:
top_k(k=...) (the default, at every --k), token_budget(tokens=...), threshold(min_similarity=...),
bm25(k=...), hybrid(fusion='rrf'|'convex', k=...), rerank(model=..., k=...); see
`chunkmark retrieval`.

Writes OUT/results.parquet (one row per question x cell x setting x scoring), OUT/summary.csv
(one row per cell x setting x scoring x scope) and OUT/manifest.json (resolved specs,
versions, fingerprints, timings, failures). Finished cells are kept in OUT/cells/: rerunning
with the same --out resumes. A cell that fails is recorded and the others go on; the run then
exits with status 3, and a rerun retries only the failed cells.

With `answers: {llm: ...}` in the experiment file, an LLM also answers each question that has
reference answers from every cell's retrieved context (and the whole document), scored by token
F1, exact match and label accuracy: OUT/answers.csv and answers_summary.csv (docs/answers.md).

--executor ray runs the cells on a Ray cluster (chunking and scoring as tasks, embedding as Ray
Data batch inference), with the same rows.
"""
FAILED_EXIT = 3

if TYPE_CHECKING:
    from chunkmark.experiments.runner import EmbedProgress, Results


def register(app: typer.Typer) -> None:
    app.command("run", help=RUN_HELP)(options.grouped(run))


ExcerptsOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Scoring: 'position' (an excerpt is found where it is) or 'text' (also in an identical copy elsewhere in its document); repeatable. [default: position]"
    ),
]
UnitOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Scoring: measure spans in 'chars' or cl100k 'tokens'; repeatable. [default: chars]"
    ),
]
DenominatorOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Scoring: 'sum' of retrieved chunk lengths (the reference's) or their 'union'; repeatable. [default: sum]"
    ),
]
ExecutorOption = Annotated[
    str | None,
    typer.Option(
        help="Where cells run: 'local' (this process) or 'ray' (a Ray cluster; needs the ray extra). Rows are the same. [default: local]"
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option(
        help="With --executor ray: the cluster for ray.init ('auto': the one on this machine; 'ray://HOST:10001': a remote one). [default: a local Ray started for this run]"
    ),
]


def run(
    *,
    grid: options.GridFlags,
    excerpts: ExcerptsOption = None,
    unit: UnitOption = None,
    denominator: DenominatorOption = None,
    spend: options.SpendFlags,
    out: options.RunOut = None,
    caches: options.CacheFlags,
    no_report: options.NoReport = False,
    seed: options.BootstrapSeed = None,
    executor: ExecutorOption = None,
    address: AddressOption = None,
    metric: options.RecommendMetric = None,
    pick_retrieval: options.RecommendRetrieval = None,
    min_p_best: options.MinPBest = 0.9,
    quiet: options.Quiet = False,
) -> None:
    scoring = {"excerpts": excerpts, "unit": unit, "denominator": denominator}
    config = grid.config(
        **caches.settings(),
        **spend.settings(),
        out=out,
        seed=seed,
        scoring={key: v for key, v in scoring.items() if v} or None,
        report=False if no_report else None,
        executor=executor,
    )
    if address is not None:
        config = config.model_copy(
            update={"ray": config.ray.model_copy(update={"address": address})}
        )
    console = Console(stderr=True, quiet=quiet, log_path=False)
    bar, embed_progress = _embedding_bar(console)
    with bar:
        results, asked = run_grid(
            config,
            console.log,
            embed_progress,
            metric=metric,
            retrieval=pick_retrieval,
            min_p_best=min_p_best,
        )
    screen = Console(width=None if sys.stdout.isatty() else 140)
    for table in results_tables(results.overall()):
        screen.print(table)
    _print_notes(results.manifest, console)
    took = f" in {results.manifest['timings']['wall']:.1f}s"
    grid_summary(console, results, took, "results.parquet, summary.csv, manifest.json")
    # The answer last: what the report recommends, then where the report is (no cell, no answer).
    finished = results.cells_computed + results.cells_resumed
    report_page = results.files.get("report")
    lines = recommendation_lines(results.out, report_page, asked) if finished else []
    for line in lines:
        screen.print(line, markup=False, highlight=False, soft_wrap=True)
    if results.failures:
        raise typer.Exit(FAILED_EXIT)


def _embedding_bar(console: Console) -> tuple[Progress, EmbedProgress]:
    """A progress bar on ``console``, and the ``embed_progress`` that draws each embedding."""
    spinner, text = SpinnerColumn(), TextColumn("{task.description}")
    counts = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    bar = Progress(spinner, text, *counts, console=console, transient=True)
    tasks: dict[str, TaskID] = {}

    def embed_progress(what: str, done: int, total: int) -> None:
        if what not in tasks:
            tasks[what] = bar.add_task(f"embedding {what}", total=total)
        bar.update(tasks[what], completed=done)

    return bar, embed_progress


def _print_notes(manifest: dict[str, Any], console: Console) -> None:
    """What the embedders, LLM chunkers, query checks and answers did."""
    for spec, entry in manifest["embedding"].items():
        for line in embedding_lines(short("embedder", spec), entry["stats"]):
            console.print(line)
    for line in chunking_lines(manifest["cells"]):
        console.print(line)
    for line in query_check_lines(manifest["cells"]):
        console.print(line)
    for line in answer_lines(manifest.get("answers")):
        console.print(line, highlight=False)


def grid_summary(console: Console, results: Results, took: str, files: str) -> None:
    """The cells computed, resumed and failed, where ``files`` are; each failure and how to
    retry; why report.html was not written."""
    failed = f", [bold red]{len(results.failures)}[/] failed" if results.failures else ""
    console.print(
        f"[bold]{results.cells_computed}[/] cells computed, [bold]{results.cells_resumed}[/] resumed"
        f"{failed}{took}. Files: {results.out}/{files}"
    )
    for line in failure_lines(results.failures) if results.failures else []:
        console.print(line)
    if results.report_error is not None:
        console.print(report_error_line(results.out, results.report_error), highlight=False)


def answer_lines(section: dict[str, Any] | None) -> list[str]:
    """With ``answers:``, one line per dataset x cell: the answer score (token F1, or label
    accuracy) with its interval, and the rank agreement of span and answer metrics."""
    if not section:
        return []
    lines = [f"answers ({escape(str(section.get('setting')))}; answers.csv, answers_summary.csv):"]
    for cell in section.get("cells") or []:
        name = short("chunker", cell["chunker"]) if cell.get("chunker") else "whole document"
        mean = cell.get("score_mean")
        ci = (cell.get("score_ci_low"), cell.get("score_ci_high"))
        shown = "n/a" if mean is None else f"{100 * mean:.1f}"
        if mean is not None and None not in ci:
            shown += f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
        tied = " (tied with the best)" if cell.get("tied_with_best") is True else ""
        lines.append(
            f"  {escape(cell['dataset'])}: {escape(name)}: answer score {shown} over "
            f"{cell.get('score_n', 0)} questions{tied}"
        )
    for entry in section.get("span_vs_answer") or []:
        tau = entry.get("recall") or {}
        value = tau.get("tau")
        lines.append(
            f"  {escape(entry['dataset'])}: Kendall's tau of recall vs answer score over "
            f"{entry['cells']} cells: "
            + (
                "n/a"
                if value is None
                else f"{value:+.2f} [{_signed(tau.get('ci_low'))}, {_signed(tau.get('ci_high'))}]"
            )
        )
    return lines


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def report_error_line(out: Path, error: str) -> str:
    """Why report.html was not written, and how to build it once the cause is fixed."""
    return (
        f"[bold yellow]report.html not written:[/] {escape(error)} The run's files are complete; "
        f"build the report later with: chunkmark report {escape(str(out))}"
    )


def failure_lines(failures: list[dict[str, Any]]) -> list[str]:
    """The failure summary: one line per failed cell, then how to retry."""
    lines = [f"[bold red]{len(failures)} cell(s) failed[/] (details in manifest.json and cells/):"]
    for f in failures:
        lines.append(
            f"  {f['dataset']}: {short('chunker', f['chunker'])} x {short('embedder', f['embedder'])}: "
            f"{f['error']}"
        )
    lines.append("Fix the cause and rerun with the same --out: only the failed cells run again.")
    return lines


def query_check_lines(cells: list[dict[str, Any]]) -> list[str]:
    """A warning per cell whose questions were no closer to their answers than shuffled ones,
    and a neutral note per cell with too few questions for the check to tell."""
    lines = []
    for cell in cells:
        check = cell.get("query_check")
        where = (
            f"{cell['dataset']}: {short('chunker', cell['chunker'])} x "
            f"{short('embedder', cell['embedder'])}"
        )
        if check and check.get("flagged"):
            lines.append(
                f"[yellow]warning:[/] {where}: questions are no closer to their answers "
                f"than shuffled questions (p={check['p_value']:.2g}); check the query embedder."
            )
        elif check and check.get("inconclusive"):
            lines.append(
                f"note: {where}: the query check cannot tell with {check['questions']} "
                f"questions (p={check['p_value']:.2g}); it needs {check['min_questions']} to "
                "tell a working query embedder from a broken one."
            )
    return lines


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
        lines.append(f"{short('chunker', cell['chunker'])}: " + ", ".join(parts))
    return lines


def results_tables(rows: list[dict[str, Any]]) -> list[Table]:
    """One table per (dataset, embedder, scoring): a row per chunker x retrieval setting, the
    catalog's on-screen metrics in percent."""
    from chunkmark.metrics import METRICS

    shown = [m for m in METRICS if m.on_screen]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        options = (
            r.get("excerpts", "position"),
            r.get("unit", "chars"),
            r.get("denominator", "sum"),
        )
        groups.setdefault((r["dataset"], r["embedder"], *options), []).append(r)
    tables = []
    for (dataset, embedder, *scoring), group in groups.items():
        how = "" if scoring == ["position", "chars", "sum"] else f" ({', '.join(scoring)})"
        table = Table(
            title=f"{dataset} x {short('embedder', embedder)}: percent, mean over questions{how}",
            title_justify="left",
        )
        table.add_column("chunker", justify="left", overflow="fold")
        table.add_column("retrieval", justify="left", overflow="fold")
        for name in ("chunks", "tok/chunk", "ctx tok", *(m.label for m in shown)):
            table.add_column(name, justify="right", no_wrap=True)
        for r in group:
            table.add_row(
                short("chunker", r["chunker"]),
                short("retrieval", r["retrieval"]),
                str(r["n_chunks"]),
                f"{r['mean_chunk_tokens']:.0f}",
                f"{r['mean_retrieved_tokens']:.0f}",
                *(_pct(r[f"{m.name}_mean"], m.digits) for m in shown),
            )
        tables.append(table)
    return tables


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"
