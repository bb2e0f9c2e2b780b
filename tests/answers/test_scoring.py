"""Token F1, exact match and label parsing.

The reference scorer below is written from the published definition of SQuAD v1.1's official
evaluation (``evaluate-v1.1.py``: ``normalize_answer`` lowercases, removes every character of
``string.punctuation``, removes the words a/an/the, and joins the whitespace-split tokens with one
space; ``f1_score`` counts the tokens common to both as a multiset, 0 when none, else
2PR/(P+R); ``exact_match_score`` compares normalised strings; ``metric_max_over_ground_truths``
takes the maximum over references). It is re-derived here, not imported, and its pieces are
written differently on purpose (a regex over punctuation, a sort-based multiset count).
"""

from __future__ import annotations

import math
import random
import re
import string

import pytest

from chunkmark.answers.scoring import (
    allowed_labels,
    best_exact_match,
    best_f1,
    exact_match,
    label_of,
    normalize_answer,
    parse_label,
    references_of,
    token_f1,
)

_PUNCT = re.compile("[" + re.escape(string.punctuation) + "]")


def ref_normalize(s: str) -> str:
    s = _PUNCT.sub("", s.lower())
    words = [w for w in s.split() if w not in ("a", "an", "the")]
    return " ".join(words)


def ref_f1(prediction: str, truth: str) -> float:
    p = sorted(ref_normalize(prediction).split())
    t = sorted(ref_normalize(truth).split())
    i = j = same = 0
    while i < len(p) and j < len(t):  # multiset intersection of two sorted lists
        if p[i] == t[j]:
            same, i, j = same + 1, i + 1, j + 1
        elif p[i] < t[j]:
            i += 1
        else:
            j += 1
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(t)
    return (2 * precision * recall) / (precision + recall)


def ref_max(metric, prediction: str, truths: list[str]) -> float:  # type: ignore[no-untyped-def]
    return max(metric(prediction, t) for t in truths)


def test_normalisation_by_hand() -> None:
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert normalize_answer("An apple a day") == "apple day"
    # articles only as whole words; punctuation removed before articles are
    assert normalize_answer("Theatre and anthem") == "theatre and anthem"
    assert normalize_answer("the-end") == "theend"
    assert normalize_answer("  ") == ""


def test_f1_and_exact_match_by_hand() -> None:
    # prediction "golden hair" vs "her golden hair": common 2, P = 2/2, R = 2/3 -> F1 = 0.8
    assert token_f1("golden hair", "her golden hair") == pytest.approx(0.8)
    # repeated tokens count as a multiset: "the the cat cat" -> [cat, cat]; vs "cat": common 1,
    # P = 1/2, R = 1 -> 2/3
    assert token_f1("the the cat cat", "cat") == pytest.approx(2 / 3)
    assert token_f1("Paris", "London") == 0.0
    assert token_f1("", "London") == 0.0
    assert token_f1("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel", "eiffel tower") == 0.0
    # max over references
    assert best_f1("golden hair", ["silver", "golden hair"]) == 1.0
    assert best_exact_match("a golden hair", ["Golden hair!", "x"]) == 1.0
    assert math.isnan(best_f1("x", []))


CASES = [
    ("Mother-to-child transmission", "Mother-to-child transmission (MTCT) is the main cause"),
    ("an old woman and a cat", "The old woman, the cat."),
    ("He was very, very sad", "very sad"),
    ("1,000 people", "1000 people"),
    ("¿Qué?", "que"),
    ("The", "a"),
    ("unanswerable", "She was so beautiful."),
]


def test_matches_the_squad_reference_on_hand_picked_pairs() -> None:
    for prediction, truth in CASES:
        assert normalize_answer(prediction) == ref_normalize(prediction)
        assert token_f1(prediction, truth) == pytest.approx(ref_f1(prediction, truth))
        assert exact_match(prediction, truth) == float(
            ref_normalize(prediction) == ref_normalize(truth)
        )


def test_matches_the_squad_reference_on_random_pairs() -> None:
    rng = random.Random(7)
    vocab = ["the", "a", "an", "cat", "Cat,", "dog.", "sat", "on", "mat", "(mat)", "it's", "-", "x"]
    for _ in range(500):
        pred = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 6)))
        truths = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6))) for _ in range(3)]
        assert best_f1(pred, truths) == pytest.approx(ref_max(ref_f1, pred, truths))
        em = ref_max(lambda p, t: float(ref_normalize(p) == ref_normalize(t)), pred, truths)
        assert best_exact_match(pred, truths) == em


LABELS = ["significantly increased", "significantly decreased", "no significant difference"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("significantly increased", "significantly increased"),
        ("Significantly Decreased.", "significantly decreased"),
        ("Label: no significant difference", "no significant difference"),
        ("The intervention significantly increased the outcome.", "significantly increased"),
        ("- no significant difference\n(because the p-value was 0.4)", "no significant difference"),
        # earliest named label wins
        ("significantly decreased, not significantly increased", "significantly decreased"),
        # a close misspelling on the first line
        ("signifcantly increased", "significantly increased"),
        ("I cannot tell.", None),
        ("", None),
    ],
)
def test_parse_label(answer: str, expected: str | None) -> None:
    assert parse_label(answer, LABELS) == expected


def test_metadata_conventions() -> None:
    assert references_of({"answers": ["a", " ", "b"]}) == ("a", "b")
    assert references_of({"answers": "one"}) == ("one",)
    assert references_of({}) == ()
    assert label_of({"label": "yes"}) == "yes"
    assert label_of({"label": 3}) is None
    assert allowed_labels({"labels": ["x", "y", "x"]}, ["a"]) == ("x", "y")
    assert allowed_labels({}, ["a", "b"]) == ("a", "b")
