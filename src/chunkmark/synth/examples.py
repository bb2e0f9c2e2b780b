"""Real questions that steer a generation (``synth generate --examples FILE``): read from a
questions file (JSONL as ``chunkmark label`` and the dataset folders write it, with or without
evidence) or plain text (one question a line); a few of them shown in each prompt as examples
of style (never to be asked again); the length of the evidence the LLM cites, drawn from the
examples' own evidence lengths (or from ``--evidence sentence|passage|section``); the mix of
question styles, taken from the examples where they say or show it; the words questions start
with (:func:`target_form`); and, with ``--pick examples``, the evidence each example was asked of
(:func:`evidence_span`), whose share of questions that single it out the run keeps
(:mod:`chunkmark.synth.specific`).

Everything here is drawn from the seed and the slot, so a rerun builds the same prompts.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkmark.synth.options import STYLES, SynthError

# Example questions shown in one prompt (drawn per window from all of them).
SHOWN_EXAMPLES = 5

# ``--evidence`` without examples: the lengths (characters) a passage of each size is asked to
# have, low to high, drawn uniformly between them.
EVIDENCE_SIZES: dict[str, tuple[int, int]] = {
    "sentence": (60, 300),
    "passage": (300, 1200),
    "section": (1200, 4000),
}
# An answer's cited evidence shorter than this share of the length asked for is rejected as
# too short (the LLM is told the length it gave and the length asked).
SHORTEST_SHARE = 0.3
# Names a questions file may give a question's kind (``metadata.style`` or ``metadata.type``),
# mapped to the generation's styles.
KINDS = {
    "factoid": "factoid",
    "single": "factoid",
    "single-hop": "factoid",
    "multi": "multi",
    "multi-hop": "multi",
    "multihop": "multi",
    "comparison": "multi",
    "paraphrased": "paraphrased",
}
STYLE_DEAL = 20  # the styles of a steered run: this many dealt by the examples' shares


@dataclass(frozen=True)
class Example:
    """One real question: its text, the lengths of its evidence passages (characters; empty
    when the file gives none) and its style when the file says or shows it."""

    question: str
    evidence: tuple[int, ...] = ()
    style: str | None = None
    doc_id: str | None = None  # the document it was asked of, when the file says
    # the excerpts the file gives as character offsets (start, end) of that document
    spans: tuple[tuple[int, int], ...] = ()


def read_examples(path: str | Path) -> tuple[Example, ...]:
    """The examples of ``path``: JSONL (a line a JSON object with ``question``, optional
    ``excerpts`` with ``text`` or ``start``/``end``, optional ``metadata.style``/``type``) when
    its first line is a JSON object, else one question a line. A bad line raises
    :class:`SynthError` naming the file, the line and the fix."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SynthError(
            f"Cannot read the examples file {file}: {exc}.",
            "Pass a UTF-8 file: questions one a line, or JSONL with a 'question' key.",
        ) from None
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise SynthError(f"The examples file {file} holds no question.", "Write one per line.")
    if not lines[0][1].startswith("{"):
        return tuple(Example(" ".join(line.split())) for _, line in lines)
    return tuple(_example_of(file, n, line) for n, line in lines)


def _example_of(file: Path, number: int, line: str) -> Example:
    where = f"{file} line {number}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SynthError(
            f"{where} is not JSON ({exc.msg}).",
            "Write one JSON object a line, or a plain text file of one question a line.",
        ) from None
    question = row.get("question") if isinstance(row, dict) else None
    if not isinstance(question, str) or not question.strip():
        raise SynthError(
            f"{where} has no 'question' text.", 'Give each line a "question": "..." key.'
        )
    lengths = []
    spans = []
    excerpts = row.get("excerpts") or []
    if not isinstance(excerpts, list):
        raise SynthError(f"{where}: 'excerpts' is not a list.", "Give excerpts as a list.")
    for e in excerpts:
        length = _excerpt_length(e)
        if length is None:
            raise SynthError(
                f"{where}: an excerpt has neither 'text' nor integer 'start' and 'end'.",
                'Give each excerpt "text" or "start" and "end" (characters).',
            )
        lengths.append(length)
        start, end = e.get("start"), e.get("end")
        if isinstance(start, int) and isinstance(end, int) and end > start:
            spans.append((start, end))
    meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    kind = meta.get("style") or meta.get("type") or row.get("style") or row.get("type")
    style = KINDS.get(str(kind).lower()) if kind is not None else None
    if style is None and len(lengths) >= 2:
        style = "multi"
    doc = row.get("doc_id")
    return Example(
        " ".join(question.split()),
        tuple(lengths),
        style,
        doc if isinstance(doc, str) else None,
        tuple(spans),
    )


