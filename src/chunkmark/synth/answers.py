"""Checking one answer of the LLM: its JSON, the number of passages for the style, every
excerpt placed exactly in the document (:mod:`chunkmark.synth.excerpts`), and the checks on the
whole question (passages that collapse into one, a paraphrased question copying its passage,
a repeat); and what became of a slot (:class:`SlotOutcome`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from chunkmark.datasets import Document
from chunkmark.spans import Span
from chunkmark.synth import excerpts as ex
from chunkmark.synth.examples import SHORTEST_SHARE
from chunkmark.synth.plan import Slot
from chunkmark.synth.prompt import STYLE_PASSAGES, Prompt
from chunkmark.synth.specific import first_like, most_specific

# Why answers were rejected (one reason per rejected answer, its first problem).
MALFORMED = "malformed"
EMPTY_ANSWER = "empty_answer"
COLLAPSED = "collapsed"
COPIED = "copied"
DUPLICATE = "duplicate"
REJECTIONS = (
    MALFORMED,
    EMPTY_ANSWER,
    ex.EMPTY,
    ex.TOO_SHORT,
    ex.NOT_FOUND,
    ex.BAD_RANGE,
    COLLAPSED,
    COPIED,
    DUPLICATE,
)
# Where a duplicate was caught (each also counts as one DUPLICATE rejection): the same words as
# a question already accepted for the document, nearly the same content words, or one of the
# example questions asked again.
DUPLICATE_STAGES = ("duplicate_exact", "duplicate_near", "duplicate_example")
# Near-duplicates: questions whose content words (their first NEAR_PREFIX letters, so that
# "washed" meets "washing") overlap by at least NEAR_SHARE (Jaccard), each with at least
# NEAR_WORDS of them.
NEAR_SHARE = 0.7
NEAR_PREFIX = 4
NEAR_WORDS = 2
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "she",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


class PassagesAnswer(BaseModel):
    """The answer in the exact mode."""

    model_config = ConfigDict(extra="forbid")

    question: str
    passages: list[str]


class QuestionsAnswer(BaseModel):
    """The answer in the given mode: candidate questions alone (their passage was chosen for
    them), in the order the LLM wrote them. A lone ``{"question": ...}`` (a client without a
    JSON schema) is one candidate."""

    model_config = ConfigDict(extra="forbid")

    questions: list[str]

    @model_validator(mode="before")
    @classmethod
    def _one_question(cls, data: Any) -> Any:
        if isinstance(data, dict) and set(data) == {"question"}:
            return {"questions": [data["question"]]}
        return data


class PiecesAnswer(BaseModel):
    """The answer in the approximate mode: ranges of 1-based piece numbers."""

    model_config = ConfigDict(extra="forbid")

    question: str
    pieces: list[list[int]]


@dataclass(frozen=True)
class Excerpt:
    """An accepted excerpt: its span, how it was placed, whether its text occurs elsewhere."""

    span: Span
    method: str
    ambiguous: bool = False
    pieces: tuple[int, int] | None = None


@dataclass(frozen=True)
class Verdict:
    """What an answer gave: a question and its excerpts, or the reason (one of
    :data:`REJECTIONS`) and a sentence for the LLM saying what was wrong (a duplicate keeps
    the question it repeated)."""

    question: str = ""
    excerpts: tuple[Excerpt, ...] = ()
    reason: str | None = None
    detail: str = ""
    stage: str | None = None  # for a duplicate, one of DUPLICATE_STAGES
    # given mode: the answer's candidates rejected before this one (all of them when none
    # passed; with ``pick="specific"``, every rejected one), each with its own reason and stage
    passed_over: tuple[Verdict, ...] = ()
    # given mode, ``pick="specific"``: the candidates that passed but were not kept
    unchosen: tuple[str, ...] = ()


def reject(reason: str, detail: str) -> Verdict:
    """A verdict rejecting an answer for ``reason``, with ``detail`` for the LLM."""
    return Verdict(reason=reason, detail=detail)


def parse_json(answer: str) -> Any:
    """The JSON object in an answer: the whole answer, else inside a code fence, else from its
    first ``{``. Raises ValueError when there is none."""
    text = answer.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    start = text.find("{")
    if start < 0:
        raise ValueError("it holds no JSON object")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not valid JSON ({exc.msg} at character {exc.pos})") from None
    return value


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "the answer"
    return f"{where}: {error['msg']}"


def judge(
    answer: str,
    doc: Document,
    slot: Slot,
    prompt: Prompt,
    *,
    mode: str,
    asked: Sequence[str] = (),
    min_chars: int = 20,
    normalised: ex.NormalisedText | None = None,
    examples: Sequence[str] = (),
    evidence_chars: int | None = None,
    pick: str = "first",
    specific: bool = True,
) -> Verdict:
    """Check one answer: its JSON, the number of passages for the style, every excerpt, the
    evidence's length when one was asked for (at least :data:`SHORTEST_SHARE` of
    ``evidence_chars``), and the checks on the whole question (collapsed, copied, repeated:
    of an ``asked`` question or of one of the ``examples``). In the given mode the excerpt is
    the slot's window, the passage the question was written for, and ``pick`` (with
    ``specific``) says which of the candidates that pass is kept (:func:`_pick_candidate`)."""
    model: type[PassagesAnswer | PiecesAnswer | QuestionsAnswer] = PiecesAnswer
    if mode in ("exact", "given"):
        model = PassagesAnswer if mode == "exact" else QuestionsAnswer
    try:
        parsed = model.model_validate(parse_json(answer))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError too
        detail = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        return reject(MALFORMED, f"it is not the JSON object asked for ({detail})")
    if isinstance(parsed, QuestionsAnswer):
        return _pick_candidate(parsed.questions, doc, slot, asked, examples, pick, specific)
    question = " ".join(parsed.question.split())
    if not question:
        return reject(MALFORMED, "the question is empty")
    cited = parsed.passages if isinstance(parsed, PassagesAnswer) else parsed.pieces
    low, high = STYLE_PASSAGES[slot.style]
    if not low <= len(cited) <= high:
        wanted = f"{low}" if low == high else f"{low} to {high}"
        return reject(
            MALFORMED,
            f"a {slot.style} question needs {wanted} passages, the answer gave {len(cited)}",
        )
    if isinstance(parsed, PassagesAnswer):
        placed = _place_passages(parsed.passages, doc, slot, min_chars, normalised)
    else:
        placed = _place_pieces(parsed.pieces, doc, prompt.pieces, min_chars)
    if placed.reason is not None:
        return placed
    if evidence_chars is not None:
        length = sum(e.span.end - e.span.start for e in placed.excerpts)
        if length < SHORTEST_SHARE * evidence_chars:
            return reject(
                ex.TOO_SHORT,
                f"the cited text is {length:,} characters; the passage that answers the question "
                f"should be about {evidence_chars:,} characters, so cite all of it",
            )
    return _check_question(question, placed.excerpts, doc, slot, asked, examples)


def _pick_candidate(
    candidates: Sequence[str],
    doc: Document,
    slot: Slot,
    asked: Sequence[str],
    examples: Sequence[str],
    pick: str = "first",
    specific: bool = True,
) -> Verdict:
    """The given mode's verdict on an answer's candidate questions. ``pick="first"``: the first
    that passes :func:`_check_question`, with the ones passed over before it. Otherwise, of
    those that pass, ``"specific"``: the one that best singles out its passage within the
    document (:func:`~chunkmark.synth.specific.most_specific`); ``"examples"``: the first that
    singles it out when ``specific``, else the first that does not
    (:func:`~chunkmark.synth.specific.first_like`); every rejected candidate passed over and
    the others unchosen. When none passes, the first candidate's rejection with every
    candidate's problem as its detail."""
    given = (Excerpt(slot.window, ex.GIVEN),)
    passed_over: list[Verdict] = []
    passing: list[Verdict] = []
    for candidate in candidates:
        question = " ".join(candidate.split())
        if not question:
            verdict = reject(MALFORMED, "the question is empty")
        else:
            verdict = _check_question(question, given, doc, slot, asked, examples)
        if verdict.reason is None:
            if pick == "first":
                return replace(verdict, passed_over=tuple(passed_over))
            passing.append(verdict)
        else:
            passed_over.append(verdict)
    if passing:
        questions = [v.question for v in passing]
        if pick == "specific":
            kept = most_specific(questions, doc.text, slot.window)
        else:
            kept = first_like(questions, doc.text, slot.window, specific)
        return replace(
            passing[kept],
            passed_over=tuple(passed_over),
            unchosen=tuple(v.question for i, v in enumerate(passing) if i != kept),
        )
    if not passed_over:
        return reject(MALFORMED, "the list of questions is empty")
    first = passed_over[0]
    if len(passed_over) == 1:
        return replace(first, passed_over=(first,))
    detail = "; ".join(f"question {n}: {v.detail}" for n, v in enumerate(passed_over, start=1))
    return replace(first, detail=detail, passed_over=tuple(passed_over))


