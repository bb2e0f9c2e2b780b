"""How good are ``chunkmark label``'s suggestions, and how fast?

**Pool quality.** For each of the suite's five human-evidence sets, the seeded sample the
committed suite ran (``chunkmark datasets download SET --docs N --seed 0``: CUAD 8 documents,
QMSum 8, Evidence Inference 12, FairytaleQA 20, COVID-QA 10; converted from ``--from``), every
question is put to the labeler's pool within its own document (the suite's sets are asked of
one document each, as ``chunkmark suite run`` searches them). A question counts as *found* at
n when the first n suggestions cover at least half of its human evidence (characters of the
union of its excerpts). Beside the pool (``pool@5``, ``pool@10``): the best single pooled list
(one chunking and one ranker, its first n chunks) and the best pair of lists (the first 5 chunks
of each, 10 passages shown), both picked after the fact on the set itself (the most favourable
choice for them). The mean characters shown per question say what each reads.

**Choosing the defaults out of sample** (``--tune``). Other samples of the same sets
(``--seed 1``), less the documents of the reported ones (``--exclude-seed 0``), score every
combination of the ``TUNE_*`` settings (chunkings, rankers and their weights, passage length,
rank offset, depth) by pool@10 and the characters shown; :func:`choose` picks one by a rule
fixed before the run. The pool's defaults are that choice, measured once on the seed-0 samples.
Later grids (``--tune passages``, ``weights``, ``opening``; run with ``--seed 1 2``, the two
samples joined) start from the first grid's choice and vary the passage length, the gap across
which chunks join, the depth, the weight of the longest chunking's lists and the document's
opening as a suggestion, under the same rule with ``MORE_TEXT_PASSAGES``.

**Latency.** A corpus of about ``--latency-chars`` characters (whole documents of the five
samples, in set order) is pooled across the corpus with the default chunkings and embedder;
after three warm-up questions, 20 questions of the sets are timed one by one, through the
labeler's HTTP endpoint (Starlette's test client: routing, the token check, JSON both ways)
and through :meth:`Pool.suggest` alone. The median and the slowest are printed.

**Pooling bias** (``--bias OUT``). A scripted labeler relabels each set through the pool: for
each human excerpt of a question it accepts the first of the 10 suggestions (within the
question's document) that overlaps it, whole, as a labeler who does not trim would; when none
does, it searches and marks the human excerpt itself. The suite's grid (``--grid``: its
chunkers and settings, ``fast``: model2vec, or ``default``: MiniLM, MiniLM with late chunking
and model2vec) is run on the original and on the relabeled set, and Kendall's tau-b between
the two orderings of the cells by mean recall is printed with its 95% bootstrap interval
(:func:`chunkmark.metrics.agreement.ranking_agreement`), beside the human set's own ceiling:
tau between two seeded random halves of its questions, with its interval.

    nice .venv/bin/python benchmarks/label_pool.py --from ../shared/datasets/suite \\
        [--embedder "model2vec()"] [--sets cuad qmsum ...] [--out results/label_pool.json] \\
        [--bias /tmp/label-bias --grid fast] [--seed 1 2 --exclude-seed 0 --tune opening] \\
        [--max-chars 3000 --opening 0]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from chunkmark.datasets import Dataset, load_dataset
from chunkmark.datasets.suite import Sample
from chunkmark.label.pool import (
    DEFAULT_CHUNKERS,
    DEFAULT_WEIGHTS,
    RANKERS,
    RRF_K,
    Hit,
    Pool,
    coverage,
    fuse,
    place_opening,
)
from chunkmark.label.session import build_embedder

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = {  # the committed default suite's samples (leaderboard/default-suite/suite.json)
    "fairytaleqa": 20,
    "covid_qa": 10,
    "qmsum": 8,
    "cuad": 8,
    "evidence_inference": 12,
}
HALF = 0.5


def prepared(
    name: str,
    docs: int,
    from_dir: Path | None,
    seed: int | list[int] = 0,
    exclude_seed: int | list[int] | None = None,
) -> Dataset:
    """The ``seed`` sample of ``name``, converted once into chunkmark's cache (several seeds:
    their samples joined, each document once); with ``exclude_seed``, less the documents (and
    their questions) of that seed's sample (several seeds: of each)."""
    from chunkmark.suite.sets import download_one, prepared_folder

    def load(seed: int) -> Dataset:
        sample = Sample(docs, seed)
        folder = prepared_folder(name, sample)
        if not (folder / "questions.jsonl").is_file():
            print(download_one(name, force=False, from_dir=from_dir, sample=sample, progress=print))
        return load_dataset(folder)

    seeds = [seed] if isinstance(seed, int) else list(seed)
    dataset = joined([load(s) for s in seeds])
    excluded = (
        []
        if exclude_seed is None
        else [exclude_seed]
        if isinstance(exclude_seed, int)
        else exclude_seed
    )
    for other in excluded:
        dataset = disjoint(dataset, load(other))
    return dataset


