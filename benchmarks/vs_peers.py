"""chunkmark beside the tools people would pick instead (chunktuner, chunkbench-rag), one job,
cold and warm, timed side by side in one invocation.

The job: Chroma's general benchmark (``$CHUNKMARK_SHARED_DIR/datasets/chroma_general``, five
corpora, 472 questions), fixed-token chunks (cl100k_base, ``--sizes``, no overlap),
all-MiniLM-L6-v2, hit@5 (a top-5 chunk overlaps one of the question's excerpts).

Both peers embed only through OpenAI-compatible APIs, so the offline MiniLM is served on
127.0.0.1 by ``benchmarks/minilm_server.py`` (sentence-transformers, one request at a time) and
every tool embeds through it: chunkmark's ``openai(base_url=...)`` (like for like) and, as a
second chunkmark row, its native ``sentence_transformers()``. Each peer is installed from PyPI
into its own virtual environment under ``--peers-dir`` (default: ``peers/`` in chunkmark's
cache folder; chunkbench-rag needs Python >= 3.12, found on the PATH or under ~/.pyenv, or
given with ``--python312``) and driven through its library API by ``benchmarks/peers/*.py``
(neither CLI takes questions with answer spans).

Each tool runs the job twice in fresh processes: **cold** (an empty cache folder) and **warm**
(the same cache folder again). The times are whole processes (imports, model load, chunking,
embedding, search, scoring), by the wall clock, with the CPU seconds (user + system) of the
process and of the MiniLM server while it ran beside them. chunkmark's sources are compiled to
bytecode first (``compileall``), as an installed package's are and as pip left the peers'.
Ratios are peer seconds over chunkmark seconds. Before the jobs it times the floor a warm run
cannot go under: ``python -c pass`` and ``python -c "import chunkmark"`` (and each peer's
Python and import), five times each, the median printed. Agreement:

- chunks: chunktuner's ``FixedTokenStrategy`` spans against chunkmark's ``fixed_tokens`` spans,
  per corpus, as (start, end) lists; chunkbench-rag has no chunker and is given chunkmark's.
- hit@5: per question against chunkmark's run through the same server (chunkbench-rag), and
  as the mean over the same questions (chunktuner reports only means).

Where a peer cannot do the job it says why in one line and runs what it can: chunktuner's
chunker raises on corpora where a token ends inside a multi-byte character, and its evaluator
costs questions x chunks x document tokens (it recomputes each ranked chunk's token set over the
whole document for every question), so it runs on ``--chunktuner-corpora`` and chunkmark is
timed on the same corpora beside it.

    nice -n 10 .venv/bin/python benchmarks/vs_peers.py [--sizes 200 400] [--work DIR]
        [--peers-dir DIR] [--python312 PY] [--chunktuner-corpora chatlogs state_of_the_union]
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
MODEL = "all-MiniLM-L6-v2"
K = 5
PEERS = {"chunktuner": "chunktuner", "chunkbench-rag": "chunkbench-rag[openai]"}


def cpu_name() -> str:
    """The CPU's model name, with its family and model numbers (a VM may show only a brand)."""
    fields: dict[str, str] = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name", "unknown CPU")
    return f"{name} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def find_python312(given: str | None) -> str | None:
    """A Python >= 3.12 for chunkbench-rag: ``given``, the PATH, or a pyenv version."""
    candidates = [given] if given else []
    candidates += [shutil.which(n) for n in ("python3.13", "python3.12")]
    candidates += sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.1[23]*/bin/python3")))
    for python in candidates:
        if not python:
            continue
        probe = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
        )
        if probe.stdout.strip() == "True":
            return python
    return None


