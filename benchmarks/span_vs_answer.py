"""Do span rankings predict answer rankings? Kendall's tau between the cells' ranking by span
recall (and IoU) and their ranking by answer score, on question sets with reference answers.

For each set, a seeded sample of questions with reference answers (documents in a seeded order,
up to ten questions from each, until there are ``--questions``) is converted here from the raw
files under ``$CHUNKMARK_SHARED_DIR/datasets/suite`` (a simple conversion local to this
benchmark: FairytaleQA's test stories, one document per story with its sections joined by a
blank line, a question's evidence the sections it names and its answers ``answer1..answer6``;
COVID-QA's papers, a question's evidence its answer text found at or near the stated start and
its answer that text). Then one ``chunkmark`` run per set: the chunkers below x
all-MiniLM-L6-v2 x ``token_budget(tokens=BUDGET)``, with ``answers:`` asking the LLM to answer
every sampled question from each cell's retrieved context (and from the whole document where
it fits ``--context-window``). It prints, per set, each cell's recall, IoU and answer F1 with
95% intervals, and Kendall's tau-b between the cells' orderings with a bootstrap interval over
questions (from the run's manifest, ``answers.span_vs_answer``).

    .venv/bin/python benchmarks/span_vs_answer.py --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-1.5b-instruct [--questions 50] [--budget 1024] [--out DIR]
    .venv/bin/python benchmarks/span_vs_answer.py --llm "openai(model='gpt-4o-mini')"

``--llm`` takes any LLM spec; ``--base-url`` (with ``--model``) builds an OpenAI-compatible one
for a local server (llama.cpp's ``llama-server``, vLLM, ...). Answers are cached under the
cache folder, so a rerun (or a run stopped and started again with the same ``--out``) asks
only what it has not asked.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHUNKERS = (
    "fixed_tokens(size=128, overlap=0)",
    "fixed_tokens(size=256, overlap=0)",
    "fixed_tokens(size=512, overlap=0)",
    "fixed_tokens(size=1024, overlap=0)",
    "recursive(size=512, overlap=0)",
)
EMBEDDER = 'sentence_transformers(model="all-MiniLM-L6-v2")'
SETS = ("fairytaleqa", "covid_qa")


def fairytaleqa(
    raw: Path, questions: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Documents and questions (chunkmark JSONL objects) of a seeded sample of FairytaleQA's
    test questions."""
    split = raw / "data-by-train-split"
    docs: dict[str, str] = {}
    found: list[dict[str, Any]] = []
    for story in sorted((split / "section-stories" / "test").glob("*-story.csv")):
        name = story.name.removesuffix("-story.csv")
        with story.open(encoding="utf-8", newline="") as f:
            sections = [(int(r["section"]), r["text"].strip()) for r in csv.DictReader(f)]
        spans: dict[int, tuple[int, int]] = {}
        parts: list[str] = []
        at = 0
        for number, text in sections:
            if parts:
                at += 2  # the blank line between sections
            spans[number] = (at, at + len(text))
            parts.append(text)
            at += len(text)
        docs[name] = "\n\n".join(parts)
        qfile = split / "questions" / "test" / f"{name}-questions.csv"
        with qfile.open(encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                try:
                    numbers = [int(x) for x in r["cor_section"].replace(" ", "").split(",") if x]
                except ValueError:
                    continue
                if not numbers or any(n not in spans for n in numbers):
                    continue
                answers = [r.get(f"answer{i}", "").strip() for i in range(1, 7)]
                answers = list(dict.fromkeys(a for a in answers if a))
                if not answers:
                    continue
                found.append(
                    {
                        "id": f"{name}-{r['question_id']}",
                        "question": r["question"].strip(),
                        "doc_id": name,
                        "excerpts": [
                            {"start": spans[n][0], "end": spans[n][1]} for n in sorted(set(numbers))
                        ],
                        "metadata": {"answers": answers},
                    }
                )
    return _sample(docs, found, questions, seed)


def covid_qa(
    raw: Path, questions: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Documents and questions of a seeded sample of COVID-QA's questions: the answer text found
    at its stated start, else the occurrence nearest to it within 100 characters (else left
    out)."""
    data = json.loads((raw / "data" / "question-answering" / "200423_covidQA.json").read_text())
    docs: dict[str, str] = {}
    found: list[dict[str, Any]] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            doc_id = str(paragraph["document_id"])
            text = paragraph["context"]
            docs[doc_id] = text
            for qa in paragraph["qas"]:
                if qa.get("is_impossible") or not qa.get("answers"):
                    continue
                answer = qa["answers"][0]
                wanted = answer["text"].strip()
                start = _near(text, wanted, int(answer["answer_start"]))
                if not wanted or start is None:
                    continue
                found.append(
                    {
                        "id": str(qa["id"]),
                        "question": qa["question"].strip(),
                        "doc_id": doc_id,
                        "excerpts": [{"start": start, "end": start + len(wanted)}],
                        "metadata": {"answers": [wanted]},
                    }
                )
    return _sample(docs, found, questions, seed)


def _near(text: str, wanted: str, start: int, reach: int = 100) -> int | None:
    if text[start : start + len(wanted)] == wanted:
        return start
    best = None
    at = text.find(wanted, max(0, start - reach))
    while at != -1 and at <= start + reach:
        if best is None or abs(at - start) < abs(best - start):
            best = at
        at = text.find(wanted, at + 1)
    return best


def _sample(
    docs: dict[str, str], found: list[dict[str, Any]], questions: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``questions`` questions drawn (seeded) from as few documents as hold them: documents in
    a seeded order, their questions taken until there are enough; dataset order kept."""
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for q in found:
        by_doc.setdefault(q["doc_id"], []).append(q)
    order = sorted(by_doc)
    rng = random.Random(seed)
    rng.shuffle(order)
    chosen: list[dict[str, Any]] = []
    for doc_id in order:
        if len(chosen) >= questions:
            break
        chosen.extend(by_doc[doc_id][: max(1, min(10, questions - len(chosen)))])
    keep = {q["doc_id"] for q in chosen}
    documents = [{"id": d, "text": docs[d]} for d in docs if d in keep]
    return documents, chosen


def write_set(
    folder: Path, documents: list[dict[str, Any]], questions: list[dict[str, Any]]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, items in (("documents.jsonl", documents), ("questions.jsonl", questions)):
        lines = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items)
        (folder / name).write_text(lines, encoding="utf-8")


def llm_spec(args: argparse.Namespace) -> str:
    if args.llm:
        return str(args.llm)
    if not args.base_url:
        sys.exit("give --llm SPEC, or --base-url URL (and --model NAME) for a local server")
    return (
        f"openai(model={args.model!r}, base_url={args.base_url!r}, "
        f"api_key_env={args.api_key_env!r}, timeout={args.timeout!r})"
    )


def main() -> None:
    shared = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", help="an LLM spec, e.g. openai(model='gpt-4o-mini')")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (ends in /v1)")
    parser.add_argument("--model", default="local", help="the model name sent to --base-url")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per request")
    parser.add_argument(
        "--sets", default=",".join(SETS), help=f"comma-separated: {', '.join(SETS)}"
    )
    parser.add_argument("--data", type=Path, default=shared / "datasets" / "suite")
    parser.add_argument("--questions", type=int, default=50, help="questions per set")
    parser.add_argument("--budget", type=int, default=1024, help="token_budget tokens")
    parser.add_argument("--context-window", type=int, default=4096, help="for the baseline")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the whole-document answers"
    )
    parser.add_argument("--judge", help="an LLM spec for the judge (optional)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "span_vs_answer")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()

    from chunkmark import evaluate

    spec = llm_spec(args)
    setting = f"token_budget(tokens={args.budget})"
    converters = {"fairytaleqa": fairytaleqa, "covid_qa": covid_qa}
    table: list[dict[str, Any]] = []
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        documents, questions = converters[name](args.data / name, args.questions, args.seed)
        folder = args.out / "data" / name
        write_set(folder, documents, questions)
        print(f"{name}: {len(documents)} documents, {len(questions)} questions", flush=True)
        started = time.perf_counter()
        results = evaluate(
            datasets=[str(folder)],
            chunkers=list(CHUNKERS),
            embedders=[EMBEDDER],
            retrieval=[setting],
            out=args.out / name,
            cache_dir=args.cache_dir,
            seed=args.seed,
            report=True,
            answers={
                "llm": spec,
                "setting": setting,
                "judge": args.judge,
                "baseline": not args.no_baseline,
                "context_window": args.context_window,
            },
            progress=lambda message: print(f"  {message}", flush=True),
        )
        if results.report_error:
            print(f"  report.html not written: {results.report_error}")
        section = results.manifest["answers"]
        seconds = time.perf_counter() - started
        print(f"  {seconds:.0f}s; LLM: {json.dumps(section['llm_stats'])}")
        print(f"  {'cell':<44} {'recall':>20} {'IoU':>20} {'answer F1':>20} {'EM':>6}")
        for cell in section["cells"]:
            label = cell["chunker"] or "(whole document)"
            print(
                f"  {_short(label):<44} {_ci(cell, 'recall'):>20} {_ci(cell, 'iou'):>20} "
                f"{_ci(cell, 'f1'):>20} {_pct(cell['exact_match_mean']):>6}"
            )
        for entry in section["span_vs_answer"]:
            row = {"set": name, "cells": entry["cells"], "seconds": round(seconds)}
            for metric in ("recall", "iou"):
                found = entry[metric]
                row[metric] = found
                print(
                    f"  Kendall tau ({metric} vs answer F1): {_num(found['tau'])} "
                    f"[{_num(found['ci_low'])}, {_num(found['ci_high'])}] over "
                    f"{found['questions']} questions, {found['cells']} cells"
                )
            table.append(row)
    print("\nset          cells  questions  tau(recall, F1)          tau(IoU, F1)")
    for row in table:
        r, i = row["recall"], row["iou"]
        print(
            f"{row['set']:<12} {row['cells']:>5}  {r['questions']:>9}  "
            f"{_num(r['tau'])} [{_num(r['ci_low'])}, {_num(r['ci_high'])}]   "
            f"{_num(i['tau'])} [{_num(i['ci_low'])}, {_num(i['ci_high'])}]"
        )
    (args.out / "tau.json").write_text(
        json.dumps({"llm": spec, "setting": setting, "sets": table}, indent=1)
    )


def _short(spec: str) -> str:
    from chunkmark.chunkers import CHUNKERS as REGISTRY

    try:
        return REGISTRY.short(spec)
    except Exception:
        return spec


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _ci(cell: dict[str, Any], metric: str) -> str:
    mean = cell.get(f"{metric}_mean")
    if mean is None:
        return "n/a"
    return f"{_pct(mean)} [{_pct(cell.get(f'{metric}_ci_low'))}, {_pct(cell.get(f'{metric}_ci_high'))}]"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


if __name__ == "__main__":
    main()