def joined(samples: list[Dataset]) -> Dataset:
    """The samples of one set as one: each document and each question once, in sample order."""
    first = samples[0]
    if len(samples) == 1:
        return first
    documents = {d.id: d for s in samples for d in s.documents}
    questions = {q.id: q for s in samples for q in s.questions}
    return Dataset(first.name, tuple(documents.values()), tuple(questions.values()))


def disjoint(dataset: Dataset, other: Dataset) -> Dataset:
    """``dataset`` without the documents of ``other`` and the questions asked of them."""
    seen = {d.id for d in other.documents}
    if {d.id for d in dataset.documents} <= seen:
        raise SystemExit(f"{dataset.name}: every document is also in the excluded sample.")
    return Dataset(
        dataset.name,
        tuple(d for d in dataset.documents if d.id not in seen),
        tuple(q for q in dataset.questions if q.doc_id not in seen),
    )


def quality(pool: Pool, dataset: Dataset) -> dict[str, Any]:
    """Share of questions half-covered at 5 and 10 by the pool, the best list and best pair."""
    names = pool.lists
    found: dict[str, list[float]] = {}  # key -> per-question coverage
    shown: dict[str, list[int]] = {}

    def record(key: str, cover: float, chars: int) -> None:
        found.setdefault(key, []).append(cover)
        shown.setdefault(key, []).append(chars)

    for q in dataset.questions:
        evidence = [(s.start, s.end) for s in q.excerpts]
        rankings = pool.rankings(q.text, q.doc_id)
        passages = pool.fuse(rankings, q.doc_id)
        for n in (5, 10):
            top = [(p.start, p.end) for p in passages[:n]]
            record(f"pool@{n}", coverage(evidence, top), _chars(top))
            for name in names:
                spans = _spans(rankings[name][:n])
                record(f"{name}@{n}", coverage(evidence, spans), _chars(spans))
        for a, b in itertools.combinations(names, 2):
            spans = _spans(rankings[a][:5] + rankings[b][:5])
            record(f"{a} + {b}", coverage(evidence, spans), _chars(spans))
    share = {k: sum(c >= HALF for c in v) / len(v) for k, v in found.items()}
    mean_chars = {k: statistics.fmean(v) for k, v in shown.items()}

    def best(keys: list[str]) -> dict[str, Any]:
        key = max(keys, key=lambda k: (share[k], -mean_chars[k]))
        return {"which": key, "share": share[key], "chars": mean_chars[key]}

    return {
        "questions": len(dataset.questions),
        "pool@5": {"share": share["pool@5"], "chars": mean_chars["pool@5"]},
        "pool@10": {"share": share["pool@10"], "chars": mean_chars["pool@10"]},
        "best list@5": best([f"{n}@5" for n in names]),
        "best list@10": best([f"{n}@10" for n in names]),
        "best pair (5 each)": best([f"{a} + {b}" for a, b in itertools.combinations(names, 2)]),
        "evidence chars": statistics.fmean(
            sum(s.end - s.start for s in q.excerpts) for q in dataset.questions
        ),
    }


def _spans(hits: list[Hit]) -> list[tuple[int, int]]:
    return [(h.start, h.end) for h in hits]


def _chars(spans: list[tuple[int, int]]) -> int:
    marks: set[int] = set()
    for s, e in spans:
        marks.update(range(s, e))
    return len(marks)