def install(peers_dir: Path, name: str, python: str) -> tuple[Path | None, str]:
    """The peer's virtual environment's Python (made and installed from PyPI if missing) and
    its version, or None and why."""
    venv = peers_dir / name
    exe = venv / "bin" / "python"
    if not exe.exists():
        print(f"installing {PEERS[name]} into {venv}", flush=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        done = subprocess.run(
            [str(exe), "-m", "pip", "install", "-q", PEERS[name]], capture_output=True, text=True
        )
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            return None, f"pip install {PEERS[name]} failed: {done.stderr.strip()[-300:]}"
    version = subprocess.run(
        [str(exe), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return exe, version


class Server:
    """benchmarks/minilm_server.py on a free port, the model loaded before anything is timed."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(BENCH / "minilm_server.py"), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("serving "):
            raise SystemExit(f"the MiniLM server did not start: {line!r}")
        self.url = line.split(" ", 1)[1]

    def stats(self) -> dict[str, float]:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats") as reply:
            return dict(json.loads(reply.read()))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def children_cpu() -> float:
    """User + system CPU seconds of the finished child processes of this one so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd: list[str], server: Server, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process; its seconds, its CPU seconds and the server's while it
    ran, and what it asked of the server."""
    before = server.stats()
    cpu, served = children_cpu(), process_cpu(server.process.pid)
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - began
    cpu, served = children_cpu() - cpu, process_cpu(server.process.pid) - served
    after = server.stats()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return {
        "seconds": seconds,
        "cpu": cpu,
        "server_cpu": served,
        "requests": int(after["requests"] - before["requests"]),
        "inputs": int(after["inputs"] - before["inputs"]),
        "server_s": after["seconds"] - before["seconds"],
    }


def floor(cmd: list[str], env: dict[str, str], times: int = 5) -> dict[str, float]:
    """The median wall and CPU seconds of ``cmd`` run ``times`` times in fresh processes."""
    walls, cpus = [], []
    for _ in range(times):
        cpu = children_cpu()
        began = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        walls.append(time.perf_counter() - began)
        cpus.append(children_cpu() - cpu)
    return {"seconds": statistics.median(walls), "cpu": statistics.median(cpus)}


def floors(exes: dict[str, Path], env: dict[str, str]) -> dict[str, dict[str, float]]:
    """What a process costs before any work: Python's start and each tool's import."""
    found = {
        "python -c pass": floor([sys.executable, "-c", "pass"], env),
        "python -c 'import chunkmark'": floor([sys.executable, "-c", "import chunkmark"], env),
        "chunkmark --version": floor([sys.executable, "-m", "chunkmark", "--version"], env),
    }
    modules = {"chunktuner": "chunktuner", "chunkbench-rag": "chunkbench.pipeline"}
    for name, exe in exes.items():
        found[f"{name}: python -c pass"] = floor([str(exe), "-c", "pass"], env)
        found[f"{name}: python -c 'import {modules[name]}'"] = floor(
            [str(exe), "-c", f"import {modules[name]}"], env
        )
    return found


def compile_chunkmark() -> Path:
    """Compile chunkmark's sources to bytecode (what pip does at install), so its processes are
    timed as an installed package's; returns the package folder."""
    import chunkmark

    folder = Path(chunkmark.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True)
    return folder


def subset(data: Path, corpora: list[str], folder: Path) -> Path:
    """The dataset in Chroma's layout with only ``corpora`` (and their questions)."""
    (folder / "corpora").mkdir(parents=True, exist_ok=True)
    for name in corpora:
        shutil.copyfile(data / "corpora" / f"{name}.md", folder / "corpora" / f"{name}.md")
    with (data / "questions_df.csv").open(newline="", encoding="utf-8") as src:
        reader = csv.DictReader(src)
        with (folder / "questions_df.csv").open("w", newline="", encoding="utf-8") as dst:
            writer = csv.DictWriter(dst, fieldnames=list(reader.fieldnames or []))
            writer.writeheader()
            writer.writerows(r for r in reader if r["corpus_id"] in corpora)
    return folder


def chunkmark_run(
    data: Path, embedder: str, retrieval: str, sizes: list[int], out: Path, cache: Path
) -> list[str]:
    grid = {
        "datasets": [str(data)],
        "chunkers": [f"fixed_tokens(size={sizes}, overlap=0)"],
        "embedders": [embedder],
        "retrieval": [retrieval],
        "report": False,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.parent / f"{out.name}.grid.yaml"
    path.write_text(json.dumps(grid))  # JSON is YAML
    return [
        sys.executable,
        "-m",
        "chunkmark",
        "run",
        str(path),
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
        "--quiet",
    ]


def setting_of(chunker: str) -> str:
    """``fixed_tokens(size=200, overlap=0, ...)`` -> ``200``."""
    return chunker.split("size=", 1)[1].split(",", 1)[0].rstrip(")")


def chunkmark_results(out: Path) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, Any]]]:
    """Per setting: every question's hit@5, and the chunks' spans per document."""
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "results.parquet").to_pylist()
    hits: dict[str, dict[str, float]] = {}
    for row in rows:
        if str(row["k"]) == str(K):
            hits.setdefault(setting_of(row["chunker"]), {})[row["question_id"]] = row["hit"]
    chunks: dict[str, dict[str, Any]] = {}
    for cell in json.loads((out / "manifest.json").read_text())["cells"]:
        spans: dict[str, list[list[int]]] = {}
        for c in pq.read_table(out / "cells" / f"{cell['id']}.chunks.parquet").to_pylist():
            spans.setdefault(c["doc_id"], []).append([c["start"], c["end"]])
        chunks[setting_of(cell["chunker"])] = spans
    return hits, chunks


