"""Do synthetic questions rank chunkings the way human questions do?

For each of the suite's sets named (default: all five human-evidence sets):

1. a seeded sample of documents with their human questions (``chunkmark datasets download SET
   --docs N --seed S``, converted from ``--from`` or downloaded at the pinned commit);
2. a synthetic question set over exactly those documents: ``chunkmark synth generate`` on the
   sample's folder (its human questions are ignored), as many questions as the sample has
   human ones unless ``--questions`` says otherwise. Before anything is asked, the dry run of
   every set is printed with the total number of LLM requests;
3. the same grid on both sets (``chunkmark.evaluate``): the suite's chunkers (its ``fast``
   grid) x ``--embedder`` (model2vec by default), each at a dense token budget and a BM25 token
   budget of ``--budget`` tokens; the suite's sets are asked of one document each, so both
   sets search only the question's document (the ``in_document`` ranker), as ``chunkmark suite
   run`` does;
4. per metric (recall and IoU at the budget): Kendall's tau-b between the two orderings of the
   cells (every chunker x setting), with a 95% percentile bootstrap interval that resamples the
   human and the synthetic questions independently
   (:func:`chunkmark.metrics.agreement.ranking_agreement`); and, per retrieval setting, the
   cell the report recommends on each set (:func:`chunkmark.report.recommendation.recommend`: a single
   winner when its P(best) reaches 0.9 and no cell ties with it, else the cheapest cell of the
   group tied with the best) and whether the two agree;
5. ``chunkmark synth inspect SYNTHETIC --compare HUMAN --no-embed --json``: excerpt lengths,
   positions, lexical overlap and the BM25-solvable share of both sets side by side.

Everything is resumable: the converted samples, the LLM's answers (``llm.sqlite3``), the
generated sets (a rerun continues them), the embeddings and finished cells live in chunkmark's
caches and under ``--out``; rerunning the same command redoes only what is missing. Writes
``--out/summary.json`` and ``--out/summary.md`` (and per set ``--out/SET/``: ``synthetic/``,
``runs/human``, ``runs/synthetic``, ``inspect.json``).

A small model writes worse questions than a large one: the model is part of the result, and
the summary names it.

    # a local OpenAI-compatible server (python -m chunkmark.llm.local serve --model NAME --port P)
    .venv/bin/python benchmarks/synth_vs_human.py --base-url http://127.0.0.1:8100/v1 \\
        --model qwen2.5-coder-1.5b --from ../shared/datasets/suite --out results/synth_vs_human
    # any LLM spec (docs/llm.md)
    .venv/bin/python benchmarks/synth_vs_human.py --llm "openai(model='gpt-4o-mini')" \\
        [SET ...] [--docs N] [--questions N] [--style factoid] [--excerpts exact]
        [--window-chars 4000] [--concurrency N] [--plan-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from chunkmark.report.comparisons import Recommendation
    from chunkmark.report.data import ReportData

SETS = ("fairytaleqa", "covid_qa", "qmsum", "evidence_inference", "cuad")
# Documents per set by default, with seed 0: 47 to 87 human questions each (fairytaleqa 2 stories:
# 87; covid_qa 8 papers: 75; qmsum 8 meetings: 55; evidence_inference 20 articles: 47; cuad 4
# contracts: 61), 325 in all.
DEFAULT_DOCS = {"fairytaleqa": 2, "covid_qa": 8, "qmsum": 8, "evidence_inference": 20, "cuad": 4}
METRICS = ("recall", "iou")
MODEL2VEC = "model2vec()"
UNSTEERED, STEERED = "unsteered", "steered"
CONDITIONS = (UNSTEERED, STEERED)


@dataclass
class SetRun:
    """One set's folders and what was measured on it."""

    name: str
    human: Path
    synthetic: Path
    questions: int  # synthetic questions asked for
    human_questions: int = 0
    synthetic_questions: int = 0
    requests: int = 0
    worst_requests: int = 0
    generation: dict[str, Any] = field(default_factory=dict)
    agreement: dict[str, Any] = field(default_factory=dict)
    recommendations: list[dict[str, Any]] = field(default_factory=list)
    # the recommendation criterion met by human questions as many as the synthetic ones
    subsets: dict[str, Any] = field(default_factory=dict)
    inspect: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    set_name: str = ""
    condition: str = UNSTEERED
    examples: Path | None = None  # the held-out human questions steering the generation
    window_chars: int = 0
    seconds: float | None = None  # wall seconds of this run's generation
    accepted_now: int = 0  # questions accepted by this run's generation (not resumed)


