"""Agreement of half-precision autocast and int8 vectors with fp32 ones, on the CPU.

Embeds a sample of the benchmark's chunks (the same sample as benchmarks/precision.py: half
fixed 400-token windows, which the model truncates, half 100-token windows) with
all-MiniLM-L6-v2 on the CPU in fp32, then again under torch's CPU autocast in float16 and
bfloat16, and with the model's linear layers dynamically quantised to int8
(``torch.ao.quantization.quantize_dynamic``), and prints the minimum and mean cosine of each
to the fp32 vectors.

    .venv/bin/python benchmarks/autocast_agreement.py [--data ../shared/datasets/chroma_general]
        [--sample 30] [--no-int8]

This measures agreement only, never speed: chunkmark refuses fp16 on a CPU (slow or
unimplemented half-precision matrix products) and bf16 on a CPU without AVX512-BF16/AMX, so the
autocast here is entered around an fp32 embedder, on any CPU. On a GPU, the same precisions run
natively and benchmarks/precision.py prints their agreement with that device's fp32 vectors.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from precision import sample_texts  # noqa: E402  benchmarks/precision.py: the same sample


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--sample", type=int, default=30, help="chunks (even: half of each)")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 row")
    parser.add_argument("--smoke", action="store_true", help="4 chunks of the demo dataset")
    args = parser.parse_args()
    if args.smoke:
        args.data, args.sample = Path("demo"), 4
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder

    texts = sample_texts(args.data, args.sample)
    embedder = SentenceTransformerEmbedder(device="cpu", precision="fp32")
    ids = embedder.model_inputs(texts)
    reference = embedder.embed_inputs(ids)
    rows: list[tuple[str, np.ndarray]] = []
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        # The fp32 embedder enters no autocast of its own, so this one applies.
        with torch.autocast(device_type="cpu", dtype=dtype):
            rows.append((f"{name} autocast", embedder.embed_inputs(ids)))
    if not args.no_int8:
        model = embedder._load()  # the loaded SentenceTransformer, quantised in place
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation notes for torch.ao
            torch.ao.quantization.quantize_dynamic(
                model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True
            )
        rows.append(("int8 dynamic", embedder.embed_inputs(ids)))

    print(f"{len(texts)} chunks, all-MiniLM-L6-v2 on the CPU (torch {torch.__version__})")
    print(f"{'vectors':>13} {'min cos':>10} {'mean cos':>10}   (to fp32)")
    for name, vectors in rows:
        cos = np.sum(vectors * reference, axis=1)
        print(f"{name:>13} {cos.min():10.7f} {cos.mean():10.7f}")


if __name__ == "__main__":
    main()
