"""Answers scored against references, without a judge.

- :func:`normalize_answer`: SQuAD v1.1's normalisation: lowercase, punctuation removed (ASCII
  ``string.punctuation``), the articles ``a``, ``an``, ``the`` removed as whole words, runs of
  whitespace collapsed to one space.
- :func:`token_f1`: the harmonic mean of precision and recall of the normalised answer's tokens
  (split on whitespace) against a reference's, counting repeated tokens as a multiset; 0 when
  they share no token (an empty answer included).
- :func:`exact_match`: 1 when the normalised strings are equal, else 0.
- Against several references (:func:`best_f1`, :func:`best_exact_match`), the maximum over
  them, as SQuAD's evaluation takes it.

:func:`parse_label` reads a class label out of a free-text answer: the allowed label the answer
names (normalised as above), the earliest when it names several; else the allowed label closest
to the answer's first line (:mod:`difflib`, ratio at least 0.8); else None (unparsed).
"""

from __future__ import annotations

import difflib
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from chunkmark.datasets.model import Dataset, Question

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
LABEL_MATCH_RATIO = 0.8


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation (see the module docs)."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def token_f1(prediction: str, reference: str) -> float:
    """Token F1 of ``prediction`` against one ``reference`` (module docs)."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def best_f1(prediction: str, references: Sequence[str]) -> float:
    """The highest :func:`token_f1` over ``references`` (NaN when there is none)."""
    return max((token_f1(prediction, r) for r in references), default=float("nan"))


def best_exact_match(prediction: str, references: Sequence[str]) -> float:
    """The highest :func:`exact_match` over ``references`` (NaN when there is none)."""
    return max((exact_match(prediction, r) for r in references), default=float("nan"))


def parse_label(answer: str, labels: Sequence[str]) -> str | None:
    """The allowed label ``answer`` chooses, or None (module docs)."""
    said = normalize_answer(answer)
    if not said or not labels:
        return None
    found: list[tuple[int, int, str]] = []
    for label in labels:
        wanted = normalize_answer(label)
        if not wanted:
            continue
        match = re.search(rf"(?<!\S){re.escape(wanted)}(?!\S)", said)
        if match is not None:
            found.append((match.start(), -len(wanted), label))
    if found:
        return min(found)[2]
    first = normalize_answer(answer.strip().splitlines()[0]) if answer.strip() else ""
    by_form = {normalize_answer(label): label for label in labels}
    close = difflib.get_close_matches(first, list(by_form), n=1, cutoff=LABEL_MATCH_RATIO)
    return by_form[close[0]] if close else None


def references_of(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """A question's reference answers: ``metadata["answers"]`` (a list of strings, or one
    string); blank ones are dropped."""
    found = metadata.get("answers")
    if isinstance(found, str):
        found = [found]
    if not isinstance(found, (list, tuple)):
        return ()
    return tuple(str(a) for a in found if isinstance(a, (str, int, float)) and str(a).strip())


def label_of(metadata: Mapping[str, Any]) -> str | None:
    """A question's class label (``metadata["label"]``), or None."""
    label = metadata.get("label")
    return str(label) if isinstance(label, str) and label.strip() else None


def allowed_labels(metadata: Mapping[str, Any], dataset_labels: Sequence[str]) -> tuple[str, ...]:
    """The labels a question may be answered with: its own ``metadata["labels"]`` when given,
    else ``dataset_labels`` (every label the dataset's questions carry)."""
    own = metadata.get("labels")
    if isinstance(own, (list, tuple)) and own:
        return tuple(dict.fromkeys(str(x) for x in own))
    return tuple(dataset_labels)


def has_reference(q: Question) -> bool:
    """Whether the question has reference answers or a label (what answering scores against)."""
    return bool(references_of(q.metadata)) or label_of(q.metadata) is not None


def select_questions(dataset: Dataset, limit: int | None, seed: int) -> list[Question]:
    """The questions answered: those with reference answers or a label, in dataset order; with
    ``limit``, a seeded sample of that many (kept in dataset order)."""
    found = [q for q in dataset.questions if has_reference(q)]
    if limit is None or limit >= len(found):
        return found
    rng = np.random.default_rng(seed)
    keep = set(rng.choice(len(found), size=limit, replace=False).tolist())
    return [q for i, q in enumerate(found) if i in keep]


def dataset_labels(dataset: Dataset) -> tuple[str, ...]:
    """Every label the dataset's questions carry, sorted (the labels a question without its own
    ``metadata["labels"]`` may choose from)."""
    found = {label_of(q.metadata) for q in dataset.questions}
    return tuple(sorted(label for label in found if label is not None))
