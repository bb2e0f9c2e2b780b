"""``chunkmark synth filter`` and ``chunkmark synth inspect``: clean a question set, look at it."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import options

if TYPE_CHECKING:
    from chunkmark.embedders.cache import CachedEmbedder
    from chunkmark.synth.filter import FilterResult
    from chunkmark.synth.inspect import Inspection

FILTER_HELP = """Drop weak and repeated questions, as Chroma's method does; keep every score.

Steps, in order: (1) drop a question when ANY of its excerpts has a cosine with it below
--excerpt-threshold; (2) per document, drop exact duplicates (same text after stripping; the
first is kept); (3) per document, in file order, keep a question and drop every later one whose
cosine with a kept one is above --duplicate-threshold. --min-question-tokens and --drop-copied
(off by default) run between steps 2 and 3.

Writes the kept set to OUT in the layout it read (a Chroma set's question ids become row
numbers: OUT/manifest.json maps each question to its output_id) and OUT/manifest.json with the
settings and every question's scores and the step that dropped it. The 0.36 / 0.78 defaults
were set for OpenAI's text-embedding-3-large; other models may call for other thresholds.
"""

INSPECT_HELP = """Describe a question set, and how much keyword search alone already solves.

Shows questions per document, excerpts per question, excerpt lengths (characters and
cl100k_base tokens), where excerpts start in their documents (start / document length), the
share of each document the excerpts cover, the share of a question's words its excerpts hold
(lexical overlap), the share of questions BM25's top chunk already answers (over the chunks
--chunker cuts; --scope document searches each question's own document, as the suite's sets
are searched), and the nearest question pairs (--embedder; --no-embed skips them).

--compare REFERENCE measures a second set (human questions about the same documents, say) the
same way and prints the two side by side.

--json prints one JSON object (schema chunkmark.synth.inspect/1, described in
chunkmark.synth.inspect; the reference set under "reference").
"""


class InspectScope(str, Enum):
    """Where ``synth inspect``'s keyword baseline searches."""

    auto = "auto"
    corpus = "corpus"
    document = "document"


class ExcerptKind(str, Enum):
    """How excerpts are embedded by ``synth filter``."""

    query = "query"
    document = "document"


_STEP_LABELS = {
    "excerpt": "weak excerpt",
    "exact_duplicate": "exact dup",
    "short": "short",
    "copied": "copied",
    "near_duplicate": "near dup",
}


def register(group: typer.Typer) -> None:
    """Add ``filter`` and ``inspect`` to the ``synth`` command group."""
    group.command("filter", help=FILTER_HELP)(filter_command)
    group.command("inspect", help=INSPECT_HELP)(inspect_command)


def filter_command(
    dataset: options.DatasetArg,
    embedder: Annotated[
        str,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec, e.g. 'sentence_transformers(model=\"all-MiniLM-L6-v2\")'.",
            show_default=False,
        ),
    ],
    out: Annotated[Path, options.out_folder("Folder for the kept set and manifest.json.", "-o")],
    excerpt_threshold: Annotated[
        float,
        typer.Option(help="Drop a question when an excerpt's cosine with it is below this."),
    ] = 0.36,
    duplicate_threshold: Annotated[
        float,
        typer.Option(help="Drop a question whose cosine with a kept one is above this."),
    ] = 0.78,
    excerpt_kind: Annotated[
        ExcerptKind,
        typer.Option(
            help="How excerpts are embedded: 'query' (as the question, like the reference, which "
            "makes no query/document distinction) or 'document'."
        ),
    ] = ExcerptKind.query,
    min_question_tokens: Annotated[
        int | None,
        typer.Option(
            help="Also drop questions with fewer cl100k tokens than this (default: off).",
            show_default=False,
        ),
    ] = None,
    drop_copied: Annotated[
        bool,
        typer.Option(
            "--drop-copied",
            help="Also drop questions that repeat --copied-words consecutive words of one of "
            "their excerpts (case-insensitive).",
        ),
    ] = False,
    copied_words: Annotated[
        int, typer.Option(help="The run of words --drop-copied looks for.")
    ] = 8,
    cache_dir: options.CacheDir = None,
    no_cache: options.NoCache = False,
) -> None:
    from chunkmark.datasets import load_dataset
    from chunkmark.synth.filter import (
        FilterSettings,
        check_output,
        dataset_layout,
        filter_questions,
        write_filtered,
    )

    settings = FilterSettings(
        excerpt_threshold=excerpt_threshold,
        duplicate_threshold=duplicate_threshold,
        excerpt_kind=excerpt_kind.value,
        min_question_tokens=min_question_tokens,
        drop_copied=drop_copied,
        copied_words=copied_words,
    )
    folder, layout = dataset_layout(dataset)
    check_output(out, folder)
    data = load_dataset(dataset)
    cached, spec = _embedder(embedder, cache_dir, no_cache)
    result = filter_questions(data, cached, settings)
    about = {
        "input": {
            "source": dataset,
            "layout": layout,
            "name": data.name,
            "fingerprint": data.fingerprint,
            "questions": len(data.questions),
        },
        "embedder": {"spec": spec, "identity": cached.identity()},
    }
    write_filtered(result, out, layout, source=folder, about=about)
    _print_filter_report(result, out, layout)


