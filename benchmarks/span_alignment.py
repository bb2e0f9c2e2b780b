"""Time the adapters' span alignment (``recover_spans``) on one large benchmark document.

Splits one corpus of Chroma's general benchmark (default ``finance``, the largest: about
740 kB) with LangChain's RecursiveCharacterTextSplitter at ``--size`` characters, with and
without overlap, then times chunkmark's mapping of the pieces back to spans in the document
(docs/adapters.md, "Offsets") apart from the splitting itself. The best of ``--repeats`` passes
counts.

    .venv/bin/python benchmarks/span_alignment.py [--data ../shared/datasets/chroma_general]
        [--corpus finance] [--size 200] [--overlaps 0,50] [--repeats 3]

Needs langchain-text-splitters: pip install 'chunkmark[langchain]'.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--corpus", default="finance", help="a corpus file's name, no suffix")
    parser.add_argument("--size", type=int, default=200, help="chunk_size in characters")
    parser.add_argument("--overlaps", default="0,50", help="comma-separated chunk_overlap values")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a demo document, one pass")
    args = parser.parse_args()
    if args.smoke:
        args.data, args.corpus, args.repeats = Path("demo"), "tidewell-manual", 1

    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from chunkmark.chunkers.adapters import recover_spans
    from chunkmark.datasets import load_dataset

    dataset = load_dataset(str(args.data))
    text = dataset.by_id[args.corpus].text
    print(
        f"{args.corpus}: {len(text):,} characters ({len(text.encode('utf-8')):,} bytes), "
        f"RecursiveCharacterTextSplitter(chunk_size={args.size}); best of {args.repeats}"
    )
    print(f"{'overlap':>7} {'pieces':>7} {'split s':>8} {'align s':>8} {'spans':>7}")
    for overlap in (int(o) for o in args.overlaps.split(",")):
        splitter = RecursiveCharacterTextSplitter(chunk_size=args.size, chunk_overlap=overlap)
        split_s = align_s = float("inf")
        pieces: list[str] = []
        spans: list[object] = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            pieces = splitter.split_text(text)
            split_s = min(split_s, time.perf_counter() - start)
            start = time.perf_counter()
            spans = recover_spans(text, pieces, source="RecursiveCharacterTextSplitter")
            align_s = min(align_s, time.perf_counter() - start)
        print(f"{overlap:>7} {len(pieces):>7,} {split_s:8.3f} {align_s:8.3f} {len(spans):>7,}")


if __name__ == "__main__":
    main()
