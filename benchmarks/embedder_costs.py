"""What each dense embedder of a suite folder cost and scored, per set, from the folder alone.

For every set and embedder (model2vec and the sentence-transformers models; the keyword rankers
embed nothing): the cells it ran, the model tokens it read (its own tokenizer's, after
truncation to its window; late chunking counts its windows' tokens; model2vec counts none, shown
as 0 with no rate) and the seconds the model ran while indexing, their ratio (tokens per
second), the index time the leaderboard shows (chunking and embedding the documents, summed
over the cells), and its recall at one setting: the mean over the chunkers and the best cell,
with the best cell's 95% bootstrap interval from ``summary.csv``. The timings are those the cells
recorded when they were computed (a resumed cell keeps its own), on whatever machine and load
that was: read them beside the run's notes.

    python benchmarks/embedder_costs.py leaderboard/default-suite [--setting "dense @1024"]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any


def short(embedder: str) -> str:
    """``sentence_transformers(model='all-MiniLM-L6-v2', ..., late_chunking=True)`` ->
    ``all-MiniLM-L6-v2 late``; ``model2vec(...)`` -> ``model2vec``."""
    name = re.search(r"model='([^']+)'", embedder)
    label = name.group(1) if name else embedder.split("(", 1)[0]
    if embedder.startswith("model2vec"):
        label = "model2vec"
    return label + (" late" if "late_chunking=True" in embedder else "")


def set_rows(folder: Path, spec: str) -> list[dict[str, Any]]:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    with (folder / "summary.csv").open(newline="", encoding="utf-8") as handle:
        summary = [
            r for r in csv.DictReader(handle) if r["scope"] == "all" and r["retrieval"] == spec
        ]
    per: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"cells": 0, "tokens": 0, "model_s": 0.0, "index_s": 0.0, "recall": []}
    )
    for cell in manifest["cells"]:
        one = per[cell["embedder"]]
        timings, embedding = cell.get("timings") or {}, cell.get("embedding") or {}
        one["cells"] += 1
        one["tokens"] += int(embedding.get("tokens") or 0)
        one["model_s"] += float(embedding.get("model_seconds") or 0.0)
        one["index_s"] += float(timings.get("embed_documents", 0.0)) + float(
            timings.get("chunk", 0.0)
        )
    for row in summary:
        per[row["embedder"]]["recall"].append(
            (float(row["recall_mean"]), float(row["recall_ci_low"]), float(row["recall_ci_high"]))
        )
    return [{"embedder": e, **v} for e, v in per.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite_dir", type=Path)
    parser.add_argument("--setting", default="dense @1024", help="a setting label of suite.json")
    args = parser.parse_args()
    suite = json.loads((args.suite_dir / "suite.json").read_text(encoding="utf-8"))
    setting = next(s for s in suite["settings"] if s["label"] == args.setting)
    print(
        f"| set | embedder | cells | model tokens | model s | tokens/s | index s "
        f"| recall {args.setting}, mean over chunkers | best cell [95% CI] |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for each in suite["sets"]:
        spec = setting[each["scope"]]
        for row in set_rows(args.suite_dir / each["folder"], spec):
            if not row["recall"]:
                continue
            rate = f"{row['tokens'] / row['model_s']:,.0f}" if row["tokens"] else "-"
            mean = sum(r[0] for r in row["recall"]) / len(row["recall"])
            best = max(row["recall"])
            print(
                f"| {each['name']} | {short(row['embedder'])} | {row['cells']} | "
                f"{row['tokens']:,} | {row['model_s']:,.0f} | {rate} | "
                f"{row['index_s']:,.0f} | {100 * mean:.1f} | "
                f"{100 * best[0]:.1f} [{100 * best[1]:.1f}, {100 * best[2]:.1f}] |"
            )


if __name__ == "__main__":
    main()