def _excerpt_length(e: Any) -> int | None:
    if not isinstance(e, dict):
        return None
    if isinstance(e.get("text"), str):
        return len(e["text"])
    start, end = e.get("start"), e.get("end")
    if isinstance(start, int) and isinstance(end, int) and end > start:
        return end - start
    return None


def evidence_span(example: Example) -> tuple[int, int] | None:
    """The longest excerpt of ``example`` given as offsets (the first of equals), None when
    the file gives none: the passage a question's specificity is measured on."""
    if not example.spans:
        return None
    return max(example.spans, key=lambda s: (s[1] - s[0], -s[0]))


def evidence_lengths(examples: Sequence[Example]) -> tuple[int, ...]:
    """Every evidence length of the examples, sorted (the distribution a target is drawn
    from); a multi-passage example counts each passage."""
    return tuple(sorted(n for e in examples for n in e.evidence))


def styles_of(examples: Sequence[Example]) -> tuple[str, ...] | None:
    """The styles to deal, in the examples' shares (:data:`STYLE_DEAL` of them, largest
    remainders), when at least one example has a style; else None. Examples without a style
    count as factoid."""
    if not any(e.style for e in examples):
        return None
    counts = Counter(e.style or "factoid" for e in examples)
    total = sum(counts.values())
    shares = {s: STYLE_DEAL * counts[s] / total for s in STYLES if counts[s]}
    dealt = {s: int(v) for s, v in shares.items()}
    for s in sorted(shares, key=lambda s: -(shares[s] - dealt[s]))[
        : STYLE_DEAL - sum(dealt.values())
    ]:
        dealt[s] += 1
    return tuple(s for s in STYLES for _ in range(dealt.get(s, 0)))


def target_length(lengths: Sequence[int], evidence: str | None, seed: int, key: str) -> int | None:
    """The evidence length (characters) asked for one window: drawn from the examples'
    evidence ``lengths`` (an empirical draw), else uniformly within the ``evidence`` size,
    else None (no length asked). ``key`` names the window, so its questions share a draw."""
    rng = random.Random(f"chunkmark-synth-evidence:{seed}:{key}")
    if lengths:
        return int(lengths[rng.randrange(len(lengths))])
    if evidence is not None:
        low, high = EVIDENCE_SIZES[evidence]
        return rng.randint(low, high)
    return None


# The words a question may start with that say what kind of answer it wants; an example
# starting otherwise ("Is ...", "Summarize ...", "In what ...") gives no form.
FORMS = ("what", "why", "how", "who", "where", "when", "which")


def question_form(question: str) -> str | None:
    """The interrogative ``question`` starts with (one of :data:`FORMS`), else None."""
    words = question.strip().split(maxsplit=1)
    first = words[0].lower().strip("\"'(") if words else ""
    return first if first in FORMS else None


def target_form(examples: Sequence[str], seed: int, key: str) -> str | None:
    """The word one window's questions are asked to start with: drawn from the examples'
    :func:`question_form` (an empirical draw, so a run asks "why" about as often as its
    examples do), None when no example has one. ``key`` names the window."""
    forms = [f for f in (question_form(q) for q in examples) if f is not None]
    if not forms:
        return None
    rng = random.Random(f"chunkmark-synth-form:{seed}:{key}")
    return forms[rng.randrange(len(forms))]


def elsewhere(examples: Sequence[str], docs: Sequence[str | None], doc_id: str) -> list[str]:
    """The examples asked of other documents than ``doc_id`` (``docs`` gives each example's
    document, None when unknown), when there are any; else all of them. A small model shown a
    real question about the passage in front of it asks that question again."""
    other = [e for e, d in zip(examples, docs, strict=False) if d is not None and d != doc_id]
    return other or list(examples)


def shown(examples: Sequence[str], seed: int, key: str, count: int = SHOWN_EXAMPLES) -> list[str]:
    """The examples shown in one window's prompts: ``count`` drawn from all of them by the seed
    and the window (all when there are no more)."""
    if len(examples) <= count:
        return list(examples)
    rng = random.Random(f"chunkmark-synth-examples:{seed}:{key}")
    return [examples[i] for i in sorted(rng.sample(range(len(examples)), count))]