def _cpu(t: dict[str, Any]) -> str:
    """A run's CPU seconds, with the server's added where it worked (n/a in older records)."""
    if "cpu" not in t:
        return "n/a"
    served = t.get("server_cpu", 0.0)
    return f"{t['cpu']:.1f}+{served:.1f}" if served >= 0.05 else f"{t['cpu']:.1f}"


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=shared / "datasets/chroma_general")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 400])
    parser.add_argument("--peers-dir", type=Path, default=None)
    parser.add_argument("--python312", default=None)
    parser.add_argument(
        "--chunktuner-corpora", nargs="+", default=["chatlogs", "state_of_the_union"]
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--report-from", type=Path, default=None, help="print the report of WORK/runs.json again"
    )
    args = parser.parse_args(argv)
    if args.report_from is not None:
        from chunkmark.datasets import load_dataset as load

        saved = json.loads((args.report_from / "runs.json").read_text())
        print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs")
        print("versions: " + ", ".join(f"{n} {v}" for n, v in saved["versions"].items()))
        report(
            saved["runs"],
            saved["labels"],
            load(args.data),
            saved["corpora"],
            saved["versions"],
            saved["cannot"],
            saved.get("floors", {}),
        )
        return

    from chunkmark.datasets import load_dataset
    from chunkmark.paths import resolve_cache_dir

    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs")
    peers_dir = args.peers_dir or resolve_cache_dir() / "peers"
    pythons = {"chunktuner": sys.executable, "chunkbench-rag": find_python312(args.python312)}
    exes: dict[str, Path] = {}
    cannot: dict[str, str] = {}
    versions = {"chunkmark": _version("chunkmark")}
    for name, python in pythons.items():
        if python is None:
            cannot[name] = "it needs Python >= 3.12 and none was found (give --python312)"
            continue
        exe, version = install(peers_dir, name, python)
        if exe is None:
            cannot[name] = version
        else:
            exes[name], versions[name] = exe, version
    print("versions: " + ", ".join(f"{n} {v}" for n, v in versions.items()))

    print(f"compiled to bytecode: {compile_chunkmark()}")
    dataset = load_dataset(args.data)
    labels = [str(s) for s in args.sizes]
    tmp = tempfile.mkdtemp(prefix="chunkmark-peers-")
    work = args.work or Path(tmp)
    work.mkdir(parents=True, exist_ok=True)
    server = Server()
    env = {
        **os.environ,
        "OPENAI_API_KEY": "unused",  # the local server takes any key
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm: no download of its price list
    }
    print(f"server: {server.url} ({MODEL}, sentence-transformers, CPU)")
    print(f"load average before: {os.getloadavg()}")
    floor_times = floors(exes, env)
    for what, t in floor_times.items():
        print(f"floor: {what}: {t['seconds']:.3f} s (CPU {t['cpu']:.3f} s), median of 5")
    native = f'sentence_transformers(model="{MODEL}")'
    api = f'openai(model="{MODEL}", base_url="{server.url}", batch_size=64, timeout=3600)'
    runs: dict[str, dict[str, Any]] = {}
    try:
        jobs = {
            "whole": args.data,
            "subset": subset(args.data, args.chunktuner_corpora, work / "subset-data"),
        }
        for job_name, data in jobs.items():
            for tool, embedder, retrieval in (
                ("chunkmark native", native, f"top_k(k={K})"),
                ("chunkmark openai", api, f"top_k(k={K})"),
            ):
                if job_name == "subset":
                    retrieval = f"in_document(k={K})"  # chunktuner searches the question's corpus
                key = f"{tool} / {job_name}"
                cache = work / f"cache-{tool.split()[1]}-{job_name}"
                runs[key] = {}
                for phase in ("cold", "warm"):
                    out = work / f"{tool.split()[1]}-{job_name}-{phase}"
                    cmd = chunkmark_run(data, embedder, retrieval, args.sizes, out, cache)
                    runs[key][phase] = timed(cmd, server, env)
                    print(f"{key} {phase}: {runs[key][phase]['seconds']:.1f} s", flush=True)
                runs[key]["hits"], runs[key]["chunks"] = chunkmark_results(out)

        chunks = runs["chunkmark openai / whole"]["chunks"]
        job = {
            "name": dataset.name,
            "model": MODEL,
            "url": server.url,
            "k": K,
            "documents": [{"id": d.id, "text": d.text} for d in dataset.documents],
            "questions": [
                {
                    "id": q.id,
                    "text": q.text,
                    "doc_id": q.doc_id,
                    "spans": [[s.start, s.end] for s in q.excerpts],
                }
                for q in dataset.questions
            ],
            "settings": [{"label": s, "size": int(s), "overlap": 0} for s in labels],
            "chunks": {
                s: [[doc, a, b] for doc, spans in chunks[s].items() for a, b in spans]
                for s in labels
            },
            "chunktuner_corpora": args.chunktuner_corpora,
        }
        (work / "job.json").write_text(json.dumps(job))
        for name, exe in exes.items():
            script = BENCH / "peers" / f"{name.split('-')[0]}_job.py"
            key = f"{name} / {'subset' if name == 'chunktuner' else 'whole'}"
            runs[key] = {}
            for phase in ("cold", "warm"):
                out = work / f"{name}-{phase}.json"
                cmd = [
                    str(exe),
                    str(script),
                    str(work / "job.json"),
                    str(out),
                    str(work / f"cache-{name}"),
                ]
                runs[key][phase] = timed(cmd, server, env)
                runs[key][phase]["out"] = json.loads(out.read_text())
                print(f"{key} {phase}: {runs[key][phase]['seconds']:.1f} s", flush=True)
    finally:
        server.stop()
    print(f"load average after: {os.getloadavg()}")
    keep = {"runs": runs, "labels": labels, "corpora": args.chunktuner_corpora}
    saved = {**keep, "versions": versions, "cannot": cannot, "floors": floor_times}
    (work / "runs.json").write_text(json.dumps(saved))
    report(runs, labels, dataset, args.chunktuner_corpora, versions, cannot, floor_times)


