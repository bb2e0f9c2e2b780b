"""Plain chunks against the same chunks with a context (late chunking, headings, neighbours),
side by side: the mean of each metric with its 95% bootstrap interval, and the paired
difference to the plain chunks over the same questions with its interval (per corpus too).

Reads ``results.parquet`` of finished runs (``benchmarks/grids/context_plain.yaml`` and
``context_late.yaml``):

    python benchmarks/context_side_by_side.py results/context_plain results/context_late \
        [--metric recall --metric iou --metric containment_recall] [--k 5]

A variant's cells are matched to their plain cell by the wrapped chunker: ``contextual(chunker=
'X', method='M')`` is variant ``M`` of ``X``; a cell whose embedder has ``late_chunking=True`` is
variant ``late`` of its chunker.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from chunkmark.chunkers import CHUNKERS
from chunkmark.metrics.aggregate import bootstrap_ci
from chunkmark.metrics.paired import paired_bootstrap_ci

VARIANTS = ("plain", "late", "headings", "neighbours")


def variant_of(chunker: str, embedder: str) -> tuple[str, str]:
    """(the plain chunker's spec, the variant) of a cell."""
    spec = CHUNKERS.resolve(chunker)
    if spec.name == "contextual":
        params = dict(spec.params)
        inner = str(CHUNKERS.resolve(str(params["chunker"])))
        return inner, str(params["method"])
    return chunker, "late" if "late_chunking=True" in embedder else "plain"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--metric", action="append", default=None)
    parser.add_argument("--k", default="5")
    args = parser.parse_args()
    metrics = args.metric or ["recall", "iou", "containment_recall"]
    columns = ["dataset", "chunker", "embedder", "retrieval", "excerpts", "unit", "k"]
    columns += ["question_id", "doc_id", *metrics]
    values: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    docs: np.ndarray | None = None
    for run in args.runs:
        table = pq.read_table(run / "results.parquet", columns=columns).to_pydict()
        keep = [
            i
            for i in range(len(table["k"]))
            if table["k"][i] == args.k
            and table["excerpts"][i] == "position"
            and table["unit"][i] == "chars"
            and table["retrieval"][i].startswith("top_k")
        ]
        cells: dict[tuple[str, str], list[int]] = {}
        for i in keep:
            cells.setdefault(variant_of(table["chunker"][i], table["embedder"][i]), []).append(i)
        for key, rows in cells.items():
            order = sorted(rows, key=lambda i: table["question_id"][i])
            values[key] = {m: np.asarray([table[m][i] for i in order], float) for m in metrics}
            docs = np.asarray([table["doc_id"][i] for i in order])
    assert docs is not None
    chunkers = list(dict.fromkeys(c for c, _ in values))
    for metric in metrics:
        print(f"\n## {metric} at k={args.k}, percent: mean [95% interval]; Δ vs plain [interval]\n")
        print("| chunker | " + " | ".join(VARIANTS) + " |")
        print("|---|" + "---|" * len(VARIANTS))
        for chunker in chunkers:
            plain = values.get((chunker, "plain"))
            cells = []
            for variant in VARIANTS:
                got = values.get((chunker, variant))
                if got is None:
                    cells.append("")
                    continue
                x = got[metric]
                low, high = bootstrap_ci({metric: x})[metric]
                text = f"{100 * x.mean():.1f} [{100 * low:.1f}, {100 * high:.1f}]"
                if variant != "plain" and plain is not None:
                    d = x - plain[metric]
                    dl, dh = paired_bootstrap_ci(d)
                    mark = "**" if dl > 0 or dh < 0 else ""
                    text += (
                        f"; {mark}{100 * d.mean():+.1f} [{100 * dl:+.1f}, {100 * dh:+.1f}]{mark}"
                    )
                cells.append(text)
            print(f"| {CHUNKERS.short(chunker)} | " + " | ".join(cells) + " |")
    print("\n## Per corpus: Δ vs plain, percent points [95% paired interval]; ** excludes 0\n")
    corpora = list(dict.fromkeys(docs.tolist()))
    for metric in metrics:
        print(f"\n### {metric}\n")
        print("| chunker | variant | " + " | ".join(corpora) + " |")
        print("|---|---|" + "---|" * len(corpora))
        for chunker in chunkers:
            plain = values.get((chunker, "plain"))
            if plain is None:
                continue
            for variant in VARIANTS[1:]:
                got = values.get((chunker, variant))
                if got is None:
                    continue
                cells = []
                for corpus in corpora:
                    mask = docs == corpus
                    d = got[metric][mask] - plain[metric][mask]
                    dl, dh = paired_bootstrap_ci(d)
                    mark = "**" if dl > 0 or dh < 0 else ""
                    cells.append(
                        f"{mark}{100 * d.mean():+.1f} [{100 * dl:+.1f}, {100 * dh:+.1f}]{mark}"
                    )
                name = CHUNKERS.short(chunker)
                print(f"| {name} | {variant} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
