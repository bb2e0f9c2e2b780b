"""The catalogs, one shape for every kind of component: a :class:`Listing` per catalog (its
title, one JSON-able row per entry, and the columns a table shows), built from the registries
alone by :func:`registry_listing`: each entry's name, spec parameters, summary, traits, the
dependencies it needs and, for components a plugin registered, its ``origin``.

``chunkmark chunkers``, ``embedders``, ``retrieval``, ``llms``, ``extractors`` and ``metrics``
print these listings (:mod:`chunkmark.cli.listing`), as ``chunkmark datasets`` prints
:func:`datasets`; the MCP tool ``list_components`` answers
from the same ones (:func:`components`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkmark.errors import ConfigError
from chunkmark.service.replies import Payload, cut
from chunkmark.specs import Entry, Registry

Row = dict[str, Any]


@dataclass(frozen=True)
class Listing:
    """One catalog: its title, one JSON object per entry, and the table's columns as
    (heading, the row's text) pairs."""

    title: str
    rows: list[Row]
    columns: Sequence[tuple[str, Callable[[Row], str]]]
    entries: dict[str, Entry[Any]] = field(default_factory=dict)  # a registry's, by name


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
    rows = [_entry_row(registry.kind, entry) for entry in entries]
    return Listing(title, rows, columns, {entry.name: entry for entry in entries})


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


def datasets() -> list[Listing]:
    """The built-in datasets: name, description, status (and folder, once downloaded)."""
    from chunkmark.datasets import download as downloads
    from chunkmark.datasets import load_dataset
    from chunkmark.datasets.demo import DEMO_NAME
    from chunkmark.suite import sets as suite_sets

    demo = load_dataset(DEMO_NAME)
    rows: list[Row] = [
        {
            "kind": "dataset",
            "name": DEMO_NAME,
            "description": f"{len(demo.documents)} short markdown documents, "
            f"{len(demo.questions)} questions.",
            "status": "built in",
            "folder": None,
        }
    ]
    for name in suite_sets.names():
        if name == suite_sets.CHROMA:
            continue
        line, folder_or_none = suite_sets.status(name)
        rows.append(
            {
                "kind": "dataset",
                "name": name,
                "description": suite_sets.description(name),
                "status": line,
                "folder": None if folder_or_none is None else str(folder_or_none),
            }
        )
    for name, remote in downloads.DOWNLOADABLE.items():
        ready = downloads.is_downloaded(name)
        folder = downloads.dataset_dir(name)
        rows.append(
            {
                "kind": "dataset",
                "name": name,
                "description": remote.description,
                "status": f"downloaded: {folder}"
                if ready
                else f"not downloaded (chunkmark datasets download {name})",
                "folder": str(folder) if ready else None,
            }
        )
    columns: list[tuple[str, Callable[[Row], str]]] = [
        ("name", lambda row: row["name"]),
        ("description", lambda row: row["description"]),
        ("status", lambda row: row["status"]),
    ]
    return [Listing("Datasets", rows, columns)]


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


# --- the MCP tool list_components -------------------------------------------------------------

SUMMARY_CHARS = 100  # a component's summary in a listing, cut to this many characters

# The kinds list_components answers, each from its listing above.
KINDS: dict[str, Callable[[], Listing]] = {
    "chunkers": lambda: chunkers()[0],
    "embedders": lambda: embedders()[0],
    "retrieval": lambda: retrieval()[0],
    "rankers": lambda: retrieval()[1],
    "metrics": lambda: metrics()[0],
}


def components(kind: str | None = None, name: str | None = None) -> Payload:
    """The component catalogs: with no ``kind`` every kind's names; with a ``kind`` each
    entry's summary; with a ``name`` too, that entry in full (its signature: the spec's
    parameters and their defaults)."""
    if kind is None:
        if name is not None:
            raise ConfigError("`name` needs a `kind`.", f"Give kind, one of: {', '.join(KINDS)}.")
        from chunkmark.datasets import BUILTIN_NAMES

        found: Payload = {k: [row["name"] for row in _rows(k)] for k in KINDS}
        found["datasets"] = [*BUILTIN_NAMES, "or a folder (JSONL or Chroma layout)"]
        found["next"] = (
            "list_components(kind=...) gives summaries; with name=..., one component in full "
            "(its parameters and defaults)."
        )
        return found
    rows = _rows(kind)
    if name is None:
        return {
            "kind": kind,
            "entries": [_short_row(row) for row in rows],
            "next": f"list_components(kind={kind!r}, name=...) for one entry's parameters.",
        }
    for row in rows:
        if row["name"] == name:
            return {"kind": kind, "entry": row}
    names = ", ".join(row["name"] for row in rows)
    raise ConfigError(f"No {kind} entry is named {name!r}.", f"Use one of: {names}.")


def _rows(kind: str) -> list[Payload]:
    """The rows of ``kind``'s listing as the tool gives them."""
    if kind not in KINDS:
        raise ConfigError(f"Unknown component kind {kind!r}.", f"Use one of: {', '.join(KINDS)}.")
    listing = KINDS[kind]()
    return [_component_row(listing, row) for row in listing.rows]


def _component_row(listing: Listing, row: Row) -> Payload:
    if not listing.entries:  # the metric catalog
        return {
            "name": row["name"],
            "label": row["label"],
            "better": row["direction"],
            "interval": row["interval"],
            "summary": row["description"],
        }
    found: Payload = {
        "name": row["name"],
        "signature": signature(listing.entries[row["name"]]),
        "summary": row["summary"],
        "parameters": row["parameters"],
        "traits": row["traits"],
    }
    if row["origin"]:
        found["origin"] = row["origin"]
    return found


def signature(entry: Entry[Any]) -> str:
    """``name(p=default, q)``: the spec an entry takes, its defaults written in."""
    parts = [
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        for p in entry.parameters()
    ]
    return f"{entry.name}({', '.join(parts)})"


def _short_row(row: Payload) -> Payload:
    """An entry in a kind's listing: its name and summary (traits in brackets), and for
    metrics which way is better and whether it has an interval; the signature is asked by
    name."""
    labels = row.get("traits") or []
    traits = f" [{', '.join(labels)}]" if labels else ""
    short: Payload = {
        "name": row["name"],
        "summary": cut(str(row["summary"]), SUMMARY_CHARS - len(traits)) + traits,
    }
    short.update({k: row[k] for k in ("better", "interval") if k in row})
    return short