def latency(
    datasets: list[Dataset], chars: int, embedder_spec: str, **settings: Any
) -> dict[str, Any]:
    """Median and slowest of 20 warm suggestions on a corpus of about ``chars`` characters."""
    import tempfile

    from starlette.testclient import TestClient

    from chunkmark.label.server import LabelSession, create_app
    from chunkmark.label.store import QuestionStore

    documents = []
    total = 0
    for dataset in datasets:
        for doc in dataset.documents:
            if total >= chars:
                break
            documents.append(doc)
            total += len(doc.text)
    questions = [q.text for d in datasets for q in d.questions[:5]][:23]
    started = time.perf_counter()
    pool = Pool(documents, build_embedder(embedder_spec), **settings)
    built = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        session = LabelSession(Path(folder), pool, QuestionStore(Path(folder), documents))
        client = TestClient(create_app(session))
        headers = {"X-Chunkmark-Token": session.token}
        http: list[float] = []
        direct: list[float] = []
        for i, question in enumerate(questions):
            t0 = time.perf_counter()
            response = client.post("/api/suggest", json={"question": question}, headers=headers)
            t1 = time.perf_counter()
            assert response.status_code == 200, response.text
            pool.suggest(question)
            t2 = time.perf_counter()
            if i >= 3:  # three warm-up questions
                http.append((t1 - t0) * 1000)
                direct.append((t2 - t1) * 1000)
    return {
        "documents": len(documents),
        "characters": total,
        "chunks": {c.spec: len(c.doc_ids) for c in pool._chunkings},
        "lists": len(pool.lists),
        "build seconds": built,
        "questions timed": len(http),
        "http median ms": statistics.median(http),
        "http max ms": max(http),
        "pool median ms": statistics.median(direct),
        "pool max ms": max(direct),
    }


def relabeled(pool: Pool, dataset: Dataset) -> tuple[Dataset, dict[str, int]]:
    """The set as the scripted labeler marks it (see the module docstring)."""
    from dataclasses import replace

    from chunkmark.spans import Span

    questions = []
    counts = {"accepted": 0, "searched": 0}
    for q in dataset.questions:
        passages = pool.suggest(q.text, q.doc_id, n=10)
        spans: list[tuple[int, int]] = []
        for e in q.excerpts:
            hit = next((p for p in passages if p.start < e.end and e.start < p.end), None)
            counts["accepted" if hit else "searched"] += 1
            spans.append((hit.start, hit.end) if hit else (e.start, e.end))
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        questions.append(replace(q, excerpts=tuple(Span(a, b) for a, b in merged)))
    return Dataset(dataset.name, dataset.documents, tuple(questions)), counts


def bias(pool: Pool, dataset: Dataset, out: Path, grid_name: str, seed: int = 0) -> dict[str, Any]:
    """Tau between the grid's cell orderings on the original and the relabeled set."""
    import numpy as np

    import chunkmark
    from chunkmark.datasets import write_jsonl
    from chunkmark.metrics.agreement import ranking_agreement
    from chunkmark.report.comparisons import StatsOptions, choose_setting, paired_values
    from chunkmark.report.data import load_runs
    from chunkmark.suite.run import GRIDS

    grid = GRIDS[grid_name]
    relabel, counts = relabeled(pool, dataset)
    values: dict[str, dict[tuple[str, str, str], Any]] = {}
    for kind, data in (("original", dataset), ("relabeled", relabel)):
        folder = out / dataset.name / kind
        write_jsonl(data, folder / "set")
        specs = [s.spec("document") for s in grid.settings]
        chunkmark.evaluate(
            dataset=str(folder / "set"),
            chunkers=list(grid.chunkers),
            embedders=list(grid.embedders),
            retrieval=specs,
            out=folder / "run",
            report=False,
        )
        loaded = load_runs([folder / "run"])
        cells: dict[tuple[str, str, str], Any] = {}
        for spec in specs:
            setting = choose_setting(loaded, StatsOptions(metric="recall", retrieval=spec))
            options = [(c.index, *setting) for c in loaded.cells]
            for option, per_question in paired_values(loaded, options, "recall").items():
                cell = loaded.cells[option[0]]
                cells[(cell.chunker, cell.embedder, spec)] = per_question
        values[kind] = cells
    keys = sorted(set(values["original"]) & set(values["relabeled"]))
    original = np.vstack([values["original"][k] for k in keys])
    relabeled_values = np.vstack([values["relabeled"][k] for k in keys])
    agreement = ranking_agreement(original, relabeled_values, seed=seed)
    order = np.random.default_rng(seed).permutation(original.shape[1])
    half = len(order) // 2
    ceiling = ranking_agreement(original[:, order[:half]], original[:, order[half:]], seed=seed)
    return {
        "cells": len(keys),
        "excerpts": counts,
        "tau": agreement.tau,
        "low": agreement.ci_low,
        "high": agreement.ci_high,
        "ceiling tau": ceiling.tau,
        "ceiling low": ceiling.ci_low,
        "ceiling high": ceiling.ci_high,
    }


