"""Retrieval settings side by side: one line per chunker, recall and IoU under each setting, and
the chunkers' ranking under each setting (does the order change?).

Reads ``summary.csv`` of a finished run (``chunkmark run --out RUN``):

    python benchmarks/settings_side_by_side.py RUN [--metric recall --metric iou]
        [--dataset NAME] [--embedder SPEC]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--metric", action="append", default=None)
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--embedder", default=None)
    args = parser.parse_args()
    metrics = args.metric or ["recall", "iou"]
    with (args.run / "summary.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["scope"] == "all"]
    defaults = {"excerpts": "position", "unit": "chars", "denominator": "sum"}
    rows = [r for r in rows if all(r.get(k, v) == v for k, v in defaults.items())]
    for key, wanted in (("dataset", args.dataset), ("embedder", args.embedder)):
        if wanted is not None:
            rows = [r for r in rows if r[key] == wanted]
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.retrieval import RETRIEVAL

    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        here = [r for r in rows if r["dataset"] == dataset]
        settings = list(dict.fromkeys(r["retrieval"] for r in here))
        chunkers = list(dict.fromkeys(r["chunker"] for r in here))
        value = {
            (r["chunker"], r["retrieval"], m): float(r[f"{m}_mean"]) for r in here for m in metrics
        }
        tokens = {(r["chunker"], r["retrieval"]): float(r["mean_retrieved_tokens"]) for r in here}
        print(
            f"\n{dataset}: percent, mean over questions (context tokens per question in brackets)"
        )
        names = [RETRIEVAL.short(s) for s in settings]
        print(f"{'chunker':<36}" + "".join(f"{n:>30}" for n in names))
        for c in chunkers:
            cells = []
            for s in settings:
                parts = "/".join(
                    f"{100 * value[(c, s, m)]:.1f}" for m in metrics if (c, s, m) in value
                )
                cells.append(f"{parts} [{tokens.get((c, s), float('nan')):.0f}]")
            print(f"{CHUNKERS.short(c):<36}" + "".join(f"{x:>30}" for x in cells))
        print(f"({'/'.join(metrics)} per setting)")
        for m in metrics:
            orders = {}
            for s in settings:
                ranked = sorted(chunkers, key=lambda c, s=s: -value.get((c, s, m), float("-inf")))
                orders[s] = [chunkers.index(c) + 1 for c in ranked]
            print(
                f"\nranking of the chunkers by {m} (chunker numbers in the order above, best first):"
            )
            for s, order in orders.items():
                print(f"  {RETRIEVAL.short(s):<40} {' > '.join(map(str, order))}")
            first = next(iter(orders.values()))
            changed = [RETRIEVAL.short(s) for s, o in orders.items() if o != first]
            print(
                f"  order differs from {RETRIEVAL.short(settings[0])} under: {', '.join(changed) or 'none'}"
            )


if __name__ == "__main__":
    main()
