"""How often ``chunkmark gate`` fails on noise, how often it catches a planted regression, and how
long a warm gate takes, on the general benchmark's eight fixed/recursive cells (GENERAL8).

    .venv/bin/python benchmarks/gate_calibration.py [--run FOLDER] [--data DIR]
        [--embedder 'fake()'] [--trials 100] [--drop 3] [--max-drop 1] [--show DIR] [--smoke]

``--run`` is a results folder of GENERAL8 (made with ``chunkmark run`` when not given; the
embedder is ``--embedder``, by default the offline ``fake()``, because the gate's statistics
only read per-question values). Everything below uses recall at top_k(k=5), the gate's
defaults (``--max-drop 1``, alpha 0.05, Holm across the 8 cells, 10,000 sign flips):

- **False alarms.** Each of ``--trials`` checks splits the questions at random into two
  disjoint halves and gates the second half's values against the first half's, cell by cell,
  the i-th question of one half paired with the i-th of the other. Each pair is a random
  assignment, so no difference is real: every failure is a false alarm.
- **Power, one way.** A planted regression: retrieval that drops each correct chunk (one
  overlapping an excerpt of its question's document) from the dense ranking with probability
  q, then keeps the top 5 of what is left and scores recall with chunkmark's own span metrics.
  q is set per cell (bisection) so that the expected drop is ``--drop`` points. Each trial
  draws a new degraded run and gates it against the real one, (a) with the regression in every
  cell and (b) in one cell (the others unchanged), Holm across all 8 either way. The recall
  recomputed from the stored chunks and rankings with q = 0 is checked against the run's own
  first. No question can improve: the easiest regression to catch.
- **Power, both ways.** Noise of both signs with a net drop: each question's dense top 10 is,
  with probability s, put in a random order before the top 5 are kept, so a question whose
  correct chunks sat at ranks 6-10 can gain while one whose correct chunks led loses. s is set
  per cell so that the expected net drop is ``--drop`` points; the trials are those above.
- **Another chunker swapped in.** A real change, moving questions both ways: a cell's values
  replaced by those of a worse neighbour of the grid (size halved, or overlap removed), the
  other cells unchanged; each trial gates a paired bootstrap resample of the questions (the
  same resample on both sides), so power is that of a question set of this size.

Each power table prints the questions that got worse and better per cell and trial.
- **Speed.** Wall time and CPU time of the ``chunkmark gate`` command (a new process, as CI
  runs it) on the already-run folder: against the folder itself, against a baseline file, and
  writing the file with ``--update-baseline``; the median of 3.

``--show DIR`` also writes two derived results folders and prints the gate's markdown on each:
the planted regression in one cell, and a noise candidate (the other random half of the
questions, relabelled with the first half's ids).

``--smoke`` runs the whole script on the built-in demo dataset (made with the fake embedder),
3 trials and one timing of each command: seconds, the same tables, for the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import GENERAL8  # the eight reference cells

from chunkmark.datasets import load_dataset
from chunkmark.metrics.span_metrics import ChunkTable, QuestionTable, score_retrieval
from chunkmark.report import gate as g
from chunkmark.specs import canonical_spec

ROOT = Path(__file__).resolve().parent.parent
SETTING = "top_k(k=5)"
DEPTH = 5
# Bootstrap resamples in the trial loops: the interval is printed, never part of the verdict.
BOOT = 200


def default_data() -> Path:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    return shared / "datasets" / "chroma_general"


def make_run(data: Path, embedder: str, out: Path) -> None:
    cmd = [sys.executable, "-m", "chunkmark", "run", "--quiet", "--no-report", "-d", str(data)]
    cmd += ["-e", embedder, "--k", "5,10", "--out", str(out)]
    for spec in GENERAL8:
        cmd += ["-c", spec]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


# --- the planted regression ------------------------------------------------------------------


class Degrader:
    """One cell's top-10 dense ranking, and recall at top 5 after dropping correct chunks."""

    def __init__(self, run: Path, facts: dict[str, Any], dataset: Any, qids: tuple[str, ...]):
        doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
        chunks = pq.read_table(run / "cells" / f"{facts['id']}.chunks.parquet").to_pydict()
        self.chunks = ChunkTable.from_rows(
            [
                (doc_index[d], s, e)
                for d, s, e in zip(*(chunks[c] for c in ("doc_id", "start", "end")), strict=True)
            ]
        )
        ranking = pq.read_table(run / "cells" / f"{facts['id']}.ranking.parquet").to_pydict()
        dense = {
            q: c
            for r, q, c in zip(
                ranking["ranker"], ranking["question_id"], ranking["chunks"], strict=True
            )
            if r.startswith("exact")
        }
        by_id = {q.id: q for q in dataset.questions}
        questions = [by_id[q] for q in qids]
        self.questions = QuestionTable.from_lists(
            [doc_index[q.doc_id] for q in questions],
            [[(s.start, s.end) for s in q.excerpts] for q in questions],
        )
        width = min(len(dense[q]) for q in qids)
        self.ranking = np.asarray([dense[q][:width] for q in qids], dtype=np.int64)
        # correct: same document as the question and overlapping one of its excerpts
        doc, start, end = (
            self.chunks.doc[self.ranking],
            self.chunks.start[self.ranking],
            self.chunks.end[self.ranking],
        )
        self.correct = np.zeros(self.ranking.shape, dtype=bool)
        for i, q in enumerate(questions):
            same = doc[i] == doc_index[q.doc_id]
            for s in q.excerpts:
                self.correct[i] |= same & (start[i] < s.end) & (end[i] > s.start)

    def recall(self, q: float, rng: np.random.Generator) -> np.ndarray:
        keep = ~(self.correct & (rng.random(self.correct.shape) < q))
        order = np.argsort(~keep, axis=1, kind="stable")[:, :DEPTH]
        ranking = np.take_along_axis(self.ranking, order, axis=1)
        ks = np.minimum(DEPTH, keep.sum(axis=1))
        return np.asarray(score_retrieval(self.questions, self.chunks, ranking, ks).recall)

    def shuffled(self, s: float, rng: np.random.Generator) -> np.ndarray:
        """Recall at top 5 when each question's top-10 ranking is, with probability ``s``, put in
        a random order first: questions move both ways, the net is a drop."""
        n, width = self.ranking.shape
        hit = np.asarray(rng.random(n) < s)
        keys = np.where(hit[:, None], rng.random((n, width)), np.arange(width)[None, :])
        order = np.argsort(keys, axis=1, kind="stable")[:, :DEPTH]
        ranking = np.take_along_axis(self.ranking, order, axis=1)
        ks = np.full(n, min(DEPTH, width))
        return np.asarray(score_retrieval(self.questions, self.chunks, ranking, ks).recall)