# Pool variants measured beside the default (``--variants``): what helps long evidence.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "defaults of issue 37": {
        "chunkers": DEFAULT_CHUNKERS[:4],
        "depth": 20,
        "rrf_k": 10,
        "weights": {},
        "max_chars": 3000,
        "opening": 0,
    },
    "defaults before (3,000 characters, no opening)": {"max_chars": 3000, "opening": 0},
    "no opening": {"opening": 0},
    "passages up to 3,000 characters": {"max_chars": 3000},
    "BM25 and hybrid (no dense list)": {"rankers": ("bm25", "hybrid")},
}


def variants(datasets: list[Dataset], names: list[str], embedder: Any) -> list[str]:
    """One table row per set and variant: pool@5, pool@10 and the characters shown at 10."""
    rows = []
    for name, dataset in zip(names, datasets, strict=True):
        for label, options in VARIANTS.items():
            found = quality(Pool(dataset.documents, embedder, **options), dataset)
            rows.append(
                f"| {name} | {label} | {found['pool@5']['share']:.0%} | "
                f"{found['pool@10']['share']:.0%} | {found['pool@10']['chars']:,.0f} |"
            )
            print(rows[-1], flush=True)
    return rows


# Out-of-sample choice of the pool's settings (``--tune``, run on other samples than the table's,
# e.g. ``--seed 1 --exclude-seed 0``): every combination below is fused from one set of rankings
# per question, and the choice follows a rule fixed before the run (:func:`choose`).
TARGETS = {  # pool@10 asked of the pool, per set
    "fairytaleqa": 0.95,
    "covid_qa": 0.95,
    "cuad": 0.95,
    "evidence_inference": 0.85,
    "qmsum": 0.85,
}
TUNE_CHUNKINGS: dict[str, tuple[str, ...]] = {
    "4 (defaults of issue 37)": (  # first: the base of the rule in :func:`choose`
        "sentences(n=3)",
        "recursive(size=256)",
        "recursive(size=512)",
        "paragraphs()",
    ),
    "4 + recursive(1024)": (
        "sentences(n=3)",
        "recursive(size=256)",
        "recursive(size=512)",
        "paragraphs()",
        "recursive(size=1024)",
    ),
    "256 -> 1024": (
        "sentences(n=3)",
        "recursive(size=512)",
        "paragraphs()",
        "recursive(size=1024)",
    ),
}
TUNE_RANKERS: dict[str, tuple[tuple[str, ...], dict[str, float]]] = {
    "all": (("bm25", "dense", "hybrid"), {}),
    "dense x0.5": (("bm25", "dense", "hybrid"), {"dense": 0.5}),
    "no dense": (("bm25", "hybrid"), {}),
}
TUNE_MAX_CHARS = (3000, 4000)
TUNE_RRF_K = (10, 60)
TUNE_DEPTH = (20, 10)  # 20 first: the first configuration is the defaults of issue 37
TUNE_QUESTIONS = 300  # at most, per set (a seeded subset): bounds the run on a busy machine
MORE_TEXT = 1.3  # a choice may show at most 30% more characters than the defaults of issue 37


# A second grid (``--tune passages``), run after the first grid's choice became the defaults:
# longer passages, chunks joined across small gaps, and a deeper read, around those defaults
# (the first configuration is the defaults; the base of the rule, with ``MORE_TEXT_PASSAGES``).
PASSAGES_MAX_CHARS = (3000, 4000, 5000)
PASSAGES_JOIN: tuple[int | None, ...] = (None, 0, 500)
PASSAGES_DEPTH = (10, 20)
MORE_TEXT_PASSAGES = 1.25  # at most 25% more characters than today's defaults show


