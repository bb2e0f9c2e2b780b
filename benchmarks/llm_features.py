"""What each LLM feature does with a real model: llama.cpp's server on this machine
(``chunkmark.llm.local``; install it first with ``python -m chunkmark.llm.local install --model
NAME``), seeded, temperature 0.

    .venv/bin/python benchmarks/llm_features.py --model qwen2.5-coder-1.5b --threads 1 \\
        [--features speed,generate,contextual,propositions,llm_semantic,relations] \\
        [--out results/llm_features]

Per feature, with wall time and the client's requests, retries and tokens:

- ``speed``: one request of about 600 prompt tokens and 64 written, the server's own timings
  (prompt and generation tokens per second): run it with ``--threads 1`` and ``--threads 2``.
- ``generate``: ``synth generate`` on the demo corpus (6 questions, seed 0): answers asked,
  accepted, rejected by reason, the share of accepted excerpts placed exactly (the rest were
  placed after whitespace and quote normalisation).
- ``contextual``: the demo dataset with ``recursive(size=400, overlap=0)`` plain and with an
  LLM context (``contextual(method='llm')``), MiniLM, k 1 and 5: calls, tokens, recall.
- ``propositions``: the first demo document, ``recursive(size=200)`` chunks rewritten:
  calls, corrections, fallbacks, propositions, the share aligned.
- ``llm_semantic``: the first demo document: windows, corrections, fallbacks, chunks.
- ``relations``: three Re-DocRED documents (``relations prepare --docs 3 --seed 0``), one
  chunk per document, the LLM extractor (answers up to 1,024 tokens): records parsed, malformed, incomplete answers,
  unmatched names, extraction recall against gold.

Results go to ``OUT/<model>-t<threads>/<feature>.json`` and are printed as they finish; the
answer cache is ``OUT/<model>-t<threads>/cache`` (a rerun asks nothing again).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "src/chunkmark/datasets/demo_data"
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
FEATURES = ("speed", "generate", "contextual", "propositions", "llm_semantic", "relations")
TIMEOUT = 900.0  # seconds for one request: a long answer on two shared cores


def stats_of(llm: Any) -> dict[str, int]:
    s = llm.stats()
    return {
        "requests": s.requests,
        "retries": s.retries,
        "cache_hits": s.cache_hits,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
    }


def speed(server: Any, out: Path, spec: str) -> dict[str, Any]:
    text = (DEMO / "documents" / "compost-handbook.md").read_text(encoding="utf-8")[:2600]
    body = {
        "prompt": f"Summarise this text in one sentence.\n\n{text}\n\nSummary:",
        "n_predict": 64,
        "temperature": 0,
        "seed": 0,
        "cache_prompt": False,
    }
    request = urllib.request.Request(
        server.url + "/completion",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=TIMEOUT) as r:
        answer = json.loads(r.read())
    t = answer["timings"]
    return {
        "prompt_tokens": t["prompt_n"],
        "prompt_tokens_per_s": round(t["prompt_per_second"], 2),
        "written_tokens": t["predicted_n"],
        "written_tokens_per_s": round(t["predicted_per_second"], 2),
        "seconds": round(time.monotonic() - started, 1),
    }


def generate(server: Any, out: Path, spec: str) -> dict[str, Any]:
    from chunkmark.llm import build_llm
    from chunkmark.synth.generate import generate as run

    llm = build_llm(spec, cache_dir=out / "cache", seed=0)
    folder = out / "generated"
    report = run(DEMO / "documents", llm, folder, questions=6, seed=0)
    counts = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["counts"]
    matches: list[str] = []
    questions = []
    for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        matches += q["metadata"]["matches"]
        questions.append(q["question"])
    rejected = {
        k: v
        for k, v in counts.items()
        if v and k not in ("requested", "planned", "answers", "accepted", "normalised", "ambiguous")
    }
    return {
        "answers": counts["answers"],
        "accepted": report.accepted,
        "planned": counts["planned"],
        "rejected": rejected,
        "excerpts": len(matches),
        "exact_share": round(matches.count("exact") / len(matches), 3) if matches else None,
        "questions": questions,
        "llm": stats_of(llm),
    }


def _summary_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "summary.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def contextual(server: Any, out: Path, spec: str) -> dict[str, Any]:
    import chunkmark

    inner = "recursive(size=400, overlap=0)"
    ctx = f"contextual(chunker={inner!r}, method='llm', llm={spec!r})"
    folder = out / "contextual_run"
    chunkmark.evaluate(
        datasets=[str(DEMO)],
        chunkers=[inner, ctx],
        embedders=["sentence_transformers(model='all-MiniLM-L6-v2')"],
        k=[1, 5],
        out=str(folder),
        cache_dir=str(out / "cache"),
        report=False,
    )
    rows = _summary_rows(folder)
    keep = ("chunker", "k", "recall_mean", "precision_mean", "iou_mean", "n_questions")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return {
        "rows": [{k: r[k] for k in keep if k in r} for r in rows],
        "cells": [
            {k: c.get(k) for k in ("chunker", "chunker_stats", "seconds") if k in c}
            for c in manifest.get("cells", [])
        ],
    }


def _first_document() -> str:
    return (DEMO / "documents" / "compost-handbook.md").read_text(encoding="utf-8")


def _chunker(spec: str, out: Path) -> Any:
    from chunkmark.chunkers import CHUNKERS, ChunkerContext

    built, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=out / "cache", seed=0))
    return built


def propositions(server: Any, out: Path, spec: str) -> dict[str, Any]:
    from chunkmark.chunkers import chunk_document

    built = _chunker(f"propositions(llm={spec!r}, chunker='recursive(size=200, overlap=0)')", out)
    chunks = chunk_document(built, "compost", _first_document())
    counters = built.stats().counters
    n = counters["propositions"]
    return {
        "counters": counters,
        "aligned_share": round(counters["aligned"] / n, 3) if n else None,
        "chunks": len(chunks),
        "examples": [c.embed_text for c in chunks[:5]],
    }


def llm_semantic(server: Any, out: Path, spec: str) -> dict[str, Any]:
    from chunkmark.chunkers import chunk_document

    built = _chunker(f"llm_semantic(llm={spec!r})", out)
    chunks = chunk_document(built, "compost", _first_document())
    return {"counters": built.stats().counters, "chunks": len(chunks)}


def relations(server: Any, out: Path, spec: str) -> dict[str, Any]:
    data, run_out = out / "redocred3", out / "relations_run"
    source = SHARED / "datasets" / "redocred" / "test_revised.json"
    if not (data / "manifest.json").exists():
        prepare = ["relations", "prepare", "--redocred", str(source), "--out", str(data)]
        _chunkmark(*prepare, "--docs", "3", "--seed", "0")
    extractor = f"llm(llm={spec!r}, max_tokens=1024)"
    args = ["relations", "run", "--dataset", str(data), "-c", "fixed_tokens(size=1200)"]
    args += ["-e", "fake()", "--k", "1", "--extractor", extractor, "--out", str(run_out)]
    _chunkmark(*args, "--cache-dir", str(out / "cache"), "--no-report")
    section = json.loads((run_out / "manifest.json").read_text(encoding="utf-8"))["relations"]
    with (run_out / "relations.csv").open(encoding="utf-8") as fh:
        row = next(csv.DictReader(fh))
    return {
        "counts": section["counts"],
        "totals": section["totals"],
        "extractor_counters": section["extractor_counters"],
        "recall_mean": row.get("recall_mean"),
        "precision_mean": row.get("precision_mean"),
        "unmatched_name_rate": row.get("unmatched_name_rate"),
    }


def _chunkmark(*args: str) -> None:
    """Run chunkmark's command line; its output, and why it failed when it did."""
    done = subprocess.run(
        [sys.executable, "-m", "chunkmark", *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


RUNS: dict[str, Callable[[Any, Path, str], dict[str, Any]]] = {
    "speed": speed,
    "generate": generate,
    "contextual": contextual,
    "propositions": propositions,
    "llm_semantic": llm_semantic,
    "relations": relations,
}


def main() -> None:
    from chunkmark.llm import local

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", choices=sorted(local.MODELS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--features", default=",".join(FEATURES))
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "llm_features")
    parser.add_argument("--tag", default="", help="a suffix for the output folder")
    args = parser.parse_args()
    features = [f for f in args.features.split(",") if f]
    unknown = sorted(set(features) - set(RUNS))
    if unknown:
        parser.error(f"unknown feature {unknown[0]!r}; use some of {', '.join(FEATURES)}")
    out = args.out / f"{args.model}-t{args.threads}{args.tag}"
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with local.start(args.model, threads=args.threads, log_path=out / "server.log") as server:
        print(f"server ready in {time.monotonic() - started:.1f} s", flush=True)
        spec = server.spec(timeout=TIMEOUT, max_retries=1)
        for feature in features:
            t0 = time.monotonic()
            try:
                result = RUNS[feature](server, out, spec)
            except Exception as exc:  # a benchmark records what broke and goes on
                result = {"error": f"{type(exc).__name__}: {exc}"}
            result = {"feature": feature, "model": args.model, "threads": args.threads, **result}
            result["seconds"] = round(time.monotonic() - t0, 1)
            (out / f"{feature}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
