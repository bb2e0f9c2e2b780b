"""Throughput and agreement of sentence-transformers precision modes and batch sizes, per model,
and whether a small grid ranks its cells the same in each precision.

Embeds a sample of the benchmark's chunks (fixed 400-token windows, which the model truncates,
and 100-token windows) with each model, precision and batch size on one device, and prints texts
and model tokens per second, the speed ratio to the model's first row (fp32 by default) and the
mean/minimum cosine to its vectors.

    .venv/bin/python benchmarks/precision.py [--data ../shared/datasets/chroma_general]
        [--models all-MiniLM-L6-v2,all-mpnet-base-v2] [--device auto|cpu|cuda|cuda:N|mps]
        [--sample 256] [--batch-sizes default,16,32,64] [--precisions fp32,fp16,bf16]
        [--grid FOLDER]

``--device auto`` (default) takes a CUDA GPU when torch sees one. Without ``--precisions`` it
runs what the device supports natively: fp32, fp16 (CUDA) and bf16 (CUDA GPUs with bfloat16,
CPUs with AVX512-BF16/AMX); name ``bf16`` to run it emulated on a CPU without them. ``default``
in ``--batch-sizes`` is the embedder's own choice for the device and precision; without the
option a CPU tries default,16,32,64 and a GPU default,64,128,256,512. A precision the device
cannot run is reported and skipped.

``--grid FOLDER`` (a dataset folder, e.g. a converted suite sample) also runs a small grid with
each model in each precision, cold (a new cache folder each), as ``chunkmark run`` would: the
chunkers of :data:`GRID_CHUNKERS` x top_k(5) and a 1,024-token budget (searched within the
question's document where every question says ``scope: document``, as the suite does). It prints
each run's wall time, each cell's recall, the ratio of the times, Kendall's tau between the
precisions' orders of the cells and whether the orders are equal.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
GRID_CHUNKERS = (
    "fixed_tokens(size=128)",
    "fixed_tokens(size=256)",
    "fixed_tokens(size=512)",
    "recursive(size=256)",
    "sentences(n=5)",
)


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


def throughput(
    model: str,
    texts: list[str],
    device: str,
    precisions: list[str],
    batch_sizes: list[int | None],
    repeats: int,
) -> None:
    """One table for ``model``: every precision x batch size against the first row."""
    from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
    from chunkmark.errors import EmbeddingError

    reference: np.ndarray | None = None
    base_rate = None
    print(f"{model}: {len(texts)} texts on {device}; seconds are the best of {repeats} passes")
    print(
        f"{'precision':>9} {'batch':>9} {'texts/s':>8} {'tokens/s':>9} {'vs first':>8} "
        f"{'mean cos':>9} {'min cos':>9}"
    )
    for precision in precisions:
        for batch in batch_sizes:
            try:
                embedder = SentenceTransformerEmbedder(
                    model,
                    batch_size=batch,
                    device=device,
                    precision=precision,  # type: ignore[arg-type]
                )
                ids = embedder.model_inputs(texts)
                embedder.embed_inputs(ids[: embedder.batch_size])  # warm-up: first kernels
            except EmbeddingError as exc:
                print(f"{precision:>9} skipped: {exc}")
                break
            tokens = sum(len(x) // 4 for x in ids)  # int32 token ids, 4 bytes each
            best = float("inf")
            vectors: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
            for _ in range(repeats):
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
                f"{precision:>9} {label:>9} {rate:8.1f} {tokens / best:9.0f} {ratio:7.2f}x "
                f"{cos.mean():9.6f} {cos.min():9.6f}"
            )


def grid_run(data: Path, model: str, precision: str, device: str) -> tuple[float, dict[str, float]]:
    """A cold run of the small grid: its wall time and each cell's recall (over all questions)."""
    from chunkmark.datasets import load_dataset
    from chunkmark.experiments.runner import evaluate
    from chunkmark.retrieval import RETRIEVAL
    from chunkmark.suite.run import TOP5, budget, scope_of

    scope = scope_of(load_dataset(str(data)))
    settings = (TOP5, budget(1024))
    embedder = f"sentence_transformers(model={model!r}, device={device!r}, precision={precision!r})"
    with tempfile.TemporaryDirectory(prefix="precision-grid-") as tmp:
        start = time.perf_counter()
        results = evaluate(
            datasets=[str(data)],
            chunkers=list(GRID_CHUNKERS),
            embedders=[embedder],
            retrieval=[setting.spec(scope) for setting in settings],
            out=Path(tmp) / "out",
            cache_dir=Path(tmp) / "cache",
        )
        wall = time.perf_counter() - start
    chunkers = dict(zip(results.config.chunkers, GRID_CHUNKERS, strict=True))
    labels = {str(RETRIEVAL.resolve(s.spec(scope))): s.label for s in settings}
    recall = {
        f"{chunkers[row['chunker']]} | {labels[row['retrieval']]}": float(row["recall_mean"])
        for row in results.overall()
    }
    return wall, recall


