"""Does the leaderboard's pick hold on a set it was not fitted on? Leave one set out.

For every set of a suite folder (the committed board of record by default), the cells at
``--budget`` tokens are ranked on the other sets only; the mean-rank pick (the board's rule) and
the minimax-regret pick (the cell whose worst regret over the other sets is smallest) are then
scored on the held-out set: their rank among its cells and their regret (the held-out set's best
mean minus the pick's, in recall points), with a paired bootstrap interval over the held-out
set's questions that re-chooses the best cell in every resample. A fixed baseline cell, fitted
on nothing (a common default: fixed 512-token chunks, dense MiniLM, the same budget), is scored
beside them. Library: :mod:`chunkmark.suite.holdout`.

    .venv/bin/python benchmarks/leave_one_set_out.py [SUITE_DIR] [--budget 1024]
        [--metric recall] [--resamples 1000] [--seed 0] [--json FILE]

``--smoke`` runs the same on the committed board with 50 resamples (for the tests).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SUITE = ROOT / "leaderboard" / "default-suite"
BASELINE = ("fixed_tokens(size=512", "late_chunking=False", "dense @")
RULES = ("mean rank", "minimax regret", "baseline")


def short(spec: str) -> str:
    """A cell part's short name (the spec's name and first argument)."""
    if spec.startswith("none"):
        _, _, chunked_with = spec.partition("; chunked with ")
        return (
            f"BM25 only, chunked with {short(chunked_with[:-1])}" if chunked_with else "BM25 only"
        )
    name, _, rest = spec.partition("(")
    first = rest.split(",")[0].rstrip(")")
    extra = ", late" if "late_chunking=True" in spec else ""
    return f"{name}({first}{extra})" if first else name


def cell_name(key: tuple[str, str, str]) -> str:
    return f"{short(key[0])} x {short(key[1])} x {key[2]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", nargs="?", default=str(DEFAULT_SUITE))
    parser.add_argument("--budget", type=int, default=1024)
    parser.add_argument("--metric", default="recall")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the table as JSON to this file")
    parser.add_argument("--smoke", action="store_true", help="50 resamples, for the tests")
    args = parser.parse_args(argv)
    from chunkmark.suite.leaderboard import leave_one_set_out_suite

    resamples = 50 if args.smoke else args.resamples
    baseline = (*BASELINE[:2], f"{BASELINE[2]}{args.budget}")
    result = leave_one_set_out_suite(
        args.suite,
        budget=args.budget,
        metric=args.metric,
        baseline=baseline,
        resamples=resamples,
        seed=args.seed,
    )
    points = 100.0
    print(
        f"leave one set out: {args.suite}, {len(result.keys)} cells at {args.budget} tokens, "
        f"{args.metric}, {resamples} resamples, seed {args.seed}"
    )
    print(f"the board's pick over every set: {cell_name(result.full_pick)}")
    print()
    print("| held-out set | questions | best cell | rule | pick | rank | regret (points) |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for s in result.sets:
        for p in s.picks:
            r = p.regret
            print(
                f"| {s.set} | {s.questions} | {cell_name(s.best)} ({s.best_mean * points:.1f}) "
                f"| {p.rule} | {cell_name(p.cell)} | {p.rank:g} of {s.cells} "
                f"| {r.value * points:.1f} [{r.low * points:.1f}, {r.high * points:.1f}] |"
            )
            rows.append(
                {
                    "set": s.set,
                    "questions": s.questions,
                    "best": list(s.best),
                    "rule": p.rule,
                    "pick": list(p.cell),
                    "rank": p.rank,
                    "cells": s.cells,
                    "regret": [r.value, r.low, r.high],
                }
            )
    print()
    print("| rule | worst regret (points) | mean regret (points) |")
    print("|---|---|---|")
    for rule in result.rules:
        print(f"| {rule} | {result.worst(rule) * points:.1f} | {result.mean(rule) * points:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