Draw = Callable[[float, np.random.Generator], np.ndarray]


def calibrate(draw: Draw, clean: np.ndarray, drop: float, seed: int) -> float:
    """The q whose expected recall drop is ``drop`` points (bisection, 10 draws per step)."""
    low, high = 0.0, 1.0
    for step in range(12):
        q = (low + high) / 2
        rng = np.random.default_rng(seed * 1000 + step)
        mean_drop = 100 * np.mean([clean.mean() - draw(q, rng).mean() for _ in range(10)])
        low, high = (q, high) if mean_drop < drop else (low, q)
    return (low + high) / 2


# Another chunker swapped in: each cell and its worse neighbour in GENERAL8.
SWAPS = {
    "fixed_tokens(size=800, overlap=400)": ("fixed_tokens(size=400, overlap=200)", "size halved"),
    "fixed_tokens(size=400, overlap=200)": ("fixed_tokens(size=400, overlap=0)", "overlap removed"),
    "fixed_tokens(size=400, overlap=0)": ("fixed_tokens(size=200, overlap=0)", "size halved"),
    "recursive(size=800, overlap=400)": ("recursive(size=400, overlap=200)", "size halved"),
    "recursive(size=400, overlap=200)": ("recursive(size=400, overlap=0)", "overlap removed"),
    "recursive(size=400, overlap=0)": ("recursive(size=200, overlap=0)", "size halved"),
}


# --- derived folders for the demonstrations ----------------------------------------------------