def _version(package: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(package)


def report(
    runs: dict[str, dict[str, Any]],
    labels: list[str],
    dataset: Any,
    corpora: list[str],
    versions: dict[str, str],
    cannot: dict[str, str],
    floor_times: dict[str, dict[str, float]] | None = None,
) -> None:
    questions = [q.id for q in dataset.questions]
    in_subset = [q.id for q in dataset.questions if q.doc_id in corpora]
    print()
    header = (
        f"{'tool':<28} {'job':<7} {'cold s':>8} {'CPU s':>13} {'warm s':>8} {'CPU s':>6}  "
        f"{'server in/req':>13}  "
    )
    print(header + "  ".join(f"hit@5 {s:>4}" for s in labels))
    for key, run in runs.items():
        tool, job = key.split(" / ")
        if tool in versions:
            tool = f"{tool} {versions[tool]}"
        cold, warm = run["cold"], run["warm"]
        if "hits" in run:  # a subset run numbers its own questions: all of them count
            hits = [mean(list(run["hits"][s].values())) for s in labels]
        elif "hits" in next(iter(cold["out"]["results"].values())):
            hits = [mean(cold["out"]["results"][s]["hits"]) for s in labels]
        else:
            hits = [cold["out"]["results"][s]["hit"] for s in labels]
        print(
            f"{tool:<28} {job:<7} {cold['seconds']:>8.1f} {_cpu(cold):>13} "
            f"{warm['seconds']:>8.1f} {_cpu(warm):>6}  "
            + (
                f"{cold['inputs']:>6}/{cold['requests']:<6}  "
                if cold["inputs"] >= 0
                else f"{'n/a':>13}  "
            )
            + "  ".join(f"{100 * h:>9.2f}%" for h in hits)
        )
    print(
        f"(job 'whole': {len(questions)} questions, 5 corpora; 'subset': {len(in_subset)} "
        f"questions of {', '.join(corpora)}; CPU s: user + system seconds of the process, "
        "+ the MiniLM server's while it ran; 'server in/req': texts and requests the cold run "
        "sent to the MiniLM server)"
    )
    print()
    for peer, job in (("chunkbench-rag", "whole"), ("chunktuner", "subset")):
        key = f"{peer} / {job}"
        if key not in runs:
            continue
        for base in ("chunkmark openai", "chunkmark native"):
            mine = runs[f"{base} / {job}"]
            cold = runs[key]["cold"]["seconds"] / mine["cold"]["seconds"]
            warm = runs[key]["warm"]["seconds"] / mine["warm"]["seconds"]
            print(f"{peer} / {base} ({job}): cold {cold:.2f}x, warm {warm:.1f}x")
    if floor_times:
        print()
        start = floor_times["python -c pass"]["seconds"]
        for peer, job in (("chunkbench-rag", "whole"), ("chunktuner", "subset")):
            key = f"{peer} / {job}"
            if key not in runs:
                continue
            need = runs[key]["warm"]["seconds"] / 100
            print(
                f"warm 100x faster than {peer} ({job}) needs a chunkmark process of "
                f"{need:.3f} s; python -c pass alone takes {start:.3f} s here"
                + (" (below the floor: unreachable)" if need < start else "")
            )
    print()
    agreement(runs, labels, dataset, corpora)
    for peer, why in cannot.items():
        print(f"{peer}: cannot run: {why}")


def agreement(
    runs: dict[str, dict[str, Any]], labels: list[str], dataset: Any, corpora: list[str]
) -> None:
    questions = [q.id for q in dataset.questions]
    native, api = runs["chunkmark native / whole"], runs["chunkmark openai / whole"]
    for s in labels:
        differ = sum(native["hits"][s][q] != api["hits"][s][q] for q in questions)
        same = native["chunks"][s] == api["chunks"][s]
        print(
            f"size {s}: chunkmark native vs openai: chunks equal {same}, hit@5 differs on {differ} of {len(questions)} questions"
        )
    if "chunkbench-rag / whole" in runs:
        bench = runs["chunkbench-rag / whole"]
        for s in labels:
            for phase in ("cold", "warm"):
                hits = bench[phase]["out"]["results"][s]["hits"]
                differ = sum(api["hits"][s][q] != h for q, h in zip(questions, hits, strict=True))
                print(
                    f"size {s}: chunkbench-rag ({phase}, given chunkmark's chunks) vs chunkmark "
                    f"openai: hit@5 differs on {differ} of {len(questions)} questions"
                )
    if "chunktuner / subset" in runs:
        tuner = runs["chunktuner / subset"]["cold"]["out"]
        mine = runs["chunkmark openai / subset"]
        for s in labels:
            equal, errors = [], []
            for doc, made in tuner["chunks"][s].items():
                if "error" in made:
                    errors.append(f"{doc} ({made['error']})")
                elif made["spans"] == runs["chunkmark openai / whole"]["chunks"][s].get(doc):
                    equal.append(doc)
                else:
                    theirs, ours = made["spans"], runs["chunkmark openai / whole"]["chunks"][s][doc]
                    first = next(
                        (i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b),
                        min(len(theirs), len(ours)),
                    )
                    errors.append(
                        f"{doc} (differs: {len(theirs)} vs {len(ours)} chunks, first at #{first})"
                    )
            ids = list(mine["hits"][s])  # the subset run's own questions
            ours = mean([mine["hits"][s][q] for q in ids])
            print(
                f"size {s}: chunktuner's chunks equal chunkmark's on {', '.join(equal) or 'no corpus'}"
                + (f"; not on {'; '.join(errors)}" if errors else "")
            )
            print(
                f"size {s}: chunktuner hit@5 {100 * tuner['results'][s]['hit']:.2f}% vs chunkmark "
                f"openai in_document {100 * ours:.2f}% on the same {len(ids)} questions"
            )
        unchunked = sorted(
            {d for s in labels for d, m in tuner["chunks"][s].items() if "error" in m}
        )
        slow = [
            d
            for d in (q.doc_id for q in dataset.questions)
            if d not in corpora and d not in unchunked
        ]
        print(
            f"chunktuner: cannot do the whole benchmark: FixedTokenStrategy raises on "
            f"{', '.join(unchunked) or 'none'} (it decodes tokens one by one, and a token ending "
            f"inside a multi-byte character does not decode to its own characters), and "
            f"Evaluator.evaluate checks every ranked chunk of a question's document against the "
            f"document's every token for every question (questions x chunks x tokens), left out "
            f"for {', '.join(sorted(set(slow))) or 'none'}: it runs on {', '.join(corpora)}"
        )


if __name__ == "__main__":
    main()
