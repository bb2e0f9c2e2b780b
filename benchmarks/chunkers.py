"""Chunking throughput (MB/s) of every registered chunker on the benchmark corpora, and of
chonkie's and LangChain's equivalents of fixed_tokens and recursive, side by side.

Each chunker chunks the five corpora of Chroma's general benchmark (1.4 MB) ``--repeats``
times in this process; the best pass counts. Chunkers that embed (semantic) use the ``fake``
embedder and LLM-based chunkers the ``fake`` LLM, so their figures exclude model time: they
measure chunkmark's own work. Tokenizers are built and warmed before timing.

    .venv/bin/python benchmarks/chunkers.py [--data ../shared/datasets/chroma_general]
        [--repeats 3] [--only fixed_tokens,recursive] [--smoke]

``--smoke`` chunks the built-in demo dataset once with fixed_tokens and recursive and the
comparison's splitters: seconds, the same tables, for the tests.

The comparison needs the ``bench`` extra: pip install 'chunkmark[bench]'.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Parameters for chunkers whose defaults need a model or service.
SPECS = {
    "kamradt": "kamradt(embedder='fake')",
    "kamradt_modified": "kamradt_modified(embedder='fake')",
    "cluster_semantic": "cluster_semantic(embedder='fake')",
    "llm_semantic": "llm_semantic(llm='fake')",
    "documentation": "documentation(llm='fake')",
}
SKIP = {"langchain", "llama_index", "chonkie", "splitter"}  # adapters: measured as libraries below


def best_seconds(run: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def ours(spec: str, texts: Sequence[str]) -> Callable[[], Any]:
    from chunkmark.chunkers import CHUNKERS, ChunkerContext

    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext())
    return lambda: [chunker(t) for t in texts]


def competitors(size: int) -> dict[str, Callable[[str], Any]]:
    """chonkie's and LangChain's token and recursive splitters, on cl100k_base."""
    out: dict[str, Callable[[str], Any]] = {}
    from chunkmark.tokenizers import get_encoding

    encoding = get_encoding("cl100k_base")
    try:
        from chonkie import RecursiveChunker, TokenChunker

        token = TokenChunker(tokenizer=encoding, chunk_size=size, chunk_overlap=0)
        recursive = RecursiveChunker(tokenizer=encoding, chunk_size=size)
        out[f"chonkie TokenChunker({size})"] = token.chunk
        out[f"chonkie RecursiveChunker({size})"] = recursive.chunk
    except ImportError:
        print("chonkie is not installed: pip install 'chunkmark[bench]'")
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

        def length(text: str) -> int:
            return len(encoding.encode(text, disallowed_special=()))

        lc_token = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=size, chunk_overlap=0)
        lc_recursive = RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=0, length_function=length
        )
        out[f"LangChain TokenTextSplitter({size})"] = lc_token.split_text
        out[f"LangChain RecursiveCharacterTextSplitter({size}, tokens)"] = lc_recursive.split_text
    except ImportError:
        print("langchain-text-splitters is not installed: pip install 'chunkmark[bench]'")
    return out


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", type=int, default=400, help="chunk size for the comparison")
    parser.add_argument("--only", default="", help="comma-separated chunker names")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the demo dataset, one pass, fixed_tokens and recursive",
    )
    args = parser.parse_args()
    if args.smoke:
        args.data, args.repeats = Path("demo"), 1
        args.only = args.only or "fixed_tokens,recursive"
    warnings.simplefilter("ignore")  # the fake LLM's answers are not split points

    from chunkmark.chunkers import CHUNKERS
    from chunkmark.datasets import load_dataset

    dataset = load_dataset(str(args.data))
    texts = [d.text for d in dataset.documents]
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    only = {n for n in args.only.split(",") if n}
    print(f"{len(texts)} corpora, {megabytes:.2f} MB; best of {args.repeats} passes\n")

    rows: list[tuple[str, float]] = []
    for entry in CHUNKERS:
        if entry.name in SKIP or (only and entry.name not in only):
            continue
        spec = SPECS.get(entry.name, entry.name)
        if entry.name in ("fixed_tokens", "recursive"):
            spec = f"{entry.name}(size={args.size}, overlap=0)"
        run = ours(spec, texts)
        run()  # warm-up: tokenizer tables, caches of the fake embedder
        rows.append((spec, best_seconds(run, args.repeats)))
    for name, split in competitors(args.size).items():
        split(texts[0])
        rows.append((name, best_seconds(lambda s=split: [s(t) for t in texts], args.repeats)))

    width = max(len(name) for name, _ in rows) + 2
    print(f"{'chunker':<{width}}{'seconds':>9}{'MB/s':>9}")
    for name, seconds in rows:
        print(f"{name:<{width}}{seconds:9.3f}{megabytes / seconds:9.2f}")
    speeds = dict(rows)
    pairs = [
        (f"fixed_tokens(size={args.size}, overlap=0)", f"chonkie TokenChunker({args.size})"),
        (f"fixed_tokens(size={args.size}, overlap=0)", f"LangChain TokenTextSplitter({args.size})"),
        (f"recursive(size={args.size}, overlap=0)", f"chonkie RecursiveChunker({args.size})"),
        (
            f"recursive(size={args.size}, overlap=0)",
            f"LangChain RecursiveCharacterTextSplitter({args.size}, tokens)",
        ),
    ]
    print()
    for mine, theirs in pairs:
        if mine in speeds and theirs in speeds:
            print(f"{mine} vs {theirs}: {speeds[theirs] / speeds[mine]:.2f}x faster")


if __name__ == "__main__":
    main()
