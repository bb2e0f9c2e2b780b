"""``chunkmark run --executor ray --address`` on a real two-node Ray cluster on this machine
(``ray start --head`` and a worker node with its own resources and temporary folder, from
``benchmarks/ray_nodes.py``): the local executor's rows, every cell scored on the worker node
(the ``ray_node`` each cell records); the worker node killed mid-run, the run ending with the
lost cells recorded, and a rerun that resumes the others and computes the lost ones on a new
worker node, with the local rows."""

from __future__ import annotations

import json
import subprocess
import sys
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


def live_nodes(cluster: Any) -> dict[str, bool]:
    """The cluster's live nodes by id: True for a node that offers the ``worker`` resource."""
    script = (
        "import json, ray\n"
        f"ray.init(address={cluster.address!r}, log_to_driver=False)\n"
        "print(json.dumps({n['NodeID']: bool(n['Resources'].get('worker'))\n"
        "                  for n in ray.nodes() if n['Alive']}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=cluster.env, check=True, capture_output=True, text=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cells(out: Path) -> dict[str, dict[str, Any]]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {c["id"]: c for c in manifest["cells"]}


def test_two_nodes_give_the_local_rows_and_survive_losing_the_worker(
    cluster: Any, tmp_path: Path
) -> None:
    grid = nodes.write_grid(tmp_path / "grid.yaml", "demo", CHUNKERS, max_retries=0)
    on_ray = ("--executor", "ray", "--address", cluster.address)
    status, output = _run(cluster, grid, tmp_path / "local")
    assert status == 0, output
    assert all("ray_node" not in c for c in cells(tmp_path / "local").values())
    (worker,) = [node for node, offers in live_nodes(cluster).items() if offers]
    status, output = _run(cluster, grid, tmp_path / "ray", *on_ray)
    assert status == 0, output
    assert nodes.same_rows(tmp_path / "local", tmp_path / "ray"), nodes.row_differences(
        tmp_path / "local", tmp_path / "ray"
    )
    # every cell was scored on the worker node, the only one offering the tasks' resource
    assert {c["ray_node"] for c in cells(tmp_path / "ray").values()} == {worker}
    # The worker node gets SIGKILL the moment the first cell file appears. Its one CPU scores
    # the six cells one after another at the lowest priority (so that on a busy machine it
    # does not outrun the driver writing cells), so cells are still left: with max_retries=0
    # the one it was scoring fails with the node, and the ones waiting fail once no live node
    # offers their resource.
    killed = nodes.killed_run(
        cluster, str(grid), "--out", str(tmp_path / "killed"), "--no-cache", *on_ray
    )
    assert killed["worker_processes_lowered"] >= 1
    assert killed["killed_while_running"], killed["output"]
    assert killed["status"] == 3, killed["output"]  # finished with failures
    lost = killed["failures"]
    assert 1 <= len(lost) <= 5 and killed["cells"] + len(lost) == 6
    assert killed["cells"] >= killed["written_at_kill"] >= 1
    for failure in lost:
        assert "node" in failure["error"] or "worker died" in failure["error"], failure
    kept = cells(tmp_path / "killed")
    assert {c["ray_node"] for c in kept.values()} == {worker}
    cluster.start_worker()
    (second,) = [node for node, offers in live_nodes(cluster).items() if offers]
    assert second != worker
    status, output = _run(cluster, grid, tmp_path / "killed", *on_ray)
    assert status == 0, output
    manifest = json.loads((tmp_path / "killed" / "manifest.json").read_text())
    assert not manifest["failures"]
    again = cells(tmp_path / "killed")
    # the cells written before the loss are resumed as they were; the lost ones, and only
    # they, are computed again, on the new worker node
    assert {i for i, c in again.items() if c["resumed"]} == set(kept)
    recovered = {i: c for i, c in again.items() if not c["resumed"]}
    assert set(recovered) == {f["id"] for f in lost}
    assert {c["ray_node"] for c in recovered.values()} == {second}
    assert all(again[i]["ray_node"] == worker for i in kept)
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
