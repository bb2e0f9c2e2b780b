"""Entity matching: the normalisation table, the tie rule, counters, and the embedding fallback."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.relations.matching import EntityMatcher, natural_key, normalise
from chunkmark.relations.model import Entity
from chunkmark.spans import Span


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Marie Curie", "marie curie"),
        ("  MARIE   CURIE ", "marie curie"),
        ("Marie\tCurie\n", "marie curie"),
        ("The Beatles", "beatles"),
        ("the  beatles", "beatles"),
        ("A Tribe Called Quest", "tribe called quest"),
        ("An Post", "post"),
        ("The", "the"),  # an article alone is a name
        ("Theodore", "theodore"),  # only a whole leading word
        ("Anna", "anna"),
        ("U.S.", "us"),
        ("The U.S.", "us"),
        ("Jean-Paul Sartre", "jeanpaul sartre"),
        ("O'Brien", "obrien"),
        ("“Quoted”", "quoted"),
        ("Straße", "strasse"),  # case folding
        ("ＦＵＬＬ　ｗｉｄｔｈ", "full width"),  # NFKC
        ("ﬁle", "file"),  # NFKC ligature
        ("AT&T", "att"),  # & is punctuation (Po)
        ("C++", "c++"),  # + is a symbol (Sm), kept
        ("$5", "$5"),
        ("...", ""),
        ("", ""),
        ("the ...", "the"),
    ],
)
def test_normalise(name: str, expected: str) -> None:
    assert normalise(name) == expected


def test_natural_id_order() -> None:
    ids = ["e10", "e2", "e1", "d2e1", "d10e0", "e02"]
    assert sorted(ids, key=natural_key) == ["d2e1", "d10e0", "e1", "e02", "e2", "e10"]


def entity(id_: str, *aliases: str, mentions: Sequence[tuple[int, int]] = ()) -> Entity:
    return Entity(id_, "doc", "PER", aliases, tuple(Span(s, e) for s, e in mentions))


def test_exact_alias_match_and_counters() -> None:
    matcher = EntityMatcher([entity("e1", "Marie Curie", "Curie"), entity("e2", "Warsaw")])
    assert matcher.match("marie curie", 0, 10) == "e1"
    assert matcher.match("CURIE", 0, 10) == "e1"
    assert matcher.match("The Warsaw", 0, 10) == "e2"
    assert matcher.match("Paris", 0, 10) is None
    assert matcher.match("...", 0, 10) is None
    assert matcher.counts() == {"matched": 3, "fallback": 0, "unmatched": 2, "ties": 0}
    assert matcher.unmatched_names == {"Paris": 1, "...": 1}


def test_tie_goes_to_the_entity_mentioned_inside_the_chunk() -> None:
    # "Washington" names both; e10 is mentioned in [100, 110), e2 in [0, 10).
    matcher = EntityMatcher(
        [
            entity("e10", "Washington", "George Washington", mentions=[(100, 110)]),
            entity("e2", "Washington", "Washington State", mentions=[(0, 10)]),
        ]
    )
    assert matcher.match("Washington", 90, 200) == "e10"
    assert matcher.match("Washington", 0, 50) == "e2"
    # a mention only partly inside the chunk does not count as inside
    assert matcher.match("Washington", 105, 200) == "e2"
    # neither mentioned inside: the lowest id in natural order (e2 < e10)
    assert matcher.match("Washington", 300, 400) == "e2"
    assert matcher.ties == 4
    assert matcher.match("George Washington", 0, 50) == "e10"  # no tie
    assert matcher.ties == 4


def test_tie_with_both_inside_goes_to_the_lowest_id() -> None:
    matcher = EntityMatcher(
        [
            entity("e3", "Paris", mentions=[(5, 10)]),
            entity("e1", "paris", mentions=[(20, 25)]),
        ]
    )
    assert matcher.match("PARIS", 0, 30) == "e1"


def test_one_document_only() -> None:
    with pytest.raises(ValueError, match="one document"):
        EntityMatcher([entity("e1", "A"), Entity("e2", "other", "PER", ("B",))])


class ScriptedEmbedder:
    """Vectors given per text (unit vectors), and a log of what was embedded."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.calls: list[list[str]] = []

    @property
    def name(self) -> str:
        return "scripted"

    def identity(self) -> dict[str, Any]:
        return {"embedder": "scripted"}

    def embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.asarray([self.vectors[t] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_fallback_with_the_fake_embedder() -> None:
    entities = [entity("e1", "Marie Curie"), entity("e2", "Warsaw")]
    plain = EntityMatcher(entities)
    assert plain.match("Curie Marie", 0, 10) is None
    matcher = EntityMatcher(entities, embedder=FakeEmbedder(), threshold=0.85)
    assert matcher.match("Curie Marie", 0, 10) == "e1"  # same words: similarity 1
    assert matcher.match("Pierre Curie", 0, 10) is None  # shares one word: below 0.85
    assert matcher.match("Warsaw", 0, 10) == "e2"  # exact, no embedding needed
    assert matcher.counts() == {"matched": 1, "fallback": 1, "unmatched": 1, "ties": 0}


def test_fallback_threshold_and_ties_between_aliases() -> None:
    embedder = ScriptedEmbedder(
        {
            "Alpha": [1, 0, 0],
            "Beta": [0, 1, 0],
            "Gamma": [0, 1, 0],  # the same vector as Beta: Beta comes first (e1 before e2)
            "near alpha": [0.9, 0.1, 0],  # cosine 0.994 with Alpha
            "between": [0, 1, 0.01],  # equally close to Beta and Gamma
            "far": [0.5, 0.5, 0.7],  # cosine 0.5 with Alpha: below the threshold
        }
    )
    matcher = EntityMatcher(
        [entity("e2", "Gamma"), entity("e1", "Alpha", "Beta")], embedder=embedder, threshold=0.9
    )
    assert matcher.match("near alpha", 0, 1) == "e1"
    assert matcher.match("between", 0, 1) == "e1"
    assert matcher.match("far", 0, 1) is None
    assert matcher.match("near alpha", 0, 1) == "e1"  # remembered: not embedded again
    assert embedder.calls[0] == ["Alpha", "Beta", "Gamma"]  # aliases once, in entity order
    assert len(embedder.calls) == 4
    assert matcher.counts() == {"matched": 0, "fallback": 3, "unmatched": 1, "ties": 0}


def test_fallback_is_off_by_default_and_threshold_checked() -> None:
    assert EntityMatcher([entity("e1", "A")]).embedder is None
    with pytest.raises(ValueError, match="threshold"):
        EntityMatcher([entity("e1", "A")], embedder=FakeEmbedder(), threshold=1.5)
