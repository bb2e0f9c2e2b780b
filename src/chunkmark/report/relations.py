"""The report's Relations section, from what ``chunkmark relations run`` writes beside a run:
``relations.csv`` (one row per dataset x chunker x embedder x retrieval setting) and the
manifest's ``relations`` section (the relation set, gold or silver support, the extractor).

Per dataset, embedder and retrieval setting, a table with a row per chunker (the relation
metrics with their 95% intervals, the extraction's density and cost, and the passage IoU of the
same cell from ``summary.csv``), and the two picks a reader compares: the chunker that keeps the
most relations (highest support containment, then extraction recall) and the one that
retrieves passages best (highest IoU), on the same questions (one per gold relation).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkmark.metrics import METRICS
from chunkmark.report.data import DatasetInfo, ReportData, short_name
from chunkmark.report.payload import num

RELATIONS_CSV = "relations.csv"
PASSAGE_METRIC = "iou"
KEY_COLUMNS = ("dataset", "chunker", "embedder", "retrieval", "extractor", "support")
# The relation metrics the tables show, in order, with the labels they show them under.
SHOWN = {
    "support_containment": "support containment",
    "recall": "extraction recall",
    "precision": "mapped precision",
    "f1": "F1",
    "rel_recall": "RelRecall@k",
    "support_recall": "SupportRecall@k",
}
RATIOS = {"relations_per_1k_tokens": "relationsPer1k", "unmatched_name_rate": "unmatchedRate"}
COUNTS = {
    "n_questions": "n",
    "n_chunks": "nChunks",
    "chunk_tokens": "chunkTokens",
    "calls": "calls",
    "cache_hits": "cacheHits",
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
}


@dataclass
class _Group:
    """One table: a dataset, embedder, retrieval setting and extractor; a row per chunker."""

    dataset: str
    embedder: str
    retrieval: str
    extractor: str
    support: str
    k: str
    rows: list[dict[str, Any]] = field(default_factory=list)


def relations_payload(data: ReportData, scoring: str) -> dict[str, Any] | None:
    """The Relations section's data: the relation sets (``sets``), the metric columns
    (``metrics``) and one table per dataset x embedder x retrieval setting (``groups``), the
    passage IoU read at ``scoring``; None when no run holds a ``relations.csv``. A file that
    cannot be read is left out with a note in ``data.notes``."""
    sets: list[dict[str, Any]] = []
    definitions: dict[str, Any] = {}
    groups: dict[tuple[str, str, str, str, str], _Group] = {}
    for run in data.runs:
        file = run.path / RELATIONS_CSV
        if not file.is_file():
            continue
        try:
            rows = _read_rows(file)
            section = _read_section(run.path)
        except (OSError, UnicodeDecodeError, csv.Error, json.JSONDecodeError) as exc:
            data.notes.append(f"Cannot read {file} ({exc}); its relations are not shown.")
            continue
        if not rows:
            continue
        missing = [c for c in KEY_COLUMNS if c not in rows[0]]
        if missing:
            data.notes.append(f"{file} lacks the column(s) {', '.join(missing)}; not shown.")
            continue
        run_datasets = [d for d in data.datasets if d.key in run.datasets]
        info = _dataset_of(section, rows[0], run_datasets)
        if info is None:
            data.notes.append(f"{file} names a dataset its run does not hold; it is not shown.")
            continue
        sets.append(_set_payload(info, section, rows[0], run.path))
        found = section.get("metrics")
        if isinstance(found, dict):
            definitions = {**found, **definitions}
        for row in rows:
            _add_row(data, groups, info, row, file)
    if not sets:
        return None
    return {
        "sets": sets,
        "metrics": _metrics_payload(definitions),
        "groups": [_group_payload(data, g, scoring) for g in _ordered(data, groups)],
    }


def _read_rows(file: Path) -> list[dict[str, str]]:
    with file.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _read_section(path: Path) -> dict[str, Any]:
    """The manifest's ``relations`` section (empty when the manifest has none)."""
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    section = manifest.get("relations") if isinstance(manifest, dict) else None
    return section if isinstance(section, dict) else {}


def _dataset_of(
    section: dict[str, Any], row: dict[str, str], infos: list[DatasetInfo]
) -> DatasetInfo | None:
    """The relation set's dataset: by the section's fingerprint, else by the rows' name."""
    fingerprint = section.get("fingerprint")
    for info in infos:
        if fingerprint and info.fingerprint == fingerprint:
            return info
    return next((i for i in infos if i.name == row.get("dataset")), None)


def _set_payload(
    info: DatasetInfo, section: dict[str, Any], row: dict[str, str], path: Path
) -> dict[str, Any]:
    extractor = section.get("extractor") or {}
    counts = section.get("counts") or {}
    totals = section.get("totals") or {}
    return {
        "dataset": info.key,
        "run": str(path),
        "name": str(section.get("name") or info.name),
        "source": str(section.get("relation_set") or info.source),
        "support": str(section.get("support") or row.get("support") or "gold"),
        "extractor": str(extractor.get("spec") or row.get("extractor") or ""),
        "counts": {str(k): num(v) for k, v in counts.items() if isinstance(v, (int, float))},
        "totals": {str(k): num(v) for k, v in totals.items() if isinstance(v, (int, float))},
    }


