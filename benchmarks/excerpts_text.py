"""``excerpts="text"`` against ``"position"``: recall per document (corpus) for every cell, and how
many excerpts have an identical copy elsewhere in their document.

Run a grid scored both ways first, e.g. with ``scoring: {excerpts: [position, text]}`` in the
experiment file, then:

    python benchmarks/excerpts_text.py RUN DATASET [--setting 'top_k(k=5)']
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("dataset", help="the dataset the run used (a folder or a built-in name)")
    parser.add_argument("--setting", default="top_k(k=5)")
    args = parser.parse_args()

    from chunkmark.chunkers import CHUNKERS
    from chunkmark.datasets import load_dataset
    from chunkmark.experiments.cell import dataset_texts, question_table
    from chunkmark.metrics.scoring import count_duplicated_excerpts, find_excerpt_copies

    dataset = load_dataset(args.dataset)
    questions = question_table(dataset)
    copies = find_excerpt_copies(dataset_texts(dataset), questions)
    dup = count_duplicated_excerpts(copies)
    n_excerpts = questions.mask.sum(axis=1)
    print(f"{dataset.name}: excerpts with an identical copy elsewhere in their document")
    print(
        f"{'document':<28}{'questions':>10}{'excerpts':>10}{'duplicated':>12}{'copies':>8}{'questions hit':>15}"
    )
    docs = [d.id for d in dataset.documents]
    for i, doc in enumerate(docs):
        at = questions.doc == i
        n_copies = int(copies.mask[at].sum())
        print(
            f"{doc:<28}{int(at.sum()):>10}{int(n_excerpts[at].sum()):>10}{int(dup[at].sum()):>12}"
            f"{n_copies:>8}{int((dup[at] > 0).sum()):>15}"
        )
    print(
        f"{'all':<28}{len(dup):>10}{int(n_excerpts.sum()):>10}{int(dup.sum()):>12}"
        f"{int(copies.mask.sum()):>8}{int((dup > 0).sum()):>15}"
    )

    table = pq.read_table(args.run / "results.parquet").to_pydict()
    keep = [i for i, r in enumerate(table["retrieval"]) if r == args.setting]
    if not keep:
        raise SystemExit(f"no rows for {args.setting!r} in {args.run}")
    recall: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for i in keep:
        key = (table["chunker"][i], table["doc_id"][i], table["excerpts"][i])
        recall[key].append(table["recall"][i])
        recall[(table["chunker"][i], "all", table["excerpts"][i])].append(table["recall"][i])
    chunkers = list(dict.fromkeys(table["chunker"][i] for i in keep))
    print(f"\nrecall at {args.setting}, percent: position -> text (difference)")
    print(f"{'chunker':<36}" + "".join(f"{d[:22]:>26}" for d in [*docs, "all"]))
    for c in chunkers:
        cells = []
        for d in [*docs, "all"]:
            pos = np.mean(recall[(c, d, "position")]) * 100
            txt = np.mean(recall[(c, d, "text")]) * 100
            cells.append(f"{pos:.1f} -> {txt:.1f} ({txt - pos:+.1f})")
        print(f"{CHUNKERS.short(c):<36}" + "".join(f"{x:>26}" for x in cells))


if __name__ == "__main__":
    main()
