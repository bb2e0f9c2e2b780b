"""``chunkmark relations``: relation evaluation for Graph-RAG (``prepare`` builds a relation set)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.errors import DatasetError
from chunkmark.relations.redocred import (
    DEFAULT_DOCS_PER_CORPUS,
    REL_INFO_FILE,
    PrepareStats,
    ensure_redocred,
    prepare_redocred,
)


def register(app: typer.Typer) -> typer.Typer:
    """Add the ``relations`` command group to ``app`` and return the group (so that other
    modules can add commands to it)."""
    group = typer.Typer(
        help="Relation evaluation for Graph-RAG.",
        no_args_is_help=True,
        add_completion=False,
    )
    group.command("prepare")(prepare)
    app.add_typer(group, name="relations")
    return group


def prepare(
    out: Annotated[
        Path,
        typer.Option("--out", help="Folder to write the relation set into.", show_default=False),
    ],
    redocred: Annotated[
        Path | None,
        typer.Option(
            "--redocred",
            help="A Re-DocRED file (e.g. test_revised.json). Without it the test split is "
            "downloaded from github.com/tonytan48/Re-DocRED into the cache.",
            show_default=False,
        ),
    ] = None,
    rel_info: Annotated[
        Path | None,
        typer.Option(
            "--rel-info",
            help=f"Property id -> label file (default: {REL_INFO_FILE} beside --redocred).",
            show_default=False,
        ),
    ] = None,
    docs: Annotated[
        int | None,
        typer.Option("--docs", min=1, help="Documents to draw (default: all).", show_default=False),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed for drawing and order.")] = 0,
    docs_per_corpus: Annotated[
        int,
        typer.Option("--docs-per-corpus", min=1, help="Documents joined into each corpus file."),
    ] = DEFAULT_DOCS_PER_CORPUS,
    force: Annotated[
        bool, typer.Option("--force", help="Write into a non-empty --out folder.")
    ] = False,
) -> None:
    """Turn Re-DocRED into a relation set: corpus files, entities, relations and one question
    per relation, every mention and support span checked against the text.

    Documents are drawn and shuffled with --seed and joined --docs-per-corpus at a time into
    corpus files, so retrieval meets distractors. Same inputs and --seed, same files.
    """
    if out.exists() and not out.is_dir():
        raise DatasetError(f"--out {out} is a file.", "Give a folder for the relation set.")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise DatasetError(
            f"--out {out} is not empty.", "Give a new or empty folder, or add --force."
        )
    console = Console(soft_wrap=True, highlight=False)
    source = redocred if redocred is not None else ensure_redocred(progress=console.print)
    relation_set, stats = prepare_redocred(
        source,
        out,
        rel_info=rel_info,
        docs=docs,
        seed=seed,
        docs_per_corpus=docs_per_corpus,
    )
    console.print(_counts_table(stats))
    console.print(
        f"ok: checked every mention ({stats.mentions_checked:,}) and support span "
        f"({stats.supports_checked:,}) against the text; {out} loads as relation set "
        f"{relation_set.name} with {len(relation_set.dataset.questions):,} questions, "
        f"fingerprint {relation_set.dataset.fingerprint}"
    )


def _counts_table(stats: PrepareStats) -> Table:
    table = Table("what", "count", title="relation set")
    rows = [
        ("documents", stats.documents),
        ("corpus files", stats.corpus_files),
        ("sentences", stats.sentences),
        ("entities", stats.entities),
        ("mentions (distinct spans)", stats.mentions),
        ("mentions repeating a span (merged)", stats.mentions_merged),
        ("relations", stats.relations),
        ("  support: evidence sentences", stats.evidence),
        ("  support: smallest sentence window", stats.window),
        ("  head and tail in one sentence", stats.same_sentence),
        ("  head and tail only in different sentences", stats.cross_sentence),
        ("duplicate relations skipped", stats.duplicates_skipped),
        ("self-relations skipped", stats.self_relations_skipped),
    ]
    for label, value in rows:
        table.add_row(label, f"{value:,}")
    return table
