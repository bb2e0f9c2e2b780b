"""``chunkmark compare`` on real runs: the numbers equal the library's, the verdict follows them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import chunkmark
from chunkmark.chunkers import CHUNKERS
from chunkmark.embedders import EMBEDDERS
from chunkmark.metrics.paired import compare_paired

SMALL = "fixed_tokens(size=40, overlap=0)"
LARGE = "fixed_tokens(size=400, overlap=0)"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "run"
    chunkmark.evaluate(
        dataset="demo",
        chunkers=[SMALL, LARGE],
        embedders=["fake()", "fake(seed=1)"],
        k=[1, 5],
        out=out,
        no_cache=True,
    )
    return out


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkmark", "compare", *args], capture_output=True, text=True
    )


def test_json_equals_the_library_on_the_same_questions(run_dir: Path) -> None:
    done = cli(str(run_dir), "--a", SMALL, "--b", LARGE, "--embedder", "fake()", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    cols = pq.read_table(run_dir / "results.parquet").to_pydict()
    values = {}
    embedder = str(EMBEDDERS.resolve("fake()"))
    for chunker in (SMALL, LARGE):
        name = str(CHUNKERS.resolve(chunker))
        cells = zip(cols["chunker"], cols["embedder"], cols["k"], strict=True)
        rows = [i for i, cell in enumerate(cells) if cell == (name, embedder, "5")]
        values[chunker] = np.array([cols["iou"][i] for i in rows])
    want = compare_paired(values[SMALL], values[LARGE])
    assert got["k"] == "5" and got["n"] == 64
    assert got["difference"] == pytest.approx(want.difference, abs=1e-15)
    assert got["p_permutation"] == want.p_permutation
    assert got["p_ttest"] == pytest.approx(want.p_ttest, abs=1e-12)
    assert (got["wins"], got["ties"], got["losses"]) == (want.wins, want.ties, want.losses)
    # Small chunks retrieve far fewer unneeded characters: IoU is clearly higher.
    assert got["difference"] > 0 and got["p_permutation"] < 0.01
    assert got["verdict"].startswith("A is better than B on IoU")


def test_a_cell_against_itself_is_a_tie(run_dir: Path) -> None:
    done = cli(str(run_dir), "--a", SMALL, "--b", SMALL, "--embedder", "fake()", "--k", "1")
    assert done.returncode == 0, done.stderr
    assert "no detectable difference" in done.stdout and "p = 1" in done.stdout


def test_ambiguous_or_unknown_cells_are_one_line_errors(run_dir: Path) -> None:
    done = cli(str(run_dir), "--a", SMALL, "--b", LARGE)
    assert done.returncode == 2
    assert "matches 2 cells" in done.stderr and "--embedder" in done.stderr
    assert "Traceback" not in done.stderr
    done = cli(str(run_dir), "--a", "recursive(size=100)", "--b", LARGE, "--embedder", "fake()")
    assert done.returncode == 2 and "names no cell" in done.stderr
    done = cli(str(run_dir), "--a", SMALL, "--b", LARGE, "--metric", "nope")
    assert done.returncode == 2 and "Unknown metric 'nope'" in done.stderr
