"""How often ``chunkmark gate`` fails on noise, how often it catches a planted regression, and how
long a warm gate takes, on the general benchmark's eight fixed/recursive cells (GENERAL8).

    .venv/bin/python benchmarks/gate_calibration.py [--run FOLDER] [--data DIR]
        [--embedder 'fake()'] [--trials 100] [--drop 3] [--max-drop 1] [--show DIR]

``--run`` is a results folder of GENERAL8 (made with ``chunkmark run`` when not given; the
embedder is ``--embedder``, by default the offline ``fake()``, because the gate's statistics
only read per-question values). Everything below uses recall at top_k(k=5), the gate's
defaults (``--max-drop 1``, alpha 0.05, Holm across the 8 cells, 10,000 sign flips):

- **False alarms.** Each of ``--trials`` checks splits the questions at random into two
  disjoint halves and gates the second half's values against the first half's, cell by cell,
  the i-th question of one half paired with the i-th of the other. Each pair is a random
  assignment, so no difference is real: every failure is a false alarm.
- **Power.** A planted regression: retrieval that drops each correct chunk (one overlapping an
  excerpt of its question's document) from the dense ranking with probability q, then keeps
  the top 5 of what is left and scores recall with chunkmark's own span metrics. q is set per
  cell (bisection) so that the expected drop is ``--drop`` points. Each trial draws a new
  degraded run and gates it against the real one, (a) with the regression in every cell and
  (b) in one cell (the others unchanged), Holm across all 8 either way. The recall recomputed
  from the stored chunks and rankings with q = 0 is checked against the run's own first.
- **Speed.** Wall time and CPU time of the ``chunkmark gate`` command (a new process, as CI
  runs it) on the already-run folder: against the folder itself, against a baseline file, and
  writing the file with ``--update-baseline``; the median of 3.

``--show DIR`` also writes two derived results folders and prints the gate's markdown on each:
the planted regression in one cell, and a noise candidate (the other random half of the
questions, relabelled with the first half's ids).
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


def calibrate(degrader: Degrader, clean: np.ndarray, drop: float, seed: int) -> float:
    """The q whose expected recall drop is ``drop`` points (bisection, 10 draws per step)."""
    low, high = 0.0, 1.0
    for step in range(12):
        q = (low + high) / 2
        rng = np.random.default_rng(seed * 1000 + step)
        mean_drop = 100 * np.mean(
            [clean.mean() - degrader.recall(q, rng).mean() for _ in range(10)]
        )
        low, high = (q, high) if mean_drop < drop else (low, q)
    return (low + high) / 2


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="results folder of GENERAL8 (made if not given)")
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--embedder", default="fake()")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--drop", type=float, default=3.0, help="planted drop, points")
    parser.add_argument("--max-drop", type=float, default=1.0)
    parser.add_argument("--show", type=Path, help="write the demonstration folders here")
    args = parser.parse_args()

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
    dataset = load_dataset(args.data if args.run is None else _source(run))
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
    qs = {
        c: calibrate(d, side.cells[c], args.drop, i) for i, (c, d) in enumerate(degraders.items())
    }
    sides = (False, True)
    caught_all = dict.fromkeys(sides, 0)
    caught_one = dict.fromkeys(sides, 0)
    per_cell = {(c, o): 0 for c in cells for o in sides}
    drops_all: list[float] = []
    drops_one: list[float] = []
    prng = np.random.default_rng(7)
    for t in range(args.trials):
        degraded = {c: degraders[c].recall(qs[c], prng) for c in cells}
        target = cells[t % len(cells)]
        one = {c: (degraded[c] if c == target else side.cells[c]) for c in cells}
        for one_sided in sides:
            kw = {"max_drop": args.max_drop, "seed": t, "one_sided": one_sided, "bootstrap": BOOT}
            checks = g.check_cells(side.cells, degraded, **kw)  # type: ignore[arg-type]
            caught_all[one_sided] += any(c.regression for c in checks)
            for c, check in zip(cells, checks, strict=True):
                per_cell[(c, one_sided)] += check.regression
                if not one_sided:
                    drops_all.append(check.drop)
            checks = g.check_cells(side.cells, one, **kw)  # type: ignore[arg-type]
            hit = next(c for c in checks if (c.chunker, c.embedder) == target)
            caught_one[one_sided] += hit.regression
            if not one_sided:
                drops_one.append(hit.drop)
            assert not any(c.regression for c in checks if (c.chunker, c.embedder) != target)
    print(
        f"\npower: a planted drop of {args.drop:g} recall points (correct chunks dropped with "
        f"probability q), {args.trials} trials, --max-drop {args.max_drop:g}"
    )
    print("| cell | q | mean drop (points) | caught, two-sided | caught, one-sided |")
    print("|---|---:|---:|---:|---:|")
    for i, c in enumerate(cells):
        mean = statistics.fmean(drops_all[i :: len(cells)])
        print(
            f"| {labels[c]} | {qs[c]:.3f} | {mean:.2f} | {per_cell[(c, False)]} / {args.trials} "
            f"| {per_cell[(c, True)]} / {args.trials} |"
        )
    print("\n| scenario | mean drop (points) | failed, two-sided | failed, one-sided |")
    print("|---|---:|---:|---:|")
    print(
        f"| regression in all 8 cells | {statistics.fmean(drops_all):.2f} | "
        f"{caught_all[False]} / {args.trials} | {caught_all[True]} / {args.trials} |"
    )
    print(
        f"| regression in one cell (each in turn), 7 unchanged | {statistics.fmean(drops_one):.2f}"
        f" | {caught_one[False]} / {args.trials} | {caught_one[True]} / {args.trials} |"
    )

    # --- speed of the command ---
    file = work / "baseline.json"
    timings: dict[str, list[tuple[float, float]]] = {}
    for name, extra in (
        ("--update-baseline (writes the file)", ["--baseline", file, "--update-baseline"]),
        ("--baseline FILE", ["--baseline", file]),
        ("--baseline FOLDER (the run itself)", ["--baseline", run]),
    ):
        timings[name] = [gate_cli(run, *extra)[2:] for _ in range(3)]
    print(f"\nwarm gate on {run} ({len(cells)} cells, {n} questions), median of 3, limit 10 s")
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