def _place_passages(
    passages: Sequence[str],
    doc: Document,
    slot: Slot,
    min_chars: int,
    normalised: ex.NormalisedText | None,
) -> Verdict:
    """The passages' excerpts (a verdict without a question yet), or the first problem."""
    found: list[Excerpt] = []
    for number, passage in enumerate(passages, start=1):
        match = ex.locate(
            doc.text, passage, slot.window, min_chars=min_chars, normalised=normalised
        )
        if match.span is None or match.method is None:
            return reject(str(match.problem), _passage_problem(number, passage, match, min_chars))
        found.append(Excerpt(match.span, match.method, match.ambiguous))
    return Verdict(excerpts=tuple(found))


def _passage_problem(number: int, passage: str, match: ex.ExcerptMatch, min_chars: int) -> str:
    shown = " ".join(passage.split())[:120]
    if match.problem == ex.EMPTY:
        return f"passage {number} is empty"
    if match.problem == ex.TOO_SHORT:
        return f"passage {number} ({shown!r}) is shorter than {min_chars} characters"
    return f"passage {number} ({shown!r}) is not in the text; copy passages character for character"


def _place_pieces(
    ranges: Sequence[Sequence[int]], doc: Document, pieces: Sequence[Span], min_chars: int
) -> Verdict:
    """The cited ranges' excerpts (a verdict without a question yet), or the first problem."""
    found: list[Excerpt] = []
    for number, cited in enumerate(ranges, start=1):
        if len(cited) not in (1, 2):
            return reject(
                MALFORMED, f"range {number} has {len(cited)} numbers; write [first, last]"
            )
        first, last = cited[0], cited[-1]
        match = ex.span_of_range(doc.text, pieces, first, last, min_chars=min_chars)
        if match.span is None:
            problem = str(match.problem)
            detail = (
                f"range {number} [{first}, {last}] is not a range of pieces 1 to {len(pieces)}"
                if problem == ex.BAD_RANGE
                else f"range {number} [{first}, {last}] holds too little text"
            )
            return reject(problem, detail)
        found.append(Excerpt(match.span, ex.PIECES, pieces=(first, last)))
    return Verdict(excerpts=tuple(found))


