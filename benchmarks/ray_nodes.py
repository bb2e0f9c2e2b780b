"""A grid through ``chunkmark run --executor ray`` on a real two-node Ray cluster on this
machine, against the local executor; then the worker node killed mid-run, and a rerun.

The cluster is two ``ray start`` processes with their own temporary folders: a head node
(``--num-cpus 1``) and a "worker" node (``--num-cpus 1 --resources '{"worker": 1}'``, no GPU)
that joins it at ``--address 127.0.0.1:PORT``. The grid's experiment file asks every task for
``ray.resources: {worker: 1}``, so every chunk and score task runs on the worker node and
killing it matters. The cluster uses token authentication with a token of its own
(``RAY_AUTH_MODE=token``), so it neither reads nor needs ``~/.ray/auth_token``, and it is
stopped by killing its own processes (those that name its temporary folders or port, and their
children), never by ``ray stop``, which stops every Ray of the machine.

It prints the machine's CPU; the seconds of the local run, of the two-node run and whether
their ``summary.csv`` and ``results.parquet`` are identical; then a run killed mid-way (the
worker node's processes get SIGKILL as soon as the first cell is written): its exit status,
the cells it wrote and the cells it recorded as failed; and a rerun into the same folder after
a new worker node joined: cells resumed and computed, and whether its rows are identical to the
local run's.

    nice -n 10 .venv/bin/python benchmarks/ray_nodes.py [--data ../shared/datasets/chroma_general]
        [--chunkers 'fixed_tokens(size=[128, 256, 512])' ...] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RAY = Path(sys.executable).parent / "ray"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TwoNodeCluster:
    """A head node and a worker node (custom resource ``worker``) started with ``ray start``
    on this machine, each with its own temporary folder, stopped by killing their processes."""

    def __init__(self, worker_cpus: int = 1) -> None:
        # Ray puts unix sockets under the temporary folder: keep its path short.
        self.root = Path(tempfile.mkdtemp(prefix="cmray-", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.worker_cpus = worker_cpus
        self.env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
            # find a lost node within seconds rather than the default half minute
            "RAY_health_check_period_ms": "500",
            "RAY_health_check_timeout_ms": "500",
            "RAY_health_check_failure_threshold": "3",
        }
        self.workers = 0

    def _start(self, *args: str) -> None:
        subprocess.run(
            [str(RAY), "start", "--node-ip-address", "127.0.0.1", "--disable-usage-stats", *args],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )

    def start(self) -> TwoNodeCluster:
        self._start(
            "--head",
            "--port",
            str(self.port),
            "--num-cpus",
            "1",
            "--include-dashboard",
            "false",
            "--temp-dir",
            str(self.root / "head"),
        )
        self.start_worker()
        return self

    def start_worker(self) -> None:
        """A new worker node (its own temporary folder) joining the head."""
        self.workers += 1
        self._start(
            "--address",
            self.address,
            "--num-cpus",
            str(self.worker_cpus),
            "--resources",
            json.dumps({"worker": 1}),
            "--temp-dir",
            str(self.root / f"worker{self.workers}"),
        )
        self._wait_for_worker()

    def _wait_for_worker(self) -> None:
        script = (
            "import ray, time\n"
            f"ray.init(address={self.address!r}, log_to_driver=False)\n"
            "for _ in range(600):\n"
            "    if ray.cluster_resources().get('worker'):\n"
            "        raise SystemExit(0)\n"
            "    time.sleep(0.1)\n"
            "raise SystemExit(1)\n"
        )
        subprocess.run(
            [sys.executable, "-c", script], env=self.env, check=True, capture_output=True
        )

    def deprioritise_worker(self) -> int:
        """Give the current worker node's processes the lowest CPU priority (nice 19, and the
        same for their autogroup where the kernel has one): while the machine is busy, the
        worker then scores no faster than the driver writes cells, so a kill triggered by the
        first cell file lands while cells are still left. How many processes were reniced."""
        pids = _processes([str(self.root / f"worker{self.workers}")])
        for pid in pids:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, pid, 19)
            with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as f:
                f.write("19")
        return len(pids)

    def kill_worker(self) -> int:
        """SIGKILL the current worker node's processes; how many there were."""
        return _kill(_processes([str(self.root / f"worker{self.workers}")]))

    def stop(self) -> None:
        _kill(_processes([str(self.root), f":{self.port}"]))
        shutil.rmtree(self.root, ignore_errors=True)

    def chunkmark(self, *args: str, **popen: Any) -> subprocess.Popen[str]:
        """``chunkmark ARGS`` as a child process that can join this cluster."""
        return subprocess.Popen(
            [sys.executable, "-m", "chunkmark", *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            **popen,
        )


def _processes(markers: Sequence[str]) -> set[int]:
    """Processes whose command line holds one of ``markers``, and all their descendants."""
    parents: dict[int, int] = {}
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if any(marker in command for marker in markers):
            found.add(int(entry))
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return found


def _kill(pids: set[int]) -> int:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)


