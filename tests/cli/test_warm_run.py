"""A ``chunkmark run`` of one cell whose chunks and vectors are all cached imports only what it
uses: not scipy.stats (the recommendation's paired tests need two cells, its Kendall's tau two
datasets), not pyarrow.dataset (a single parquet file is read with pyarrow's file reader), not
torch. Each run is a fresh process, as a user's is; the modules are read from the warm
process's ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("scipy.stats", "pyarrow.dataset", "torch", "sentence_transformers")

RUN = """
import json, runpy, sys
sys.argv = ["chunkmark", *json.loads(sys.argv[1])]
try:
    runpy.run_module("chunkmark", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
"""


def _run(args: list[str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(heavy=HEAVY), json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    imported: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return imported


def test_a_warm_run_imports_no_heavy_module_it_does_not_use(tmp_path: Path) -> None:
    common = [
        "run", "--dataset", "demo", "--embedder", "fake()", "-c", "fixed_tokens(size=64)",
        "--cache-dir", str(tmp_path / "cache"), "--no-report", "--quiet",
    ]  # fmt: skip
    _run([*common, "--out", str(tmp_path / "cold")])
    assert _run([*common, "--out", str(tmp_path / "warm")]) == []
    cold = (tmp_path / "cold" / "summary.csv").read_text()
    assert (tmp_path / "warm" / "summary.csv").read_text() == cold
