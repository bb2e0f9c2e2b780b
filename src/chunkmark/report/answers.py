"""The report's Answers section, from what a run with ``answers:`` writes: ``answers_summary.csv``
(one row per dataset x cell, and the whole-document baseline) and the manifest's ``answers``
section (the LLM, the judge, the judge's agreement, and Kendall's tau between the cells' span
and answer rankings).

Per dataset, a table with a row per cell (the baseline first): the answer score, token F1,
exact match, label accuracy and the judge's verdicts, each with its 95% interval over
questions, the context tokens, the passage recall and IoU of the same questions, and whether the
cell is tied with the best (the paired comparison of answer scores); under it, the rank
agreement line.
"""

from __future__ import annotations

import csv
import json
import math
from typing import Any

from chunkmark.report.data import ReportData, short_name
from chunkmark.report.payload import num

SUMMARY_CSV = "answers_summary.csv"
SHOWN = {
    "score": "answer score",
    "f1": "token F1",
    "exact_match": "exact match",
    "label_correct": "label accuracy",
    "judge_correct": "judge: correct",
    "judge_faithful": "judge: faithful",
    "recall": "passage recall",
    "iou": "passage IoU",
}


def answers_payload(data: ReportData) -> dict[str, Any] | None:
    """The Answers section's data (``runs``: the LLM, judge, agreement and tau per run;
    ``groups``: a table per run and dataset), or None when no run holds answers. A file that
    cannot be read is left out with a note in ``data.notes``."""
    runs: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    for run in data.runs:
        file = run.path / SUMMARY_CSV
        if not file.is_file():
            continue
        try:
            with file.open(encoding="utf-8", newline="") as handle:
                rows = list(csv.DictReader(handle))
            manifest = json.loads((run.path / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, csv.Error, json.JSONDecodeError) as exc:
            data.notes.append(f"Cannot read {file} ({exc}); its answers are not shown.")
            continue
        section = manifest.get("answers") if isinstance(manifest, dict) else None
        section = section if isinstance(section, dict) else {}
        runs.append(
            {
                "run": str(run.path),
                "llm": str((section.get("llm") or {}).get("spec", "")),
                "judge": (section.get("judge") or {}).get("spec"),
                "setting": str(section.get("setting", "")),
                "promptVersion": section.get("prompt_version"),
                "judgeAgreement": section.get("judge_agreement"),
                "counts": section.get("counts") or {},
            }
        )
        taus = {t.get("dataset"): t for t in section.get("span_vs_answer") or []}
        by_dataset: dict[str, list[dict[str, str]]] = {}
        for row in rows:
            by_dataset.setdefault(row.get("dataset", ""), []).append(row)
        for dataset, members in by_dataset.items():
            members.sort(key=lambda r: r.get("context") != "whole_document")
            groups.append(
                {
                    "run": str(run.path),
                    "dataset": dataset,
                    "setting": str(section.get("setting", "")),
                    "rows": [_row(r) for r in members],
                    "tau": _tau(taus.get(dataset)),
                }
            )
    if not runs:
        return None
    return {
        "runs": runs,
        "groups": groups,
        "metrics": [{"name": k, "label": v} for k, v in SHOWN.items()],
    }


def _value(row: dict[str, str], column: str) -> float:
    text = row.get(column)
    try:
        return math.nan if text in (None, "") else float(str(text))
    except ValueError:
        return math.nan


def _row(row: dict[str, str]) -> dict[str, Any]:
    baseline = row.get("context") == "whole_document"
    return {
        "chunker": row.get("chunker", ""),
        "chunkerShort": "whole document (no retrieval)"
        if baseline
        else short_name("chunker", row.get("chunker", "")),
        "embedderShort": "" if baseline else short_name("embedder", row.get("embedder", "")),
        "baseline": baseline,
        "n": num(_value(row, "n_answered")),
        "notFitting": num(_value(row, "n_not_fitting")),
        "errors": num(_value(row, "n_errors")),
        "contextTokens": num(_value(row, "mean_context_tokens")),
        "mean": {m: num(_value(row, f"{m}_mean")) for m in SHOWN},
        "ci": {
            m: [num(_value(row, f"{m}_ci_low")), num(_value(row, f"{m}_ci_high"))] for m in SHOWN
        },
        "tied": row.get("tied_with_best") == "True",
        "difference": num(_value(row, "difference_vs_best")),
    }


def _tau(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(entry, dict):
        return None
    out: dict[str, Any] = {"cells": entry.get("cells")}
    for metric in ("recall", "iou"):
        found = entry.get(metric) or {}
        out[metric] = {k: num(found.get(k)) for k in ("tau", "ci_low", "ci_high", "questions")}
    return out