def chunkmark_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "chunkmark", *args]


def llm_spec(args: argparse.Namespace) -> str:
    if args.llm:
        return str(args.llm)
    return f"openai(model={args.model!r}, base_url={args.base_url!r}, timeout=600.0)"


def prepare_human(name: str, args: argparse.Namespace) -> Path:
    """The seeded sample of ``name``'s documents with their human questions (converted once)."""
    from chunkmark.datasets.suite import Sample
    from chunkmark.suite.sets import download_one, prepared_folder

    sample = Sample(args.docs or DEFAULT_DOCS.get(name), args.seed)
    line = download_one(name, force=False, from_dir=args.from_dir, sample=sample, progress=print)
    print(f"{name}: {line}")
    return prepared_folder(name, sample)


def generate_args(one: SetRun, args: argparse.Namespace, prices: Path | None) -> list[str]:
    """``chunkmark synth generate`` for one set (without --dry-run)."""
    cmd = [
        "synth",
        "generate",
        str(one.human),
        "--llm",
        llm_spec(args),
        "--out",
        str(one.synthetic),
        "--questions",
        str(one.questions),
        "--seed",
        str(args.seed),
        "--window-chars",
        str(one.window_chars or args.window_chars),
        "--window-questions",
        str(args.window_questions),
        "--excerpts",
        args.excerpts,
        "--concurrency",
        str(args.concurrency),
    ]
    for style in args.style:
        cmd += ["--style", style]
    if args.excerpts == "given":  # --pick examples steers by the examples: unsteered, first
        pick = "first" if args.pick == "examples" and one.examples is None else args.pick
        cmd += ["--pick", pick, "--candidates", str(args.candidates)]
    if one.examples is not None:
        cmd += ["--examples", str(one.examples)]
    if prices is not None:
        cmd += ["--prices", str(prices)]
    if args.cache_dir is not None:
        cmd += ["--cache-dir", str(args.cache_dir)]
    return chunkmark_cli(*cmd)


_PLANNED = re.compile(r": (\d+) requests \(up to (\d+) if")


def dry_run(one: SetRun, args: argparse.Namespace, prices: Path | None) -> None:
    """The generation's own estimate: requests still to make (cached answers are free)."""
    done = subprocess.run(
        [*generate_args(one, args, prices), "--dry-run"],
        capture_output=True,
        text=True,
        check=False,
    )
    text = (done.stdout + done.stderr).strip()
    found = _PLANNED.search(text)
    if found is None:
        raise SystemExit(f"{one.name}: the dry run of synth generate failed:\n{text}")
    one.requests, one.worst_requests = int(found.group(1)), int(found.group(2))
    print(f"{one.name}: {text.splitlines()[0]}")


def generate(one: SetRun, args: argparse.Namespace, prices: Path | None) -> None:
    cmd = generate_args(one, args, prices)
    print(f"{one.name}: synth generate, {one.questions} questions (progress on stderr)", flush=True)
    before = _accepted(one.synthetic)
    started = time.perf_counter()
    done = subprocess.run(cmd, check=False)
    one.seconds = time.perf_counter() - started
    one.accepted_now = _accepted(one.synthetic) - before
    if done.returncode != 0:
        raise SystemExit(
            f"{one.name}: synth generate stopped (exit {done.returncode}); what it accepted is "
            "written: fix the problem above and run the same command again to continue."
        )
    manifest = json.loads((one.synthetic / "manifest.json").read_text(encoding="utf-8"))
    one.generation = {
        "llm": manifest["settings"].get("llm"),
        "status": manifest.get("status"),
        "counts": manifest.get("counts"),
    }


def _accepted(folder: Path) -> int:
    """Questions a generation folder's manifest counts as accepted (0 when there is none)."""
    path = folder / "manifest.json"
    if not path.is_file():
        return 0
    return int(json.loads(path.read_text(encoding="utf-8"))["counts"]["accepted"])


