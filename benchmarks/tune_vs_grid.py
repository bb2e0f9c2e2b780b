"""``chunkmark tune`` against the exhaustive grid over the same stepped ranges.

Runs every value of the ranges as one ``run`` grid (``Range.values()``, written as lists), then
``tune`` with the same experiment, and prints the grid's best feasible setting (recall at or
above the floor), tune's best, the gap in IoU points and how many cells each computed. Both use
the fake embedder on the built-in demo data by default (no model needed), and the same retrieval
setting, metric and recall floor.

    .venv/bin/python benchmarks/tune_vs_grid.py [--trials 30] [--seed 0]
        [--chunker 'fixed_tokens(size=range(10, 400, 10), overlap=range(0, 0.5, 0.1))']
        [--recall-floor 0.5] [--dataset demo] [--embedder 'fake()'] [--out DIR]

Exits with status 1 when tune's best is more than ``--tolerance`` (default 0.02) below the
grid's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from chunkmark.experiments.runner import evaluate
from chunkmark.experiments.tune import search_space, tune

CHUNKER = "fixed_tokens(size=range(10, 400, 10), overlap=range(0, 0.5, 0.1))"
DEFAULT_SCORING = ("position", "chars", "sum")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunker", default=CHUNKER, help="A spec with stepped ranges.")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metric", default="iou")
    parser.add_argument("--retrieval", default="top_k(k=5)")
    parser.add_argument("--recall-floor", type=float, default=0.5)
    parser.add_argument("--dataset", default="demo")
    parser.add_argument("--embedder", default="fake()")
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--out", type=Path, help="Keep the results here (default: a temp dir).")
    parser.add_argument("--smoke", action="store_true", help="a 12-cell grid and 3 trials")
    args = parser.parse_args()
    if args.smoke:
        args.chunker = "fixed_tokens(size=range(50, 200, 50), overlap=range(0, 0.2, 0.1))"
        args.trials = 3
    with tempfile.TemporaryDirectory(prefix="tune-vs-grid-") as tmp:
        out = args.out or Path(tmp)
        return compare(args, out)


def compare(args: argparse.Namespace, out: Path) -> int:
    (grid_text,) = search_space([args.chunker]).grid_texts()
    common = {
        "datasets": [args.dataset],
        "embedders": [args.embedder],
        "no_cache": True,
        "report": False,
    }
    started = time.perf_counter()
    grid = evaluate(**common, chunkers=[grid_text], out=out / "grid")
    grid_seconds = time.perf_counter() - started
    rows = [
        r
        for r in grid.overall()
        if r["retrieval"] == args.retrieval
        and (r["excerpts"], r["unit"], r["denominator"]) == DEFAULT_SCORING
    ]
    feasible = [r for r in rows if r["recall_mean"] >= args.recall_floor]
    if not feasible:
        print(f"No cell of the grid reaches recall {args.recall_floor}; lower --recall-floor.")
        return 1
    grid_best = max(feasible, key=lambda r: r[f"{args.metric}_mean"])
    started = time.perf_counter()
    result = tune(
        {**common, "chunkers": [args.chunker], "out": out / "tune"},
        args.trials,
        metric=args.metric,
        retrieval=args.retrieval,
        recall_floor=args.recall_floor,
        seed=args.seed,
    )
    tune_seconds = time.perf_counter() - started
    best = result.best
    metric = args.metric
    print(f"search: {args.chunker} on {args.dataset} with {args.embedder}")
    print(f"objective: {metric} at {args.retrieval}, recall floor {args.recall_floor:g}")
    print(
        f"grid: {len(rows)} cells in {grid_seconds:.1f}s, {len(feasible)} feasible; best "
        f"{grid_best['chunker']}: {metric} {grid_best[f'{metric}_mean']:.4f}, "
        f"recall {grid_best['recall_mean']:.4f}"
    )
    if best is None or best.value is None:
        print(f"tune: {args.trials} trials, no feasible trial")
        return 1
    distinct = len({t.chunker for t in result.trials if t.chunker})
    print(
        f"tune: {args.trials} trials ({distinct} distinct cells) in {tune_seconds:.1f}s; best "
        f"{best.chunker} (trial {best.number + 1}): {metric} {best.value:.4f}, "
        f"recall {best.recall:.4f}"
    )
    gap = grid_best[f"{metric}_mean"] - best.value
    verdict = "within" if gap <= args.tolerance else "NOT within"
    print(f"gap: {gap:.4f} ({100 * gap:.2f} points), {verdict} {args.tolerance:g}")
    return 0 if gap <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
