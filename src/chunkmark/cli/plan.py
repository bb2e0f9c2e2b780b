"""``chunkmark plan``: what a run would do and cost, before anything is spent."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

import typer
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from chunkmark.cli import options

if TYPE_CHECKING:
    from chunkmark.experiments.plan import EmbedderPlan, Plan

T = TypeVar("T", int, float)

PLAN_HELP = """Show what `chunkmark run` would do and cost, without running it.

Prints the cells (dataset x chunker x embedder), the expanded specs, and per embedder the
distinct texts and tokens it would embed, how many the embedding cache already holds and the
dollars for the rest; per LLM-calling chunker its calls, tokens and dollars (fewest to most).
Sends no request, loads, builds or downloads no model, writes nothing: a model that must be
built or downloaded first (model2vec's distilled MiniLM, a Hub model not cached yet) is named,
with about how long it takes. Prices come from the shipped tables, the
experiment file's `prices:` and --prices FILE (see docs/plan.md); components that run on this
machine (model2vec, sentence-transformers, a server on localhost) cost 0 unless priced there.
With --max-cost, exits with status 2 when the estimate exceeds it or cannot be made. --json
prints the plan as the manifest records it.
"""


def register(app: typer.Typer) -> None:
    app.command("plan", help=PLAN_HELP)(options.grouped(plan))


def plan(
    *,
    grid: options.GridFlags,
    caches: options.CacheFlags,
    spend: options.SpendFlags,
    as_json: options.Json = False,
) -> None:
    from chunkmark.answers.analysis import answer_analyses
    from chunkmark.experiments.plan import check_budget, plan_grid

    config = grid.config(**caches.settings(), **spend.settings())
    result = plan_grid(config, answer_analyses(config))
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        screen = Console(width=None if sys.stdout.isatty() else 160)
        for part in render_plan(result):
            screen.print(part)
    check_budget(result, config.max_cost)


def render_plan(plan: Plan) -> list[RenderableType]:
    """The plan for the terminal: the grid, its cells, embedding and LLM costs, the total."""
    parts: list[RenderableType] = [_grid_text(plan), _cells_table(plan), _embedding_table(plan)]
    if plan.llm_chunkers:
        parts.append(_llm_table(plan))
    if plan.answers:
        parts.append(_answers_table(plan))
    parts.append(_total_text(plan))
    if plan.setup:
        parts.append(_setup_text(plan))
    return parts


def _setup_text(plan: Plan) -> Text:
    """What must be built or downloaded before the first run (plan did neither)."""
    from chunkmark.embedders import EMBEDDERS

    lines = ["Set-up first (plan neither builds nor downloads):"]
    lines += [f"- {EMBEDDERS.short(step.component)}: {step.needed}." for step in plan.setup]
    return Text("\n".join(lines), style="yellow")


def _grid_text(plan: Plan) -> Text:
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS

    lines = [
        f"{_n(plan.n_cells, 'cell')} = {_n(len(plan.datasets), 'dataset')} x "
        f"{_n(len(plan.chunkers), 'chunker')} x {_n(len(plan.embedders), 'embedder')}; each "
        f"scored at {_n(len(plan.retrieval), 'retrieval setting')} x "
        f"{_n(len(plan.scoring), 'scoring option')} from one ranking.",
    ]
    lines += [
        f"dataset   {d.name}: {d.documents} documents ({d.document_tokens:,} cl100k tokens), "
        f"{d.questions} questions"
        for d in plan.datasets
    ]
    lines += [f"chunker   {CHUNKERS.short(s)}   = {s}" for s in plan.chunkers]
    lines += [f"embedder  {EMBEDDERS.short(s)}   = {s}" for s in plan.embedders]
    lines.append(f"retrieval {', '.join(plan.retrieval)}")
    lines.append(
        "scoring   " + "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) for s in plan.scoring)
    )
    cache = "not used (--no-cache)" if plan.no_cache else str(plan.cache_dir)
    lines.append(f"cache     {cache}")
    return Text("\n".join(lines))


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _cells_table(plan: Plan) -> Table:
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS

    table = cost_table("Cells", ("dataset", "chunker", "embedder"), ["chunks"])
    table.add_column("from", justify="left")
    for cell in plan.cells:
        where = cell.source + (f" ({cell.note})" if cell.note else "")
        table.add_row(
            cell.dataset,
            CHUNKERS.short(cell.chunker),
            EMBEDDERS.short(cell.embedder),
            "?" if cell.chunks is None else f"{cell.chunks:,}",
            where,
        )
    return table


def cost_table(title: str, names: Iterable[str], numbers: Iterable[str]) -> Table:
    """A table of what is done and what it costs: the ``names`` columns (left-aligned), then
    the ``numbers`` (right-aligned)."""
    table = Table(title=title, title_justify="left")
    for column in names:
        table.add_column(column, justify="left")
    for column in numbers:
        table.add_column(column, justify="right")
    return table


def with_notes(table: Table, notes: Iterable[str]) -> Table:
    """``table`` with ``notes``, one a line, as its caption (none without notes)."""
    table.caption = "\n".join(notes) or None
    table.caption_justify = "left"
    return table


def _embedding_table(plan: Plan) -> Table:
    numbers = ("texts", "tokens", "cached", "estimated", "to embed", "$/M", "USD")
    table = cost_table("Embedding (distinct texts, tokens, cost)", ["embedder"], numbers)
    notes: list[str] = []
    for e in plan.embedding:
        table.add_row(
            _embedder_label(e),
            f"{e.document_texts:,} + {e.query_texts:,} q",
            f"{e.document_tokens + e.query_tokens:,}",
            "-" if e.cached_texts is None else f"{e.cached_texts:,} ({e.cached_tokens:,} tok)",
            f"{e.estimated_tokens:,}" if e.estimated_tokens else "-",
            f"{e.tokens_to_embed:,}",
            "?" if e.usd_per_million is None else f"{e.usd_per_million:g}",
            _dollars(e.usd),
        )
        notes.append(f"{_embedder_label(e)}: {e.token_count}; price: {e.price_source}")
        if e.cache_note:
            notes.append(f"{_embedder_label(e)}: cache {e.cache_note}")
        if e.estimated_for:
            notes.append(
                f"{_embedder_label(e)}: 'estimated' stands for the chunks of "
                f"{', '.join(e.estimated_for)} (unknown before they run: their documents' tokens)"
            )
    return with_notes(table, notes)


def _embedder_label(e: EmbedderPlan) -> str:
    from chunkmark.embedders import EMBEDDERS

    label = EMBEDDERS.short(e.spec)
    return label if e.in_grid else f"{label} (for a chunker)"


def _llm_table(plan: Plan) -> Table:
    from chunkmark.chunkers import CHUNKERS

    numbers = ("calls", "cached", "input tok", "output tok", "USD")
    table = cost_table("LLM chunkers (fewest - most)", ("chunker", "dataset", "model"), numbers)
    notes = []
    for p in plan.llm_chunkers:
        table.add_row(
            CHUNKERS.short(p.chunker),
            p.dataset,
            p.model or "?",
            _range(p.calls, p.calls_max),
            f"{p.cached_calls:,}",
            _range(p.input_tokens, p.input_tokens_max),
            _range(p.output_tokens, p.output_tokens_max),
            _range(p.usd, p.usd_max, _dollars),
        )
        if p.note:
            notes.append(f"{CHUNKERS.short(p.chunker)}: {p.note}")
        if p.runs > 1:
            notes.append(f"{CHUNKERS.short(p.chunker)}: runs {p.runs} times (once per embedder)")
    return with_notes(table, notes)


def _answers_table(plan: Plan) -> Table:
    """Answering and judging the questions (``answers:``), per dataset."""
    title = "Answers (questions x cells, and the whole-document baseline)"
    numbers = ("questions", "cells", "calls", "baseline", "cached", "input tok", "output tok")
    table = cost_table(title, ("dataset", "role", "model"), (*numbers, "USD"))
    notes = []
    for p in plan.answers:
        table.add_row(
            p.dataset,
            p.role,
            p.model or "?",
            f"{p.questions:,}",
            f"{p.cells:,}",
            f"{p.calls:,}",
            f"{p.baseline_calls:,} ({p.not_fitting:,} do not fit)",
            f"{p.cached_calls:,}",
            "?" if p.input_tokens is None else f"{p.input_tokens:,}",
            f"{p.output_tokens:,}",
            _dollars(p.usd),
        )
        if p.note:
            notes.append(f"{p.dataset} ({p.role}): {p.note}")
    return with_notes(table, dict.fromkeys(notes))


def _range(low: T | None, high: T | None, shown: Callable[[T], str] = "{:,}".format) -> str:
    if low is None or high is None:
        return "?"
    return shown(low) if low == high else f"{shown(low)} - {shown(high)}"


def _dollars(value: float | None) -> str:
    from chunkmark.costs.budget import usd

    return "?" if value is None else usd(value)


def _total_text(plan: Plan) -> Text:
    if plan.total_usd is None:
        return Text(
            f"Estimated cost: unknown ({'; '.join(plan.unknown)} is unknown). Give prices "
            "with --prices FILE or under 'prices:' in the experiment file (see docs/plan.md).",
            style="yellow",
        )
    line = f"Estimated cost: {_dollars(plan.total_usd)}"
    if plan.total_usd_max is not None and plan.total_usd_max != plan.total_usd:
        line += f" (at most {_dollars(plan.total_usd_max)} if the LLM chunkers take every retry)"
    return Text(line + ".", style="bold")
