"""Listings, one shape for every catalog: ``chunkmark chunkers``, ``embedders``, ``retrieval``,
``llms``, ``extractors``, ``metrics`` (and ``datasets``, ``relations metrics``) print a table per
catalog, or with ``--json`` one JSON list of its entries. The listings themselves are built in
:mod:`chunkmark.service.catalog`, which the MCP server's list_components reads too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chunkmark.cli import options
from chunkmark.service.catalog import Listing, embedders, extractors, llms, metrics, retrieval


def show(listings: Sequence[Listing], as_json: bool) -> None:
    """Print ``listings``: a table each (with an ``origin`` column when an entry comes from a
    plugin), or one JSON list of every entry."""
    if as_json:
        rows = [row for listing in listings for row in listing.rows]
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False, default=repr))
        return
    console = Console()
    for listing in listings:
        console.print(_table(listing))


def _table(listing: Listing) -> Table:
    columns = list(listing.columns)
    if any(row.get("origin") for row in listing.rows):
        columns.append(("origin", lambda row: str(row.get("origin") or "chunkmark")))
    table = Table(title=listing.title, show_lines=True)
    for i, (heading, _) in enumerate(columns):
        table.add_column(heading, style="bold" if i == 0 else None)
    for row in listing.rows:
        table.add_row(*(Text(cell(row)) for _, cell in columns))
    return table


def listing_command(build: Callable[[], Sequence[Listing]], doc: str) -> Callable[[bool], None]:
    """A command printing what ``build`` returns, with ``--json``; ``doc`` is its help."""

    def command(as_json: options.Json = False) -> None:
        show(build(), as_json)

    command.__doc__ = doc
    return command


# The top-level listings (``chunkers`` is a group: see :mod:`chunkmark.cli.chunkers`).
LISTINGS: dict[str, tuple[Callable[[], list[Listing]], str]] = {
    "embedders": (embedders, "List the registered embedders, their parameters and what they do."),
    "retrieval": (
        retrieval,
        "List the retrieval settings (run's --retrieval) and the rankers they read.",
    ),
    "llms": (
        llms,
        "List the LLM clients (the llm= spec of LLM chunkers, synth generate and relations).",
    ),
    "extractors": (extractors, "List the relation extractors of `chunkmark relations run`."),
    "metrics": (
        metrics,
        "List the metrics every cell is scored with: column, label, direction, interval.",
    ),
}


def register(app: typer.Typer) -> None:
    """Add the top-level listing commands to the app."""
    for name, (build, doc) in LISTINGS.items():
        app.command(name)(listing_command(build, doc))
