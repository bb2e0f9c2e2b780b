"""Throughput and agreement of sentence-transformers precision modes and batch sizes.

Embeds a sample of the benchmark's chunks (fixed 400-token windows, which the model truncates,
and 100-token windows) with each precision and batch size on one device, and prints texts per
second, the speed ratio to the first row (fp32 by default) and the mean/minimum cosine to its
vectors.

    .venv/bin/python benchmarks/precision.py [--data ../shared/datasets/chroma_general]
        [--device auto|cpu|cuda|cuda:N|mps] [--sample 256]
        [--batch-sizes default,16,32,64] [--precisions fp32,fp16,bf16]

``--device auto`` (default) takes a CUDA GPU when torch sees one. Without ``--precisions`` it
runs what the device supports: fp32, fp16 (CUDA) and bf16 (CUDA GPUs with bfloat16, CPUs with
AVX512-BF16/AMX). ``default`` in ``--batch-sizes`` is the embedder's own choice for the device
and precision; without the option a CPU tries default,16,32,64 and a GPU default,64,128,256,512.
A precision the device cannot run is reported and skipped.
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


def default_precisions(device: str) -> str:
    from chunkmark.embedders.st_device import cpu_supports_bf16

    if device.startswith("cuda"):
        import torch

        return "fp32,fp16,bf16" if torch.cuda.is_bf16_supported() else "fp32,fp16"
    return "fp32,bf16" if device == "cpu" and cpu_supports_bf16() else "fp32"


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument("--sample", type=int, default=256)
    parser.add_argument("--batch-sizes", default=None, help="comma-separated; 'default' too")
    parser.add_argument("--precisions", default=None, help="comma-separated: fp32,fp16,bf16")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many passes")
    parser.add_argument(
        "--smoke", action="store_true", help="8 demo texts, fp32 at two batch sizes, one pass"
    )
    args = parser.parse_args()
    if args.smoke:
        args.data, args.sample, args.repeats = Path("demo"), 8, 1
        args.precisions, args.batch_sizes = "fp32", "default,4"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
    from chunkmark.embedders.st_device import resolve_device
    from chunkmark.errors import EmbeddingError

    device = resolve_device(args.device)
    gpu = device.startswith(("cuda", "mps"))
    batch_arg = args.batch_sizes or ("default,64,128,256,512" if gpu else "default,16,32,64")
    batch_sizes = [None if b == "default" else int(b) for b in batch_arg.split(",")]
    precisions = (args.precisions or default_precisions(device)).split(",")
    texts = sample_texts(args.data, args.sample)
    reference: np.ndarray | None = None
    base_rate = None
    print(f"{len(texts)} texts on {device}; seconds are the best of {args.repeats} passes")
    print(
        f"{'precision':>9} {'batch':>9} {'texts/s':>8} {'vs first':>8} {'mean cos':>9} "
        f"{'min cos':>9}"
    )
    for precision in precisions:
        for batch in batch_sizes:
            try:
                embedder = SentenceTransformerEmbedder(
                    batch_size=batch,
                    device=device,
                    precision=precision,  # type: ignore[arg-type]
                )
                ids = embedder.model_inputs(texts)
                embedder.embed_inputs(ids[: embedder.batch_size])  # warm-up: first kernels
            except EmbeddingError as exc:
                print(f"{precision:>9} skipped: {exc}")
                break
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
            label = f"{embedder.batch_size}" + ("" if batch else " (def)")
            print(
                f"{precision:>9} {label:>9} {rate:8.1f} {ratio:7.2f}x "
                f"{cos.mean():9.6f} {cos.min():9.6f}"
            )


if __name__ == "__main__":
    main()
