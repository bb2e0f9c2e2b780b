"""The Ray executor: the same rows as the local executor, embedding through Ray Data actors,
and worker deaths that cost no finished cell.

One local Ray (2 CPUs) serves every test of the module; its workers import
``tests/ray_chunkers.py`` (a chunker that kills its worker once).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")

import ray_chunkers  # noqa: E402  (registers crash_once in this process)
from chunkmark import evaluate  # noqa: E402
from chunkmark.embedders import EMBEDDERS  # noqa: E402
from chunkmark.errors import ChunkmarkError, MissingDependencyError  # noqa: E402
from chunkmark.experiments import ray_executor  # noqa: E402
from chunkmark.experiments.config import RayOptions, load_config  # noqa: E402

TESTS = Path(__file__).resolve().parent.parent
GRID = {
    "datasets": ["demo"],
    "chunkers": ["fixed_tokens(size=[100, 200])", "recursive(size=200)"],
    "embedders": ["fake()"],
    "k": [1, 5, "min"],
    "report": False,
}


@pytest.fixture(scope="module")
def cluster() -> Any:
    if ray.is_initialized():
        ray.shutdown()
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": path},
            "worker_process_setup_hook": "ray_chunkers.register",
        },
    )
    yield ray
    ray.shutdown()


def _run(tmp_path: Path, name: str, **options: Any) -> Any:
    config = {**GRID, "out": tmp_path / name, "cache_dir": tmp_path / f"{name}-cache", **options}
    return evaluate(**config)


def _same_rows(a: Path, b: Path) -> None:
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()
    left = pq.read_table(a / "results.parquet").to_pydict()
    right = pq.read_table(b / "results.parquet").to_pydict()
    assert left == right


@pytest.mark.integration
def test_ray_gives_the_local_executors_rows_through_batch_inference(
    cluster: Any, tmp_path: Path
) -> None:
    local = _run(tmp_path, "local")
    # batch_min_texts=1: every request of more than one text goes to the actor pool
    remote = _run(tmp_path, "ray", executor="ray", ray={"batch_min_texts": 2})
    _same_rows(local.out, remote.out)
    (entry,) = remote.manifest["embedding"].values()
    stats = entry["stats"]
    assert stats["extra"]["cluster_jobs"] >= 1
    assert stats["cache"]["embedded"] == stats["inputs"] > 0  # the actors' work is counted
    assert remote.cells_computed == 3 and not remote.failures
    # a semantic chunker embeds in the driver through the same cluster embedder
    semantic = ["cluster_semantic(max_size=200)"]
    a = _run(tmp_path, "local-sem", chunkers=semantic)
    b = _run(tmp_path, "ray-sem", chunkers=semantic, executor="ray", ray={"batch_min_texts": 2})
    _same_rows(a.out, b.out)


@pytest.mark.integration
def test_a_dead_worker_costs_only_its_cell_and_the_rerun_completes(
    cluster: Any, tmp_path: Path
) -> None:
    flag = tmp_path / "crash"
    crash = f"crash_once(flag={str(flag)!r}, size=150)"
    chunkers = [*GRID["chunkers"], crash]
    reference = _run(tmp_path, "local", chunkers=chunkers)
    assert not reference.failures

    flag.touch()
    first = _run(tmp_path, "ray", chunkers=chunkers, executor="ray", ray={"max_retries": 0})
    assert not flag.exists()  # a worker claimed the flag and died
    assert [f["chunker"] for f in first.failures] == [crash]
    assert "worker died" in first.failures[0]["error"]
    assert first.cells_computed == 3
    assert len(list((tmp_path / "ray" / "cells").glob("*.failed.json"))) == 1

    second = _run(tmp_path, "ray", chunkers=chunkers, executor="ray", ray={"max_retries": 0})
    assert second.cells_resumed == 3 and second.cells_computed == 1 and not second.failures
    assert not list((tmp_path / "ray" / "cells").glob("*.failed.json"))
    _same_rows(reference.out, second.out)


@pytest.mark.integration
def test_ray_retries_a_task_whose_worker_died(cluster: Any, tmp_path: Path) -> None:
    flag = tmp_path / "crash"
    flag.touch()
    chunkers = [f"crash_once(flag={str(flag)!r}, size=150)"]
    result = _run(tmp_path, "ray", chunkers=chunkers, executor="ray", ray={"max_retries": 1})
    assert not flag.exists()
    assert not result.failures and result.cells_computed == 1


def test_pool_sizes_follow_the_cluster() -> None:
    fake, _ = EMBEDDERS.build(EMBEDDERS.resolve("fake()"))
    spec = EMBEDDERS.resolve("fake()")
    embedder = ray_executor.ClusterEmbedder(fake, spec, RayOptions())
    assert embedder.pool({"CPU": 16.0}) == (4, 0, 4.0)
    assert embedder.pool({"CPU": 2.0}) == (1, 0, 2.0)
    fake.device = "auto"  # a local model: one actor per GPU
    assert embedder.pool({"CPU": 16.0, "GPU": 2.0}) == (2, 1, 1.0)
    capped = ray_executor.ClusterEmbedder(fake, spec, RayOptions(embed_actors=3))
    assert capped.pool({"CPU": 12.0}) == (3, 0, 4.0)


def test_api_embedders_get_one_actor() -> None:
    spec = EMBEDDERS.resolve('openai(model="local-model", base_url="http://127.0.0.1:9/v1")')
    client, _ = EMBEDDERS.build(spec)
    embedder = ray_executor.ClusterEmbedder(client, spec, RayOptions(embed_actors=8))
    assert embedder.pool({"CPU": 64.0, "GPU": 8.0}) == (1, 0, 1.0)


def test_small_requests_stay_in_the_driver() -> None:
    spec = EMBEDDERS.resolve("fake()")
    fake, _ = EMBEDDERS.build(spec)
    embedder = ray_executor.ClusterEmbedder(fake, spec, RayOptions(batch_min_texts=10))
    parts = [["a b", "c"], ["d e f"]]
    got = list(embedder.embed_slices(parts, "document", inputs=False))
    assert embedder.jobs == 0
    np.testing.assert_array_equal(np.concatenate(got), fake.embed(["a b", "c", "d e f"]))


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def no_ray(name: str, *args: Any) -> Any:
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_ray)
    with pytest.raises(MissingDependencyError, match=r"chunkmark\[ray\]"):
        ray_executor.require_ray()


def test_experiment_files_choose_the_executor(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("datasets: [demo]\nexecutor: ray\nray:\n  address: auto\n  embed_actors: 2\n")
    config = load_config(path)
    assert config.executor == "ray"
    assert config.ray == RayOptions(address="auto", embed_actors=2)
    path.write_text("datasets: [demo]\nray:\n  adress: auto\n")
    with pytest.raises(ChunkmarkError, match="adress"):
        load_config(path)


def test_chunkers_that_embed_or_name_objects_chunk_in_the_driver() -> None:
    from chunkmark.chunkers import CHUNKERS

    assert ray_executor.portable(CHUNKERS.resolve("fixed_tokens(size=100)"))
    assert not ray_executor.portable(CHUNKERS.resolve("cluster_semantic(max_size=200)"))
    assert ray_executor.portable(CHUNKERS.resolve("crash_once(flag='x')"))
    assert ray_chunkers.register() is None
