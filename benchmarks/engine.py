"""Cold vs warm runs of the eight reference cells on Chroma's general benchmark, per precision.

For each precision (fp32, and fp16/bf16 with ``--precisions fp32,fp16,bf16``) it runs the eight
cells in one ``chunkmark run`` with an empty cache (cold), then again with the same cache and a
new results folder (warm), and prints:

- seconds by phase, cold and warm, and the warm/cold ratio of the whole command;
- the embedding work: texts requested, distinct texts, distinct model inputs, inputs embedded;
- wall time over time inside the model, for the grid and per cell (a cell's ratio counts the
  model time of its own distinct inputs, wherever in the run they were embedded: what the cell
  would cost alone);
- no speed ratio to the reference: a ratio is only meaningful against a baseline timed on the
  same machine in the same run, which ``benchmarks/vs_baseline.py`` does (a reference-equivalent
  baseline, or the real reference with ``--reference``);
- every cell's metrics next to the reference's (k=5, percent), per precision, with the core
  tolerances checked (chunks equal; recall within 1.0 point; precision, IoU and precision Omega
  within 0.1 point). The reference's numbers are read from a recorded run of the reference
  implementation, ``benchmarks/reference/general8.json`` (``benchmarks/recorded.py`` says how
  it is made), never typed in.

    .venv/bin/python benchmarks/engine.py [--data ../shared/datasets/chroma_general]
        [--precisions fp32,bf16] [--cells 8] [--batch-size N] [--device auto|cpu|cuda|cuda:N]

The embedder runs on ``--device`` (default: the embedder's ``auto``, a CUDA GPU when torch sees
one, else the CPU); the device and batch size used are printed with each precision. fp16 needs a
CUDA GPU (docs/gpu.md).

Ratios, not absolute seconds, are the result: machines differ and are noisy; measure on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recorded  # benchmarks/recorded.py: the recorded reference runs

ROOT = Path(__file__).resolve().parent.parent
# The eight cells of Chroma's report that chunkmark is compared on (benchmarks/reference/general8.json
# holds the reference's numbers for each, under these labels).
GENERAL8 = (
    "fixed_tokens(size=800, overlap=400)",
    "fixed_tokens(size=400, overlap=200)",
    "fixed_tokens(size=400, overlap=0)",
    "fixed_tokens(size=200, overlap=0)",
    "recursive(size=800, overlap=400)",
    "recursive(size=400, overlap=200)",
    "recursive(size=400, overlap=0)",
    "recursive(size=200, overlap=0)",
)
TOLERANCE = {"recall": 1.0, "precision": 0.1, "precision_omega": 0.1, "iou": 0.1}
EMBED_PHASES = ("embed_documents", "embed_queries")


def embedder_spec(precision: str, batch_size: int | None, device: str | None = None) -> str:
    extra = f", batch_size={batch_size}" if batch_size else ""
    extra += f', device="{device}"' if device else ""
    return f'sentence_transformers(model="all-MiniLM-L6-v2", precision="{precision}"{extra})'


def _run_command(options: dict[str, Any], out: Path) -> tuple[Manifest, float]:
    """Run ``chunkmark run`` as a user would, in a fresh process; return its manifest and seconds."""
    cmd = [
        sys.executable,
        "-m",
        "chunkmark",
        "run",
        "--quiet",
        "--no-report",  # the engine is timed; the report has its own benchmark
        "--dataset",
        options["dataset"],
        "--out",
        str(out),
    ]
    cmd += ["--cache-dir", str(options["cache_dir"]), "--k", ",".join(str(k) for k in options["k"])]
    for spec in options["chunkers"]:
        cmd += ["--chunker", spec]
    for spec in options["embedders"]:
        cmd += ["--embedder", spec]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    manifest = json.loads((out / "manifest.json").read_text())
    summary = list(csv.DictReader((out / "summary.csv").open()))
    return Manifest(manifest, summary), seconds


class Manifest:
    def __init__(self, manifest: dict[str, Any], summary: list[dict[str, Any]]) -> None:
        self.manifest = manifest
        self.summary = summary

    def overall(self) -> list[dict[str, Any]]:
        return [
            {
                **r,
                **{k: float(v) for k, v in r.items() if k.endswith("_mean")},
                "n_chunks": int(r["n_chunks"]),
            }
            for r in self.summary
            if r["scope"] == "all"
        ]


def short_name(chunker: str) -> str:
    short = chunker.split(", separators")[0].split(", encoding")[0]
    return short if short.endswith(")") else short + ")"


def report_run(name: str, cold: Manifest, warm: Manifest, cold_cmd: float, warm_cmd: float) -> None:
    print(f"\n=== {name}")
    print("phase seconds            cold      warm")
    phases = sorted(set(cold.manifest["timings"]) | set(warm.manifest["timings"]))
    for phase in phases:
        c = cold.manifest["timings"].get(phase, 0.0)
        w = warm.manifest["timings"].get(phase, 0.0)
        print(f"  {phase:<20} {c:9.2f} {w:9.2f}")
    times = model_time(cold.manifest)
    stats, inner = times["cache"], times["stats"]
    extra = inner.get("extra", {})
    where = extra.get("device_name") or extra.get("device") or "no model loaded"
    print(f"device: {where}, batch size {extra.get('batch_size') or 'default'}")
    print(
        f"embedding work: {stats['requested']} texts requested, {stats['distinct']} distinct, "
        f"{stats['inputs']} distinct model inputs, {stats['embedded']} embedded "
        f"({inner['truncated']} texts truncated at {inner['window']} tokens)"
    )
    wall, model = times["wall"], times["model"]
    print(
        f"cold grid: wall {wall:.1f}s, inside the model {model:.1f}s: wall/model {wall / model:.3f}"
    )
    print(f"cold command {cold_cmd:.1f}s (speed against a baseline: benchmarks/vs_baseline.py)")
    print(f"warm command {warm_cmd:.2f}s: {cold_cmd / warm_cmd:.1f}x faster than cold")
    print("per cell: wall, model time spent in the cell, model time of its distinct inputs")
    print(f"  {'chunker':<38}{'wall':>8}{'spent':>8}{'inputs':>8}{'ratio':>8}")
    for cell in times["cells"]:
        print(
            f"  {short_name(cell['chunker']):<38}{cell['wall']:8.2f}{cell['spent']:8.2f}"
            f"{cell['own']:8.2f}{cell['ratio']:8.3f}"
        )


def model_time(manifest: dict[str, Any]) -> dict[str, Any]:
    """Wall time against time inside the model, from a run's ``manifest.json``.

    Returns ``wall`` and ``model`` (the grid's), the single embedder's ``stats``
    (``EmbedderStats.to_dict()``) and ``cache`` counters, and per cell (``cells``): its
    ``wall``, the model time ``spent`` in it, the model time of its ``own`` distinct inputs
    wherever in the run they were embedded (what the cell would cost alone), and
    ``ratio = (wall - spent + own) / own``.
    """
    (entry,) = manifest["embedding"].values()
    inner = entry["stats"]  # EmbedderStats.to_dict(): the model's work, and the cache's
    cells = []
    for cell in manifest["cells"]:
        cell_wall = sum(cell["timings"].values())
        spent = cell["embedding"]["cache"].get("model_seconds", 0.0)
        own = cell["embedding"].get("model_seconds_attributed", 0.0)
        ratio = (cell_wall - spent + own) / own if own else float("nan")
        cells.append(
            {
                "chunker": cell["chunker"],
                "wall": cell_wall,
                "spent": spent,
                "own": own,
                "ratio": ratio,
            }
        )
    return {
        "wall": manifest["timings"]["wall"],
        "model": inner["model_seconds"],
        "stats": inner,
        "cache": inner["cache"],
        "cells": cells,
    }


def report_metrics(runs: dict[str, Manifest]) -> None:
    print("\nk=5, percent: reference | " + " | ".join(runs) + "  (* outside tolerance)")
    rows = {name: {short_name(r["chunker"]): r for r in m.overall()} for name, m in runs.items()}
    metrics = ("recall", "precision", "precision_omega", "iou")
    header = f"{'chunker':<38}{'chunks':>22}" + "".join(f"{m:>30}" for m in metrics)
    print(header)
    outside = 0
    for chunker, ref in recorded.table("general8").items():
        if not all(chunker in r for r in rows.values()):
            continue
        cells = [" / ".join([str(ref[0])] + [str(r[chunker]["n_chunks"]) for r in rows.values()])]
        for i, metric in enumerate(metrics, start=1):
            parts = [f"{ref[i]:.2f}"]
            for r in rows.values():
                value = 100 * r[chunker][f"{metric}_mean"]
                miss = abs(value - ref[i]) > TOLERANCE[metric] + 1e-9
                outside += miss
                parts.append(f"{value:.2f}{'*' if miss else ''}")
            cells.append(" / ".join(parts))
        print(f"{chunker:<38}{cells[0]:>22}" + "".join(f"{c:>30}" for c in cells[1:]))
    print(f"{outside} values outside the tolerances {TOLERANCE}")
    names = list(runs)
    for other in names[1:]:
        diffs = [
            abs(rows[other][c][f"{m}_mean"] - rows[names[0]][c][f"{m}_mean"]) * 100
            for c in rows[names[0]]
            for m in metrics
        ]
        print(f"largest |{other} - {names[0]}| over all cells and metrics: {max(diffs):.3f} point")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_data = (
        Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
        / "datasets"
        / "chroma_general"
    )
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument(
        "--cells", type=int, default=len(GENERAL8), help="how many of the eight cells"
    )
    parser.add_argument("--precisions", default="fp32", help="comma-separated: fp32,fp16,bf16")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--device", default=None, help="auto (the embedder's default), cpu, cuda, cuda:N or mps"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="two of the cells on the demo dataset, fp32"
    )
    args = parser.parse_args()
    if args.smoke:
        args.data, args.cells, args.precisions = Path("demo"), 2, "fp32"
    chunkers = list(GENERAL8)[: args.cells]

    runs: dict[str, Manifest] = {}
    for precision in args.precisions.split(","):
        with tempfile.TemporaryDirectory(prefix="chunkmark-bench-") as tmp:
            options = {
                "dataset": str(args.data),
                "chunkers": chunkers,
                "embedders": [embedder_spec(precision, args.batch_size, args.device)],
                "k": [5],
                "cache_dir": Path(tmp) / "cache",
            }
            cold, cold_cmd = _run_command(options, Path(tmp) / "cold")
            warm, warm_cmd = _run_command(options, Path(tmp) / "warm")
        report_run(precision, cold, warm, cold_cmd, warm_cmd)
        runs[precision] = cold
    report_metrics(runs)


if __name__ == "__main__":
    main()
