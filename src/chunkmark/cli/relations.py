"""``chunkmark relations``: relation evaluation for Graph-RAG (``prepare`` builds a relation set:
gold from Re-DocRED, or silver from any dataset with ``--silver``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import options
from chunkmark.errors import ConfigError
from chunkmark.relations.redocred import (
    DEFAULT_DOCS_PER_CORPUS,
    REL_INFO_FILE,
    PrepareStats,
    ensure_redocred,
    prepare_redocred,
)

if TYPE_CHECKING:
    from chunkmark.relations.extract import ExtractionEstimate, LLMExtractor
    from chunkmark.relations.silver import SilverStats


def register(app: typer.Typer) -> typer.Typer:
    """Add the ``relations`` command group to ``app`` and return the group (so that other
    modules can add commands to it)."""
    group = typer.Typer(
        help="Relation evaluation for Graph-RAG.",
        no_args_is_help=True,
        add_completion=False,
    )
    group.command("prepare", help=options.help_text(prepare.__doc__))(options.grouped(prepare))
    app.add_typer(group, name="relations")
    return group


OutOption = Annotated[Path, options.out_folder("Folder to write the relation set into.")]
RedocredOption = Annotated[
    Path | None,
    typer.Option(
        "--redocred",
        help="A Re-DocRED file (e.g. test_revised.json). Without it the test split is "
        "downloaded from github.com/tonytan48/Re-DocRED into the cache.",
        show_default=False,
    ),
]
RelInfoOption = Annotated[
    Path | None,
    typer.Option(
        "--rel-info",
        help=f"Property id -> label file (default: {REL_INFO_FILE} beside --redocred).",
        show_default=False,
    ),
]
DocsOption = Annotated[
    int | None,
    typer.Option("--docs", min=1, help="Documents to draw (default: all).", show_default=False),
]
SeedOption = Annotated[
    int,
    typer.Option(
        "--seed", help="Random seed for drawing and order; with --silver, the LLM's seed."
    ),
]
DocsPerCorpusOption = Annotated[
    int,
    typer.Option("--docs-per-corpus", min=1, help="Documents joined into each corpus file."),
]
SilverOption = Annotated[
    str | None,
    typer.Option(
        "--silver",
        metavar="DATASET",
        help="Build a silver set from this dataset (a folder, or a built-in name such as "
        "demo) instead of Re-DocRED: relations are those --llm extracts from each "
        "question's excerpts.",
        show_default=False,
    ),
]
LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        metavar="SPEC",
        help="With --silver: the LLM that extracts, e.g. \"openai(model='gpt-4o-mini')\".",
        show_default=False,
    ),
]
GleaningsOption = Annotated[
    int | None,
    typer.Option(
        "--gleanings",
        min=0,
        max=2,
        help="With --silver: extra rounds asking for missed records, 0 (the default) to 2.",
        show_default=False,
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="With --silver: print the calls, tokens and cost of extracting; ask nothing, "
        "write nothing.",
    ),
]
MaxCallsOption = Annotated[
    int | None,
    typer.Option(
        "--max-calls",
        min=0,
        help="With --silver: stop before sending more than this many LLM requests.",
        show_default=False,
    ),
]


def prepare(
    *,
    out: OutOption,
    redocred: RedocredOption = None,
    rel_info: RelInfoOption = None,
    docs: DocsOption = None,
    seed: SeedOption = 0,
    docs_per_corpus: DocsPerCorpusOption = DEFAULT_DOCS_PER_CORPUS,
    force: options.Force = False,
    silver: SilverOption = None,
    llm: LlmOption = None,
    gleanings: GleaningsOption = None,
    dry_run: DryRunOption = False,
    spend: options.SpendFlags,
    max_calls: MaxCallsOption = None,
    caches: options.CacheFlags,
) -> None:
    """Build a relation set: corpus files, entities, relations and one question per relation,
    every mention and support span checked against the text.

    From Re-DocRED (the default, or --redocred FILE): documents are drawn and shuffled with
    --seed and joined --docs-per-corpus at a time into corpus files, so retrieval meets
    distractors. Same inputs and --seed, same files.

    With --silver DATASET --llm SPEC: the documents stay as they are; the LLM reads each
    distinct excerpt of the questions once (answers are cached, so a rerun asks nothing), the
    names it writes that occur in the document become entities, and its relationship records
    between them become relations supported by their excerpts (support 'silver'), one
    templated question each. --max-cost, --prices, --cache-dir and --no-cache apply to a silver
    set only:
    --max-cost refuses to start above the estimate and stops before a request would cross it.
    """
    if silver is not None:
        _refuse_redocred_options(redocred, rel_info, docs)
        if llm is None:
            raise ConfigError(
                "--silver needs the LLM that extracts the relations.",
                "Add --llm SPEC, e.g. --llm \"openai(model='gpt-4o-mini')\".",
            )
        if not dry_run:
            options.check_out_folder(out, force, "the relation set")
        from chunkmark.relations.silver import silver_extractor

        extractor = silver_extractor(
            llm,
            gleanings=gleanings or 0,
            **caches.settings(),
            max_calls=max_calls,
            max_cost=None if dry_run else spend.max_cost,
            seed=seed,
            price_file=spend.price_file,
        )
        _prepare_silver(silver, out, extractor, dry_run=dry_run, max_cost=spend.max_cost)
        return
    _refuse_silver_options(
        llm=llm,
        gleanings=gleanings,
        dry_run=dry_run,
        max_cost=spend.max_cost,
        prices=spend.price_file,
        max_calls=max_calls,
        **caches.settings(),
    )
    options.check_out_folder(out, force, "the relation set")
    console = Console(soft_wrap=True, highlight=False)
    source = redocred if redocred is not None else ensure_redocred(progress=console.print)
    relation_set, stats = prepare_redocred(
        source, out, rel_info=rel_info, docs=docs, seed=seed, docs_per_corpus=docs_per_corpus
    )
    console.print(_counts_table(stats))
    console.print(
        f"ok: checked every mention ({stats.mentions_checked:,}) and support span "
        f"({stats.supports_checked:,}) against the text; {out} loads as relation set "
        f"{relation_set.name} with {len(relation_set.dataset.questions):,} questions, "
        f"fingerprint {relation_set.dataset.fingerprint}"
    )


def _refuse_redocred_options(
    redocred: Path | None, rel_info: Path | None, docs: int | None
) -> None:
    given = [
        name
        for name, value in (("--redocred", redocred), ("--rel-info", rel_info), ("--docs", docs))
        if value is not None
    ]
    if given:
        raise ConfigError(
            f"--silver and {', '.join(given)} were both given: a relation set comes from one "
            "source, a dataset read by an LLM (--silver) or Re-DocRED (--redocred).",
            f"Drop --silver to build from Re-DocRED, or drop {', '.join(given)}.",
        )


def _refuse_silver_options(**given: object) -> None:
    names = [f"--{k.replace('_', '-')}" for k, v in given.items() if v not in (None, False)]
    if names:
        raise ConfigError(
            f"{', '.join(names)} only apply to a silver set, and --silver was not given.",
            "Add --silver DATASET --llm SPEC, or drop those options to build from Re-DocRED.",
        )


def _prepare_silver(
    source: str, out: Path, extractor: LLMExtractor, *, dry_run: bool, max_cost: float | None
) -> None:
    from chunkmark.datasets import load_dataset
    from chunkmark.relations.silver import estimate_silver, prepare_silver

    console = Console(soft_wrap=True, highlight=False)
    if dry_run:
        dataset = load_dataset(source)
        estimate = estimate_silver(dataset, extractor)
        console.print(_estimate_table(estimate, len(dataset.questions)))
        console.print("Dry run: no request was made and nothing was written.")
        return
    relation_set, stats = prepare_silver(
        source, out, extractor, max_cost=max_cost, progress=console.print
    )
    console.print(_silver_table(stats))
    console.print(
        f"ok: {out} loads as silver relation set {relation_set.name} with "
        f"{len(relation_set.dataset.questions):,} questions, fingerprint "
        f"{relation_set.dataset.fingerprint}"
    )


def _estimate_table(estimate: ExtractionEstimate, questions: int) -> Table:
    usd = "unknown price" if estimate.usd is None else f"{estimate.usd:.4f}-{estimate.usd_max:.4f}"
    rows = [
        ("questions", f"{questions:,}"),
        ("distinct excerpt texts", f"{estimate.texts:,}"),
        ("answers in the cache", f"{estimate.cached_calls:,}"),
        ("calls", f"{estimate.calls:,}-{estimate.calls_max:,}"),
        ("input tokens", f"{estimate.input_tokens:,}-{estimate.input_tokens_max:,}"),
        ("output tokens", f"{estimate.output_tokens:,}-{estimate.output_tokens_max:,}"),
        ("USD", usd),
    ]
    return _what_table(f"dry run: extracting with {estimate.model}", rows)


def _silver_table(stats: SilverStats) -> Table:
    rows = [
        ("documents", stats.documents),
        ("questions read", stats.questions),
        ("excerpts", stats.excerpts),
        ("  distinct excerpts", stats.distinct_excerpts),
        ("  distinct excerpt texts", stats.texts),
        ("calls", stats.calls),
        ("cache hits", stats.cache_hits),
        ("input tokens", stats.input_tokens),
        ("output tokens", stats.output_tokens),
        ("malformed records", stats.malformed),
        ("answers without completion marker", stats.incomplete),
        ("names", stats.names),
        ("  entities (name in the text)", stats.entities),
        ("  names dropped (not in the text)", stats.names_dropped),
        ("mentions", stats.mentions),
        ("relationship records", stats.relation_records),
        ("  dropped (an end not in the text)", stats.records_dropped),
        ("  duplicates merged", stats.duplicates_merged),
        ("relations", stats.relations),
        ("  head and tail in one sentence", stats.same_sentence),
    ]
    return _what_table("silver relation set", [(label, f"{value:,}") for label, value in rows])


def _counts_table(stats: PrepareStats) -> Table:
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
    return _what_table("relation set", [(label, f"{value:,}") for label, value in rows])


def _what_table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table("what", "count", title=title)
    for label, value in rows:
        table.add_row(label, value)
    return table
