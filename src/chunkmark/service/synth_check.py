"""``chunkmark synth check SYNTHETIC --against REAL``: before a grid is trusted to synthetic
questions, a small grid on both sets at once says whether they rank the cells like the real
ones (:mod:`chunkmark.report.sources`).

The two sets are merged into one dataset (their documents joined by id; a document both hold
must have the same text), every real question labelled ``metadata.source = "human"`` and every
synthetic one keeping its own source or ``"synthetic"``; the grid runs once over the merged set
(each cell's questions are then scored alike), and the check reads each source's ranking, Kendall's
tau of the synthetic questions against the real ones with its interval, and the real set's
split-half ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkmark.datasets import Dataset, Document, Question, load_dataset
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.report.sources import REFERENCE, SOURCE_KEY, SourceCheck, checks_for
from chunkmark.synth.options import SynthError

SYNTHETIC = "synthetic"
MERGED = "merged"
RUNS = "runs"


def merge(synthetic: Dataset, real: Dataset, name: str = MERGED) -> Dataset:
    """One dataset of both sets' questions, labelled by source (see the module docs); question
    ids are prefixed with ``human:`` and ``synthetic:`` so that they cannot clash."""
    documents: dict[str, Document] = {d.id: d for d in real.documents}
    for d in synthetic.documents:
        known = documents.get(d.id)
        if known is not None and known.text != d.text:
            raise SynthError(
                f"The document {d.id!r} differs between {synthetic.source or 'SYNTHETIC'} and "
                f"{real.source or 'REAL'}.",
                "Check two sets over the same documents (generate the synthetic questions from "
                "the real set's folder).",
            )
        documents.setdefault(d.id, d)
    questions = [_labelled(q, f"{REFERENCE}:", REFERENCE, force=True) for q in real.questions]
    questions += [_labelled(q, f"{SYNTHETIC}:", SYNTHETIC) for q in synthetic.questions]
    return Dataset(name, tuple(documents.values()), tuple(questions))


def _labelled(q: Question, prefix: str, source: str, *, force: bool = False) -> Question:
    meta: dict[str, Any] = dict(q.metadata)
    own = meta.get(SOURCE_KEY)
    if force or not isinstance(own, str) or not own.strip():
        meta[SOURCE_KEY] = source
    return Question(prefix + q.id, q.text, q.doc_id, q.excerpts, meta)


@dataclass(frozen=True)
class CheckResult:
    """The merged dataset's folder, the grid's folder and the check of each dataset."""

    dataset: Path
    runs: Path
    checks: list[SourceCheck]


def check_against(
    synthetic: str | Path,
    real: str | Path,
    out: Path,
    *,
    chunkers: Sequence[str],
    embedder: str,
    retrieval: Sequence[str] = (),
    cache_dir: Path | None = None,
) -> CheckResult:
    """Merge the two sets into ``out/merged``, run the grid (``chunkers`` x ``embedder`` at
    each ``retrieval`` setting, the run's defaults when empty) into ``out/runs`` and check the
    questions by source."""
    from chunkmark.experiments.config import run_config
    from chunkmark.experiments.runner import evaluate
    from chunkmark.report.recommendation import recommend

    merged = merge(load_dataset(synthetic), load_dataset(real))
    folder = out / MERGED
    if folder.exists() and any(folder.iterdir()):
        raise SynthError(
            f"{folder} already exists.", "Pass a new or empty folder to --out, or remove it."
        )
    write_jsonl(merged, folder)
    options: dict[str, Any] = {"retrieval": list(retrieval)} if retrieval else {}
    grid = {"dataset": str(folder), "chunkers": list(chunkers), "embedders": [embedder]}
    evaluate(
        run_config(
            None, {**grid, "out": out / RUNS, "cache_dir": cache_dir, "report": False, **options}
        )
    )
    data, found = recommend(out / RUNS)
    stored = load_dataset(folder)
    return CheckResult(folder, out / RUNS, checks_for(data, found, {stored.fingerprint: stored}))