def _add_row(
    data: ReportData,
    groups: dict[tuple[str, str, str, str, str], _Group],
    info: DatasetInfo,
    row: dict[str, str],
    file: Path,
) -> None:
    """Add a relations.csv row to its table; a chunker the table already has (from an earlier
    folder) is kept once."""
    key = (info.key, row["embedder"], row["retrieval"], row["extractor"], row["support"])
    group = groups.setdefault(
        key, _Group(*key[:3], row["extractor"], row["support"], row.get("k") or "")
    )
    if any(r["chunker"] == row["chunker"] for r in group.rows):
        data.notes.append(
            f"{file}: relations of {row['chunker']} x {row['embedder']} with {row['retrieval']} "
            "are also in an earlier folder; the first are shown."
        )
        return
    group.rows.append(row)


def _ordered(data: ReportData, groups: dict[Any, _Group]) -> list[_Group]:
    """Tables in the page's order: datasets, embedders as the cells list them, settings."""
    datasets = [d.key for d in data.datasets]
    embedders = list(dict.fromkeys(c.embedder for c in data.cells))
    settings = data.retrievals

    def place(values: list[str], value: str) -> int:
        return values.index(value) if value in values else len(values)

    return sorted(
        groups.values(),
        key=lambda g: (
            place(datasets, g.dataset),
            place(embedders, g.embedder),
            place(settings, g.retrieval),
            g.retrieval,
            g.extractor,
        ),
    )


def _metrics_payload(definitions: dict[str, Any]) -> list[dict[str, Any]]:
    """The shown columns, labelled and defined as the manifest's ``relations.metrics`` says
    (written by ``relations run``; a run without it gets the column names only)."""
    shown = []
    for name, label in SHOWN.items():
        found = definitions.get(name)
        known = found if isinstance(found, dict) else {}
        shown.append(
            {
                "name": name,
                "label": label,
                "short": str(known.get("label", label)),
                "interval": bool(known.get("interval", name != "f1")),
                "description": str(known.get("description", "")),
            }
        )
    iou = METRICS[PASSAGE_METRIC]
    shown.append(
        {
            "name": PASSAGE_METRIC,
            "label": f"passage {iou.label}",
            "short": iou.label,
            "interval": True,
            "description": f"{iou.description} Read from summary.csv: the same cell, retrieval "
            "setting and questions.",
        }
    )
    return shown


def _value(row: dict[str, str], column: str) -> float:
    text = row.get(column)
    if text is None or text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


def _row_payload(
    data: ReportData, group: _Group, row: dict[str, str], scoring: str
) -> dict[str, Any]:
    mean: dict[str, float | int | None] = {}
    ci: dict[str, list[float | int | None]] = {}
    for name in SHOWN:
        if f"{name}_mean" in row:
            mean[name] = num(_value(row, f"{name}_mean"))
            ci[name] = [num(_value(row, f"{name}_ci_low")), num(_value(row, f"{name}_ci_high"))]
        else:
            mean[name] = num(_value(row, name))
    cell = _cell_index(data, group, row["chunker"])
    leader = None if cell is None else data.row(cell, group.retrieval, scoring)
    if leader is not None:
        mean[PASSAGE_METRIC] = num(leader.mean.get(PASSAGE_METRIC, math.nan))
        low, high = leader.ci.get(PASSAGE_METRIC, (math.nan, math.nan))
        ci[PASSAGE_METRIC] = [num(low), num(high)]
    else:
        mean[PASSAGE_METRIC] = None
    return {
        "chunker": row["chunker"],
        "chunkerShort": short_name("chunker", row["chunker"]),
        "cell": cell,
        "mean": mean,
        "ci": ci,
        **{key: num(_value(row, column)) for column, key in RATIOS.items()},
        **{key: _count(row, column) for column, key in COUNTS.items()},
    }


def _count(row: dict[str, str], column: str) -> int | None:
    value = _value(row, column)
    return int(value) if math.isfinite(value) else None


def _cell_index(data: ReportData, group: _Group, chunker: str) -> int | None:
    for cell in data.cells:
        if (cell.dataset, cell.chunker, cell.embedder) == (group.dataset, chunker, group.embedder):
            return cell.index
    return None


def _best(rows: list[dict[str, Any]], metrics: tuple[str, ...]) -> int | None:
    """The row with the highest value of ``metrics[0]`` (ties: the next metric, then the first
    row); None when no row has a value."""

    def key(i: int) -> tuple[float, ...]:
        values = [rows[i]["mean"].get(m) for m in metrics]
        return tuple(-math.inf if v is None else float(v) for v in values)

    found = [i for i, r in enumerate(rows) if r["mean"].get(metrics[0]) is not None]
    return max(found, key=key) if found else None


def _group_payload(data: ReportData, group: _Group, scoring: str) -> dict[str, Any]:
    rows = [_row_payload(data, group, r, scoring) for r in group.rows]
    rows.sort(
        key=lambda r: tuple(
            math.inf if r["mean"].get(m) is None else -float(r["mean"][m])
            for m in ("support_containment", "recall")
        )
    )
    relations = _best(rows, ("support_containment", "recall"))
    passages = _best(rows, (PASSAGE_METRIC,))
    agree = None if relations is None or passages is None else relations == passages
    return {
        "dataset": group.dataset,
        "embedder": group.embedder,
        "embedderShort": short_name("embedder", group.embedder),
        "retrieval": group.retrieval,
        "retrievalShort": data.short_retrievals().get(group.retrieval, group.retrieval),
        "k": group.k,
        "extractor": group.extractor,
        "support": group.support,
        "rows": rows,
        "mostRelations": relations,
        "bestPassages": passages,
        "agree": agree,
    }