def write_grid(path: Path, data: str, chunkers: Sequence[str], max_retries: int) -> Path:
    """The grid's experiment file: every Ray task asks for the worker node's resource."""
    grid = {
        "datasets": [data],
        "chunkers": list(chunkers),
        "embedders": ["fake()"],
        "k": [1, 5],
        "report": False,
        "ray": {"resources": {"worker": 1}, "max_retries": max_retries},
    }
    path.write_text(json.dumps(grid))  # JSON is YAML
    return path


def same_rows(a: Path, b: Path) -> bool:
    import pyarrow.parquet as pq

    if (a / "summary.csv").read_bytes() != (b / "summary.csv").read_bytes():
        return False
    left = pq.read_table(a / "results.parquet").to_pydict()
    return bool(left == pq.read_table(b / "results.parquet").to_pydict())


KEYS = ("dataset", "chunker", "embedder", "retrieval", "k", "question_id")


def row_differences(a: Path, b: Path, shown: int = 3) -> list[str]:
    """Where two runs' ``results.parquet`` differ: per metric column, how many rows, the
    largest difference and the first rows (cell, k, question, both values); empty when the
    rows are identical."""
    import pyarrow.parquet as pq

    left = pq.read_table(a / "results.parquet").to_pydict()
    right = pq.read_table(b / "results.parquet").to_pydict()
    if set(left) != set(right):
        return [f"columns differ: {sorted(set(left) ^ set(right))}"]
    keys = [k for k in KEYS if k in left]
    rows_left = list(zip(*(left[k] for k in keys), strict=True))
    if rows_left != list(zip(*(right[k] for k in keys), strict=True)):
        return ["the rows are not the same (dataset, cell, k, question) in the same order"]
    lines = []
    for column in left:
        if column in keys:
            continue
        differ = [
            i
            for i, (x, y) in enumerate(zip(left[column], right[column], strict=True))
            if x != y and not (x != x and y != y)  # NaN equals NaN here
        ]
        if not differ:
            continue
        gaps = [
            abs(left[column][i] - right[column][i])
            for i in differ
            if isinstance(left[column][i], (int, float))
            and isinstance(right[column][i], (int, float))
        ]
        largest = f", largest difference {max(gaps):.3g}" if gaps else ""
        lines.append(f"{column}: {len(differ)} of {len(rows_left)} rows differ{largest}")
        for i in differ[:shown]:
            row = dict(zip(keys, rows_left[i], strict=True))
            lines.append(
                f"  {row.get('chunker')} x {row.get('embedder')} {row.get('retrieval') or ''} "
                f"k={row.get('k')} question {row.get('question_id')}: "
                f"{left[column][i]!r} vs {right[column][i]!r}"
            )
    if not lines and (a / "summary.csv").read_bytes() != (b / "summary.csv").read_bytes():
        lines.append("results.parquet is identical; summary.csv differs")
    return lines


def cell_files(out: Path) -> list[Path]:
    """The cells a run has written (not the failed ones' records)."""
    cells = out / "cells"
    if not cells.is_dir():
        return []
    return [p for p in cells.glob("*.parquet") if "." not in p.stem]  # not .chunks, .ranking


