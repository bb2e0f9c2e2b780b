"""Tokens in the windows that ``chunkmark synth generate`` sends, per corpus.

Cuts each document of a corpus (read as ``synth generate`` reads it) into the windows
``synth generate`` plans from: the evenly spaced tiles of ``--window-chars`` characters that
cover it, each moved onto word boundaries (chunkmark.synth.plan.tiles and
excerpts.snap_window), and prints per document and over all how many windows there are and
their fewest, 5th percentile, median, 95th percentile and most ``cl100k_base`` tokens; then the
same for the windows of the actual plan for each ``--questions`` (default seed), which reuses
tiles with random shifts once every tile has been used; and, per ``--excerpts`` mode, the
tokens a request holds besides the window's text (system and user instructions with the default
style, before any earlier question is listed; in the approximate mode the pieces' numbers too).

    .venv/bin/python benchmarks/synth_windows.py [--data ../shared/datasets/chroma_general]
        [--window-chars 4000] [--questions 50,500]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def describe(name: str, counts: list[int]) -> str:
    a = np.asarray(counts)
    p5, median, p95 = (round(float(v)) for v in np.percentile(a, [5, 50, 95]))
    return f"{name:>27} {len(a):>7} {a.min():>6} {p5:>6} {median:>6} {p95:>6} {a.max():>6}"


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--window-chars", type=int, default=4000)
    parser.add_argument("--questions", default="50,500", help="comma-separated plan sizes")
    parser.add_argument(
        "--smoke", action="store_true", help="the demo documents and a plan of 5 questions"
    )
    args = parser.parse_args()
    if args.smoke:
        args.data = ROOT / "src" / "chunkmark" / "datasets" / "demo_data" / "documents"
        args.questions = "5"

    from chunkmark.synth import excerpts as ex
    from chunkmark.synth.corpus import load_corpus
    from chunkmark.synth.plan import make_plan, tiles
    from chunkmark.synth.prompt import build_prompt
    from chunkmark.tokenizers import count_tokens

    documents, _ = load_corpus(args.data)  # as synth generate reads its corpus argument
    print(f"windows of {args.window_chars} characters, cl100k_base tokens")
    print(f"{'':>27} {'windows':>7} {'min':>6} {'5%':>6} {'median':>6} {'95%':>6} {'max':>6}")
    every: list[int] = []
    for doc in documents:
        tiled = tiles(len(doc.text), args.window_chars)
        spans = [ex.snap_window(doc.text, s.start, s.end) for s in tiled]
        counts = count_tokens([doc.text[s.start : s.end] for s in spans], "cl100k_base")
        every += counts
        print(describe(doc.id, counts))
    print(describe("all tiles", every))
    by_id = {d.id: d for d in documents}
    for questions in (int(q) for q in args.questions.split(",")):
        plan = make_plan(
            documents, questions, seed=0, window_chars=args.window_chars, styles=("factoid",)
        )
        texts = [by_id[s.doc_id].text[s.window.start : s.window.end] for s in plan]
        print(describe(f"plan of {questions} questions", count_tokens(texts, "cl100k_base")))
    plan = make_plan(documents, 50, seed=0, window_chars=args.window_chars, styles=("factoid",))
    texts = [by_id[s.doc_id].text[s.window.start : s.window.end] for s in plan]
    windows = count_tokens(texts, "cl100k_base")
    for mode in ("exact", "approximate"):
        prompts = [build_prompt(by_id[s.doc_id], s, mode=mode) for s in plan]
        system = count_tokens([p.system for p in prompts], "cl100k_base")
        user = count_tokens([p.user for p in prompts], "cl100k_base")
        besides = [a + b - w for a, b, w in zip(system, user, windows, strict=True)]
        print(describe(f"{mode} prompt - window", besides))


if __name__ == "__main__":
    main()
