"""Three real Re-DocRED documents through prepare -> chunk -> cooccurrence -> metrics, against
entity pairs, support containment and extraction recall worked out by hand from the raw
annotation (test_revised.json) and written here as literals.

The documents (index in test_revised.json: title, sentences, labels): 392 "Uptoi Village" (8, 7),
452 "Palestinian National Theatre" (3, 8), 331 "Wolfgang Thüne" (7, 12). They are written, in
that order, into a file of their own, so chunkmark calls them d000, d001, d002; with one
document per corpus file each text is ``TITLE\\n\\nBODY``. Entities are named by their index
in the raw ``vertexSet``, relations by their index in the raw ``labels`` (no label of these
documents repeats another or relates an entity to itself).
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.relations.extract import EXTRACTORS
from chunkmark.relations.metrics import (
    Chunking,
    Gold,
    match_records,
    metric_row,
    score_chunking,
)
from chunkmark.relations.model import RelationSet
from chunkmark.relations.redocred import prepare_redocred
from chunkmark.relations.runner import chunk_inputs

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared")).resolve()
SOURCE = (392, 452, 331)  # written in this order: chunkmark's d000, d001, d002
TITLES = {392: "Uptoi Village", 452: "Palestinian National Theatre", 331: "Wolfgang Thüne"}

# Gold unordered pairs (raw vertexSet indices), from each document's labels (h, t):
# 392: (14,2) (0,10) (0,2) (8,2) (0,1) (14,9) (10,2) -> 7 pairs.
# 452: (0,3) (5,3) (1,3) (6,10) (4,3) (9,10) (0,2) (0,2) -> 7 pairs (P17 and P131 share (0,2)).
# 331: (0,1) (0,2) (0,3) (0,14) (0,4) (12,2) (0,14) (0,9) (14,11) (3,0) (9,0) (14,11)
#      -> 8 pairs ((0,14), (0,3), (0,9), (11,14) twice each).  In all 7 + 7 + 8 = 22 pairs.
GOLD_PAIRS = {
    392: {(2, 14), (0, 10), (0, 2), (2, 8), (0, 1), (9, 14), (2, 10)},
    452: {(0, 3), (3, 5), (1, 3), (6, 10), (3, 4), (9, 10), (0, 2)},
    331: {(0, 1), (0, 2), (0, 3), (0, 14), (0, 4), (2, 12), (0, 9), (11, 14)},
}

# The chunk spans of each document text (TITLE\n\nBODY), as the chunkers cut them.
CHUNKS = {
    "sentences(n=1)": {
        # The title, then the raw sentences one by one...
        392: [
            (0, 13),
            (15, 68),
            (69, 136),
            (137, 228),
            (229, 274),
            (275, 348),
            (349, 506),
            (507, 627),
            (628, 697),
        ],
        # ...except that the raw sentence 2 of 452 ends `New York . " "`: the segmenter puts
        # its closing `""` (726-728) in a chunk of its own.
        452: [(0, 28), (30, 188), (189, 443), (444, 725), (726, 728)],
        331: [
            (0, 14),
            (16, 80),
            (81, 204),
            (205, 279),
            (280, 418),
            (419, 531),
            (532, 624),
            (625, 691),
        ],
    },
    "fixed_tokens(size=32)": {
        # 392: "...Georgia by the" | " US Army ..." -- 414 falls inside raw sentence 5.
        392: [(0, 106), (106, 245), (245, 414), (414, 572), (572, 697)],
        # 452: "...near New Orient" | " House. ..." -- cuts the mention New Orient House.
        452: [(0, 181), (181, 393), (393, 529), (529, 667), (667, 728)],
        # 331: "...He competed at" | " the 1972 ..."; "...Eberhard Gienger" | ". In 1977";
        # "...coach ... gymn" | "astics coach ...".
        331: [(0, 95), (95, 256), (256, 405), (405, 530), (530, 661), (661, 691)],
    },
}

# Support spans (character offsets of the document text; raw sentence ids in brackets):
#   392 (no evidence: all smallest windows): r0 [7] 628-697, r1 [1-5] 69-506, r2 [0] 15-68,
#       r3 [5] 349-506, r4 [0] 15-68, r5 [7] 628-697, r6 [5] 349-506.
#   452: r0 r1 r2 evidence [0] 30-188; r3 window [1-2] 189-728; r4 [0] 30-188;
#       r5 [2] 444-728; r6 r7 [0] 30-188.
#   331: r0 r1 evidence [0] 16-80; r2 [1] 81-204; r3 [5,6] 532-691; r4 [0,1] 16-204;
#       r5 window [0-4] 16-531; r6 [0-5] 16-624; r7 [0-4] 16-531; r8 [5] 532-624;
#       r9 [1] 81-204; r10 [0-4] 16-531; r11 [5] 532-624.
# Contained (1) when one chunk holds the whole support, per raw label:
CONTAINED = {
    "sentences(n=1)": {
        # single-sentence supports are contained; r1 spans five sentences.  6/7
        392: [1, 0, 1, 1, 1, 1, 1],
        # r3 spans two sentences; r5 is sentence 2 whole, 444-728, but the chunk ends at 725.
        # 6/8
        452: [1, 1, 1, 0, 1, 0, 1, 1],
        # r3, r4 (two sentences) and the windows r5, r6, r7, r10 are not.  6/12
        331: [1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1],
    },
    "fixed_tokens(size=32)": {
        # 628-697 in 572-697 (r0, r5); 15-68 in 0-106 (r2, r4); 349-506 crosses 414.  4/7
        392: [1, 0, 1, 0, 1, 1, 0],
        # 30-188 crosses 181, 189-728 and 444-728 cross 529 and 667.  0/8
        452: [0, 0, 0, 0, 0, 0, 0, 0],
        # 16-80 in 0-95 (r0, r1); 81-204 crosses 95 (r2, r9); 532-624 in 530-661 (r8, r11);
        # 532-691 crosses 661 (r3).  4/12
        331: [1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1],
    },
}
# Support containment: sentences (6 + 6 + 6) / 27 = 18/27; fixed_tokens (4 + 0 + 4) / 27 = 8/27.
CONTAINMENT = {"sentences(n=1)": Fraction(18, 27), "fixed_tokens(size=32)": Fraction(8, 27)}

# Entities named per chunk (an alias occurring whole-word, case-sensitive; raw indices), and
# the gold pairs named together in one chunk.
# sentences(n=1):
#   392: title {0 "Uptoi"}; s0 {0, 4 "Indian", 1, 2}; s1 {0, 3}; s2 {4, 5, 6}; s3 {}; s4 {7};
#        s5 {4, 8, 2, 9, 10} ("Georgia" alone and in "State of Georgia"); s6 {11, 12, 9, 13};
#        s7 {9, 14, 2}.  Found (2,14) (0,2) (2,8) (0,1) (9,14) (2,10); not (0,10): 10 is only
#        in s5, 0 is not.  6/7
#   452: title {0, 2}; s0 {0, 1, 2 ("Palestinian-owned"), 3 ("Jerusalem's"), 4, 5};
#        s1 {2, 6, 7}; s2 {8, 1, 9, 10, 11, 12}; `""` {}.  Found all but (6,10): 6 only in
#        s1, 10 only in s2.  6/7
#   331: title {0}; s0 {0, 1, 2}; s1 {3, 4, 2 ("German" in "East German")}; s2 {}; s3 {5, 6, 7};
#        s4 {8, 9, 10, 11, 12} ("Germany" is not "German"); s5 {13, 11, 14}; s6 {}.
#        Found (0,1) (0,2) (11,14); not (0,3) (0,14) (0,4) (2,12) (0,9).  3/8
# fixed_tokens(size=32):
#   392: c0 {0, 4, 1, 2}; c1 {3, 4, 5, 6}; c2 {7, 4, 8, 2}; c3 {9, 10, 2, 11, 12};
#        c4 {9, 13, 14, 2}.  Found (0,2) (0,1) (2,8) (2,10) (2,14) (9,14); not (0,10).  6/7
#   452: c0 {0, 2, 1, 3, 4} ("New Orient" only: 5 is cut); c1 {2, 6}; c2 {7, 8, 1, 9, 10};
#        c3 {11, 12}; c4 {10}.  Found (0,3) (1,3) (3,4) (9,10) (0,2); not (3,5), (6,10).  5/7
#   331: c0 {0, 1, 2}; c1 {3, 4, 2}; c2 {5, 6, 7}; c3 {7, 8, 9, 10, 11, 12};
#        c4 {13, 11, 14}; c5 {}.  Found (0,1) (0,2) (11,14).  3/8
FOUND = {
    "sentences(n=1)": {
        392: {(2, 14), (0, 2), (2, 8), (0, 1), (9, 14), (2, 10)},
        452: {(0, 3), (3, 5), (1, 3), (3, 4), (9, 10), (0, 2)},
        331: {(0, 1), (0, 2), (11, 14)},
    },
    "fixed_tokens(size=32)": {
        392: {(2, 14), (0, 2), (2, 8), (0, 1), (9, 14), (2, 10)},
        452: {(0, 3), (1, 3), (3, 4), (9, 10), (0, 2)},
        331: {(0, 1), (0, 2), (11, 14)},
    },
}
# Extraction recall: sentences (6 + 6 + 3) / 22 = 15/22; fixed_tokens (6 + 5 + 3) / 22 = 14/22.
RECALL = {"sentences(n=1)": Fraction(15, 22), "fixed_tokens(size=32)": Fraction(14, 22)}


@pytest.fixture(scope="module")
def raw_documents() -> dict[int, dict[str, object]]:
    path = SHARED / "datasets" / "redocred" / "test_revised.json"
    if not path.exists():
        pytest.skip(f"Re-DocRED not found at {path} (set CHUNKMARK_SHARED_DIR)")
    documents = json.loads(path.read_text(encoding="utf-8"))
    return {i: documents[i] for i in SOURCE}


@pytest.fixture(scope="module")
def relation_set(
    raw_documents: dict[int, dict[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> RelationSet:
    folder = tmp_path_factory.mktemp("redocred3")
    source = folder / "src" / "test_revised.json"
    source.parent.mkdir()
    source.write_text(json.dumps([raw_documents[i] for i in SOURCE]), encoding="utf-8")
    rel_info = SHARED / "datasets" / "redocred" / "rel_info.json"
    (source.parent / "rel_info.json").write_bytes(rel_info.read_bytes())
    mp = pytest.MonkeyPatch()
    mp.setenv("CHUNKMARK_CACHE_DIR", str(folder / "cache"))
    try:
        rs, _ = prepare_redocred(source, folder / "out", docs_per_corpus=1)
    finally:
        mp.undo()
    return rs


def raw_index(chunkmark_id: str) -> tuple[int, int]:
    """``d001e5`` (entity) or ``d001r5`` (relation) -> (452, 5): the raw document and the
    index within its ``vertexSet`` or ``labels``."""
    return SOURCE[int(chunkmark_id[1:4])], int(chunkmark_id[5:])


def test_gold_pairs_from_the_raw_labels(
    raw_documents: dict[int, dict[str, object]], relation_set: RelationSet
) -> None:
    for index, raw in raw_documents.items():
        assert raw["title"] == TITLES[index]
        labels = raw["labels"]
        assert isinstance(labels, list)
        pairs = {(min(lab["h"], lab["t"]), max(lab["h"], lab["t"])) for lab in labels}
        assert pairs == GOLD_PAIRS[index]
        assert len(labels) == len(CONTAINED["sentences(n=1)"][index])
    got: dict[int, set[tuple[int, int]]] = {i: set() for i in SOURCE}
    for relation in relation_set.relations:
        (index, h), (_, t) = raw_index(relation.head), raw_index(relation.tail)
        got[index].add((min(h, t), max(h, t)))
    assert got == GOLD_PAIRS


@pytest.mark.parametrize("spec", ["sentences(n=1)", "fixed_tokens(size=32)"])
def test_containment_and_recall_equal_the_hand_computed_values(
    spec: str, relation_set: RelationSet
) -> None:
    rs = relation_set
    chunker = CHUNKERS.build(spec)[0]
    doc_ids: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for n, document in enumerate(rs.dataset.documents):
        index = raw_index(rs.entities_by_doc[document.id][0].id)[0]
        assert document.text.startswith(TITLES[index] + "\n\n")
        spans = [(s.start, s.end) for s in chunker(document.text)]
        assert spans == CHUNKS[spec][index], (n, index)
        doc_ids += [document.id] * len(spans)
        starts += [s for s, _ in spans]
        ends += [e for _, e in spans]
    chunking = Chunking.of(doc_ids, starts, ends)
    gold = Gold.of(rs)
    extractor, _ = EXTRACTORS.build("cooccurrence", relations=rs.relations)
    records = match_records(rs, chunking, extractor.extract(chunk_inputs(rs, chunking)))
    scores = score_chunking(gold, chunking, records)
    assert scores.extraction is not None

    contained: dict[int, list[int]] = {i: [] for i in SOURCE}
    for relation, value in zip(rs.relations, scores.containment.tolist(), strict=True):
        doc, label = raw_index(relation.id)
        assert label == len(contained[doc])  # relations in raw label order
        contained[doc].append(int(value))
    assert contained == CONTAINED[spec]

    found: dict[int, set[tuple[int, int]]] = {i: set() for i in SOURCE}
    for pair, hit in zip(gold.pairs, scores.extraction.pair_found.tolist(), strict=True):
        if hit:
            (doc, a), (_, b) = (raw_index(e) for e in sorted(pair))
            found[doc].add((min(a, b), max(a, b)))
    assert found == FOUND[spec]

    row = metric_row("chunking", scores)
    assert row["support_containment_mean"] == pytest.approx(float(CONTAINMENT[spec]), abs=1e-12)
    assert row["recall_mean"] == pytest.approx(float(RECALL[spec]), abs=1e-12)
