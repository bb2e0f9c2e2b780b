"""``chunkmark run --executor ray --address`` on a real two-node Ray cluster on this machine
(``ray start --head`` and a worker node with its own resources and temporary folder, from
``benchmarks/ray_nodes.py``): the local executor's rows; the worker node killed mid-run, the
run ending with the lost cells recorded, and a rerun with the local rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmark_scripts import load_benchmark

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


nodes = load_benchmark("ray_nodes")
# Every task asks for the worker node's resource; three chunkers, six cells.
CHUNKERS = ["fixed_tokens(size=[60, 90, 120])", "recursive(size=[200, 300, 400])"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    two = nodes.TwoNodeCluster()
    try:
        yield two.start()
    finally:
        two.stop()


def _run(cluster: Any, grid: Path, out: Path, *more: str) -> tuple[int, str]:
    status, _, output = nodes.run(cluster, str(grid), "--out", str(out), "--no-cache", *more)
    return int(status), str(output)


def test_two_nodes_give_the_local_rows_and_survive_losing_the_worker(
    cluster: Any, tmp_path: Path
) -> None:
    grid = nodes.write_grid(tmp_path / "grid.yaml", "demo", CHUNKERS, max_retries=0)
    on_ray = ("--executor", "ray", "--address", cluster.address)
    status, output = _run(cluster, grid, tmp_path / "local")
    assert status == 0, output
    status, output = _run(cluster, grid, tmp_path / "ray", *on_ray)
    assert status == 0, output
    assert nodes.same_rows(tmp_path / "local", tmp_path / "ray"), nodes.row_differences(
        tmp_path / "local", tmp_path / "ray"
    )
    # the work ran on the worker node: with it gone, nothing can run the tasks
    killed = nodes.killed_run(
        cluster, str(grid), "--out", str(tmp_path / "killed"), "--no-cache", *on_ray
    )
    assert killed["killed_while_running"], killed["output"]
    assert killed["status"] in (0, 3), killed["output"]  # finished, or finished with failures
    assert killed["cells"] + len(killed["failures"]) == 6
    assert killed["cells"] >= killed["written_at_kill"] >= 1
    assert (killed["status"] == 3) == bool(killed["failures"])
    for failure in killed["failures"]:
        assert "node" in failure["error"] or "worker died" in failure["error"], failure
    cluster.start_worker()
    status, output = _run(cluster, grid, tmp_path / "killed", *on_ray)
    assert status == 0, output
    manifest = json.loads((tmp_path / "killed" / "manifest.json").read_text())
    assert sum(c["resumed"] for c in manifest["cells"]) == killed["cells"]
    assert not manifest["failures"]
    assert nodes.same_rows(tmp_path / "local", tmp_path / "killed"), nodes.row_differences(
        tmp_path / "local", tmp_path / "killed"
    )


def test_a_task_without_a_node_offering_its_resources_fails_its_cell(
    cluster: Any, tmp_path: Path
) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text(
        json.dumps(
            {
                "datasets": ["demo"],
                "chunkers": ["fixed_tokens(size=100)"],
                "embedders": ["fake()"],
                "report": False,
                "ray": {"resources": {"tpu_pod": 1}},
            }
        )
    )
    status, output = _run(
        cluster, path, tmp_path / "out", "--executor", "ray", "--address", cluster.address
    )
    assert status == 3, output
    (failure,) = json.loads((tmp_path / "out" / "manifest.json").read_text())["failures"]
    assert "offers the resources {'tpu_pod': 1.0}" in failure["error"]