def run(cluster: TwoNodeCluster, *args: str) -> tuple[int, float, str]:
    began = time.perf_counter()
    child = cluster.chunkmark("run", *args)
    output, _ = child.communicate(timeout=600)
    return child.returncode, time.perf_counter() - began, output


def killed_run(cluster: TwoNodeCluster, *args: str) -> dict[str, Any]:
    """A run whose worker node (at the lowest CPU priority) is killed once its first cell is
    written."""
    out = Path(args[args.index("--out") + 1])
    lowered = cluster.deprioritise_worker()
    child = cluster.chunkmark("run", *args)
    written_then = -1
    deadline = time.monotonic() + 600
    while child.poll() is None and time.monotonic() < deadline:
        written = cell_files(out)
        if written:
            cluster.kill_worker()
            written_then = len(written)
            break
        time.sleep(0.02)
    was_running = child.poll() is None
    output, _ = child.communicate(timeout=600)
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "status": child.returncode,
        "worker_processes_lowered": lowered,
        "killed_while_running": was_running and written_then > 0,
        "written_at_kill": written_then,
        "cells": len(manifest["cells"]),
        "failures": manifest["failures"],
        "output": output,
    }


def report_rows(name: str, local: Path, other: Path) -> None:
    """Whether ``other``'s rows are identical to the local run's, and where they differ."""
    same = same_rows(local, other)
    print(f"{name} rows identical to local: {same}")
    if not same:
        for line in row_differences(local, other):
            print(f"  {line}")


def cpu_name() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main(argv: list[str] | None = None) -> None:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(shared / "datasets/chroma_general"))
    parser.add_argument(
        "--chunkers",
        nargs="+",
        default=["fixed_tokens(size=[128, 256, 512])", "recursive(size=[400, 800])"],
    )
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="chunkmark-ray-") as tmp:
        work = args.workdir or Path(tmp)
        grid = write_grid(work / "grid.yaml", args.data, args.chunkers, max_retries=0)
        began = time.perf_counter()
        cluster = TwoNodeCluster().start()
        print(
            f"cluster: head + worker node at {cluster.address}, {time.perf_counter() - began:.1f} s to start"
        )
        try:
            ray_args = ("--executor", "ray", "--address", cluster.address)
            # like with like: every run computes everything (no cache, no chunk store)
            status, local_s, output = run(
                cluster, str(grid), "--out", str(work / "local"), "--no-cache"
            )
            if status != 0:
                sys.exit(output)
            status, ray_s, output = run(
                cluster, str(grid), "--out", str(work / "ray"), "--no-cache", *ray_args
            )
            if status != 0:
                sys.exit(output)
            cells = len(cell_files(work / "local"))
            print(f"grid: {args.data}, {' '.join(args.chunkers)} x fake(), {cells} cells")
            print(f"local run: {local_s:.1f} s")
            print(f"two-node run: {ray_s:.1f} s (ratio {ray_s / local_s:.2f})")
            report_rows("two-node", work / "local", work / "ray")
            killed = killed_run(
                cluster, str(grid), "--out", str(work / "killed"), "--no-cache", *ray_args
            )
            print(
                f"killed run: worker node killed with {killed['written_at_kill']} cell(s) written "
                f"(run still going: {killed['killed_while_running']}); exit status "
                f"{killed['status']}, {killed['cells']} cells written, "
                f"{len(killed['failures'])} recorded as failed"
            )
            for failure in killed["failures"][:3]:
                print(f"  failed: {failure['chunker']}: {failure['error'].splitlines()[0]}")
            cluster.start_worker()
            status, again_s, output = run(
                cluster, str(grid), "--out", str(work / "killed"), "--no-cache", *ray_args
            )
            manifest = json.loads((work / "killed" / "manifest.json").read_text())
            resumed = sum(c["resumed"] for c in manifest["cells"])
            print(
                f"rerun after a new worker node joined: exit status {status}, {again_s:.1f} s, "
                f"{resumed} cells resumed, {len(manifest['cells']) - resumed} computed, "
                f"{len(manifest['failures'])} failed"
            )
            report_rows("rerun", work / "local", work / "killed")
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
