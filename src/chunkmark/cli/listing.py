"""Listings, one shape for every catalog: ``chunkmark chunkers``, ``embedders``, ``retrieval``,
``llms``, ``extractors``, ``metrics`` (and ``datasets``, ``relations metrics``) print a table per
catalog, or with ``--json`` one JSON list of its entries.

A registry's listing is built by :func:`registry_listing` from the registry alone: each entry's
name, spec parameters, summary, traits, the dependencies it needs and, for components a plugin
registered, its ``origin`` (a column shown when any entry has one).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chunkmark.cli import options
from chunkmark.specs import Entry, Registry

Row = dict[str, Any]


@dataclass(frozen=True)
class Listing:
    """One catalog: its title, one JSON object per entry, and the table's columns as
    (heading, the row's text) pairs."""

    title: str
    rows: list[Row]
    columns: Sequence[tuple[str, Callable[[Row], str]]]


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
        columns.append(("origin", lambda row: row.get("origin") or "chunkmark"))
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


# --- registries -----------------------------------------------------------------------------


def registry_listing(registry: Registry[Any], title: str) -> Listing:
    """The listing of a component registry: name, parameters, summary, traits, needs, origin."""
    entries = list(registry)
    parameters = {entry.name: _parameters_text(entry) for entry in entries}
    columns: list[tuple[str, Callable[[Row], str]]] = [
        ("name", lambda row: row["name"]),
        ("parameters", lambda row: parameters[row["name"]]),
        ("summary", _summary_text),
    ]
    return Listing(title, [_entry_row(registry.kind, entry) for entry in entries], columns)


def _entry_row(kind: str, entry: Entry[Any]) -> Row:
    return {
        "kind": kind,
        "name": entry.name,
        "parameters": [_parameter(p) for p in entry.parameters()],
        "summary": entry.summary,
        "traits": entry.traits.labels(),
        "needs": entry.dependencies(),
        "origin": entry.origin,
    }


def _parameter(p: inspect.Parameter) -> Row:
    found: Row = {"name": p.name}
    if p.annotation is not inspect.Parameter.empty:
        found["type"] = _type_name(p.annotation)
    if p.default is not inspect.Parameter.empty:
        found["default"] = _jsonable(p.default)
    return found


def _jsonable(value: Any) -> Any:
    """``value`` when JSON holds it as it is, else its ``repr``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(
        v is None or isinstance(v, bool | int | float | str) for v in value
    ):
        return list(value)
    return repr(value)


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _parameters_text(entry: Entry[Any]) -> str:
    """One line per spec parameter: ``name: type = default``."""
    lines = []
    for p in entry.parameters():
        line = p.name
        if p.annotation is not inspect.Parameter.empty:
            line += f": {_type_name(p.annotation)}"
        if p.default is not inspect.Parameter.empty:
            line += f" = {p.default!r}"
        lines.append(line)
    return "\n".join(lines)


def _summary_text(row: Row) -> str:
    labels = row["traits"]
    return f"{row['summary']} [{', '.join(labels)}]" if labels else row["summary"]


def chunkers() -> list[Listing]:
    from chunkmark.chunkers import CHUNKERS

    return [registry_listing(CHUNKERS, "Chunkers")]


def embedders() -> list[Listing]:
    from chunkmark.embedders import EMBEDDERS

    return [registry_listing(EMBEDDERS, "Embedders")]


def retrieval() -> list[Listing]:
    from chunkmark.retrieval import RETRIEVAL, RETRIEVERS

    return [
        registry_listing(RETRIEVAL, "Retrieval settings (run's --retrieval)"),
        registry_listing(RETRIEVERS, "Rankers (what the settings read)"),
    ]


def llms() -> list[Listing]:
    from chunkmark.llm import LLMS

    return [registry_listing(LLMS, "LLM clients (the llm= of chunkers, synth and relations)")]


def extractors() -> list[Listing]:
    from chunkmark.relations.extract import EXTRACTORS

    return [registry_listing(EXTRACTORS, "Relation extractors (relations run's --extractor)")]


# --- metric catalogs ------------------------------------------------------------------------


def metrics() -> list[Listing]:
    """The metric catalog, as the summary and the tables use it."""
    from chunkmark.metrics import METRICS

    rows = [
        {
            "kind": "metric",
            "name": m.name,
            "label": m.label,
            "direction": m.direction,
            "interval": m.interval,
            "on_screen": m.on_screen,
            "description": m.description,
            "origin": m.origin,
        }
        for m in METRICS
    ]
    columns: list[tuple[str, Callable[[Row], str]]] = [
        ("name", lambda row: row["name"]),
        ("label", lambda row: row["label"]),
        ("better", lambda row: row["direction"]),
        ("95% interval", lambda row: "yes" if row["interval"] else ""),
        ("description", lambda row: row["description"]),
    ]
    title = "Metrics (per question; summary.csv has <name>_mean and <name>_std)"
    return [Listing(title, rows, columns)]


def relation_metrics() -> list[Listing]:
    """The relation metrics of ``chunkmark relations run``."""
    from chunkmark.relations.metrics import RELATION_METRICS

    rows = [
        {
            "kind": "relation metric",
            "name": m.name,
            "label": m.label,
            "unit": m.unit,
            "family": m.family,
            "interval": m.interval,
            "needs_extractor": m.extractor,
            "columns": m.columns(),
            "description": m.description,
        }
        for m in RELATION_METRICS.values()
    ]
    columns: list[tuple[str, Callable[[Row], str]]] = [
        ("name", lambda row: row["name"]),
        ("label", lambda row: row["label"]),
        ("unit", lambda row: row["unit"] or "-"),
        ("description", lambda row: row["description"]),
    ]
    return [Listing("Relation metrics (relations.csv; intervals over the unit)", rows, columns)]


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
