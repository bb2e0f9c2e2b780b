"""Same numbers before and after a change: ``summary.csv`` of two source trees, byte for byte.

Runs ``chunkmark run`` from this tree and from a reference commit (checked out with
``git worktree`` into a temporary folder) on two grids: the built-in demo grid, and the eight
fixed/recursive cells of Chroma's general benchmark (all-MiniLM-L6-v2, k=1,3,5,10,min). Both
trees share one embedding cache (pass ``--cache-dir`` to keep it between runs), so the model runs
once per distinct input; the chunk store is emptied before every run, so each tree chunks and
counts tokens with its own code. Prints, per grid, whether the two ``summary.csv`` files are identical
and, where they are not, a unified diff; the exit status is 1 if any grid differs.

    .venv/bin/python benchmarks/same_summary.py --ref COMMIT [--data DIR] [--cache-dir DIR]
        [--grids demo,general]

A refactoring that keeps behaviour must print "identical" for every grid.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import engine  # benchmarks/engine.py: the eight reference cells

ROOT = Path(__file__).resolve().parent.parent
CHUNKERS = list(engine.GENERAL8)  # the eight cells of Chroma's report
EMBEDDER = 'sentence_transformers(model="all-MiniLM-L6-v2")'


def grid_args(grid: str, data: Path) -> list[str]:
    if grid == "demo":
        return []  # the built-in default: demo dataset, default chunkers, embedder and k
    args = ["--dataset", str(data), "--embedder", EMBEDDER, "--k", "1,3,5,10,min"]
    for spec in CHUNKERS:
        args += ["--chunker", spec]
    return args


def run(tree: Path, args: list[str], out: Path, cache_dir: Path) -> Path:
    # Share embeddings, never chunks: each tree must chunk with its own code.
    shutil.rmtree(cache_dir / "chunks", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "chunkmark", "run", "--quiet", "--out", str(out)]
    cmd += ["--cache-dir", str(cache_dir), *args]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=tree)
    return out / "summary.csv"


def main() -> int:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the commit to compare with")
    parser.add_argument("--data", type=Path, default=shared / "datasets" / "chroma_general")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--grids", default="demo,general")
    opts = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="chunkmark-same-") as tmp_name:
        tmp = Path(tmp_name)
        ref_tree = tmp / "ref"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(ref_tree), opts.ref],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        cache_dir = opts.cache_dir or tmp / "cache"
        differs = False
        try:
            for grid in opts.grids.split(","):
                args = grid_args(grid, opts.data)
                before = run(ref_tree, args, tmp / f"{grid}-ref", cache_dir).read_text()
                after = run(ROOT, args, tmp / f"{grid}-this", cache_dir).read_text()
                rows = before.count("\n") - 1
                if before == after:
                    print(f"{grid}: summary.csv identical ({rows} rows, {len(after)} bytes)")
                    continue
                differs = True
                print(f"{grid}: summary.csv DIFFERS")
                sys.stdout.writelines(
                    difflib.unified_diff(
                        before.splitlines(keepends=True),
                        after.splitlines(keepends=True),
                        f"{opts.ref}/summary.csv",
                        "this/summary.csv",
                    )
                )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(ref_tree)], cwd=ROOT, check=False
            )
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
