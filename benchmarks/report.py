"""Size and build time of the HTML report for a 40-cell grid on Chroma's general benchmark.

The grid is fixed_tokens and recursive at 5 sizes x 2 overlaps, each with the fake embedder
under 2 seeds (40 cells; the fake embedder keeps the run fast, and the report's work does not
depend on the model). The run is made first (not timed); then the report is built from its
folder, timed, and checked against the targets: under 10 MB, under 10 s.

    .venv/bin/python benchmarks/report.py [--data ../shared/datasets/chroma_general]
        [--k 1,5] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 200, 300, 400, 600)
OVERLAPS = (0, 50)
SEEDS = (0, 1)
MAX_MB = 10.0
MAX_SECONDS = 10.0


def grid() -> tuple[list[str], list[str]]:
    """The 20 chunker specs and the 2 embedder specs of the grid."""
    chunkers = [
        f"{name}(size={size}, overlap={overlap})"
        for name in ("fixed_tokens", "recursive")
        for size in SIZES
        for overlap in OVERLAPS
    ]
    return chunkers, [f"fake(seed={seed})" for seed in SEEDS]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser.add_argument("--data", type=Path, default=shared / "datasets" / "chroma_general")
    parser.add_argument("--k", default="1,5", help="retrieval depths of the run")
    parser.add_argument("--out", type=Path, default=None, help="keep the run and report here")
    parser.add_argument("--smoke", action="store_true", help="the same grid on the demo dataset")
    args = parser.parse_args()
    if args.smoke:
        args.data = Path("demo")
    elif not (args.data / "questions_df.csv").is_file():
        print(f"benchmark data not found at {args.data}", file=sys.stderr)
        return 2
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(shared / "tiktoken_cache"))

    import chunkmark
    from chunkmark.report import build_report

    with tempfile.TemporaryDirectory() as tmp:
        base = args.out or Path(tmp)
        run_dir = base / "run"
        chunkers, embedders = grid()
        ks = [int(k) if k.isdigit() else k for k in args.k.split(",")]
        started = time.perf_counter()
        chunkmark.evaluate(
            dataset=str(args.data),
            chunkers=chunkers,
            embedders=embedders,
            k=ks,
            out=run_dir,
            cache_dir=base / "cache",
        )
        run_seconds = time.perf_counter() - started
        report = build_report([run_dir], base / "report.html")
        size_mb = report.bytes / 1e6
        cells = len(report.data.cells)
        print(f"cells: {cells}")
        print(f"run seconds (not a target): {run_seconds:.1f}")
        print(f"report size MB: {size_mb:.2f}")
        print(f"report build seconds: {report.seconds:.2f}")
        phases = ", ".join(f"{name} {sec:.2f}" for name, sec in report.phases.items())
        print(f"  by phase (s): {phases}")
        ok = cells == 40 and size_mb < MAX_MB and report.seconds < MAX_SECONDS
        verdict = "PASS" if ok else "FAIL"
        print(
            f"{verdict}: {cells} cells, {size_mb:.2f} MB (< {MAX_MB:g} MB), "
            f"{report.seconds:.2f} s (< {MAX_SECONDS:g} s)"
        )
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