def _check_question(
    question: str,
    found: tuple[Excerpt, ...],
    doc: Document,
    slot: Slot,
    asked: Sequence[str],
    examples: Sequence[str] = (),
) -> Verdict:
    """The checks on the whole question: collapsed passages, copied words, a repeat."""
    spans = [e.span for e in found]
    if len(spans) > 1 and ex.collapses(doc.text, spans):
        return reject(
            COLLAPSED,
            "the passages overlap or follow each other, so they are one passage; give separate "
            "passages from different places, or one passage",
        )
    if slot.style == "paraphrased":
        for number, e in enumerate(found, start=1):
            run = ex.copied_run(question, doc.text[e.span.start : e.span.end])
            if run is not None:
                return reject(
                    COPIED,
                    f"the question repeats the words {run!r} of passage {number}; reword it",
                )
    stage = duplicate_stage(question, asked, examples)
    if stage == "duplicate_example":
        return Verdict(
            question,
            reason=DUPLICATE,
            detail="this is one of the example questions; write a new question in their style",
            stage=stage,
        )
    if stage is not None:
        return Verdict(
            question,
            reason=DUPLICATE,
            detail="this question (or one nearly the same) was already asked; ask about "
            "something else in the text",
            stage=stage,
        )
    return Verdict(question, found)


def _question_key(question: str) -> str:
    return " ".join(ex.words(question))


def content_words(question: str) -> frozenset[str]:
    """The question's words that are not function words, each cut to :data:`NEAR_PREFIX`
    letters (what the near-duplicate check compares)."""
    return frozenset(w[:NEAR_PREFIX] for w in ex.words(question) if w not in _FUNCTION_WORDS)


def near_duplicate(a: str, b: str) -> bool:
    """Whether two questions ask nearly the same: their content words (:func:`content_words`)
    overlap by at least :data:`NEAR_SHARE` (Jaccard), each having :data:`NEAR_WORDS` or more,
    and they name the same numbers."""
    x, y = content_words(a), content_words(b)
    if len(x) < NEAR_WORDS or len(y) < NEAR_WORDS:
        return False
    if _numbers(a) != _numbers(b):  # "in 2019" and "in 2020" ask different things
        return False
    return len(x & y) / len(x | y) >= NEAR_SHARE


def _numbers(question: str) -> frozenset[str]:
    return frozenset(w for w in ex.words(question) if any(c.isdigit() for c in w))


def duplicate_stage(
    question: str, asked: Sequence[str], examples: Sequence[str] = ()
) -> str | None:
    """Which of :data:`DUPLICATE_STAGES` catches ``question`` (None: it is new): the same words
    as an ``asked`` question, nearly the same content words as one, or an example (exactly or
    nearly)."""
    key = _question_key(question)
    if key in {_question_key(q) for q in asked}:
        return "duplicate_exact"
    if any(near_duplicate(question, q) for q in asked):
        return "duplicate_near"
    if key in {_question_key(q) for q in examples} or any(
        near_duplicate(question, q) for q in examples
    ):
        return "duplicate_example"
    return None


@dataclass(frozen=True)
class SlotOutcome:
    """What became of one slot: its accepted question (``question`` empty when the window was
    skipped), the excerpts, the answers it took and why the rejected ones were rejected."""

    slot: Slot
    question: str
    excerpts: tuple[Excerpt, ...]
    attempts: int
    rejected: Mapping[str, int]
    last_problem: str = ""
    copied: tuple[str, ...] = ()  # examples the LLM asked again (withheld from later prompts)

    @property
    def accepted(self) -> bool:
        return bool(self.question)
