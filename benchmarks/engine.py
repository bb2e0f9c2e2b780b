"""Cold vs warm runs of the eight reference cells on Chroma's general benchmark.

Prints, for one cold run (empty embedding cache) and one warm run (same cache, new results
folder): seconds by phase, the share of wall time spent outside embedding, the warm/cold speed
ratio, and every cell's metrics next to the reference implementation's (k=5, percent).

    .venv/bin/python benchmarks/engine.py [--data ../shared/datasets/chroma_general] [--cells 8]

Ratios, not absolute seconds, are the result: machines differ and are noisy.
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

ROOT = Path(__file__).resolve().parent.parent
MODEL = 'sentence_transformers(model="all-MiniLM-L6-v2")'
# chunker -> (chunks, recall, precision, precision Ω, IoU, reference seconds per cell)
REFERENCE = {
    "fixed_tokens(size=800, overlap=400)": (819, 80.0, 1.27, 4.7, 1.27, 30.5),
    "fixed_tokens(size=400, overlap=200)": (1639, 86.2, 2.61, 8.4, 2.61, 55.8),
    "fixed_tokens(size=400, overlap=0)": (824, 73.3, 2.31, 12.5, 2.31, 28.6),
    "fixed_tokens(size=200, overlap=0)": (1644, 78.0, 4.60, 21.0, 4.58, 45.4),
    "recursive(size=800, overlap=400)": (704, 74.6, 1.37, 6.7, 1.37, 24.7),
    "recursive(size=400, overlap=200)": (1412, 79.6, 3.07, 13.9, 3.06, 44.6),
    "recursive(size=400, overlap=0)": (1187, 74.0, 3.16, 17.7, 3.16, 36.4),
    "recursive(size=200, overlap=0)": (2386, 75.6, 6.19, 29.9, 6.16, 51.1),
}
EMBED_PHASES = ("embed_documents", "embed_queries")


def _run_command(options: dict[str, Any], out: Path) -> tuple[Manifest, float]:
    """Run ``chunkbench run`` as a user would, in a fresh process; return its manifest and seconds."""
    cmd = [
        sys.executable,
        "-m",
        "chunkbench",
        "run",
        "--quiet",
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_data = (
        Path(os.environ.get("CHUNKBENCH_SHARED_DIR", ROOT.parent / "shared"))
        / "datasets"
        / "chroma_general"
    )
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument(
        "--cells", type=int, default=len(REFERENCE), help="how many of the eight cells"
    )
    parser.add_argument("--embedder", default=MODEL)
    args = parser.parse_args()
    chunkers = list(REFERENCE)[: args.cells]

    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp:
        options = {
            "dataset": str(args.data),
            "chunkers": chunkers,
            "embedders": [args.embedder],
            "k": [5],
            "cache_dir": Path(tmp) / "cache",
        }
        cold, cold_cmd = _run_command(options, Path(tmp) / "cold")
        warm, warm_cmd = _run_command(options, Path(tmp) / "warm")

    print("\nphase seconds            cold      warm")
    phases = sorted(set(cold.manifest["timings"]) | set(warm.manifest["timings"]))
    for phase in phases:
        c = cold.manifest["timings"].get(phase, 0.0)
        w = warm.manifest["timings"].get(phase, 0.0)
        print(f"  {phase:<20} {c:9.2f} {w:9.2f}")
    wall = cold.manifest["timings"]["wall"]
    embedding = sum(cold.manifest["timings"].get(p, 0.0) for p in EMBED_PHASES)
    ref_total = sum(REFERENCE[c][5] for c in chunkers)
    print(
        f"\ncold: share of wall time outside embedding  {(wall - embedding) / wall:6.1%}  (target < 10%)"
    )
    print(
        f"whole command, cold {cold_cmd:.1f}s, warm {warm_cmd:.1f}s: warm {cold_cmd / warm_cmd:.1f}x faster (target >= 10x)"
    )
    print(
        f"cold vs reference ({ref_total:.0f}s for these cells, measured separately): {ref_total / wall:.2f}x"
    )
    for spec, entry in cold.manifest["embedding"].items():
        print(f"embedding {spec}: {entry['stats']}")

    print("\nk=5, percent: chunkbench (reference)")
    print(f"{'chunker':<38}{'chunks':>14}{'recall':>16}{'precision':>16}{'prec. Ω':>16}{'IoU':>16}")
    for row in cold.overall():
        short = row["chunker"].split(", separators")[0].split(", encoding")[0]
        short = short if short.endswith(")") else short + ")"
        ref = REFERENCE.get(short)
        if ref is None:
            continue
        cells = [
            f"{row['n_chunks']} ({ref[0]})",
            f"{100 * row['recall_mean']:.1f} ({ref[1]})",
            f"{100 * row['precision_mean']:.2f} ({ref[2]})",
            f"{100 * row['precision_omega_mean']:.1f} ({ref[3]})",
            f"{100 * row['iou_mean']:.2f} ({ref[4]})",
        ]
        print(f"{short:<38}" + "".join(f"{c:>16}" for c in cells))


if __name__ == "__main__":
    main()
