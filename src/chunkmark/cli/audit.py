"""``chunkmark audit`` (score a live vector-store collection) and ``chunkmark export`` (write a
run's cell into a new collection)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from chunkmark.audit.stores import store_help
from chunkmark.cli import options

STORE_HELP = f"Store URI. {store_help()}."

AUDIT_HELP = """Score the chunks and vectors a vector-store collection already holds (Chroma,
Qdrant, LanceDB, pgvector), with the metrics, intervals, files and report of `chunkmark run`.

Each chunk is placed in its dataset document: by offsets stored in its metadata (LangChain's
start_index, LlamaIndex's start_char_idx/end_char_idx, chunkmark's chunkmark_start), checked
against the text; else by finding its text exactly, then with whitespace normalised, then
fuzzily (rapidfuzz, at least --fuzzy-threshold, flagged). The document is the one --doc-key
names in the metadata (its id, file name or file stem), else found by content. Chunks no way
places count as retrieved text that covers no excerpt.

Only the questions are embedded, with --embedder, which must be the model that filled the
collection; the corpus never is (the count printed is 0). Every --k is scored twice: top_k(k=K),
exact search over the stored vectors, and store(k=K), the store's own search as deployed (its
approximate index); OUT/audit.csv and the manifest's audit section hold what the index loses
per question and in total. Nothing is written into the collection.

Writes OUT/results.parquet, summary.csv, manifest.json, cells/, audit.csv and report.html."""

EXPORT_HELP = """Write one finished cell of a run into a new vector-store collection: its
chunks (span text, chunkmark_doc_id/chunkmark_start/chunkmark_end in the metadata) and the
vectors the run searched, read from the embedding cache (nothing is embedded). `chunkmark audit`
of the new collection gives the run's numbers back."""


def register(app: typer.Typer) -> None:
    app.command("audit", help=AUDIT_HELP)(audit)
    app.command("export", help=EXPORT_HELP)(export)


Store = Annotated[str, typer.Argument(metavar="STORE_URI", help=STORE_HELP, show_default=False)]


def audit(
    store: Store,
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            "-d",
            help="The dataset whose documents the collection was built from (a folder or "
            "built-in name), with questions and excerpts, e.g. from `chunkmark synth generate`.",
        ),
    ],
    embedder: Annotated[
        str,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec of the model that filled the collection; it embeds the questions only.",
        ),
    ],
    k: options.Depths = None,
    doc_key: Annotated[
        str | None,
        typer.Option(
            help="Metadata key holding each chunk's document (its dataset id, file name or "
            "stem), e.g. 'source'. [default: chunkmark_doc_id, else found by content]",
            show_default=False,
        ),
    ] = None,
    fuzzy_threshold: Annotated[
        float,
        typer.Option(
            min=0,
            max=100,
            help="Lowest rapidfuzz score (0-100) at which a chunk is placed fuzzily.",
        ),
    ] = 90.0,
    out: options.RunOut = None,
    cache_dir: options.CacheDir = None,
    no_cache: options.NoCache = False,
    no_report: options.NoReport = False,
    seed: Annotated[int, typer.Option(help="Seed for bootstrap intervals.")] = 0,
    json_out: options.Json = False,
    quiet: options.Quiet = False,
) -> None:
    from chunkmark.audit.collection import audit as run_audit
    from chunkmark.experiments.config import DEFAULT_K, parse_k
    from chunkmark.report import write_run_report

    console = Console(stderr=True, quiet=quiet or json_out, log_path=False)
    done = run_audit(
        store,
        dataset,
        embedder,
        k=DEFAULT_K if k is None else tuple(parse_k(k)),
        out=out,
        doc_key=doc_key,
        fuzzy_threshold=fuzzy_threshold,
        cache_dir=cache_dir,
        no_cache=no_cache,
        seed=seed,
        report=not no_report,
        progress=console.log,
        report_writer=write_run_report,
    )
    results, section = done.results, done.section
    if json_out:
        overall = results.overall()
        typer.echo(
            json.dumps({"audit": section, "summary": overall, "out": str(results.out)}, default=str)
        )
        return
    _print_audit(results, section, console)


def audit_lines(section: dict[str, Any]) -> list[str]:
    """The audit's facts on screen: placement, chunk embeddings, the store's search against
    exact search per k."""
    placed = section["placement"]
    total = section["chunks"]
    lines = [
        f"{section['address']}: {total} chunks placed by offsets {placed['offsets']}, exactly "
        f"{placed['exact']}, normalised {placed['normalised']}, fuzzily {placed['fuzzy']} "
        f"(flagged), unplaced {placed['unplaced']}.",
        f"Chunk embeddings computed: {section['chunk_embeddings']['computed']} "
        f"(texts asked of the embedder for chunks: {section['chunk_embeddings']['requested']}).",
    ]
    search = section.get("search", {})
    settings = ", ".join(f"{k}={v}" for k, v in search.items())
    lines.append(f"Store search: {settings}.")
    for row in section.get("ann", []):
        lines.append(
            f"k={row['k']}: the store's top {row['k']} holds {100 * row['chunks_recall_vs_exact']:.2f}% "
            f"of the exact top {row['k']}; recall {100 * row['recall_store']:.2f}% vs "
            f"{100 * row['recall_exact']:.2f}% exact ({100 * row['recall_lost']:.2f} points lost, "
            f"{row['questions_losing']} of {row['questions']} questions lose)."
        )
    return lines


def export(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="The --out folder of a finished run.")
    ],
    cell: Annotated[
        str,
        typer.Option(
            help="The cell: its id (or first characters, see manifest.json), a chunker spec "
            "naming one cell, or 'best' (the cell the run's report recommends)."
        ),
    ],
    to: Annotated[
        str, typer.Option("--to", metavar="STORE_URI", help=STORE_HELP, show_default=False)
    ],
    cache_dir: options.CacheDir = None,
    json_out: options.Json = False,
) -> None:
    from dataclasses import asdict

    from chunkmark.audit.export import export as run_export

    done = run_export(run_dir, cell, to, cache_dir)
    if json_out:
        typer.echo(json.dumps(asdict(done)))
        return
    from chunkmark.specs import short

    typer.echo(
        f"Exported cell {done.cell_id[:8]} ({done.dataset}: {short('chunker', done.chunker)} x "
        f"{short('embedder', done.embedder)}): "
        f"{done.chunks} chunks of {done.dimension} dimensions into the new {done.address}."
    )


if TYPE_CHECKING:  # the print-out of an audit reads the run it made
    from chunkmark.experiments.runner import Results


def _print_audit(results: Results, section: dict[str, Any], console: Console) -> None:
    """The run's tables and the audit's lines on stdout; the embedder's notes on ``console``."""
    from chunkmark.cli.run import embedding_lines, query_check_lines, results_tables

    screen = Console(width=None if sys.stdout.isatty() else 140)
    for table in results_tables(results.overall()):
        screen.print(table)
    for line in audit_lines(section):
        screen.print(line, markup=False, highlight=False, soft_wrap=True)
    for spec, entry in results.manifest["embedding"].items():
        for line in embedding_lines(spec, entry["stats"]):
            console.print(line)
    for line in query_check_lines(results.manifest["cells"]):
        console.print(line)
    files = "results.parquet, summary.csv, audit.csv, manifest.json"
    if "report" in results.files:
        files += ", report.html"
    screen.print(f"Files: {results.out}/ {files}", markup=False, highlight=False)