# A third grid (``--tune weights``), after the second: the lists of the longest chunking weigh
# more (the best single list at 10 was a ``recursive(size=1024)`` one on four of five sets),
# crossed with the second grid's passage lengths and joins at depth 10; same base and rule.
WEIGHTS_LONGEST = "recursive(size=1024)"
WEIGHTS_LONGEST_W = (1.0, 2.0, 3.0)
WEIGHTS_MAX_CHARS = (3000, 4000, 5000)
WEIGHTS_JOIN: tuple[int | None, ...] = (None, 500)


# A fourth grid (``--tune opening``), after the third: the document's opening suggested at a
# fixed place (characters, place from 1; (0, 0): none), crossed with the second grid's passage
# lengths and joins at depth 10; same base and rule. On the tuning samples, 15 of the 34
# CUAD questions the second grid's choice missed had half their evidence in a contract's first
# 5,000 characters (its name, parties and dates).
OPENING_GRID: tuple[tuple[int, int], ...] = ((0, 0), (1000, 10), (2000, 10), (1000, 5), (2000, 5))


def tune_configs(grid: str = "first") -> list[dict[str, Any]]:
    """Every combination of a grid above, as ``label`` plus the pool's settings."""
    out = []
    if grid == "opening":
        for chars, join, (opening, at) in itertools.product(
            WEIGHTS_MAX_CHARS, WEIGHTS_JOIN, OPENING_GRID
        ):
            joins = "overlap only" if join is None else f"join {join}"
            opens = f"opening {opening} at {at}" if opening else "no opening"
            out.append(
                {
                    "label": f"{chars} chars; {joins}; {opens}",
                    "chunkers": DEFAULT_CHUNKERS,
                    "rankers": RANKERS,
                    "weights": DEFAULT_WEIGHTS,
                    "max_chars": chars,
                    "rrf_k": RRF_K,
                    "depth": 10,
                    "join": join,
                    "opening": opening,
                    "opening_at": at,
                }
            )
        return out
    if grid == "weights":
        for chars, join, w in itertools.product(WEIGHTS_MAX_CHARS, WEIGHTS_JOIN, WEIGHTS_LONGEST_W):
            joins = "overlap only" if join is None else f"join {join}"
            weights = dict(DEFAULT_WEIGHTS)
            if w != 1.0:
                weights[WEIGHTS_LONGEST] = w
            out.append(
                {
                    "label": f"{chars} chars; {joins}; {WEIGHTS_LONGEST} x{w:g}",
                    "chunkers": DEFAULT_CHUNKERS,
                    "rankers": RANKERS,
                    "weights": weights,
                    "max_chars": chars,
                    "rrf_k": RRF_K,
                    "depth": 10,
                    "join": join,
                }
            )
        return out
    if grid == "passages":
        for chars, join, depth in itertools.product(
            PASSAGES_MAX_CHARS, PASSAGES_JOIN, PASSAGES_DEPTH
        ):
            joins = "overlap only" if join is None else f"join {join}"
            out.append(
                {
                    "label": f"{chars} chars; {joins}; depth {depth}",
                    "chunkers": DEFAULT_CHUNKERS,
                    "rankers": RANKERS,
                    "weights": DEFAULT_WEIGHTS,
                    "max_chars": chars,
                    "rrf_k": RRF_K,
                    "depth": depth,
                    "join": join,
                }
            )
        return out
    for (cl, chunkers), (rl, (rankers, weights)), chars, k, depth in itertools.product(
        TUNE_CHUNKINGS.items(), TUNE_RANKERS.items(), TUNE_MAX_CHARS, TUNE_RRF_K, TUNE_DEPTH
    ):
        label = f"{cl}; {rl}; {chars} chars; k={k}; depth {depth}"
        out.append(
            {
                "label": label,
                "chunkers": chunkers,
                "rankers": rankers,
                "weights": weights,
                "max_chars": chars,
                "rrf_k": k,
                "depth": depth,
                "join": None,
            }
        )
    return out


