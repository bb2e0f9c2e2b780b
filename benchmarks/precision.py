"""Throughput and agreement of sentence-transformers precision modes and batch sizes.

Embeds a sample of the benchmark's chunks (fixed 400-token windows, which the model truncates,
and 100-token windows) with each precision and batch size, and prints texts per second, the
speed ratio to fp32 at the default batch size, and the mean/minimum cosine to the fp32 vectors.

    .venv/bin/python benchmarks/precision.py [--data ../shared/datasets/chroma_general]
        [--sample 256] [--batch-sizes 16,32,64] [--precisions fp32,bf16]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def sample_texts(data: Path, n: int) -> list[str]:
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.datasets import load_dataset
    from chunkmark.experiments.cell import chunk_dataset

    dataset = load_dataset(str(data))
    texts: list[str] = []
    for spec in ("fixed_tokens(size=400)", "fixed_tokens(size=100)"):
        chunker, _ = CHUNKERS.build(spec)
        chunks = chunk_dataset(dataset, chunker)
        rng = np.random.default_rng(0)
        picked = rng.choice(len(chunks), size=min(n // 2, len(chunks)), replace=False)
        texts += [chunks[i].text(dataset.by_id[chunks[i].doc_id].text) for i in sorted(picked)]
    return texts


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--sample", type=int, default=256)
    parser.add_argument("--batch-sizes", default="16,32,64")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many passes")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder

    texts = sample_texts(args.data, args.sample)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    reference: np.ndarray | None = None
    base_rate = None
    print(f"{len(texts)} texts; seconds are the best of {args.repeats} passes")
    print(
        f"{'precision':>9} {'batch':>5} {'texts/s':>8} {'vs fp32':>8} {'mean cos':>9} {'min cos':>9}"
    )
    for precision in args.precisions.split(","):
        for batch in batch_sizes:
            embedder = SentenceTransformerEmbedder(batch_size=batch, precision=precision)  # type: ignore[arg-type]
            ids = embedder.model_inputs(texts)
            embedder.embed_inputs(ids[:batch])  # warm-up: load, first kernels
            best = float("inf")
            vectors = np.zeros(0)
            for _ in range(args.repeats):
                start = time.perf_counter()
                vectors = embedder.embed_inputs(ids)
                best = min(best, time.perf_counter() - start)
            rate = len(texts) / best
            if reference is None:
                reference, base_rate = vectors, rate
            cos = np.sum(vectors * reference, axis=1)
            ratio = rate / base_rate if base_rate else float("nan")
            print(
                f"{precision:>9} {batch:>5} {rate:8.1f} {ratio:7.2f}x "
                f"{cos.mean():9.6f} {cos.min():9.6f}"
            )


if __name__ == "__main__":
    main()
