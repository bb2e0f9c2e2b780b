"""A small suite folder written the way ``chunkmark suite run`` writes one: ``suite.json`` and
one real ``chunkmark.evaluate`` results folder per set (fake embedders, so it takes seconds).

Three sets: the built-in demo (searched over the corpus), three FairytaleQA stories converted
from the shared raw copy (searched within each question's document), and a corpus stitched
from the demo's documents with its topic boundaries recorded (over the corpus).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import chunkmark
from chunkmark.datasets import load_demo
from chunkmark.datasets.stitch import stitch, write_stitched
from chunkmark.datasets.suite import Sample, convert_set

CHUNKERS = (
    "fixed_tokens(size=64, overlap=0)",
    "fixed_tokens(size=128, overlap=0)",
    "sentences(n=3)",
)
EMBEDDERS = ("fake()", "fake(seed=1)")
SETTINGS: tuple[dict[str, Any], ...] = (
    {"label": "top_k(5)", "corpus": "top_k(k=5)", "document": "in_document(k=5)", "tokens": None},
    {
        "label": "dense @256",
        "corpus": "token_budget(tokens=256)",
        "document": "token_budget(tokens=256, ranker='in_document()')",
        "tokens": 256,
    },
    {
        "label": "bm25 @256",
        "corpus": "token_budget(tokens=256, ranker='bm25()')",
        "document": "token_budget(tokens=256, ranker=\"in_document(ranker='bm25()')\")",
        "tokens": 256,
    },
    {
        "label": "dense @512",
        "corpus": "token_budget(tokens=512)",
        "document": "token_budget(tokens=512, ranker='in_document()')",
        "tokens": 512,
    },
)


def write_suite(root: Path, raw_suite: Path, cache: Path) -> Path:
    """Write the suite folder under ``root``; returns it."""
    data = root / "data"
    fairytale, _ = convert_set(
        "fairytaleqa", raw_suite / "fairytaleqa", Sample(docs=3, seed=0), data / "fairytaleqa"
    )
    stitched = stitch([load_demo()], docs_per_file=4, files=4, segment_chars=(300, 900), seed=0)
    write_stitched(stitched, data / "stitched", layout="jsonl")
    sets = [
        ("demo", "demo", "corpus", 4, 64),
        ("fairytaleqa", str(data / "fairytaleqa"), "document", 3, len(fairytale.questions)),
        (
            "stitched",
            str(data / "stitched"),
            "corpus",
            len(stitched.dataset.documents),
            len(stitched.dataset.questions),
        ),
    ]
    suite_dir = root / "suite"
    for name, dataset, scope, _, _ in sets:
        chunkmark.evaluate(
            datasets=[dataset],
            chunkers=list(CHUNKERS),
            embedders=list(EMBEDDERS),
            retrieval=[s[scope] for s in SETTINGS],
            out=suite_dir / name,
            report=False,
            cache_dir=cache,
        )
    suite = {
        "format": 1,
        "sets": [
            {"name": n, "folder": n, "scope": s, "dataset": d, "documents": docs, "questions": q}
            for n, d, s, docs, q in sets
        ],
        "settings": list(SETTINGS),
        "chunkers": list(CHUNKERS),
        "embedders": list(EMBEDDERS),
    }
    (suite_dir / "suite.json").write_text(json.dumps(suite, indent=1), encoding="utf-8")
    return suite_dir


if __name__ == "__main__":
    import sys

    print(write_suite(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