def _embedder(spec: str, cache_dir: Path | None, no_cache: bool) -> tuple[CachedEmbedder, str]:
    """The embedder ``spec`` names behind the embedding cache, and its canonical spec."""
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache, resolve_cache_dir

    inner, canonical = EMBEDDERS.build(spec)  # cheap: models load on first use
    cache = None if no_cache else EmbeddingCache(resolve_cache_dir(cache_dir))
    return CachedEmbedder(inner, cache), str(canonical)


def _print_filter_report(result: FilterResult, out: Path, layout: str) -> None:
    """The per-document table of removals on stdout, then a total line and notes on stderr."""
    table = removal_table(result)
    Console(width=None if sys.stdout.isatty() else 140).print(table)
    totals = result.totals()
    removed = ", ".join(
        f"{totals[s]} {_STEP_LABELS[s]}" for s in result.settings.steps() if totals[s]
    )
    notes = Console(stderr=True, highlight=False, soft_wrap=True)
    notes.print(
        f"total: {totals['questions']} questions, removed {totals['questions'] - totals['kept']}"
        f"{f' ({removed})' if removed else ''}, kept {totals['kept']}; wrote {out} ({layout} "
        "layout) and manifest.json"
    )
    if layout == "chroma":
        notes.print(
            "note: the Chroma layout has no question ids, so the kept questions are renumbered "
            "by row; manifest.json gives each question's output_id."
        )


def removal_table(result: FilterResult) -> Table:
    """One row per document: questions, how many each step removed, how many are kept."""
    settings = result.settings
    labels = {
        **_STEP_LABELS,
        "excerpt": f"excerpt < {settings.excerpt_threshold:g}",
        "near_duplicate": f"near dup > {settings.duplicate_threshold:g}",
        "short": f"< {settings.min_question_tokens} tokens",
        "copied": f"copied {settings.copied_words}+ words",
    }
    steps = settings.steps()
    table = Table(title="questions removed by each step, per document", title_justify="left")
    table.add_column("document", overflow="fold")
    for name in ("questions", *(labels[s] for s in steps), "kept"):
        table.add_column(name, justify="right")
    rows = result.removed()
    for doc_id, row in rows.items():
        table.add_row(doc_id, *(str(row[k]) for k in ("questions", *steps, "kept")))
    totals = result.totals()
    table.add_section()
    table.add_row("total", *(str(totals[k]) for k in ("questions", *steps, "kept")))
    return table


def inspect_command(
    dataset: options.DatasetArg,
    as_json: options.Json = False,
    chunker: Annotated[
        str,
        typer.Option(
            "--chunker", "-c", help="Chunker spec cutting the documents for the BM25 baseline."
        ),
    ] = "fixed_tokens(size=200, overlap=0)",
    embedder: Annotated[
        str,
        typer.Option("--embedder", "-e", help="Embedder spec for the nearest question pairs."),
    ] = 'sentence_transformers(model="all-MiniLM-L6-v2")',
    no_embed: Annotated[
        bool, typer.Option("--no-embed", help="Skip the nearest question pairs (no embedding).")
    ] = False,
    pairs: Annotated[int, typer.Option(min=1, help="How many nearest pairs to show.")] = 10,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            help="A reference set (a dataset folder or built-in name, e.g. the human questions "
            "about the same documents) measured the same way and shown beside this one.",
            show_default=False,
        ),
    ] = None,
    scope: Annotated[
        InspectScope,
        typer.Option(
            "--scope",
            help="Where the BM25 baseline searches: corpus (one index of every chunk), document "
            "(each question's own document), or auto: document when every question (of the "
            "--compare set, if given) is marked metadata.scope 'document', else corpus.",
        ),
    ] = InspectScope.auto,
    cache_dir: options.CacheDir = None,
    no_cache: options.NoCache = False,
) -> None:
    from chunkmark.chunkers import ChunkerContext
    from chunkmark.datasets import load_dataset
    from chunkmark.paths import resolve_cache_dir
    from chunkmark.synth.inspect import inspect_dataset

    data = load_dataset(dataset)
    reference = None if compare is None else load_dataset(compare)
    cached, _ = _embedder(embedder, cache_dir, no_cache)
    context = ChunkerContext(
        embedder=cached, cache_dir=None if no_cache else resolve_cache_dir(cache_dir)
    )
    result = inspect_dataset(
        data,
        chunker=chunker,
        embedder=None if no_embed else cached,
        pairs=pairs,
        context=context,
        reference=reference,
        scope=None if scope is InspectScope.auto else scope.value,
    )
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    for line in inspection_lines(result):
        typer.echo(line)