def tune(
    datasets: list[Dataset], names: list[str], embedder: Any, grid: str = "first"
) -> dict[str, Any]:
    """pool@10 and characters shown at 10 of every configuration of ``grid`` on every set."""
    import random

    configs = tune_configs(grid)
    every = sorted({c for config in configs for c in config["chunkers"]})
    depth = max(config["depth"] for config in configs)
    table: dict[str, dict[str, dict[str, float]]] = {c["label"]: {} for c in configs}
    for name, dataset in zip(names, datasets, strict=True):
        questions = list(dataset.questions)
        if len(questions) > TUNE_QUESTIONS:
            questions = random.Random(0).sample(questions, TUNE_QUESTIONS)
        pool = Pool(dataset.documents, embedder, every, depth=depth)
        found: dict[str, list[float]] = {c["label"]: [] for c in configs}
        shown: dict[str, list[int]] = {c["label"]: [] for c in configs}
        for q in questions:
            evidence = [(s.start, s.end) for s in q.excerpts]
            rankings = pool.rankings(q.text, q.doc_id)
            for config in configs:
                chosen = {
                    list_name: hits[: config["depth"]]
                    for list_name, hits in rankings.items()
                    if list_name.rpartition("/")[0] in config["chunkers"]
                    and list_name.rpartition("/")[2] in config["rankers"]
                }
                passages = fuse(
                    chosen, config["max_chars"], config["rrf_k"], config["weights"], config["join"]
                )
                if config.get("opening") and passages:
                    length = min(config["opening"], len(pool.documents[q.doc_id]))
                    passages = place_opening(passages, q.doc_id, length, config["opening_at"])
                top = [(p.start, p.end) for p in passages[:10]]
                found[config["label"]].append(coverage(evidence, top))
                shown[config["label"]].append(_chars(top))
        for config in configs:
            label = config["label"]
            table[label][name] = {
                "share": sum(c >= HALF for c in found[label]) / len(found[label]),
                "chars": statistics.fmean(shown[label]),
                "questions": len(questions),
            }
        print(f"tuned on {name}: {len(questions)} questions", flush=True)
    more = MORE_TEXT if grid == "first" else MORE_TEXT_PASSAGES
    choice = choose(table, names, configs[0]["label"], more)
    return {"configs": configs, "table": table, "choice": choice}


def choose(
    table: dict[str, dict[str, dict[str, float]]],
    names: list[str],
    base: str,
    more_text: float = MORE_TEXT,
) -> str:
    """The rule, fixed before the run: among configurations that show at most ``more_text``
    times the characters of ``base`` (mean over the sets ``names``), the one whose smallest
    margin over its set's target (pool@10 minus ``TARGETS``) is largest; ties by fewer
    characters shown, then by label."""

    def mean_chars(label: str) -> float:
        return statistics.fmean(table[label][n]["chars"] for n in names)

    def margin(label: str) -> float:
        return min(table[label][n]["share"] - TARGETS[n] for n in names)

    limit = mean_chars(base) * more_text
    eligible = sorted(label for label in table if mean_chars(label) <= limit)
    return max(eligible, key=lambda label: (round(margin(label), 9), -mean_chars(label)))


