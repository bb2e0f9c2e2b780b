"""The semantic chunkers on Chroma's general benchmark, cold, against the reference implementation.

Runs each configuration with ``chunkmark run`` in its own fresh process with an empty embedding
cache (the pieces, the chunks and the questions are all embedded), then prints chunk counts and
k=5 metrics (percent) next to the reference's (``chunking_evaluation``, all-MiniLM-L6-v2, all
472 questions), the differences and whether they are within the tolerances, and each run's wall
time next to the reference's time for the same configuration as a speed ratio.

    .venv/bin/python benchmarks/semantic.py [--data ../shared/datasets/chroma_general]
        [--only cluster_semantic] [--embedder SPEC] [--precision bf16] [--cache-dir DIR]

``--precision`` is passed to the embedder spec when its embedder has a ``precision`` parameter.
``--cache-dir`` reuses a cache (runs are then not cold: their times say nothing about speed).
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
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
MODEL = 'sentence_transformers(model="all-MiniLM-L6-v2")'
# chunker -> (chunks, recall, precision, precision Ω, IoU, reference seconds for the whole run)
REFERENCE = {
    "cluster_semantic(max_size=400, min_size=50)": (1911, 77.9, 4.13, 20.6, 4.12, 95.6),
    "kamradt_modified(avg_size=300, min_size=50)": (1093, 62.6, 2.37, 12.0, 2.36, 323.7),
}
# What tests/test_end_to_end.py allows (points of percent); chunk counts within 1%.
TOLERANCE = {"recall": 1.0, "precision": 0.1, "precision_omega": 0.1, "iou": 0.1}
CHUNK_TOLERANCE = 0.01
METRICS = ("recall", "precision", "precision_omega", "iou")


def embedder_spec(spec: str, precision: str | None) -> str:
    """``spec`` with ``precision`` set, if given; exits when the embedder has no such parameter."""
    if precision is None:
        return spec
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.specs import Spec

    canonical = EMBEDDERS.resolve(spec)
    names = [p.name for p in EMBEDDERS.entry(canonical.name).parameters()]
    if "precision" not in names:
        sys.exit(f"embedder {canonical.name!r} has no 'precision' parameter (it has: {names})")
    return str(Spec.of(canonical.name, **{**canonical.kwargs, "precision": precision}))


def run(chunker: str, embedder: str, data: Path, out: Path, cache: Path) -> dict[str, Any]:
    """One ``chunkmark run`` in a fresh process; its k=5 overall row, manifest and seconds."""
    cmd = [sys.executable, "-m", "chunkmark", "run", "--quiet", "--dataset", str(data)]
    cmd += ["--chunker", chunker, "--embedder", embedder, "--k", "5"]
    cmd += ["--out", str(out), "--cache-dir", str(cache)]
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    if (SHARED / "tiktoken_cache").is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken_cache"))
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - start
    with (out / "summary.csv").open(encoding="utf-8") as f:
        (row,) = [r for r in csv.DictReader(f) if r["scope"] == "all" and r["k"] == "5"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return {"row": row, "manifest": manifest, "seconds": seconds}


def report(chunker: str, result: dict[str, Any], cold: bool) -> bool:
    """Print one configuration against the reference; True when every number is within tolerance."""
    ref = REFERENCE[chunker]
    row = result["row"]
    chunks = int(row["n_chunks"])
    ok = abs(chunks - ref[0]) <= CHUNK_TOLERANCE * ref[0]
    print(f"\n{chunker}")
    print(f"  {'':<16}{'chunkmark':>12}{'reference':>12}{'difference':>12}{'tolerance':>12}")
    print(
        f"  {'chunks':<16}{chunks:>12}{ref[0]:>12}{chunks - ref[0]:>+12}"
        f"{f'{CHUNK_TOLERANCE:.0%}':>12}{'' if ok else '  OUTSIDE'}"
    )
    for i, metric in enumerate(METRICS, start=1):
        ours = 100 * float(row[f"{metric}_mean"])
        diff = ours - ref[i]
        inside = abs(diff) <= TOLERANCE[metric] + 1e-9
        ok &= inside
        print(
            f"  {metric:<16}{ours:>12.2f}{ref[i]:>12.2f}{diff:>+12.2f}"
            f"{TOLERANCE[metric]:>12.1f}{'' if inside else '  OUTSIDE'}"
        )
    seconds, ref_seconds = result["seconds"], ref[5]
    note = "" if cold else "  (warm cache: not comparable)"
    print(
        f"  wall time {seconds:.1f}s, reference {ref_seconds:.1f}s: "
        f"{ref_seconds / seconds:.2f}x faster (target >= 3x){note}"
    )
    (cell,) = result["manifest"]["cells"]
    print(f"  chunks per document: {cell['chunks_per_doc']}")
    timings = result["manifest"]["timings"]
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in timings.items() if k != "wall")
    print(f"  phases: {phases}")
    for spec, entry in result["manifest"]["embedding"].items():
        stats = entry["stats"]["cache"]
        print(f"  embedded {stats['embedded']} texts ({stats['hits']} cache hits) with {spec}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED / "datasets" / "chroma_general")
    parser.add_argument("--only", choices=[c.split("(")[0] for c in REFERENCE], default=None)
    parser.add_argument("--embedder", default=MODEL, help="embedder spec for pieces and chunks")
    parser.add_argument("--precision", default=None, help="e.g. bf16, if the embedder has it")
    parser.add_argument("--cache-dir", type=Path, default=None, help="reuse a cache (not cold)")
    args = parser.parse_args()
    embedder = embedder_spec(args.embedder, args.precision)
    chunkers = [c for c in REFERENCE if args.only is None or c.startswith(args.only + "(")]

    print(f"dataset {args.data}, embedder {embedder}, k=5, percent")
    all_ok = True
    with tempfile.TemporaryDirectory(prefix="chunkmark-semantic-") as tmp:
        for i, chunker in enumerate(chunkers):
            cache = args.cache_dir or Path(tmp) / f"cache-{i}"
            result = run(chunker, embedder, args.data, Path(tmp) / f"out-{i}", cache)
            all_ok &= report(chunker, result, cold=args.cache_dir is None)
    print("\nall within tolerance" if all_ok else "\nsome numbers are OUTSIDE the tolerance")


if __name__ == "__main__":
    main()