def inspection_lines(result: Inspection) -> list[str]:
    """The plain-text report of ``inspect``."""
    data = result.to_dict()
    totals = data["totals"]
    keyword = result.keyword
    where = (
        "searching each question's own document"
        if keyword.scope == "document"
        else "searching the whole corpus"
    )
    lines = [
        f"dataset {result.dataset} (fingerprint {result.fingerprint}): {totals['documents']} "
        f"documents, {totals['questions']} questions, {totals['excerpts']} excerpts",
        "",
        *_document_lines(result),
        "",
        "excerpts per question: "
        + ", ".join(f"{k}: {v}" for k, v in data["excerpts_per_question"]["counts"].items())
        + f" (mean {data['excerpts_per_question']['mean']:.2f})",
        "excerpt length (characters): " + _distribution(data["excerpt_length"]),
        "excerpt length (cl100k_base tokens): " + _distribution(data["excerpt_tokens"]),
        "excerpt position (start / document length): "
        + _distribution(data["excerpt_position"], ".3f"),
        "lexical overlap (share of a question's words in its excerpts): "
        + _distribution(data["lexical_overlap"], ".3f"),
        f"covered by some excerpt: {_pct(result.coverage)} of all document characters",
        f"BM25 top chunk answers {keyword.answered} of {keyword.questions} "
        f"questions ({_pct(keyword.share)}), over {keyword.chunks} chunks of "
        f"{keyword.chunker}, {where}",
    ]
    if result.reference is not None:
        lines += ["", *comparison_lines(result, result.reference)]
    if result.nearest_pairs is not None:
        lines += ["", f"nearest question pairs ({result.embedder}):"]
        for pair in result.nearest_pairs:
            lines.append(f"  {pair.cosine:.3f}  [{pair.first_doc}] {pair.first}: {pair.first_text}")
            lines.append(f"         [{pair.second_doc}] {pair.second}: {pair.second_text}")
    return lines


def comparison_lines(result: Inspection, reference: Inspection) -> list[str]:
    """The two sets side by side: medians with their quartiles, means and shares."""
    rows: list[tuple[str, str, str]] = [
        ("documents", str(len(result.documents)), str(len(reference.documents))),
        ("questions", str(result.questions), str(reference.questions)),
    ]
    ours, theirs = result.to_dict(), reference.to_dict()
    for label, key, fmt in (
        ("questions per document", "questions_per_document", "g"),
        ("excerpt characters", "excerpt_length", "g"),
        ("excerpt tokens", "excerpt_tokens", "g"),
        ("excerpt position", "excerpt_position", ".2f"),
        ("lexical overlap", "lexical_overlap", ".2f"),
    ):
        rows.append((label, _median_iqr(ours[key], fmt), _median_iqr(theirs[key], fmt)))
    mean = "excerpts_per_question"
    rows.append(
        (
            "excerpts per question (mean)",
            f"{ours[mean]['mean']:.2f}",
            f"{theirs[mean]['mean']:.2f}",
        )
    )
    rows.append(("covered by some excerpt", _pct(result.coverage), _pct(reference.coverage)))
    rows.append(
        ("answered by BM25's top chunk", _pct(result.keyword.share), _pct(reference.keyword.share))
    )
    first = max(len(r[0]) for r in rows)
    second = max(len(result.dataset), *(len(r[1]) for r in rows))
    lines = [
        f"beside the reference set {reference.dataset} (fingerprint {reference.fingerprint}); "
        "median [q1, q3]:",
        f"  {'':<{first}}  {result.dataset:<{second}}  {reference.dataset}",
    ]
    lines += [f"  {a:<{first}}  {b:<{second}}  {c}" for a, b, c in rows]
    return lines


def _median_iqr(values: dict[str, Any], fmt: str) -> str:
    return f"{values['median']:{fmt}} [{values['q1']:{fmt}}, {values['q3']:{fmt}}]"


def _document_lines(result: Inspection) -> list[str]:
    """A fixed-width table: one row per document."""
    width = max([8, *(len(d.id) for d in result.documents)])
    lines = [
        f"{'document':<{width}}  {'characters':>10}  {'questions':>9}  {'excerpts':>8}  "
        f"{'covered':>7}"
    ]
    for d in result.documents:
        lines.append(
            f"{d.id:<{width}}  {d.characters:>10}  {d.questions:>9}  {d.excerpts:>8}  "
            f"{_pct(d.coverage):>7}"
        )
    return lines


def _distribution(values: dict[str, Any], fmt: str = "g") -> str:
    return ", ".join(f"{k} {values[k]:{fmt}}" for k in ("min", "q1", "median", "q3", "max"))


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"
