"""Do the recommendation's verdicts hold up? P(best), the single-winner rule and the questions
needed, measured on subsamples of a real grid's per-question values.

The grid: fixed_tokens at 200, 400 and 800 tokens and recursive at 200 and 400 (no overlap), one
embedder, one retrieval setting, on ``--dataset`` (Chroma's general benchmark by default). The
run is made first, into ``--out`` (a rerun with the same ``--out`` resumes it and embeds nothing;
``--cache-dir`` keeps the embeddings between folders). Then, on the per-question values of
``--metric``:

(a) **Questions needed.** For every pair of cells whose full-set difference is above the floor
    (0.005), the observed n is the smallest number of questions m at which at least 80% of
    ``--power-draws`` draws of m questions (with replacement from the full set, taken as the
    population) give a paired t-test p < 0.05 with the full set's sign: the n at which the sign
    of the difference stabilises at the stated power. The prediction is
    :func:`chunkmark.metrics.selection.questions_needed` computed on ``--pilots`` pilot
    subsamples of n = 50, 100, 200, 400 questions (without replacement). The table gives, per
    pilot size, the median factor predicted / observed and the share of predictions within a
    factor of 2 (a pilot whose difference is below the floor predicts "no realistic number" and
    counts as outside).
(b) **Null data.** ``--trials`` trials per kind in which the two "cells" cannot differ, each
    through the full rule (P(best) >= 0.9 and nothing tied after Holm): two copies of one cell
    with the question labels shuffled between them (on a random half of the questions, copy B
    holds the values of a random permutation of the questions; on all of them both means would
    be equal by construction); two disjoint random halves of one cell's questions, paired at
    random; and two real cells whose labels are swapped on each question by a coin (the real
    paired noise, no difference in expectation). The cell (or pair) cycles through the grid.
    The count of trials naming a winner should be at most 5% (10 of 200).
(c) **Stability of the winner.** On ``--pilots`` subsamples of n = 50, 100, 200, 400 questions
    (without replacement), the share in which the full set's best cell keeps P(best) >= 0.9, and
    the share in which the rule names it the single winner.

Finally the recommendation ``chunkmark run`` prints for the full run.

    .venv/bin/python benchmarks/verdict_calibration.py [--dataset ../shared/datasets/chroma_general]
        [--embedder 'fake()'] [--retrieval 'bm25(k=5)'] [--metric iou] [--out DIR]
        [--cache-dir DIR] [--pilots 200] [--trials 200] [--power-draws 1000] [--seed 0]
        [--sections abc]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CHUNKERS = (
    "fixed_tokens(size=200, overlap=0)",
    "fixed_tokens(size=400, overlap=0)",
    "fixed_tokens(size=800, overlap=0)",
    "recursive(size=200, overlap=0)",
    "recursive(size=400, overlap=0)",
)
PILOT_SIZES = (50, 100, 200, 400)
PERMUTATIONS = 2_000  # sign flips of each null trial's tests
RESAMPLES = 2_000  # bootstrap resamples of each P(best)
NULLS = (
    "one cell, question labels shuffled between copies",
    "one cell, disjoint halves",
    "two cells, labels swapped per question by a coin",
)


def run_grid(args: argparse.Namespace) -> Path:
    import chunkmark

    run = args.out / "run"
    setting = {"retrieval": [args.retrieval]} if args.retrieval else {"k": [5]}
    chunkmark.evaluate(
        dataset=args.dataset,
        chunkers=list(CHUNKERS),
        embedders=[args.embedder],
        out=run,
        cache_dir=args.cache_dir or args.out / "cache",
        report=False,
        **setting,
    )
    return run


def per_question(
    run: Path, metric: str, retrieval: str | None
) -> tuple[dict[str, np.ndarray], str]:
    """Each cell's values of ``metric`` over the questions all share, and the setting read."""
    from chunkmark.report.comparisons import StatsOptions, choose_setting, paired_values
    from chunkmark.report.data import load_runs

    data = load_runs([run])
    setting = choose_setting(data, StatsOptions(metric=metric, retrieval=retrieval))
    options = [(c.index, *setting) for c in data.cells]
    values = paired_values(data, options, metric)
    return {data.cells[o[0]].chunker_short: v for o, v in values.items()}, setting[0]


