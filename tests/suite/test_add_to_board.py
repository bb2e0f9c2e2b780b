"""scripts/add_to_board.py: a second suite run's cells added to a published board read as if
both had been one run.

The reference is one suite run with both embedders, published as scripts/publish_leaderboard.py
publishes it; the board under test is a run with the first embedder, published the same way,
with a run of the second embedder added. Fake embedders on the built-in demo set, so it takes
seconds.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from chunkmark.datasets import demo
from chunkmark.suite.leaderboard import build_leaderboard
from chunkmark.suite.run import Grid, SuiteSet, budget, run_suite

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
CHUNKERS = ("fixed_tokens(size=64, overlap=0)", "sentences(n=3)")
SETTINGS = (budget(256), budget(256, "bm25"), budget(256, "hybrid"))


def script(name: str) -> ModuleType:
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def demo_set() -> SuiteSet:
    return SuiteSet("demo", Path(demo.__file__).resolve().parent / "demo_data")


def suite(root: Path, name: str, embedders: tuple[str, ...], cache: Path) -> Path:
    grid = Grid(name, CHUNKERS, embedders, SETTINGS)
    result = run_suite([demo_set()], root / name, grid, cache_dir=cache)
    assert not result.failures
    return root / name


def published(suite_dir: Path, to: Path) -> Path:
    script("publish_leaderboard").publish(suite_dir, to)
    return to / "default-suite"


@pytest.fixture(scope="module")
def boards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("add-to-board")
    cache = root / "cache"
    both = published(suite(root, "both", ("fake()", "fake(seed=1)"), cache), root / "pub-both")
    first = published(suite(root, "first", ("fake()",), cache), root / "pub-first")
    second = suite(root, "second", ("fake(seed=1)",), cache)
    return both, first, second


def cells(board: Path) -> dict[tuple[str, str, str], float]:
    built = build_leaderboard(board, budget=256, resamples=200, permutations=1000)
    return {c.key: c.metrics["recall"].value for b in built.sets for c in b.cells}


def test_added_cells_read_as_one_run_with_both_embedders(
    boards: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    both, first, second = boards
    board = tmp_path / "board"
    shutil.copytree(first, board)
    before = cells(board)
    lines = script("add_to_board").add(second, board)
    assert lines == [f"demo: 2 cells added from {second / 'demo'}"]  # chunkers x fake(seed=1)
    merged, reference = cells(board), cells(both)
    assert merged == reference
    assert len(merged) > len(before)  # the second embedder's dense and hybrid cells
    suite_json = json.loads((board / "suite.json").read_text(encoding="utf-8"))
    assert len(suite_json["embedders"]) == 2
    manifest = json.loads((board / "demo" / "manifest.json").read_text(encoding="utf-8"))
    assert [run["embedders"] for run in manifest["added_runs"]] == [
        json.loads((second / "suite.json").read_text(encoding="utf-8"))["embedders"]
    ]


def test_a_cell_already_on_the_board_is_refused_and_nothing_is_written(
    boards: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, first, second = boards
    board = tmp_path / "board"
    shutil.copytree(first, board)
    add = script("add_to_board").add
    add(second, board)
    files = {p: p.read_bytes() for p in board.rglob("*") if p.is_file()}
    with pytest.raises(SystemExit, match="already holds"):
        add(second, board)
    assert {p: p.read_bytes() for p in board.rglob("*") if p.is_file()} == files


def test_another_sample_is_refused(boards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, first, second = boards
    board = tmp_path / "board"
    shutil.copytree(first, board)
    manifest = board / "demo" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    for entry in data["datasets"]:
        entry["fingerprint"] = "0" * 16
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SystemExit, match="is not the board's"):
        script("add_to_board").add(second, board)