def main() -> None:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="from_dir", type=Path, default=shared / "datasets/suite")
    parser.add_argument("--sets", nargs="+", default=list(SAMPLES), choices=list(SAMPLES))
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--latency-chars", type=int, default=1_000_000)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--bias", type=Path, default=None, help="Folder for the bias runs.")
    parser.add_argument("--grid", default="fast", choices=["fast", "default"])
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--variants", action="store_true", help="Also measure VARIANTS.")
    parser.add_argument(
        "--seed", type=int, nargs="+", default=[0], help="The samples' seed (several: joined)."
    )
    parser.add_argument(
        "--exclude-seed",
        type=int,
        nargs="+",
        default=None,
        help="Leave out the documents of these seeds' samples (disjoint tuning samples).",
    )
    parser.add_argument(
        "--tune",
        nargs="?",
        const="first",
        default=None,
        choices=["first", "passages", "weights", "opening"],
        help="Measure a grid (first: TUNE_*; passages: PASSAGES_*; weights: WEIGHTS_*; "
        "opening: OPENING_GRID) and print the choice.",
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        default=None,
        help="The pool's passage length for the tables, bias and latency (default: the pool's).",
    )
    parser.add_argument(
        "--opening",
        type=int,
        default=None,
        help="Characters of the document's opening suggested (0: none; default: the pool's).",
    )
    args = parser.parse_args()
    settings = {
        key: value
        for key, value in (("max_chars", args.max_chars), ("opening", args.opening))
        if value is not None
    }
    embedder = build_embedder(args.embedder)
    print(
        f"embedder: {embedder.name if embedder else 'none'}; chunkings: {', '.join(DEFAULT_CHUNKERS)}"
    )
    results: dict[str, Any] = {"embedder": args.embedder, "chunkers": list(DEFAULT_CHUNKERS)}
    datasets = [
        prepared(name, SAMPLES[name], args.from_dir, args.seed, args.exclude_seed)
        for name in args.sets
    ]
    print(
        "samples: "
        + ", ".join(
            f"{d.name} ({len(d.documents)} documents, {len(d.questions)} questions)"
            for d in datasets
        ),
        flush=True,
    )
    if args.tune:
        tuned = tune(datasets, args.sets, embedder, args.tune)
        print("| pool | " + " | ".join(f"{n} pool@10 / chars" for n in args.sets) + " |")
        print("|---|" + "---|" * len(args.sets))
        for config in tuned["configs"]:
            row = tuned["table"][config["label"]]
            print(
                f"| {config['label']} | "
                + " | ".join(f"{row[n]['share']:.0%} / {row[n]['chars']:,.0f}" for n in args.sets)
                + " |"
            )
        print(f"chosen: {tuned['choice']}")
        results["tune"] = {"table": tuned["table"], "choice": tuned["choice"]}
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        return
    rows = []
    biased = []
    for name, dataset in zip(args.sets, datasets, strict=True):
        pool = Pool(dataset.documents, embedder, **settings)
        if args.bias is not None:
            b = results.setdefault("bias", {})[name] = bias(pool, dataset, args.bias, args.grid)
            biased.append(
                f"| {name} | {b['cells']} | {b['excerpts']['accepted']} / "
                f"{b['excerpts']['searched']} | {b['tau']:+.2f} [{b['low']:+.2f}, {b['high']:+.2f}] | "
                f"{b['ceiling tau']:+.2f} [{b['ceiling low']:+.2f}, {b['ceiling high']:+.2f}] |"
            )
            print(json.dumps({name: b}), flush=True)
        if args.skip_quality:
            continue
        found = quality(pool, dataset)
        results[name] = found
        rows.append(
            f"| {name} | {found['questions']} | {found['pool@5']['share']:.0%} | "
            f"{found['pool@10']['share']:.0%} | {found['best list@5']['share']:.0%} | "
            f"{found['best list@10']['share']:.0%} | {found['best pair (5 each)']['share']:.0%} | "
            f"{found['pool@10']['chars']:,.0f} | {found['best pair (5 each)']['chars']:,.0f} | "
            f"{found['evidence chars']:,.0f} |"
        )
        print(json.dumps({name: found}, indent=1), flush=True)
    if biased:
        print(f"pooling bias, {args.grid} grid, recall:")
        print(
            "| set | cells | excerpts accepted / searched | tau relabeled vs human | ceiling (halves) |"
        )
        print("|---|---|---|---|---|")
        print("\n".join(biased))
    print(
        "| set | questions | pool@5 | pool@10 | best list@5 | best list@10 | best pair (5+5) | "
        "chars shown pool@10 | chars shown best pair | evidence chars |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.variants:
        rows = variants(datasets, args.sets, embedder)
        print("| set | pool | pool@5 | pool@10 | chars shown pool@10 |")
        print("|---|---|---|---|---|")
        print("\n".join(rows))
    if not args.skip_latency:
        results["latency"] = timed = latency(
            datasets, args.latency_chars, args.embedder, **settings
        )
        print(json.dumps({"latency": timed}, indent=1))
        print(
            f"latency on {timed['characters']:,} characters ({timed['documents']} documents, "
            f"{timed['lists']} lists): median {timed['http median ms']:.0f} ms through HTTP "
            f"(slowest {timed['http max ms']:.0f} ms), {timed['pool median ms']:.0f} ms in the "
            f"pool, over {timed['questions timed']} questions"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