def verdict(cells: dict[str, np.ndarray], seed: int) -> tuple[str, float, int, bool]:
    """The recommendation's rule on these values: the best, its P(best), the size of the group
    tied with it, and whether a single winner is named."""
    from chunkmark.metrics.paired import tied_with_best
    from chunkmark.metrics.selection import names_single_winner, p_best

    ties = tied_with_best(cells, permutations=PERMUTATIONS, bootstrap=1, seed=seed)
    best = ties[0].cell
    share = p_best(cells, resamples=RESAMPLES, seed=seed)[best]
    tied = sum(t.tied for t in ties)
    return best, share, tied, names_single_winner(share, tied)


def empirical_n(d: np.ndarray, rng: np.random.Generator, draws: int, cap: int) -> int | None:
    """The smallest m (to 2%) at which >= 80% of ``draws`` resamples of m differences give a
    paired t-test p < 0.05 with the sign of mean(d); None above ``cap``."""
    from scipy import stats

    sign = np.sign(d.mean())

    def power(m: int) -> float:
        idx = rng.integers(0, len(d), size=(draws, m))
        x = d[idx]
        mean = x.mean(axis=1)
        sd = x.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mean / (sd / np.sqrt(m))
        p = 2 * stats.t.sf(np.abs(np.nan_to_num(t)), m - 1)
        return float(((p < 0.05) & (np.sign(mean) == sign)).mean())

    low, high = 2, 4
    while power(high) < 0.8:
        low, high = high, high * 2
        if high > cap:
            return None
    while high - low > max(1, low // 50):
        mid = (low + high) // 2
        if power(mid) >= 0.8:
            high = mid
        else:
            low = mid
    return high


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def questions_table(
    cells: dict[str, np.ndarray], args: argparse.Namespace, say: Callable[[str], None]
) -> None:
    from chunkmark.metrics.selection import MIN_DIFFERENCE, questions_needed

    rng = np.random.default_rng(args.seed)
    n_total = len(next(iter(cells.values())))
    rows = []
    factors: dict[int, list[float]] = {n: [] for n in PILOT_SIZES}
    inside: dict[int, list[bool]] = {n: [] for n in PILOT_SIZES}
    for a, b in combinations(cells, 2):
        d = cells[a] - cells[b]
        if abs(d.mean()) < MIN_DIFFERENCE:
            rows.append([f"{a} - {b}", f"{100 * d.mean():+.2f}", "below floor", "", *[""] * 4])
            continue
        observed = empirical_n(d, rng, args.power_draws, cap=200_000)
        full = questions_needed(d).n
        row = [f"{a} - {b}", f"{100 * d.mean():+.2f}", str(observed), str(full)]
        for n in PILOT_SIZES:
            if n > n_total:
                row.append("n/a")
                continue
            predicted = []
            for _ in range(args.pilots):
                pick = rng.choice(n_total, size=n, replace=False)
                predicted.append(questions_needed(d[pick]).n)
            ok = [p for p in predicted if p is not None]
            ratio = [p / observed for p in ok] if observed else []
            within = [
                p is not None and observed is not None and 0.5 <= p / observed <= 2.0
                for p in predicted
            ]
            factors[n] += ratio
            inside[n] += within
            median = f"{np.median(ratio):.2f}" if ratio else "-"
            row.append(f"{median} ({100 * np.mean(within):.0f}%)")
        rows.append(row)
    say(
        table(
            ["pair (A - B)", "diff (pts)", "observed n", "predicted (full set)"]
            + [f"n={n}: median factor (within 2x)" for n in PILOT_SIZES],
            rows,
        )
    )
    summary = [
        [
            str(n),
            f"{np.median(factors[n]):.2f}" if factors[n] else "-",
            f"{100 * np.mean(inside[n]):.0f}%" if inside[n] else "-",
            str(len(inside[n])),
        ]
        for n in PILOT_SIZES
    ]
    say("")
    say(table(["pilot n", "median factor", "within 2x", "predictions"], summary))


def null_table(
    cells: dict[str, np.ndarray], args: argparse.Namespace, say: Callable[[str], None]
) -> None:
    from chunkmark.metrics.selection import MIN_P_BEST

    rng = np.random.default_rng(args.seed + 1)
    names = list(cells)
    pairs = list(combinations(names, 2))
    rows = []
    for kind in NULLS:
        winners = high_share = tied_not = 0
        for trial in range(args.trials):
            v = cells[names[trial % len(names)]]
            if kind == NULLS[0]:  # two copies, the questions relabelled in the second
                drawn = rng.choice(len(v), size=len(v) // 2, replace=False)
                pair = {"A": v[drawn], "B": v[rng.permutation(len(v))[drawn]]}
            elif kind == NULLS[1]:
                order = rng.permutation(len(v))
                half = len(v) // 2
                pair = {"A": v[order[:half]], "B": v[order[half : 2 * half]]}
            else:  # two real cells, which is which decided per question by a coin
                x, y = (cells[c] for c in pairs[trial % len(pairs)])
                swap = rng.random(len(x)) < 0.5
                pair = {"A": np.where(swap, y, x), "B": np.where(swap, x, y)}
            _, share, tied, named = verdict(pair, seed=trial)
            winners += named
            high_share += share >= MIN_P_BEST
            tied_not += tied == 1
        rows.append(
            [
                kind,
                str(args.trials),
                str(high_share),
                str(tied_not),
                f"{winners} ({100 * winners / args.trials:.1f}%)",
            ]
        )
    say(
        table(
            [
                "null data",
                "trials",
                "P(best) >= 0.9",
                "nothing tied (Holm)",
                "winner named (both)",
            ],
            rows,
        )
    )


def stability_table(
    cells: dict[str, np.ndarray], args: argparse.Namespace, say: Callable[[str], None]
) -> str:
    from chunkmark.metrics.selection import MIN_P_BEST, p_best

    rng = np.random.default_rng(args.seed + 2)
    best, share, tied, named = verdict(cells, seed=args.seed)
    say(
        f"full set: best {best}, P(best) {share:.3f}, {tied} cell(s) in the tied group, "
        f"single winner named: {'yes' if named else 'no'}"
    )
    n_total = len(next(iter(cells.values())))
    rows = []
    for n in PILOT_SIZES:
        if n > n_total:
            continue
        keeps = wins = any_named = 0
        for i in range(args.pilots):
            pick = rng.choice(n_total, size=n, replace=False)
            sub = {k: v[pick] for k, v in cells.items()}
            shares = p_best(sub, resamples=RESAMPLES, seed=i)
            keeps += shares[best] >= MIN_P_BEST
            sub_best, _, _, sub_named = verdict(sub, seed=i)
            any_named += sub_named
            wins += sub_named and sub_best == best
        rows.append(
            [
                str(n),
                str(args.pilots),
                f"{100 * keeps / args.pilots:.1f}%",
                f"{100 * wins / args.pilots:.1f}%",
                f"{100 * any_named / args.pilots:.1f}%",
            ]
        )
    say(
        table(
            [
                "subsample n",
                "subsamples",
                f"full-set best keeps P(best) >= {MIN_P_BEST}",
                "named the single winner",
                "any single winner named",
            ],
            rows,
        )
    )
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser.add_argument(
        "--dataset",
        default=str(shared / "datasets" / "chroma_general"),
        help="dataset folder or built-in name (suite sets can be passed here)",
    )
    parser.add_argument("--embedder", default="fake()")
    parser.add_argument(
        "--retrieval", default="bm25(k=5)", help="retrieval setting spec ('' for top_k(k=5))"
    )
    parser.add_argument("--metric", default="iou")
    parser.add_argument("--out", type=Path, default=None, help="keep (and resume) the run here")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--pilots", type=int, default=200)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--power-draws", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sections", default="abc", help="which of (a), (b), (c) to run")
    parser.add_argument(
        "--smoke", action="store_true", help="the demo dataset, 5 pilots, trials and draws each"
    )
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.pilots, args.trials, args.power_draws = "demo", 5, 5, 20
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(shared / "tiktoken_cache"))

    with tempfile.TemporaryDirectory() as tmp:
        args.out = args.out or Path(tmp)
        started = time.perf_counter()
        run = run_grid(args)
        cells, setting = per_question(run, args.metric, args.retrieval or None)
        n = len(next(iter(cells.values())))
        print(
            f"dataset {args.dataset}; embedder {args.embedder}; retrieval {setting}; "
            f"metric {args.metric}; {n} questions; {len(cells)} cells"
        )
        for name, v in cells.items():
            print(f"  {name}: mean {100 * v.mean():.2f}")
        if "a" in args.sections:
            print("\n(a) questions needed: predicted from pilots vs observed\n")
            questions_table(cells, args, print)
        if "b" in args.sections:
            print("\n(b) null data: a winner should be named in at most 5% of trials\n")
            null_table(cells, args, print)
        if "c" in args.sections:
            print("\n(c) the full set's winner on subsamples\n")
            stability_table(cells, args, print)
        print("\nthe recommendation `chunkmark run` prints for the full run:\n")
        from chunkmark.report.recommendation_text import recommendation_lines

        for line in recommendation_lines(run):
            print(line)
        print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
