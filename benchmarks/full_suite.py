"""The fast grid over every question of the seven sets: ``chunkmark suite run --full``, cold then warm.

Cold: each set in its own ``chunkmark suite run SET --full --grid fast`` process, one after the
other, with a cache root of its own that starts empty (``CHUNKMARK_CACHE_DIR`` and
``--cache-dir``): every set converted from the raw files, model2vec distilled from the offline
MiniLM (in the first set's process), every chunk embedded, every question scored. Each process is
timed (wall clock) and its peak resident memory read from the operating system's accounting of
that process (``os.wait4``'s ``ru_maxrss``). Warm: one ``chunkmark suite run`` over all the sets
into the same folder and cache (every cell resumed; it writes the ``suite.json`` and
``combined.csv`` of all seven), timed the same way, ``--warm`` times.

The load average (``os.getloadavg``) is printed before and after: on a shared machine the wall
times say how long it took beside whatever else ran, not on an idle machine.

    python benchmarks/full_suite.py [--out /tmp/fullsets/full-fast] [--from DIR]
        [--sets cuad qmsum ...] [--warm 2] [--smoke]

``--smoke`` runs one small sample (``covid_qa``, 3 documents) instead of the full sets, to check
the script in a minute. The timings go to ``OUT.timings.json`` beside the suite folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETS = (
    "cuad",
    "qmsum",
    "evidence_inference",
    "fairytaleqa",
    "covid_qa",
    "redocred-evidence",
    "chroma-general",
)


def timed(command: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run ``command`` with its output appended to ``log``; its wall time, CPU time, peak RSS and
    exit code (the child's own rusage, from ``os.wait4``)."""
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "command": " ".join(command),
        "wall_s": round(wall, 1),
        "user_s": round(usage.ru_utime, 1),
        "system_s": round(usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
        "exit_code": process.returncode,
    }


def suite_command(sets: list[str], args: argparse.Namespace, cache: Path) -> list[str]:
    command = [sys.executable, "-m", "chunkmark", "suite", "run", *sets, "--grid", "fast"]
    command += ["--from", str(args.source), "--out", str(args.out), "--cache-dir", str(cache)]
    command += ["--docs", "3"] if args.smoke else ["--full"]
    return command


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s" if seconds >= 60 else f"{seconds:.1f} s"


def main() -> None:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/fullsets/full-fast"))
    parser.add_argument("--from", dest="source", type=Path, default=shared / "datasets/suite")
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--warm", type=int, default=2, help="warm runs after the cold ones")
    parser.add_argument("--smoke", action="store_true", help="covid_qa, 3 documents")
    args = parser.parse_args()
    if args.smoke:
        args.sets = ["covid_qa"]
    args.out = args.out.resolve()
    cache = Path(f"{args.out}.cache")
    if args.out.exists() or cache.exists():
        raise SystemExit(f"{args.out} or {cache} exists: a cold run needs both new (remove them).")
    cache.mkdir(parents=True)
    log = Path(f"{args.out}.log")
    env = {**os.environ, "CHUNKMARK_CACHE_DIR": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    record: dict[str, Any] = {
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "load_before": load(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cold": {},
        "warm": [],
    }
    timings = Path(f"{args.out}.timings.json")
    print(f"load average before: {record['load_before']}", flush=True)
    for name in args.sets:
        one = timed(suite_command([name], args, cache), env, log)
        record["cold"][name] = one
        print(
            f"cold {name}: {minutes(one['wall_s'])}, peak {one['peak_rss_mb']:.0f} MB, "
            f"exit {one['exit_code']}, load {load()}",
            flush=True,
        )
        timings.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    for i in range(args.warm):
        one = timed(suite_command(args.sets, args, cache), env, log)
        record["warm"].append(one)
        print(
            f"warm {i + 1} (all sets): {minutes(one['wall_s'])}, peak "
            f"{one['peak_rss_mb']:.0f} MB, exit {one['exit_code']}, load {load()}",
            flush=True,
        )
        timings.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    record["load_after"] = load()
    suite = json.loads((args.out / "suite.json").read_text(encoding="utf-8"))
    record["questions"] = {s["name"]: s["questions"] for s in suite["sets"]}
    record["documents"] = {s["name"]: s["documents"] for s in suite["sets"]}
    record["failures"] = suite["failures"]
    timings.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    cold = record["cold"].values()
    print(f"\nload average after: {record['load_after']}")
    print("\n| set | documents | questions | cold wall | CPU (user + system) | peak RSS |")
    print("|---|---|---|---|---|---|")
    for name, one in record["cold"].items():
        print(
            f"| {name} | {record['documents'].get(name, '-'):,} | "
            f"{record['questions'].get(name, '-'):,} | {minutes(one['wall_s'])} | "
            f"{one['user_s']:,.0f} + {one['system_s']:,.0f} s | "
            f"{one['peak_rss_mb'] / 1024:.2f} GB |"
        )
    total = sum(one["wall_s"] for one in cold)
    print(
        f"| all | {sum(record['documents'].values()):,} | {sum(record['questions'].values()):,} "
        f"| {minutes(total)} | {sum(o['user_s'] for o in cold):,.0f} + "
        f"{sum(o['system_s'] for o in cold):,.0f} s | "
        f"{max(o['peak_rss_mb'] for o in cold) / 1024:.2f} GB |"
    )
    for i, one in enumerate(record["warm"], 1):
        print(
            f"warm {i}: {minutes(one['wall_s'])} wall, {one['user_s']:,.0f} + "
            f"{one['system_s']:,.0f} s CPU, peak {one['peak_rss_mb'] / 1024:.2f} GB"
        )
    if record["failures"] or any(o["exit_code"] for o in [*cold, *record["warm"]]):
        print(f"failures: {record['failures']} (see {log})")
        raise SystemExit(1)
    print(f"suite folder: {args.out}\ntimings: {timings}\nlog: {log}")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