def hold_out(name: str, human: Path, out: Path, count: int, seed: int) -> tuple[Path, Path]:
    """``count`` of the set's human questions, drawn by ``seed``, as the examples that steer the
    generation (JSONL with their evidence), and the set without them (a dataset folder the
    grid and the agreement use for both conditions): the examples are never evaluated."""
    import random

    rows = [
        json.loads(line)
        for line in (human / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    rng = random.Random(f"synth_vs_human-examples:{name}:{seed}")
    held = set(rng.sample(range(len(rows)), min(count, len(rows) - 2)))
    examples = out / "examples.jsonl"
    evaluated = out / "human"
    evaluated.mkdir(parents=True, exist_ok=True)
    examples.write_text(
        "".join(json.dumps(rows[i], ensure_ascii=False) + "\n" for i in sorted(held)),
        encoding="utf-8",
    )
    (evaluated / "questions.jsonl").write_text(
        "".join(
            json.dumps(r, ensure_ascii=False) + "\n" for i, r in enumerate(rows) if i not in held
        ),
        encoding="utf-8",
    )
    (evaluated / "documents.jsonl").write_bytes((human / "documents.jsonl").read_bytes())
    return examples, evaluated


def steered_window(examples: Path, low: int, high: int) -> int:
    """A window three times the examples' median evidence length, within [low, high]
    characters: room for a passage of the examples' size and the text around it."""
    lengths = [
        len(e["text"])
        for line in examples.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for e in json.loads(line).get("excerpts", [])
    ]
    if not lengths:
        return low
    return int(min(high, max(low, 3 * float(np.median(lengths)))))


def settings(scope: str, budget: int) -> list[tuple[str, str]]:
    """(label, spec) of the dense and BM25 token budgets, in ``scope`` as the suite runs it."""
    from chunkmark.suite.run import budget as suite_budget

    chosen = [suite_budget(budget), suite_budget(budget, "bm25")]
    return [(s.label, s.spec(scope)) for s in chosen]


def run_grid(folder: Path, out: Path, args: argparse.Namespace, scope: str) -> None:
    import chunkmark

    chunkmark.evaluate(
        dataset=str(folder),
        chunkers=chunkers(args),
        embedders=[args.embedder],
        retrieval=[spec for _, spec in settings(scope, args.budget)],
        out=out,
        cache_dir=args.cache_dir,
        report=False,
    )


def cell_values(
    run: Path, scope: str, budget: int, metric: str
) -> dict[tuple[str, str], np.ndarray]:
    """Per cell (chunker, setting label): its per-question values of ``metric``."""
    from chunkmark.report.comparisons import StatsOptions, choose_setting, paired_values
    from chunkmark.report.data import load_runs

    data = load_runs([run])
    out: dict[tuple[str, str], np.ndarray] = {}
    for label, spec in settings(scope, budget):
        setting = choose_setting(data, StatsOptions(metric=metric, retrieval=spec))
        options = [(c.index, *setting) for c in data.cells]
        for option, values in paired_values(data, options, metric).items():
            out[(data.cells[option[0]].chunker, label)] = values
    return out


def agreement(one: SetRun, args: argparse.Namespace, scope: str) -> None:
    """Kendall's tau between the two sets' orderings of every cell, per metric, and per
    setting alone."""
    from chunkmark.metrics.agreement import ranking_agreement

    runs = one.synthetic.parent / "runs"
    for metric in METRICS:
        human = cell_values(runs / "human", scope, args.budget, metric)
        synthetic = cell_values(runs / "synthetic", scope, args.budget, metric)
        cells = sorted(set(human) & set(synthetic))
        groups = {"all cells": cells}
        for label, _ in settings(scope, args.budget):
            groups[label] = [c for c in cells if c[1] == label]
        found: dict[str, Any] = {}
        for group, members in groups.items():
            h = np.vstack([human[c] for c in members])
            result = ranking_agreement(
                h,
                np.vstack([synthetic[c] for c in members]),
                resamples=args.resamples,
                seed=args.seed,
            )
            # two independent resamples of the human set: the taus its own noise allows
            ceiling = ranking_agreement(h, h, resamples=args.resamples, seed=args.seed + 1)
            found[group] = {
                **result.to_dict(),
                "ceiling_low": ceiling.ci_low,
                "ceiling_high": ceiling.ci_high,
            }
        found["means"] = {
            f"{c[0]} | {c[1]}": {
                "human": float(human[c].mean()),
                "synthetic": float(synthetic[c].mean()),
            }
            for c in cells
        }
        one.agreement[metric] = found
        one.human_questions = len(next(iter(human.values())))
        one.synthetic_questions = len(next(iter(synthetic.values())))


def recommended(data: ReportData, r: Recommendation) -> dict[str, Any]:
    """What the report recommends: the single winner, or the cheapest of the group tied with the
    best (choose on cost), with the group."""
    cells = data.cells
    if r.best is None:
        return {"cell": None, "kind": "none", "group": []}
    best = r.best
    if r.winner is not None:
        cell, kind = r.winner[0], "winner"
    else:
        cheap = r.cheapest_tied
        cell, kind = (cheap.cell if cheap is not None else best.cell), "choose on cost"
    return {
        "cell": cells[cell].chunker_short,
        "kind": kind,
        "best_by_mean": cells[best.cell].chunker_short,
        "p_best": r.p_best_of(best.option),
        "group": [cells[o[0]].chunker_short for o in best.tied],
        "n_questions": r.n_questions,
    }


def recommendations(one: SetRun, args: argparse.Namespace, scope: str) -> None:
    from chunkmark.report import ReportOptions
    from chunkmark.report.recommendation import recommend
    from chunkmark.report.recommendation_text import dataset_lines

    runs = one.synthetic.parent / "runs"
    for metric in METRICS:
        for label, spec in settings(scope, args.budget):
            row: dict[str, Any] = {"metric": metric, "setting": label}
            for side in ("human", "synthetic"):
                options = replace(ReportOptions().stats(), metric=metric, retrieval=spec)
                data, found = recommend(runs / side, options)
                row[side] = recommended(data, found[0])
                row[side]["lines"] = dataset_lines(data, found[0])
            h, s = row["human"], row["synthetic"]
            if h["cell"] == s["cell"]:
                row["agree"] = "same cell"
            elif h["cell"] in s["group"] or s["cell"] in h["group"]:
                row["agree"] = "in the other's tied group"
            else:
                row["agree"] = "differ"
            row["same_best_by_mean"] = h.get("best_by_mean") == s.get("best_by_mean")
            row["in_human_group"] = s["cell"] in h["group"]
            one.recommendations.append(row)


def human_subsets(one: SetRun, args: argparse.Namespace, scope: str) -> None:
    """The recommendation criterion's own ceiling: in ``--subsets`` seeded draws of as many
    human questions as the synthetic set has (without replacement), how often the report's
    recommendation (IoU, dense) lies inside the whole human set's tied group. Optimistic, as
    the draws are questions that make that group; when it is low, that many questions cannot
    be expected to name a cell of the group, whoever wrote them. Not measured when the
    synthetic set is as large as the human one."""
    import random
    import tempfile

    import pandas as pd

    from chunkmark.report import ReportOptions
    from chunkmark.report.recommendation import recommend

    human = one.synthetic.parent / "runs" / "human"
    spec = next(spec for label, spec in settings(scope, args.budget) if label.startswith("dense"))
    options = replace(ReportOptions().stats(), metric="iou", retrieval=spec)
    data, found = recommend(human, options)
    group = set(recommended(data, found[0])["group"])
    results = pd.read_parquet(human / "results.parquet")
    ids = sorted(results["question_id"].unique())
    size = one.synthetic_questions
    if size >= len(ids):  # every draw would be the whole human set
        return
    inside = 0
    with tempfile.TemporaryDirectory(prefix="svh-subset-") as tmp:
        for draw in range(args.subsets):
            keep = set(random.Random(f"svh-subset:{args.seed}:{draw}").sample(ids, size))
            folder = Path(tmp) / str(draw)
            shutil.copytree(human, folder)
            results[results["question_id"].isin(keep)].to_parquet(folder / "results.parquet")
            sub, picked = recommend(folder, options)
            inside += recommended(sub, picked[0])["cell"] in group
            shutil.rmtree(folder)
    one.subsets = {"questions": size, "draws": args.subsets, "inside": inside}


def inspect_side_by_side(one: SetRun, args: argparse.Namespace) -> None:
    cmd = ["synth", "inspect", str(one.synthetic), "--compare", str(one.human), "--no-embed"]
    if args.cache_dir is not None:
        cmd += ["--cache-dir", str(args.cache_dir)]
    done = subprocess.run(
        chunkmark_cli(*cmd, "--json"), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        one.note = f"synth inspect failed: {done.stderr.strip()}"
        return
    report = json.loads(done.stdout)
    (one.synthetic.parent / "inspect.json").write_text(done.stdout, encoding="utf-8")
    text = subprocess.run(chunkmark_cli(*cmd), capture_output=True, text=True, check=False)
    start = text.stdout.find("beside the reference set")
    one.inspect = {
        "synthetic": _figures(report),
        "human": _figures(report["reference"]),
        "table": text.stdout[start:].rstrip() if start >= 0 else "",
    }


def _figures(d: dict[str, Any]) -> dict[str, Any]:
    return {
        "questions": d["totals"]["questions"],
        "excerpt_chars_median": d["excerpt_length"]["median"],
        "excerpt_tokens_median": d["excerpt_tokens"]["median"],
        "excerpt_position_median": d["excerpt_position"]["median"],
        "lexical_overlap_median": d["lexical_overlap"]["median"],
        "bm25_share": d["bm25"]["share"],
        "bm25_scope": d["bm25"]["scope"],
        "questions_per_document_median": d["questions_per_document"]["median"],
    }


def _interval(a: dict[str, Any]) -> str:
    return f"{a['tau']:+.2f} [{a['ci_low']:+.2f}, {a['ci_high']:+.2f}]"


def _ceiling(a: dict[str, Any]) -> str:
    return f"[{a['ceiling_low']:+.2f}, {a['ceiling_high']:+.2f}]"


def _recommendation_line(r: dict[str, Any]) -> str:
    h, s = r["human"], r["synthetic"]
    best = "same" if r["same_best_by_mean"] else "differs"
    return (
        f"recommended ({r['metric']}, {r['setting']}): human {h['cell']} ({h['kind']}, "
        f"group of {len(h['group'])}), synthetic {s['cell']} ({s['kind']}, group of "
        f"{len(s['group'])}): {r['agree']}; best by mean: human {h['best_by_mean']}, synthetic "
        f"{s['best_by_mean']} ({best})"
    )


def chunkers(args: argparse.Namespace) -> list[str]:
    from chunkmark.suite.run import DEFAULT_CHUNKERS

    return list(args.chunker or DEFAULT_CHUNKERS)


def report_lines(
    runs: list[SetRun], args: argparse.Namespace, model: str, scopes: dict[str, str]
) -> list[str]:
    scoped = sorted(set(scopes.values()))
    lines = [
        "# Synthetic vs human questions",
        "",
        f"LLM: `{model}`. Grid: {len(chunkers(args))} chunkers x `{args.embedder}`, dense and "
        f"BM25 token budgets of {args.budget} tokens, {' and '.join(scoped)} scope. Steered: "
        f"{args.examples_per_set} human questions of the set shown as examples (`synth generate "
        "--examples`) and left out of the evaluation; unsteered: no examples; both evaluated "
        "against the same remaining human questions. tau: Kendall's tau-b between the two "
        "orderings of the cells by mean, 95% bootstrap interval "
        f"({args.resamples} resamples, human and synthetic questions resampled independently); "
        "ceiling: the interval of tau between two independent resamples of the human set. "
        "Duplicates: answers rejected as duplicates / all answers. Recommended: the report's "
        "recommendation (IoU, dense) on the synthetic set, inside the human set's tied group or "
        "not; human subsets: of draws of as many human questions as the synthetic set has, "
        "those whose recommendation lies inside the whole human set's tied group (optimistic: "
        "the draws are among the questions that make it). s/accepted: wall seconds of the "
        "generation / questions it accepted.",
        "",
        "| set | condition | human questions | accepted / asked | duplicates / answers | "
        "excerpt chars (median) synthetic vs human | tau recall | ceiling | tau IoU | "
        "recommended in human tied group | human subsets in it | s/accepted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [table_row(one) for one in runs]
    for one in runs:
        if not one.agreement:
            continue
        lines += ["", f"## {one.name}", ""]
        for metric in METRICS:
            for group, a in one.agreement[metric].items():
                if group != "means":
                    lines.append(
                        f"- tau {metric}, {group} ({a['cells']} cells): {_interval(a)}; "
                        f"human vs itself {_ceiling(a)}"
                    )
        lines += [f"- {_recommendation_line(r)}" for r in one.recommendations]
        if one.inspect.get("table"):
            lines += ["", "```", one.inspect["table"], "```"]
    return lines


def table_row(one: SetRun) -> str:
    counts = (one.generation.get("counts") or {}) if one.generation else {}
    answers = counts.get("answers", 0)
    dup = counts.get("duplicate", 0)
    dups = f"{dup} / {answers} ({100 * dup / answers:.0f}%)" if answers else "-"
    accepted = f"{counts.get('accepted', 0)} / {one.questions}" if counts else "-"
    per = (
        f"{one.seconds / one.accepted_now:.0f}"
        if one.seconds is not None and one.accepted_now
        else "-"
    )
    head = f"| {one.set_name} | {one.condition} | {one.human_questions} | {accepted} | {dups} |"
    if not one.agreement:
        return f"{head} - | {one.note or 'not run'} | | | | | {per} |"
    syn, hum = one.inspect.get("synthetic", {}), one.inspect.get("human", {})
    chars = (
        f"{syn['excerpt_chars_median']:.0f} vs {hum['excerpt_chars_median']:.0f}"
        if syn and hum
        else "-"
    )
    rec = next(
        (
            r
            for r in one.recommendations
            if r["metric"] == "iou" and r["setting"].startswith("dense")
        ),
        None,
    )
    inside = "-" if rec is None else ("yes" if rec["in_human_group"] else "no")
    recall, iou = one.agreement["recall"]["all cells"], one.agreement["iou"]["all cells"]
    sub = one.subsets
    subsets = f"{sub['inside']} / {sub['draws']} of {sub['questions']}" if sub else "-"
    return (
        f"{head} {chars} | {_interval(recall)} | {_ceiling(recall)} | {_interval(iou)} | "
        f"{inside} ({rec['synthetic']['cell'] if rec else '-'}) | {subsets} | {per} |"
    )


def timing(first: SetRun, args: argparse.Namespace, prices: Path | None) -> dict[str, Any]:
    """Seconds per accepted question before and after, side by side on one set: ``before``
    asks one question per window of ``--before-window`` characters in ``--before-excerpts``
    mode and sends ``cache_prompt=false``; ``after`` asks as the conditions do
    (``--excerpts``, ``--window-chars``, ``--window-questions`` per window, llama.cpp's prompt
    cache). Both unsteered, without the answer cache (every answer is asked), one after the
    other on the same server."""
    found: dict[str, Any] = {}
    no_cache = llm_spec(args).replace("timeout=600.0)", "timeout=600.0, cache_prompt=False)")
    for label, per_window, spec, mode, window in (
        ("before", 1, no_cache, args.before_excerpts, args.before_window),
        ("after", args.window_questions, llm_spec(args), args.excerpts, args.window_chars),
    ):
        folder = args.out / "timing" / label
        if (folder / "result.json").is_file():  # measured by an earlier run of this command
            found[label] = json.loads((folder / "result.json").read_text(encoding="utf-8"))
            continue
        if folder.exists():  # a measurement cut short: measure it again, whole
            shutil.rmtree(folder)
        cmd = [
            "synth",
            "generate",
            str(first.human),
            "--llm",
            spec,
            "--out",
            str(folder),
            "--questions",
            str(args.timing),
            "--seed",
            str(args.seed),
            "--window-chars",
            str(window),
            "--window-questions",
            str(per_window),
            "--excerpts",
            mode,
            "--no-cache",
            "--quiet",
        ]
        if prices is not None:
            cmd += ["--prices", str(prices)]
        print(f"timing ({label}): {args.timing} questions on {first.set_name}", flush=True)
        started = time.perf_counter()
        done = subprocess.run(chunkmark_cli(*cmd), check=False)
        seconds = time.perf_counter() - started
        counts = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["counts"]
        result = {
            "excerpts": mode,
            "window_chars": window,
            "questions_per_window": per_window,
            "cache_prompt": label == "after",
            "exit": done.returncode,
            "seconds": round(seconds, 1),
            "accepted": counts["accepted"],
            "answers": counts["answers"],
            "duplicate": counts["duplicate"],
            "seconds_per_accepted": round(seconds / counts["accepted"], 1)
            if counts["accepted"]
            else None,
        }
        (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        found[label] = result
        print(f"timing ({label}): {result}", flush=True)
    return found


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sets", nargs="*", default=list(SETS), help=f"of {', '.join(SETS)}")
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--llm", help="an LLM spec (docs/llm.md)")
    who.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8100/v1"
    )
    parser.add_argument("--model", help="the model name the --base-url server serves")
    parser.add_argument("--from", dest="from_dir", type=Path, default=None, help="raw suite files")
    parser.add_argument("--docs", type=int, default=None, help="documents per set (all sets)")
    parser.add_argument("--seed", type=int, default=0, help="document sample, plan and requests")
    parser.add_argument(
        "--questions",
        type=int,
        default=None,
        help="synthetic questions per set (default: as many as the sample's human questions)",
    )
    parser.add_argument("--style", action="append", default=None, help="synth generate --style")
    parser.add_argument("--window-chars", type=int, default=4000)
    parser.add_argument(
        "--excerpts",
        choices=("exact", "approximate", "given"),
        default="exact",
        help="synth generate --excerpts: the LLM copies passages, cites numbered pieces, or "
        "writes a question for a passage chosen for it",
    )
    parser.add_argument(
        "--subsets",
        type=int,
        default=30,
        help="draws of human questions as many as the synthetic ones, for the recommendation "
        "criterion's ceiling (0: none)",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=3,
        help="synth generate --candidates (--excerpts given): questions per answer",
    )
    parser.add_argument(
        "--pick",
        choices=("auto", "first", "specific", "examples"),
        default="auto",
        help="synth generate --pick (--excerpts given): auto (examples when steered, else "
        "first), the first new candidate question, the one that best singles out its passage, "
        "or (steered; unsteered: first) one that does so as often as the examples",
    )
    parser.add_argument(
        "--before-excerpts",
        choices=("exact", "approximate", "given"),
        default="approximate",
        help="--timing: the excerpt mode of the 'before' side",
    )
    parser.add_argument(
        "--before-window", type=int, default=2000, help="--timing: the 'before' side's windows"
    )
    parser.add_argument(
        "--concurrency", type=int, default=1, help="synth generate requests in flight"
    )
    parser.add_argument("--prices", type=Path, default=None, help="synth generate --prices")
    parser.add_argument(
        "--chunker", action="append", default=None, help="replaces the suite's fast-grid chunkers"
    )
    parser.add_argument("--embedder", default=MODEL2VEC)
    parser.add_argument("--budget", type=int, default=1024, help="token budget of the settings")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of tau")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("results/synth_vs_human"))
    parser.add_argument(
        "--plan-only", action="store_true", help="prepare the samples, print the LLM requests, stop"
    )
    parser.add_argument(
        "--condition",
        action="append",
        choices=CONDITIONS,
        default=None,
        help="unsteered and/or steered (default: both, in that order)",
    )
    parser.add_argument(
        "--examples-per-set",
        type=int,
        default=10,
        help="human questions shown as examples in the steered condition (left out of both)",
    )
    parser.add_argument(
        "--window-questions", type=int, default=1, help="synth generate --window-questions"
    )
    parser.add_argument(
        "--steered-window",
        type=int,
        nargs=2,
        default=None,
        metavar=("LOW", "HIGH"),
        help="steered windows of 3x the examples' median evidence, within LOW..HIGH characters "
        "(default: --window-chars for every condition)",
    )
    parser.add_argument(
        "--timing",
        type=int,
        default=0,
        help="first time N questions on the first set, one a window without llama.cpp's "
        "prompt cache, then --window-questions a window with it (needs --base-url)",
    )
    args = parser.parse_args()
    if args.base_url and not args.model:
        parser.error("--base-url needs --model")
    unknown = [s for s in args.sets if s not in SETS]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}: use {', '.join(SETS)}")
    args.style = args.style or ["factoid"]
    if args.cache_dir is not None:
        os.environ["CHUNKMARK_CACHE_DIR"] = str(args.cache_dir.resolve())
    if args.from_dir is None:
        shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", "")) / "datasets" / "suite"
        args.from_dir = shared if shared.is_dir() else None
    started, cpu = time.perf_counter(), cpu_seconds()
    model = llm_spec(args)
    args.out.mkdir(parents=True, exist_ok=True)
    prices = args.prices
    if prices is None and args.base_url:  # a local server costs nothing
        prices = args.out / "prices.yaml"
        prices.write_text(
            f"models:\n  {json.dumps(args.model)}: {{input: 0, output: 0}}\n", encoding="utf-8"
        )

    from chunkmark.datasets import load_dataset
    from chunkmark.suite.run import scope_of

    runs: list[SetRun] = []
    scopes: dict[str, str] = {}
    for name in args.sets:
        human = prepare_human(name, args)
        scopes[name] = scope_of(load_dataset(human))
        examples, evaluated = hold_out(
            name, human, args.out / name, args.examples_per_set, args.seed
        )
        evaluated_questions = len(load_dataset(evaluated).questions)
        for condition in args.condition or CONDITIONS:
            steered = condition == STEERED
            window = args.window_chars
            if steered and args.steered_window:
                window = steered_window(examples, *args.steered_window)
            one = SetRun(
                f"{name}/{condition}",
                evaluated,
                args.out / name / condition / "synthetic",
                args.questions or evaluated_questions,
                evaluated_questions,
                set_name=name,
                condition=condition,
                examples=examples if steered else None,
                window_chars=window,
            )
            dry_run(one, args, prices)
            runs.append(one)
    total = sum(r.requests for r in runs)
    worst = sum(r.worst_requests for r in runs)
    print(
        f"LLM requests to make: {total} (up to {worst} if every answer needs correcting), "
        f"for {sum(r.questions for r in runs)} synthetic questions over {len(runs)} sets; "
        f"LLM: {model}",
        flush=True,
    )
    if args.plan_only:
        return 0
    timed = timing(runs[0], args, prices) if args.timing and args.base_url else {}
    for one in runs:
        measure(one, args, prices, scopes[one.set_name])
        write_summary(runs, args, model, scopes, timed, started, cpu)  # after every set
    lines = write_summary(runs, args, model, scopes, timed, started, cpu)
    print("\n".join(lines[: 6 + len(runs)]))  # the title, the paragraph and the table
    seconds = time.perf_counter() - started
    print(
        f"wrote {args.out / 'summary.json'} and {args.out / 'summary.md'}; {seconds:.0f} s wall, "
        f"{cpu_seconds() - cpu:.1f} s CPU (this process and its children)"
    )
    return 0


def measure(one: SetRun, args: argparse.Namespace, prices: Path | None, scope: str) -> None:
    """Generate one set's synthetic questions, run the grid on both sides and compare."""
    generate(one, args, prices)
    one.synthetic_questions = int(one.generation["counts"]["accepted"])
    if one.synthetic_questions < 2:  # a set needs questions to be run
        one.note = f"{one.synthetic_questions} synthetic question(s) accepted: no ranking"
        print(f"{one.name}: {one.note}")
        return
    runs_dir = one.synthetic.parent / "runs"
    for side, folder in (("human", one.human), ("synthetic", one.synthetic)):
        print(f"{one.name}: grid on the {side} set ({scope} scope)", flush=True)
        run_grid(folder, runs_dir / side, args, scope)
    agreement(one, args, scope)
    recommendations(one, args, scope)
    if args.subsets:
        human_subsets(one, args, scope)
    inspect_side_by_side(one, args)
    recall, iou = one.agreement["recall"]["all cells"], one.agreement["iou"]["all cells"]
    print(
        f"{one.name}: {one.human_questions} human, {one.synthetic_questions} synthetic "
        f"questions; over {recall['cells']} cells tau recall {_interval(recall)} (human vs "
        f"itself {_ceiling(recall)}), tau IoU {_interval(iou)} (human vs itself "
        f"{_ceiling(iou)})",
        flush=True,
    )
    for r in one.recommendations:
        print(f"  {_recommendation_line(r)}")
    if one.inspect.get("table"):
        print(one.inspect["table"])


def write_summary(
    runs: list[SetRun],
    args: argparse.Namespace,
    model: str,
    scopes: dict[str, str],
    timed: dict[str, Any],
    started: float,
    cpu: float,
) -> list[str]:
    """``summary.json`` and ``summary.md`` as things stand (sets not yet run say so)."""
    summary = {
        "llm": model,
        "sets": [
            {
                "set": r.set_name,
                "condition": r.condition,
                "human_folder": str(r.human),
                "examples": None if r.examples is None else str(r.examples),
                "window_chars": r.window_chars,
                "scope": scopes[r.set_name],
                "human_questions": r.human_questions,
                "synthetic_questions_asked": r.questions,
                "synthetic_questions": r.synthetic_questions,
                "generation": r.generation,
                "generation_seconds": None if r.seconds is None else round(r.seconds, 1),
                "accepted_this_run": r.accepted_now,
                "agreement": r.agreement,
                "recommendations": r.recommendations,
                "human_subsets": r.subsets,
                "inspect": {k: v for k, v in r.inspect.items() if k != "table"},
                "note": r.note,
            }
            for r in runs
        ],
        "timing": timed,
        "settings": {
            "docs": {n: args.docs or DEFAULT_DOCS.get(n) for n in args.sets},
            "seed": args.seed,
            "styles": args.style,
            "window_chars": args.window_chars,
            "window_questions": args.window_questions,
            "examples_per_set": args.examples_per_set,
            "excerpts": args.excerpts,
            "pick": args.pick,
            "candidates": args.candidates,
            "embedder": args.embedder,
            "chunkers": chunkers(args),
            "budget": args.budget,
            "resamples": args.resamples,
        },
        "command": " ".join(sys.argv),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(cpu_seconds() - cpu, 1),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    lines = report_lines(runs, args, model, scopes)
    if timed:
        lines += ["", "## Seconds per accepted question, before and after", ""]
        lines += [f"- {label}: {json.dumps(found)}" for label, found in timed.items()]
    (args.out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
