"""``chunkmark relations run`` (the grid plus relation metrics) and ``chunkmark relations
metrics`` (their definitions)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chunkmark.cli import listing, options
from chunkmark.cli.plan import cost_table, with_notes
from chunkmark.errors import ConfigError
from chunkmark.service import catalog
from chunkmark.service.runs import Grid
from chunkmark.specs import short

RUN_HELP = """Run the grid on a relation set's dataset (as `chunkmark run` does: summary.csv,
results.parquet, manifest.json, resumable with the same --out), then extract entity pairs from
every distinct chunking and score relation metrics per cell and retrieval setting.

--dataset RELATION_SET is a folder written by `chunkmark relations prepare`. Give the grid with
--chunker/--embedder/--k, or an EXPERIMENT file (its datasets are replaced by the relation
set). --extractor 'cooccurrence' (the default) is the oracle: every gold pair whose names both
occur in the chunk; "llm(llm='openai(model=\\"gpt-4o-mini\\")', gleanings=1)" asks an LLM.

Writes OUT/relations.csv (one row per chunker x embedder x retrieval setting: support
containment, extraction recall and mapped precision with directed and typed variants, recall
by support and sentence, RelRecall@k, RelPrecision@k, SupportRecall@k, each with its 95%
bootstrap interval, and the extraction's calls and tokens), a 'relations' section in
OUT/manifest.json and, unless --no-report, OUT/report.html with a Relations section. See
`chunkmark relations metrics` for the definitions.
"""


def add_commands(group: typer.Typer) -> None:
    """Add ``run`` and ``metrics`` to the ``relations`` command group."""
    group.command("run", help=options.help_text(RUN_HELP))(options.grouped(run))
    group.command("metrics")(list_relation_metrics)


RelationSetOption = Annotated[
    Path | None,
    typer.Option(
        "--dataset",
        "-d",
        metavar="RELATION_SET",
        help="The relation-set folder (from `chunkmark relations prepare`); it replaces "
        "the experiment's datasets.",
        show_default=False,
    ),
]
ExtractorOption = Annotated[
    str,
    typer.Option(
        help="Extractor spec: 'cooccurrence' (the oracle) or 'llm(llm=..., gleanings=...)' "
        "(see `chunkmark extractors`)."
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print each chunker's chunks and the extractor's calls, tokens and cost; "
        "ask and embed nothing.",
    ),
]
MaxCallsOption = Annotated[
    int | None,
    typer.Option(help="Stop before the extractor sends more than this many LLM requests."),
]


def run(
    *,
    config_file: options.ConfigFile = None,
    relation_set: RelationSetOption = None,
    chunker: options.Chunkers = None,
    embedder: options.Embedders = None,
    k: options.Depths = None,
    retrieval: options.Retrieval = None,
    extractor: ExtractorOption = "cooccurrence",
    out: options.RunOut = None,
    dry_run: DryRunOption = False,
    spend: options.SpendFlags,
    max_calls: MaxCallsOption = None,
    caches: options.CacheFlags,
    no_report: options.NoReport = False,
    seed: options.BootstrapSeed = None,
    quiet: options.Quiet = False,
) -> None:
    from chunkmark.relations.runner import ExtractorSetup, estimate_extraction, run_relations

    if relation_set is None:
        raise ConfigError(
            "`chunkmark relations run` needs the relation set.",
            "Add --dataset RELATION_SET (a folder written by `chunkmark relations prepare`).",
        )
    config = Grid([str(relation_set)], chunker, embedder, retrieval, k, config_file).config(
        **caches.settings(),
        **spend.settings(),
        out=out,
        seed=seed,
        report=False if no_report else None,
    )
    setup = ExtractorSetup(
        extractor, **caches.settings(), **spend.settings(), max_calls=max_calls, seed=config.seed
    )
    console = Console(stderr=True, quiet=quiet, log_path=False)
    screen = Console(width=None if sys.stdout.isatty() else 160)
    if dry_run:
        screen.print(estimate_table(estimate_extraction(relation_set, config, setup), extractor))
        console.print("Dry run: no request was made and nothing was embedded.")
        return
    results = run_relations(relation_set, config, setup, progress=console.log)
    for table in relation_tables(results.rows):
        screen.print(table)
    totals = results.section["totals"]
    counts = results.section["counts"]
    console.print(
        f"{counts['relations']} {results.section['support']} relations, {counts['pairs']} "
        f"pairs, {counts['entities']} entities; extraction: {totals['records']} records, "
        f"{totals['unmatched_names']} of {totals['names']} names unmatched, "
        f"{totals['malformed']} malformed, {totals['calls']} calls "
        f"({totals['cache_hits']} cached), {totals['input_tokens']:,} input and "
        f"{totals['output_tokens']:,} output tokens."
    )
    from chunkmark.cli.run import FAILED_EXIT, grid_summary

    files = "relations.csv, summary.csv, results.parquet, manifest.json"
    grid_summary(console, results.grid, "", files)
    if results.grid.failures:
        raise typer.Exit(FAILED_EXIT)


def relation_tables(rows: list[dict[str, Any]]) -> list[Table]:
    """One table per (dataset, embedder, retrieval k): a row per chunker, best support
    containment (then extraction recall) first, metrics in percent with their intervals."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["embedder"], r["retrieval"]), []).append(r)
    tables = []
    with_extraction = any("recall_mean" in r for r in rows)
    for (dataset, embedder, retrieval), group in groups.items():
        table = Table(
            title=f"{dataset} x {short('embedder', embedder)} x {short('retrieval', retrieval)}"
            f": relations, percent [95% interval] ({group[0]['support']} support, extractor "
            f"{group[0]['extractor']})",
            title_justify="left",
        )
        table.add_column("chunker", justify="left", overflow="fold")
        columns = ["support_containment", "support_recall"]
        if with_extraction:
            columns[1:1] = ["recall", "precision"]
            columns += ["rel_recall"]
        labels = {
            "support_containment": "contain",
            "recall": "recall",
            "precision": "prec.>=",
            "support_recall": "SupR@k",
            "rel_recall": "RelR@k",
        }
        for name in columns:
            table.add_column(labels[name], justify="right", no_wrap=True)
        for name in ("F1", "calls", "tokens") if with_extraction else ():
            table.add_column(name, justify="right")
        ranked = sorted(
            group,
            key=lambda r: (-_num(r.get("support_containment_mean")), -_num(r.get("recall_mean"))),
        )
        for r in ranked:
            cells = [short("chunker", r["chunker"])]
            cells += [_with_interval(r, name) for name in columns]
            if with_extraction:
                cells += [
                    _pct(r.get("f1")),
                    str(r.get("calls", "")),
                    f"{int(r.get('input_tokens', 0)) + int(r.get('output_tokens', 0)):,}",
                ]
            table.add_row(*cells)
        tables.append(table)
    return tables


def estimate_table(found: list[Any], extractor: str) -> Table:
    """The dry run: per chunker, its chunks and the extractor's calls, tokens and dollars."""
    numbers = ("chunks", "texts", "cached", "calls", "input tok", "output tok", "USD")
    table = cost_table(f"Dry run: extracting with {extractor}", ["chunker"], numbers)
    notes = []
    for item in found:
        e = item.estimate
        if e is None:
            name = short("chunker", item.chunker)
            if item.note:  # its chunks are unknown before it runs: the note says why
                notes.append(f"{name}: {item.note}")
                table.add_row(name, "?", *["?"] * 6)
            else:
                table.add_row(name, str(item.chunks), Text("no estimate: no model is called"))
            continue
        usd = "unknown price" if e.usd is None else f"{e.usd:.4f}-{e.usd_max:.4f}"
        table.add_row(
            short("chunker", item.chunker),
            str(item.chunks),
            str(e.texts),
            str(e.cached_calls),
            f"{e.calls}-{e.calls_max}",
            f"{e.input_tokens:,}-{e.input_tokens_max:,}",
            f"{e.output_tokens:,}-{e.output_tokens_max:,}",
            usd,
        )
    return with_notes(table, notes)


def list_relation_metrics(as_json: options.Json = False) -> None:
    """List the relation metrics of `chunkmark relations run`: column, unit, definition."""
    listing.show(catalog.relation_metrics(), as_json)


def _num(value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return -1.0
    return -1.0 if math.isnan(x) else x


def _pct(value: Any) -> str:
    x = _num(value)
    return "-" if x < 0 else f"{100 * x:.1f}"


def _with_interval(row: dict[str, Any], name: str) -> str:
    mean = row.get(f"{name}_mean")
    if _num(mean) < 0:
        return "-"
    low, high = row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    return f"{_pct(mean)} [{_pct(low)}-{_pct(high)}]"
