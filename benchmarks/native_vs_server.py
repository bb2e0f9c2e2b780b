"""chunkmark's native MiniLM beside the same MiniLM served by another process, same texts, one run.

The texts: Chroma's general benchmark (``--data``) cut by ``fixed_tokens(size=--size,
overlap=0)`` (the chunks) and its questions, the job ``benchmarks/vs_peers.py`` times. Each
condition runs in fresh processes, the model loaded before the clock starts; questions and
chunks are timed apart (texts/s by the wall clock, and the CPU seconds of every process that did
the work):

- ``native, libgomp spinning``: ``sentence_transformers()`` in its own process with
  ``GOMP_SPINCOUNT=300000``, GNU OpenMP's own default (idle threads poll for about 3 ms before
  they sleep), as chunkmark ran before :func:`chunkmark.threads.passive_openmp`;
- ``native``: the same, as chunkmark runs it now (``OMP_WAIT_POLICY=PASSIVE`` set before torch
  loads, unless the environment already chooses);
- ``server, libgomp spinning``: ``benchmarks/minilm_server.py`` with ``GOMP_SPINCOUNT=300000``,
  reached through chunkmark's ``openai(base_url=..., batch_size=64)``: sentence-transformers
  encodes in the server's request thread, so libgomp runs two thread teams (the main thread's,
  from the warm-up, and the request thread's), counts more threads than cores and throttles its
  spinning to 100 polls whatever the spin count;
- ``server``: the same server as ``benchmarks/vs_peers.py`` now starts it (passive waiting).

Conditions take turns (``--rounds``, each round in a rotated order) so that load from other work
falls on all of them. Vectors are compared with the first condition's: the largest absolute
difference of any component (the native runs differ from each other by nothing; the server's
``encode`` pads batches differently, which moves float32 sums by rounding only).

    nice -n 5 .venv/bin/python benchmarks/native_vs_server.py [--size 400] [--limit N]
        [--rounds 1] [--conditions native-spin native server-spin server]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
MODEL = "all-MiniLM-L6-v2"
SPIN = {"GOMP_SPINCOUNT": "300000"}  # libgomp's default spin count, set explicitly
CONDITIONS = {
    "native-spin": ("native, libgomp spinning", SPIN),
    "native": ("native", {}),
    "server-spin": ("server, libgomp spinning", SPIN),
    "server": ("server", {}),
}
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def cpu_name() -> str:
    fields: dict[str, str] = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name", "unknown CPU")
    return f"{name} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def texts_of(data: Path, size: int) -> dict[str, list[str]]:
    from chunkmark.chunkers import CHUNKERS, chunk_document
    from chunkmark.datasets import load_dataset

    dataset = load_dataset(data)
    chunker, _ = CHUNKERS.build(f"fixed_tokens(size={size}, overlap=0)")
    chunks = [
        d.text[c.start : c.end]
        for d in dataset.documents
        for c in chunk_document(chunker, d.id, d.text)
    ]
    return {"query": [q.text for q in dataset.questions], "document": chunks}


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker(args: argparse.Namespace) -> None:
    """One condition in this process: load, then embed each kind of text on the clock."""
    texts: dict[str, list[str]] = json.loads(Path(args.worker_texts).read_text())
    out = Path(args.worker_out)
    server = None
    if args.worker_url:
        from chunkmark.embedders.openai import OpenAIEmbedder

        embedder: Any = OpenAIEmbedder(
            model=MODEL, base_url=args.worker_url, batch_size=64, timeout=3600
        )
        server = int(args.worker_server_pid)
    else:
        from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(MODEL)
        embedder.embed(["warm up"])  # loads the model off the clock
    result: dict[str, Any] = {}
    for kind in ("query", "document"):
        cpu, served = time.process_time(), process_cpu(server) if server else 0.0
        began = time.perf_counter()
        vectors = embedder.embed(texts[kind], kind)
        seconds = time.perf_counter() - began
        cpu = time.process_time() - cpu + (process_cpu(server) - served if server else 0.0)
        np.save(out / f"{kind}.npy", vectors)
        result[kind] = {"seconds": seconds, "cpu": cpu, "texts": len(texts[kind])}
    (out / "timing.json").write_text(json.dumps(result))


def run_condition(name: str, texts_file: Path, out: Path) -> dict[str, Any]:
    _, extra = CONDITIONS[name]
    env = {k: v for k, v in os.environ.items() if k not in WAIT_VARIABLES}
    env.update(extra, OPENAI_API_KEY="unused")
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "--worker-texts", str(texts_file), "--worker-out", str(out)]
    server = None
    try:
        if name.startswith("server"):
            server = subprocess.Popen(
                [sys.executable, str(BENCH / "minilm_server.py"), "--port", "0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env=env,
            )
            assert server.stdout is not None
            line = server.stdout.readline().strip()
            if not line.startswith("serving "):
                raise SystemExit(f"the MiniLM server did not start: {line!r}")
            cmd += ["--worker-url", line.split(" ", 1)[1], "--worker-server-pid", str(server.pid)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    timing: dict[str, Any] = json.loads((out / "timing.json").read_text())
    return timing


def main(argv: list[str] | None = None) -> None:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=shared / "datasets/chroma_general")
    parser.add_argument("--size", type=int, default=400)
    parser.add_argument("--limit", type=int, default=None, help="the first N texts of each kind")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--conditions", nargs="+", choices=list(CONDITIONS), default=None)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--worker-texts", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    parser.add_argument("--worker-url", help=argparse.SUPPRESS)
    parser.add_argument("--worker-server-pid", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker_texts:
        worker(args)
        return
    names = args.conditions or list(CONDITIONS)
    work = args.work or Path(tempfile.mkdtemp(prefix="chunkmark-native-vs-server-"))
    texts = texts_of(args.data, args.size)
    if args.limit:
        texts = {kind: values[: args.limit] for kind, values in texts.items()}
    texts_file = work / "texts.json"
    work.mkdir(parents=True, exist_ok=True)
    texts_file.write_text(json.dumps(texts))
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    print(
        f"texts: {len(texts['query'])} questions, {len(texts['document'])} chunks of "
        f"fixed_tokens(size={args.size}) of {args.data.name}; work folder {work}"
    )
    timings: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            timing = run_condition(name, texts_file, work / f"{name}-{r}")
            timings[name].append(timing)
            print(
                f"round {r + 1} {CONDITIONS[name][0]}: "
                + ", ".join(
                    f"{kind} {t['texts'] / t['seconds']:.1f} texts/s ({t['seconds']:.1f} s, "
                    f"CPU {t['cpu']:.1f} s)"
                    for kind, t in timing.items()
                ),
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")
    print()
    print(f"{'condition':<28} {'kind':<9} {'texts/s':>8} {'wall s':>8} {'CPU s':>8}  max |diff|")
    first = names[0]
    for name in names:
        for kind in ("query", "document"):
            seconds = sum(t[kind]["seconds"] for t in timings[name])
            cpu = sum(t[kind]["cpu"] for t in timings[name])
            count = sum(t[kind]["texts"] for t in timings[name])
            diffs = [
                float(
                    np.abs(
                        np.load(work / f"{name}-{r}" / f"{kind}.npy")
                        - np.load(work / f"{first}-0" / f"{kind}.npy")
                    ).max()
                )
                for r in range(args.rounds)
            ]
            print(
                f"{CONDITIONS[name][0]:<28} {kind:<9} {count / seconds:>8.1f} {seconds:>8.1f} "
                f"{cpu:>8.1f}  {max(diffs):.2e}"
            )
    print(f"(max |diff|: against {CONDITIONS[first][0]}, round 1)")
    if "native" in names:
        native = timings["native"]
        for other in names:
            if other == "native":
                continue
            ratio = ", ".join(
                f"{kind} {sum(t[kind]['seconds'] for t in timings[other]) / sum(t[kind]['seconds'] for t in native):.2f}x"
                for kind in ("query", "document")
            )
            print(f"{CONDITIONS[other][0]} seconds / native seconds: {ratio}")


if __name__ == "__main__":
    main()