def kendall_tau(a: dict[str, float], b: dict[str, float]) -> float:
    from scipy.stats import kendalltau

    keys = sorted(a)
    return float(kendalltau([a[k] for k in keys], [b[k] for k in keys]).statistic)


def grid_orders(data: Path, model: str, precisions: list[str], device: str) -> None:
    """The small grid in each precision: times, recalls, the order of cells and its agreement."""
    runs: dict[str, tuple[float, dict[str, float]]] = {}
    for precision in precisions:
        runs[precision] = grid_run(data, model, precision, device)
    first = precisions[0]
    base_wall, base = runs[first]
    print(f"\n{model}: grid on {data.name} ({len(base)} cells), cold, on {device}")
    print(" | ".join(f"{p}: {runs[p][0]:.1f} s ({runs[p][0] / base_wall:.2f}x)" for p in runs))
    header = "".join(f" {p + ' recall':>12}" for p in precisions)
    print(f"{'cell':<38}{header}")
    for cell in sorted(base, key=lambda c: -base[c]):
        values = "".join(f" {runs[p][1][cell]:12.4f}" for p in precisions)
        print(f"{cell:<38}{values}")
    for precision in precisions[1:]:
        other = runs[precision][1]
        equal = sorted(base, key=lambda c: (-base[c], c)) == sorted(
            other, key=lambda c: (-other[c], c)
        )
        deltas = np.array([other[c] - base[c] for c in base])
        print(
            f"{precision} vs {first}: order equal: {'yes' if equal else 'no'}; Kendall's tau "
            f"{kendall_tau(base, other):+.3f}; recall difference mean {deltas.mean():+.4f}, "
            f"largest {deltas[np.argmax(np.abs(deltas))]:+.4f}"
        )


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--models", default="all-MiniLM-L6-v2", help="comma-separated names")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument("--sample", type=int, default=256)
    parser.add_argument("--batch-sizes", default=None, help="comma-separated; 'default' too")
    parser.add_argument("--precisions", default=None, help="comma-separated: fp32,fp16,bf16")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many passes")
    parser.add_argument("--grid", type=Path, default=None, help="a dataset folder: grid orders")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="8 demo texts, two batch sizes, one pass (fp32 unless --precisions)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.data, args.sample, args.repeats = Path("demo"), 8, 1
        args.precisions, args.batch_sizes = args.precisions or "fp32", "default,4"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from chunkmark.embedders.st_device import resolve_device

    device = resolve_device(args.device)
    gpu = device.startswith(("cuda", "mps"))
    batch_arg = args.batch_sizes or ("default,64,128,256,512" if gpu else "default,16,32,64")
    batch_sizes = [None if b == "default" else int(b) for b in batch_arg.split(",")]
    precisions = (args.precisions or default_precisions(device)).split(",")
    texts = sample_texts(args.data, args.sample)
    models = args.models.split(",")
    for i, model in enumerate(models):
        if i:
            print()
        throughput(model, texts, device, precisions, batch_sizes, args.repeats)
    if args.grid is not None:
        for model in models:
            grid_orders(args.grid, model, precisions, device)


if __name__ == "__main__":
    main()