def derive(run: Path, out: Path, values: dict[g.Cell, dict[str, float]]) -> Path:
    """A results folder with ``run``'s manifest and its top_k(k=5) rows of the given questions,
    recall replaced by ``values`` (cell -> question id -> recall)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(run / "manifest.json", out / "manifest.json")
    table = pq.read_table(run / "results.parquet")
    table = table.filter(pc.equal(table["retrieval"], SETTING))
    cols = table.to_pydict()
    keep, recall = [], []
    for i, (c, e, q) in enumerate(
        zip(cols["chunker"], cols["embedder"], cols["question_id"], strict=True)
    ):
        cell = values.get((c, e), {})
        if q in cell:
            keep.append(i)
            recall.append(cell[q])
    table = table.take(pa.array(keep))
    table = table.set_column(table.schema.get_field_index("recall"), "recall", pa.array(recall))
    pq.write_table(table, out / "results.parquet")
    return out


def gate_cli(*args: str | Path) -> tuple[int, str, float, float]:
    """``chunkmark gate ARGS`` in a new process: exit status, stdout, wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "chunkmark", "gate", *map(str, args)], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 3):
        raise SystemExit(f"gate failed ({done.returncode}): {done.stderr}")
    return done.returncode, done.stdout, wall, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="results folder of GENERAL8 (made if not given)")
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--embedder", default="fake()")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--drop", type=float, default=3.0, help="planted drop, points")
    parser.add_argument("--max-drop", type=float, default=1.0)
    parser.add_argument("--show", type=Path, help="write the demonstration folders here")
    parser.add_argument(
        "--smoke", action="store_true", help="the demo dataset, 3 trials, one timing: seconds"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.data, args.trials = Path("demo"), min(args.trials, 3)
    repeats = 1 if args.smoke else 3

    work = Path(tempfile.mkdtemp(prefix="gate-calibration-"))
    run = args.run
    if run is None:
        run = work / "run"
        print(f"running GENERAL8 with {args.embedder} into {run} ...", flush=True)
        make_run(args.data, args.embedder, run)
    side = g.read_run(run, "recall", g.Picks(retrieval=SETTING))
    cells = list(side.cells)
    n = len(side.question_ids)
    print(f"run {run}: {len(cells)} cells, {n} questions, recall at {side.retrieval}")
    labels = g.short_labels(cells)

    # --- false alarms: disjoint random halves ---
    rng = np.random.default_rng(2024)
    half = n // 2
    tests = [(False, 0.0), (False, args.max_drop), (True, 0.0), (True, args.max_drop)]
    fails = dict.fromkeys(tests, 0)
    flagged = dict.fromkeys(tests, 0)
    for _ in range(args.trials):
        order = rng.permutation(n)
        a, b = order[:half], order[half : 2 * half]
        base = {c: v[a] for c, v in side.cells.items()}
        cand = {c: v[b] for c, v in side.cells.items()}
        seed = int(rng.integers(1 << 31))
        for one_sided, margin in tests:
            checks = g.check_cells(
                base, cand, max_drop=margin, seed=seed, one_sided=one_sided, bootstrap=BOOT
            )
            bad = sum(c.regression for c in checks)
            flagged[(one_sided, margin)] += bad
            fails[(one_sided, margin)] += bad > 0
    print(
        f"\nfalse alarms: {args.trials} gate checks of {len(cells)} cells, the candidate a "
        f"disjoint random half ({half} questions) against the other"
    )
    print("| test | --max-drop | checks failed | cells flagged |")
    print("|---|---:|---:|---:|")
    for one_sided, margin in tests:
        name = "one-sided (--one-sided)" if one_sided else "two-sided (default)"
        print(
            f"| {name} | {margin:g} | {fails[(one_sided, margin)]} / {args.trials} | "
            f"{flagged[(one_sided, margin)]} / {args.trials * len(cells)} |"
        )

    # --- power: a planted regression ---
    dataset = load_dataset(str(args.data) if args.run is None else _source(run))
    manifest = json.loads((run / "manifest.json").read_text())
    facts = {(f["chunker"], f["embedder"]): f for f in manifest["cells"]}
    degraders = {c: Degrader(run, facts[c], dataset, side.question_ids) for c in cells}
    worst = max(
        float(np.max(np.abs(d.recall(0.0, rng) - side.cells[c]))) for c, d in degraders.items()
    )
    print(
        "\nrecall recomputed from the stored chunks and rankings (q = 0) vs the run's: "
        f"max |diff| {worst:.2e}"
    )
    one_way: dict[g.Cell, Draw] = {c: d.recall for c, d in degraders.items()}
    qs = {c: calibrate(one_way[c], side.cells[c], args.drop, i) for i, c in enumerate(cells)}
    print(
        f"\npower: a planted drop of {args.drop:g} recall points (correct chunks dropped with "
        f"probability q), {args.trials} trials, --max-drop {args.max_drop:g}"
    )
    power(side, one_way, qs, labels, args, np.random.default_rng(7))

    both_ways: dict[g.Cell, Draw] = {c: d.shuffled for c, d in degraders.items()}
    ss = {
        c: calibrate(both_ways[c], side.cells[c], args.drop, 100 + i) for i, c in enumerate(cells)
    }
    print(
        f"\npower, both ways: a net drop of {args.drop:g} recall points (each question's top 10 "
        f"shuffled with probability q), {args.trials} trials, --max-drop {args.max_drop:g}"
    )
    power(side, both_ways, ss, labels, args, np.random.default_rng(8))

    print(
        f"\npower, another chunker swapped in: one cell's values replaced by its worse "
        f"neighbour's, {args.trials} paired bootstrap resamples of the questions, "
        f"--max-drop {args.max_drop:g}"
    )
    swapped(side, labels, args, np.random.default_rng(9))

    # --- speed of the command ---
    file = work / "baseline.json"
    timings: dict[str, list[tuple[float, float]]] = {}
    for name, extra in (
        ("--update-baseline (writes the file)", ["--baseline", file, "--update-baseline"]),
        ("--baseline FILE", ["--baseline", file]),
        ("--baseline FOLDER (the run itself)", ["--baseline", run]),
    ):
        timings[name] = [gate_cli(run, *extra)[2:] for _ in range(repeats)]
    print(
        f"\nwarm gate on {run} ({len(cells)} cells, {n} questions), median of {repeats}, limit 10 s"
    )
    print("| command | wall s | CPU s |")
    print("|---|---:|---:|")
    for name, values in timings.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"| chunkmark gate RUN {name} | {wall:.2f} | {cpu:.2f} |")
    print(
        f"baseline file: {file.stat().st_size:,} bytes; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )

    if args.show:
        show(args.show, run, side, degraders, qs, labels)


def power(
    side: g.Side,
    draws: dict[g.Cell, Draw],
    qs: dict[g.Cell, float],
    labels: dict[g.Cell, str],
    args: argparse.Namespace,
    prng: np.random.Generator,
) -> None:
    """Gate ``--trials`` degraded runs against the real one: the regression in every cell, and in
    one cell (each in turn) with the other cells unchanged; print the two tables."""
    cells = list(side.cells)
    sides = (False, True)
    caught_all = dict.fromkeys(sides, 0)
    caught_one = dict.fromkeys(sides, 0)
    per_cell = {(c, o): 0 for c in cells for o in sides}
    moved = {c: [0, 0] for c in cells}  # questions worse, better; summed over trials
    drops_all: list[float] = []
    drops_one: list[float] = []
    for t in range(args.trials):
        degraded = {c: draws[c](qs[c], prng) for c in cells}
        for c in cells:
            moved[c][0] += int(np.sum(degraded[c] < side.cells[c]))
            moved[c][1] += int(np.sum(degraded[c] > side.cells[c]))
        target = cells[t % len(cells)]
        one = {c: (degraded[c] if c == target else side.cells[c]) for c in cells}
        for one_sided in sides:
            kw = {"max_drop": args.max_drop, "seed": t, "one_sided": one_sided, "bootstrap": BOOT}
            checks = g.check_cells(side.cells, degraded, **kw)
            caught_all[one_sided] += any(c.regression for c in checks)
            for c, check in zip(cells, checks, strict=True):
                per_cell[(c, one_sided)] += check.regression
                if not one_sided:
                    drops_all.append(check.drop)
            checks = g.check_cells(side.cells, one, **kw)
            hit = next(c for c in checks if (c.chunker, c.embedder) == target)
            caught_one[one_sided] += hit.regression
            if not one_sided:
                drops_one.append(hit.drop)
            assert not any(c.regression for c in checks if (c.chunker, c.embedder) != target)
    n = len(side.question_ids)
    print(
        f"| cell | q | mean drop (points) | questions worse / better (of {n}) "
        "| caught, two-sided | caught, one-sided |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for i, c in enumerate(cells):
        mean = statistics.fmean(drops_all[i :: len(cells)])
        worse, better = (m / args.trials for m in moved[c])
        print(
            f"| {labels[c]} | {qs[c]:.3f} | {mean:.2f} | {worse:.1f} / {better:.1f} "
            f"| {per_cell[(c, False)]} / {args.trials} | {per_cell[(c, True)]} / {args.trials} |"
        )
    print("\n| scenario | mean drop (points) | failed, two-sided | failed, one-sided |")
    print("|---|---:|---:|---:|")
    print(
        f"| regression in all {len(cells)} cells | {statistics.fmean(drops_all):.2f} | "
        f"{caught_all[False]} / {args.trials} | {caught_all[True]} / {args.trials} |"
    )
    print(
        f"| regression in one cell (each in turn), {len(cells) - 1} unchanged | "
        f"{statistics.fmean(drops_one):.2f} | {caught_one[False]} / {args.trials} | "
        f"{caught_one[True]} / {args.trials} |"
    )


def swapped(
    side: g.Side, labels: dict[g.Cell, str], args: argparse.Namespace, rng: np.random.Generator
) -> None:
    """Each cell of SWAPS replaced by its worse neighbour's values (the other cells unchanged),
    gated on ``--trials`` paired bootstrap resamples of the questions."""
    cells = list(side.cells)
    by_spec = {canonical_spec("chunker", c[0]): c for c in cells}
    n = len(side.question_ids)
    print(
        f"| cell | swapped in | mean drop (points) | questions worse / better (of {n}) "
        "| caught, two-sided | caught, one-sided |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for spec, (worse_spec, change) in SWAPS.items():
        cell = by_spec.get(canonical_spec("chunker", spec))
        other = by_spec.get(canonical_spec("chunker", worse_spec))
        if cell is None or other is None:
            continue
        base, cand = side.cells[cell], side.cells[other]
        caught = dict.fromkeys((False, True), 0)
        for t in range(args.trials):
            idx = rng.integers(n, size=n)
            before = {c: v[idx] for c, v in side.cells.items()}
            after = {c: (cand[idx] if c == cell else v[idx]) for c, v in side.cells.items()}
            for one_sided in (False, True):
                kw = {"max_drop": args.max_drop, "seed": t, "one_sided": one_sided}
                checks = g.check_cells(before, after, bootstrap=BOOT, **kw)
                hit = next(c for c in checks if (c.chunker, c.embedder) == cell)
                caught[one_sided] += hit.regression
                assert not any(c.regression for c in checks if (c.chunker, c.embedder) != cell)
        drop = 100 * float(np.mean(base - cand))
        print(
            f"| {labels[cell]} | {labels[other]} ({change}) | {drop:.2f} | "
            f"{int(np.sum(cand < base))} / {int(np.sum(cand > base))} | "
            f"{caught[False]} / {args.trials} | {caught[True]} / {args.trials} |"
        )


def _source(run: Path) -> str:
    manifest = json.loads((run / "manifest.json").read_text())
    return str(manifest["datasets"][0]["source"])


def show(
    folder: Path,
    run: Path,
    side: g.Side,
    degraders: dict[g.Cell, Degrader],
    qs: dict[g.Cell, float],
    labels: dict[g.Cell, str],
) -> None:
    """The gate's output on a planted regression (one cell) and on noise (random halves)."""
    ids = side.question_ids
    target = next(iter(side.cells))
    degraded = degraders[target].recall(qs[target], np.random.default_rng(11))
    values = {
        c: dict(zip(ids, (degraded if c == target else v).tolist(), strict=True))
        for c, v in side.cells.items()
    }
    planted = derive(run, folder / "planted", values)
    order = np.random.default_rng(12).permutation(len(ids))
    half = len(ids) // 2
    a, b = order[:half], order[half : 2 * half]
    base = derive(
        run, folder / "half-a", {c: {ids[i]: float(v[i]) for i in a} for c, v in side.cells.items()}
    )
    noise = derive(
        run,
        folder / "half-b",
        {
            c: {ids[i]: float(v[j]) for i, j in zip(a, b, strict=True)}
            for c, v in side.cells.items()
        },
    )
    for title, cand, against in (
        (f"planted regression in {labels[target]}", planted, run),
        ("noise: the other random half", noise, base),
    ):
        code, out, wall, _ = gate_cli(cand, "--baseline", against)
        print(
            f"\n$ chunkmark gate {cand} --baseline {against}   # {title}: exit {code}, {wall:.1f} s\n{out}"
        )


if __name__ == "__main__":
    main()
