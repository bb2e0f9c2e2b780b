"""Questions with exact excerpts, written by an LLM about windows of your documents.

The method of Chroma's report (an LLM reads part of a document, writes a question and gives the
passages that answer it; the passages become character spans), done so that it can be trusted
and repeated:

1. **A plan, up front.** Every question is a *slot*: a document, a window of it (``window_chars``
   characters, snapped to word boundaries) and a style. Documents get slots in proportion to
   their length (largest remainders; each within one of its exact share); a document's windows
   are spread over it (stratified picks among evenly spaced tiles) and none is used twice until
   all of that document's tiles are used. Styles are dealt out evenly and shuffled. Everything
   is drawn from the seed, so the plan is the same on every run and is recorded in the manifest.
2. **One request per question** (:func:`build_prompt`): the window, the style's instructions,
   optional example questions, and the questions already accepted for earlier slots of the same
   document, so they are not asked again. The answer is JSON, validated with pydantic, and
   requested as structured output where the provider has it.
3. **Exact excerpts** (:mod:`chunkmark.synth.excerpts`): in the ``exact`` mode passages are
   located in the text (exactly, else whitespace- and quote-normalised and mapped back); in the
   ``approximate`` mode the LLM cites ranges of numbered pieces. Multi-passage answers that
   collapse into one span, paraphrased questions that copy four words in a row of their passage
   and repeated questions are rejected. Every excerpt written satisfies
   ``document[start:end] == text``.
4. **Bounded work.** An unusable answer is asked again with the previous answer and what was
   wrong, at most :data:`MAX_ATTEMPTS` times per slot; then the window is skipped and counted.
   An :class:`~chunkmark.errors.LLMError` from the client (rejected key, exhausted quota or
   retries) stops the run at once, after everything accepted so far is written. ``max_cost``
   stops cleanly before the first request whose estimated cost would cross it.
5. **Item by item, resumable.** Documents are written first, then each accepted question is
   appended, flushed and synced, so a killed run loses at most the question in flight. Running
   the same command again reads what is written, skips those slots and asks only the rest;
   answers already received come from the LLM cache, so nothing is paid twice. Slots run
   concurrently across documents (a document's slots run in order, each seeing the questions of
   the ones before), and questions are written in plan order: any concurrency gives the same
   bytes.

``manifest.json`` in the output folder records the LLM identity, prompt version, seed, options,
plan and the counts of every stage (see ``docs/synth.md``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import random
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from chunkmark.costs.budget import BudgetReached
from chunkmark.costs.llm_prices import LLMPrices, load_llm_prices
from chunkmark.costs.llm_prices import price_of as price_of
from chunkmark.costs.llm_prices import unknown_price as _unknown_price
from chunkmark.costs.meter import MESSAGE_TOKENS, CostMeter
from chunkmark.datasets import (
    BUILTIN_NAMES,
    Dataset,
    Document,
    load_dataset,
    read_corpus,
    write_chroma,
)
from chunkmark.datasets.chroma import has_documents, read_documents
from chunkmark.datasets.validate import CHROMA_QUESTIONS, JSONL_QUESTIONS
from chunkmark.errors import ChunkmarkError, LLMError
from chunkmark.files import write_bytes_atomic
from chunkmark.llm import LLM, BaseLLM, EmptyAnswerError
from chunkmark.llm.cache import cache_key
from chunkmark.spans import Span
from chunkmark.stats import LLMStats
from chunkmark.synth import excerpts as ex
from chunkmark.tokenizers import count_tokens
from chunkmark.version import __version__

PROMPT_VERSION = "1"
GENERATOR = "chunkmark synth generate"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
MAX_ATTEMPTS = 3
ANSWER_TOKENS = 1024  # the most an answer may take (and what a request's cost estimate assumes)
ASKED_LIMIT = 40  # earlier questions of a document listed in a prompt (the latest ones)
QUESTION_TOKENS = 20  # a listed earlier question, in a dry run's estimate
ENCODING = "cl100k_base"
MIN_WINDOW_CHARS = 200

STYLES = ("factoid", "multi", "paraphrased")
MODES = ("exact", "approximate")
LAYOUTS = ("jsonl", "chroma")
# How many passages a style's answer may cite.
STYLE_PASSAGES = {"factoid": (1, 3), "multi": (2, 3), "paraphrased": (1, 3)}

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

_CSV_COLUMNS = ("question", "references", "corpus_id", "metadata")
_JSONL_DOCUMENTS = "documents.jsonl"
_JSONL_QUESTIONS = "questions.jsonl"
_CSV_QUESTIONS = "questions_df.csv"
_SHOWN_ANSWER = 1500  # characters of a rejected answer quoted back to the LLM

Progress = Callable[["SlotOutcome"], None]


class SynthError(ChunkmarkError):
    """Question generation cannot start or go on: a bad option, a price that is not known, an
    output folder holding something else."""


# --- prices -------------------------------------------------------------------------------


def load_prices(path: str | Path | None = None) -> LLMPrices:
    """The LLM price table (:mod:`chunkmark.costs.llm_prices`) with the entries of ``path``;
    a bad file is a :class:`SynthError`."""
    return load_llm_prices(path, SynthError)


def unknown_price(llm: LLM, table: LLMPrices) -> SynthError:
    """The error for a model without a price, naming the fix."""
    return _unknown_price(llm, table, SynthError)


# --- the plan -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One planned question: the ``index``-th of the plan, about ``window`` of ``doc_id``."""

    index: int
    doc_id: str
    start: int
    end: int
    style: str

    @property
    def window(self) -> Span:
        return Span(self.start, self.end)


def quotas(lengths: Sequence[int], questions: int, rng: random.Random) -> list[int]:
    """Questions per document in proportion to its length, by largest remainders: each gets
    the floor of its exact share, and the questions left go to the largest remainders (ties in
    a seeded order). Every quota is within one question of the exact share."""
    total = sum(lengths)
    if total <= 0:
        return [0 for _ in lengths]
    base = [questions * n // total for n in lengths]
    remainders = [questions * n % total for n in lengths]
    tiebreak = list(range(len(lengths)))
    rng.shuffle(tiebreak)
    order = sorted(range(len(lengths)), key=lambda i: (-remainders[i], tiebreak[i]))
    for i in order[: questions - sum(base)]:
        base[i] += 1
    return base


def tiles(length: int, window: int) -> list[Span]:
    """Evenly spaced windows of ``window`` characters that cover ``[0, length)``: the fewest
    that do, the first at 0 and the last ending at ``length`` (one window for a short text)."""
    if length <= window:
        return [Span(0, length)]
    count = math.ceil(length / window)
    step = (length - window) / (count - 1)
    return [Span(round(t * step), round(t * step) + window) for t in range(count)]


def _stratified(count: int, picks: int, rng: random.Random) -> list[int]:
    """``picks`` indices of ``range(count)`` (``picks <= count``), one drawn from each of
    ``picks`` consecutive groups of nearly equal size: spread over the whole range."""
    bounds = [j * count // picks for j in range(picks + 1)]
    return [rng.randrange(bounds[j], bounds[j + 1]) for j in range(picks)]


def document_windows(text: str, quota: int, window: int, rng: random.Random) -> list[Span]:
    """``quota`` windows of ``text``: each pass over the document's tiles picks spread-out tiles,
    and a tile is used again only after every tile was used (later passes shift a reused tile
    by a random offset of up to half a window, so the text around its edges is seen too)."""
    spans = tiles(len(text), window)
    out: list[Span] = []
    passes = 0
    while len(out) < quota:
        need = min(quota - len(out), len(spans))
        for t in sorted(_stratified(len(spans), need, rng)):
            span = spans[t]
            if passes and len(text) > window:
                shift = rng.randint(-(window // 2), window // 2)
                start = min(max(0, span.start + shift), len(text) - window)
                span = Span(start, start + window)
            out.append(ex.snap_window(text, span.start, span.end))
        passes += 1
    return out


def deal_styles(styles: Sequence[str], count: int, rng: random.Random) -> list[str]:
    """``count`` styles dealt evenly from ``styles`` (in turn), then shuffled."""
    dealt = [styles[i % len(styles)] for i in range(count)]
    rng.shuffle(dealt)
    return dealt


def make_plan(
    documents: Sequence[Document],
    questions: int,
    *,
    seed: int,
    window_chars: int,
    styles: Sequence[str],
) -> list[Slot]:
    """The whole sequence of slots, from the seed alone (see the module docs).

    Documents' slots are interleaved by their position within each document (the j-th of k
    slots sits at (j + 1/2) / k), so every stretch of the plan covers the corpus evenly.
    """
    rng = random.Random(f"chunkmark-synth-plan:{seed}")
    counts = quotas([len(d.text) for d in documents], questions, rng)
    placed: list[tuple[float, int, Span, str]] = []
    for order, (doc, k) in enumerate(zip(documents, counts, strict=True)):
        for j, window in enumerate(document_windows(doc.text, k, window_chars, rng)):
            placed.append(((j + 0.5) / k, order, window, doc.id))
    placed.sort(key=lambda item: (item[0], item[1]))
    dealt = deal_styles(styles, len(placed), rng)
    return [
        Slot(i, doc_id, window.start, window.end, dealt[i])
        for i, (_, _, window, doc_id) in enumerate(placed)
    ]


# --- prompts ------------------------------------------------------------------------------


@cache
def prompt_text(name: str) -> str:
    """The text of the prompt file ``prompts/<name>.txt`` shipped in the package."""
    path = resources.files("chunkmark.synth").joinpath("prompts").joinpath(f"{name}.txt")
    return path.read_text(encoding="utf-8").strip("\n")


@dataclass(frozen=True)
class Prompt:
    """One request: system and user messages, the answer's JSON schema, and (approximate
    mode) the window's pieces."""

    system: str
    user: str
    schema: dict[str, Any]
    pieces: tuple[Span, ...] = ()


EXACT_SCHEMA: dict[str, Any] = {
    "title": "question_with_passages",
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "passages": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["question", "passages"],
    "additionalProperties": False,
}
PIECES_SCHEMA: dict[str, Any] = {
    "title": "question_with_pieces",
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "pieces": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "integer"}},
        },
    },
    "required": ["question", "pieces"],
    "additionalProperties": False,
}


def build_prompt(
    doc: Document,
    slot: Slot,
    *,
    mode: str,
    asked: Sequence[str] = (),
    examples: Sequence[str] = (),
    min_chars: int = 20,
) -> Prompt:
    """The request for ``slot``: the window (numbered pieces in the approximate mode), the
    style's instructions, the examples, and the latest :data:`ASKED_LIMIT` questions already
    asked about the document."""
    values = {
        "document": doc.id,
        "start": str(slot.start),
        "end": str(slot.end),
        "length": str(len(doc.text)),
        "style": prompt_text(f"style_{slot.style}"),
        "examples": _section("examples", examples, len(examples)),
        "asked": _section("asked", asked, ASKED_LIMIT),
        "min_chars": str(min_chars),
    }
    system = prompt_text("system")
    if mode == "exact":
        values["text"] = doc.text[slot.start : slot.end]
        user = Template(prompt_text("exact")).substitute(values)
        return Prompt(system, user, EXACT_SCHEMA)
    pieces = tuple(ex.cut_pieces(doc.text, slot.window))
    values["text"] = ex.number_pieces(doc.text, pieces)
    values["pieces"] = str(len(pieces))
    user = Template(prompt_text("approximate")).substitute(values)
    return Prompt(system, user, PIECES_SCHEMA, pieces)


def _section(name: str, items: Sequence[str], limit: int) -> str:
    """A prompt section listing ``items`` (the last ``limit``), or "" when there are none."""
    shown = list(items)[-limit:] if limit else []
    if not shown:
        return ""
    listed = "\n".join(f"- {item}" for item in shown)
    return "\n" + Template(prompt_text(name)).substitute({name: listed}) + "\n"


def correction_prompt(prompt: str, answer: str, reason: str) -> str:
    """The prompt asked again after an unusable answer: the answer and what was wrong."""
    shown = answer.strip()
    if len(shown) > _SHOWN_ANSWER:
        shown = shown[:_SHOWN_ANSWER] + " [...]"
    values = {"prompt": prompt, "answer": shown or "(nothing)", "reason": reason}
    return Template(prompt_text("correction")).substitute(values)


# --- answers ------------------------------------------------------------------------------


class PassagesAnswer(BaseModel):
    """The answer in the exact mode."""

    model_config = ConfigDict(extra="forbid")

    question: str
    passages: list[str]


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
    :data:`REJECTIONS`) and a sentence for the LLM saying what was wrong."""

    question: str = ""
    excerpts: tuple[Excerpt, ...] = ()
    reason: str | None = None
    detail: str = ""


def _reject(reason: str, detail: str) -> Verdict:
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
) -> Verdict:
    """Check one answer: its JSON, the number of passages for the style, every excerpt, and
    the checks on the whole question (collapsed, copied, repeated)."""
    model = PassagesAnswer if mode == "exact" else PiecesAnswer
    try:
        parsed = model.model_validate(parse_json(answer))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError too
        detail = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        return _reject(MALFORMED, f"it is not the JSON object asked for ({detail})")
    question = " ".join(parsed.question.split())
    if not question:
        return _reject(MALFORMED, "the question is empty")
    cited = parsed.passages if isinstance(parsed, PassagesAnswer) else parsed.pieces
    low, high = STYLE_PASSAGES[slot.style]
    if not low <= len(cited) <= high:
        wanted = f"{low}" if low == high else f"{low} to {high}"
        return _reject(
            MALFORMED,
            f"a {slot.style} question needs {wanted} passages, the answer gave {len(cited)}",
        )
    if isinstance(parsed, PassagesAnswer):
        placed = _place_passages(parsed.passages, doc, slot, min_chars, normalised)
    else:
        placed = _place_pieces(parsed.pieces, doc, prompt.pieces, min_chars)
    if placed.reason is not None:
        return placed
    return _check_question(question, placed.excerpts, doc, slot, asked)


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
            return _reject(str(match.problem), _passage_problem(number, passage, match, min_chars))
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
            return _reject(
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
            return _reject(problem, detail)
        found.append(Excerpt(match.span, ex.PIECES, pieces=(first, last)))
    return Verdict(excerpts=tuple(found))


def _check_question(
    question: str, found: tuple[Excerpt, ...], doc: Document, slot: Slot, asked: Sequence[str]
) -> Verdict:
    """The checks on the whole question: collapsed passages, copied words, a repeat."""
    spans = [e.span for e in found]
    if len(spans) > 1 and ex.collapses(doc.text, spans):
        return _reject(
            COLLAPSED,
            "the passages overlap or follow each other, so they are one passage; give separate "
            "passages from different places, or one passage",
        )
    if slot.style == "paraphrased":
        for number, e in enumerate(found, start=1):
            run = ex.copied_run(question, doc.text[e.span.start : e.span.end])
            if run is not None:
                return _reject(
                    COPIED,
                    f"the question repeats the words {run!r} of passage {number}; reword it",
                )
    if _question_key(question) in {_question_key(q) for q in asked}:
        return _reject(DUPLICATE, "this question was already asked; ask a different one")
    return Verdict(question, found)


def _question_key(question: str) -> str:
    return " ".join(ex.words(question))


# --- one slot -----------------------------------------------------------------------------


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

    @property
    def accepted(self) -> bool:
        return bool(self.question)


def request_tokens(prompt: Prompt, user: str | None = None) -> int:
    """The prompt tokens of one request, counted with cl100k_base (an estimate for models with
    another tokenizer), plus the chat framing."""
    system_tokens, user_tokens = count_tokens([prompt.system, user or prompt.user], ENCODING)
    return system_tokens + user_tokens + MESSAGE_TOKENS


def is_cached(llm: LLM, system: str, user: str, schema: dict[str, Any] | None) -> bool:
    """Whether ``llm`` holds the answer to this request in its cache (then it costs nothing)."""
    if not isinstance(llm, BaseLLM) or llm.cache is None:
        return False
    key = cache_key(
        llm.identity(),
        system,
        user,
        max_tokens=ANSWER_TOKENS,
        temperature=llm.temperature,
        seed=llm.seed,
        json_schema=schema,
    )
    return llm.cache.get(key) is not None


# --- output -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """A question found in the output folder: its slot, text, raw line and counts."""

    slot: int
    question: str
    line: str
    attempts: int
    rejected: Mapping[str, int]
    methods: tuple[str, ...]
    ambiguous: tuple[bool, ...]


class Output:
    """The dataset folder being written: documents first, then one question per line."""

    def __init__(self, out: Path, layout: str, documents: Sequence[Document]) -> None:
        self.out = out
        self.layout = layout
        self.documents = documents
        self.by_id = {d.id: d for d in documents}
        name = _JSONL_QUESTIONS if layout == "jsonl" else _CSV_QUESTIONS
        self.questions = out / name

    def prepare(self) -> dict[int, Written]:
        """Write the documents and an empty questions file if the questions file does not exist
        yet; otherwise drop a partly written last line and read the questions already there."""
        if not self.questions.is_file():
            self._write_documents()
            return {}
        self._drop_partial_line()
        return self.read(repair=True)

    def _write_documents(self) -> None:
        if self.layout == "jsonl":
            lines = "".join(
                json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n"
                for d in self.documents
            )
            write_bytes_atomic(self.out / _JSONL_DOCUMENTS, lines.encode("utf-8"))
            write_bytes_atomic(self.questions, b"")
            return
        write_chroma(Dataset(self.out.name, tuple(self.documents), ()), self.out)
        write_bytes_atomic(self.questions, _csv_line(list(_CSV_COLUMNS)).encode("utf-8"))

    def _drop_partial_line(self) -> None:
        data = self.questions.read_bytes()
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            with self.questions.open("r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())

    def read(self, *, repair: bool = False) -> dict[int, Written]:
        """The questions written, by slot; a partly written last line is left out. With
        ``repair``, a Chroma-layout file left with another header and no rows gets ours."""
        text = self.questions.read_text(encoding="utf-8")
        lines = [line for line in text.splitlines(keepends=True) if line.endswith("\n")]
        if self.layout == "chroma":
            if not lines or next(csv.reader([lines[0]])) != list(_CSV_COLUMNS):
                if len(lines) > 1:
                    raise self._damaged(1, "the header is not " + ",".join(_CSV_COLUMNS))
                if repair:
                    header = _csv_line(list(_CSV_COLUMNS)).encode("utf-8")
                    write_bytes_atomic(self.questions, header)
                return {}
            lines = lines[1:]
        found: dict[int, Written] = {}
        offset = 2 if self.layout == "chroma" else 1
        for number, line in enumerate(lines, start=offset):
            if not line.strip():
                continue
            written = self._parse(line, number)
            if written.slot in found:
                raise self._damaged(number, f"slot {written.slot} is written twice")
            found[written.slot] = written
        return found

    def _parse(self, line: str, number: int) -> Written:
        try:
            if self.layout == "jsonl":
                record = json.loads(line)
                question, meta = record["question"], record["metadata"]
            else:
                row = next(csv.reader([line]))
                question, meta = row[0], json.loads(row[3])
            return Written(
                int(meta["slot"]),
                str(question),
                line,
                int(meta["attempts"]),
                {str(k): int(v) for k, v in meta["rejected"].items()},
                tuple(str(m) for m in meta["matches"]),
                tuple(bool(a) for a in meta["ambiguous"]),
            )
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._damaged(number, f"it cannot be read ({type(exc).__name__})") from None

    def _damaged(self, line: int, what: str) -> SynthError:
        return SynthError(
            f"{self.questions}, line {line}: {what}, so the run cannot be resumed.",
            "Write to a new --out folder, or delete that line to ask its question again.",
        )

    def line(self, outcome: SlotOutcome, qid: str, mode: str) -> str:
        """The line recording an accepted question (its excerpts checked against the text)."""
        doc = self.by_id[outcome.slot.doc_id]
        texts = [doc.text[e.span.start : e.span.end] for e in outcome.excerpts]
        line = self._format(outcome, qid, mode, doc, texts)
        _check_line(line, self.layout, doc)
        return line

    def _format(
        self, outcome: SlotOutcome, qid: str, mode: str, doc: Document, texts: list[str]
    ) -> str:
        meta = _metadata(outcome, mode)
        if self.layout == "jsonl":
            record = {
                "id": qid,
                "question": outcome.question,
                "doc_id": doc.id,
                "excerpts": [
                    {"start": e.span.start, "end": e.span.end, "text": t}
                    for e, t in zip(outcome.excerpts, texts, strict=True)
                ],
                "metadata": meta,
            }
            return json.dumps(record, ensure_ascii=False) + "\n"
        refs = [
            {"content": t, "start_index": e.span.start, "end_index": e.span.end}
            for e, t in zip(outcome.excerpts, texts, strict=True)
        ]
        return _csv_line(
            [outcome.question, json.dumps(refs), doc.id, json.dumps(meta, ensure_ascii=False)]
        )

    def append(self, line: str) -> None:
        """Append one line, flushed and synced to disk before returning."""
        with self.questions.open("a", encoding="utf-8", newline="") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def sort(self, written: Mapping[int, Written]) -> None:
        """Rewrite the questions in plan order if they are not (after a stopped run)."""
        current = self.questions.read_text(encoding="utf-8")
        header = current.splitlines(keepends=True)[0] if self.layout == "chroma" else ""
        wanted = header + "".join(written[slot].line for slot in sorted(written))
        if wanted != current:
            write_bytes_atomic(self.questions, wanted.encode("utf-8"))


def _check_line(line: str, layout: str, doc: Document) -> None:
    """Read a question line back and check that every excerpt is the document's slice."""
    if layout == "jsonl":
        items = json.loads(line)["excerpts"]
        spans = [(e["start"], e["end"], e["text"]) for e in items]
    else:
        refs = json.loads(next(csv.reader([line]))[1])
        spans = [(r["start_index"], r["end_index"], r["content"]) for r in refs]
    for start, end, text in spans:
        if not (0 <= start < end <= len(doc.text) and doc.text[start:end] == text):
            raise AssertionError(f"excerpt [{start}, {end}) is not a slice of {doc.id!r}")


def _csv_line(fields: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(fields)
    return buffer.getvalue()


def _metadata(outcome: SlotOutcome, mode: str) -> dict[str, Any]:
    slot = outcome.slot
    meta: dict[str, Any] = {
        "slot": slot.index,
        "style": slot.style,
        "mode": mode,
        "window": [slot.start, slot.end],
        "matches": [e.method for e in outcome.excerpts],
        "ambiguous": [e.ambiguous for e in outcome.excerpts],
        "attempts": outcome.attempts,
        "rejected": dict(sorted(outcome.rejected.items())),
    }
    if mode == "approximate":
        meta["pieces"] = [list(e.pieces or ()) for e in outcome.excerpts]
    return meta


def _written(outcome: SlotOutcome, line: str) -> Written:
    return Written(
        outcome.slot.index,
        outcome.question,
        line,
        outcome.attempts,
        dict(outcome.rejected),
        tuple(e.method for e in outcome.excerpts),
        tuple(e.ambiguous for e in outcome.excerpts),
    )


# --- settings and the report --------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """Everything that shapes the questions written (a rerun must use the same to resume)."""

    questions: int = 50
    seed: int = 0
    window_chars: int = 4000
    mode: str = "exact"
    styles: tuple[str, ...] = ("factoid",)
    examples: tuple[str, ...] = ()
    layout: str = "jsonl"
    min_excerpt_chars: int = 20
    json_schema: bool = True

    def check(self) -> None:
        """Raise :class:`SynthError` for a value out of range."""
        if self.questions < 1:
            raise SynthError(
                f"--questions must be at least 1, got {self.questions}.", "Ask for 1 or more."
            )
        if self.window_chars < MIN_WINDOW_CHARS:
            raise SynthError(
                f"--window-chars must be at least {MIN_WINDOW_CHARS}, got {self.window_chars}.",
                "Windows of a few thousand characters work best (the default is 4000).",
            )
        if self.mode not in MODES:
            raise SynthError(
                f"Unknown excerpt mode {self.mode!r}.", f"Use one of: {', '.join(MODES)}."
            )
        if self.layout not in LAYOUTS:
            raise SynthError(
                f"Unknown layout {self.layout!r}.", f"Use one of: {', '.join(LAYOUTS)}."
            )
        unknown = [s for s in self.styles if s not in STYLES]
        if unknown or not self.styles:
            raise SynthError(
                f"Unknown question style {unknown[0]!r}."
                if unknown
                else "No question style given.",
                f"Use one or more of: {', '.join(STYLES)}.",
            )
        if self.min_excerpt_chars < 1:
            raise SynthError("min_excerpt_chars must be at least 1.", "Pass a positive number.")


def parse_styles(values: Sequence[str]) -> tuple[str, ...]:
    """Styles from repeated options and/or comma lists, in order, each once."""
    styles = [s.strip() for v in values for s in v.split(",") if s.strip()]
    return tuple(dict.fromkeys(styles))


def read_examples(path: str | Path) -> tuple[str, ...]:
    """Example questions, one per line (blank lines skipped)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SynthError(
            f"Cannot read the examples file {file}: {exc}.",
            "Pass a UTF-8 text file with one example question per line.",
        ) from None
    examples = tuple(" ".join(line.split()) for line in text.splitlines() if line.strip())
    if not examples:
        raise SynthError(f"The examples file {file} holds no question.", "Write one per line.")
    return examples


@dataclass
class GenerationReport:
    """What a run did: the questions in the folder (``accepted``, of them ``resumed`` found
    from an earlier run), counts by stage, why fewer than asked were written, the LLM's work
    and the cost of this run."""

    out: Path
    requested: int
    accepted: int
    resumed: int
    counts: dict[str, int]
    documents: list[dict[str, Any]]
    stopped: str | None = None
    llm: LLMStats = field(default_factory=LLMStats)
    cost_usd: float | None = None

    @property
    def complete(self) -> bool:
        return self.stopped is None

    def shortfall(self) -> list[str]:
        """Why fewer questions than asked were written, one reason a line (empty if none)."""
        missing = self.requested - self.accepted
        if missing <= 0:
            return []
        lines = [f"{missing} of {self.requested} questions were not written:"]
        skipped = self.counts.get("windows_skipped", 0)
        if skipped:
            why = ", ".join(
                f"{reason} {self.counts[reason]}"
                for reason in REJECTIONS
                if self.counts.get(reason)
            )
            lines.append(
                f"  {skipped} windows skipped after {MAX_ATTEMPTS} unusable answers "
                f"(rejected answers by reason: {why})"
            )
        pending = self.counts.get("not_attempted", 0)
        if pending:
            lines.append(f"  {pending} not attempted: {self.stopped or 'stopped'}")
        return lines


@dataclass(frozen=True)
class Estimate:
    """A dry run: requests, tokens and cost of the slots still to do."""

    slots: int
    cached: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    worst_cost_usd: float | None


# --- the run ------------------------------------------------------------------------------


def load_corpus(corpus: str | Path) -> tuple[list[Document], list[Any]]:
    """The documents of a corpus folder (``corpora/``, as ``datasets import`` writes), of a
    folder holding ``.md``/``.txt`` files directly (one document each; subfolders are not read)
    or of a dataset chunkmark loads (its questions ignored), and the ``sources`` list of the
    folder's ``manifest.json`` when it has one."""
    folder = Path(corpus)
    if (folder / "corpora").is_dir():
        documents = read_corpus(folder)
    elif _is_document_folder(corpus):
        documents = read_documents(folder)
    elif folder.is_dir() and not _holds_questions(folder):
        raise SynthError(
            f"{folder} holds no .md or .txt files, no corpora/ folder and no dataset.",
            f"Convert its documents first (PDF, HTML, Word, or files in subfolders): chunkmark "
            f"datasets import {folder} --out CORPUS, then pass CORPUS to synth generate.",
        )
    else:
        documents = list(load_dataset(corpus).documents)
    sources: list[Any] = []
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            found = json.loads(manifest.read_text(encoding="utf-8")).get("sources")
        except (ValueError, AttributeError):
            found = None
        if isinstance(found, list):
            sources = found
    return documents, sources


def _is_document_folder(corpus: str | Path) -> bool:
    """A folder of documents, not a dataset: ``.md``/``.txt`` files at its top and no question
    file (a built-in dataset name is a dataset even when a folder has its name)."""
    if isinstance(corpus, str) and corpus in BUILTIN_NAMES:
        return False
    folder = Path(corpus)
    return has_documents(folder) and not _holds_questions(folder)


def _holds_questions(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (CHROMA_QUESTIONS, JSONL_QUESTIONS))


def corpus_fingerprint(documents: Sequence[Document]) -> str:
    """A stable hash of the documents' ids and texts."""
    h = hashlib.sha256()
    for d in documents:
        h.update(json.dumps([d.id, d.text], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()[:16]


class Generation:
    """One run of :func:`generate` (see the module docs); use that function."""

    def __init__(
        self,
        documents: Sequence[Document],
        sources: Sequence[Any],
        llm: LLM,
        out: Path,
        options: Options,
        *,
        concurrency: int = 1,
        meter: CostMeter,
        progress: Progress | None = None,
    ) -> None:
        self.documents = list(documents)
        self.by_id = {d.id: d for d in documents}
        self.sources = list(sources)
        self.llm = llm
        self.out = out
        self.options = options
        self.concurrency = max(1, concurrency)
        self.meter = meter
        self.progress = progress
        self.plan = make_plan(
            self.documents,
            options.questions,
            seed=options.seed,
            window_chars=options.window_chars,
            styles=options.styles,
        )
        self.output = Output(out, options.layout, self.documents)
        self.written: dict[int, Written] = {}
        self.outcomes: dict[int, SlotOutcome] = {}
        self.stop_event = threading.Event()
        self.stopped: str | None = None
        self.error: LLMError | None = None
        self._normalised: dict[str, ex.NormalisedText] = {}
        self._lock = threading.Lock()
        self._width = max(4, len(str(options.questions - 1)))

    # settings and the manifest

    def settings(self) -> dict[str, Any]:
        """What must match for a rerun to continue this folder."""
        o = self.options
        return {
            "llm": self.llm.identity(),
            "prompt_version": PROMPT_VERSION,
            "seed": o.seed,
            "questions": o.questions,
            "window_chars": o.window_chars,
            "mode": o.mode,
            "styles": list(o.styles),
            "examples": list(o.examples),
            "min_excerpt_chars": o.min_excerpt_chars,
            "json_schema": o.json_schema,
            "max_attempts": MAX_ATTEMPTS,
            "layout": o.layout,
            "corpus": {
                "documents": len(self.documents),
                "characters": sum(len(d.text) for d in self.documents),
                "fingerprint": corpus_fingerprint(self.documents),
            },
        }

    def open(self) -> None:
        """Check the output folder (new, or one this same run started), write the documents if
        needed and read the questions already written."""
        settings = json.loads(json.dumps(self.settings()))
        path = self.out / MANIFEST
        if path.is_file():
            self._check_manifest(path, settings)
        elif self.out.exists() and (not self.out.is_dir() or any(self.out.iterdir())):
            raise SynthError(
                f"{self.out} already exists and holds no manifest of a question generation.",
                "Pass a new or empty folder to --out.",
            )
        self.out.mkdir(parents=True, exist_ok=True)
        if not path.is_file():
            self.write_manifest()  # first, so that a folder this run started is known as such
        self.written = self.output.prepare()
        if any(slot >= len(self.plan) for slot in self.written):
            raise SynthError(
                f"{self.output.questions} holds questions of slots beyond this plan.",
                "Write to a new --out folder.",
            )
        self.write_manifest()

    def _check_manifest(self, path: Path, settings: dict[str, Any]) -> None:
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if not isinstance(old, dict) or old.get("generator") != GENERATOR:
            raise SynthError(
                f"{path} is not the manifest of a question generation.",
                "Pass a new or empty folder to --out.",
            )
        previous = old.get("settings", {})
        changed = sorted(
            k for k in set(previous) | set(settings) if previous.get(k) != settings.get(k)
        )
        if changed:
            raise SynthError(
                f"{self.out} holds questions generated with other settings "
                f"({', '.join(changed)} differ), so this run cannot continue it.",
                "Run the same command as before to continue it (same corpus, LLM, --questions, "
                "--seed, --window-chars, --excerpts, --style, --examples, --layout), or pass a "
                "new folder to --out.",
            )

    def write_manifest(self) -> None:
        """Write ``manifest.json`` (atomically) as things stand."""
        manifest = {
            "generator": GENERATOR,
            "format": MANIFEST_FORMAT,
            "chunkmark_version": __version__,
            "status": "complete" if self.finished() else "incomplete",
            "stopped": self.stopped,
            "settings": self.settings(),
            "sources": self.sources,
            "counts": self.counts(),
            "documents": self.document_rows(),
            "plan": [self._plan_entry(slot) for slot in self.plan],
        }
        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        write_bytes_atomic(self.out / MANIFEST, text.encode("utf-8"))

    def _plan_entry(self, slot: Slot) -> dict[str, Any]:
        return {
            "slot": slot.index,
            "doc_id": slot.doc_id,
            "window": [slot.start, slot.end],
            "style": slot.style,
            "status": self._status(slot.index),
        }

    def _status(self, index: int) -> str:
        if index in self.written:
            return "accepted"
        if index in self.outcomes:
            return "skipped"
        return "pending"

    def finished(self) -> bool:
        return all(self._status(s.index) != "pending" for s in self.plan)

    def counts(self) -> dict[str, int]:
        """The counts of every stage over the whole plan (written and skipped slots)."""
        c: Counter[str] = Counter()
        for w in self.written.values():
            c["answers"] += w.attempts
            c.update(w.rejected)
            c["normalised"] += w.methods.count(ex.NORMALISED)
            c["ambiguous"] += sum(w.ambiguous)
        for o in self.outcomes.values():
            if not o.accepted:
                c["answers"] += o.attempts
                c.update(o.rejected)
        done = len(self.written) + sum(1 for o in self.outcomes.values() if not o.accepted)
        counts = {
            "requested": self.options.questions,
            "planned": len(self.plan),
            "answers": c["answers"],
            **{reason: c[reason] for reason in REJECTIONS},
            "normalised": c["normalised"],
            "ambiguous": c["ambiguous"],
            "accepted": len(self.written),
            "windows_skipped": done - len(self.written),
            "not_attempted": len(self.plan) - done,
        }
        return counts

    def document_rows(self) -> list[dict[str, Any]]:
        """Per document: characters, exact share of the questions, quota (slots planned; within
        one of the share), accepted and skipped."""
        total = sum(len(d.text) for d in self.documents)
        rows: dict[str, dict[str, Any]] = {
            d.id: {
                "id": d.id,
                "characters": len(d.text),
                "share": round(self.options.questions * len(d.text) / total, 3),
                "quota": 0,
                "accepted": 0,
                "skipped": 0,
            }
            for d in self.documents
        }
        for slot in self.plan:
            row = rows[slot.doc_id]
            row["quota"] += 1
            status = self._status(slot.index)
            if status in ("accepted", "skipped"):
                row[status] += 1
        return list(rows.values())

    # running the slots

    def asked_before(self, slot: Slot) -> list[str]:
        """The questions accepted for earlier slots of the same document, in plan order
        (written, or finished and waiting for their turn to be written)."""
        asked = []
        for s in self.plan[: slot.index]:
            if s.doc_id != slot.doc_id:
                continue
            if s.index in self.written:
                asked.append(self.written[s.index].question)
            elif s.index in self.outcomes and self.outcomes[s.index].accepted:
                asked.append(self.outcomes[s.index].question)
        return asked

    def run(self) -> None:
        """Work through the slots not yet written: concurrently across documents, in order
        within one, writing accepted questions in plan order."""
        todo = [s for s in self.plan if s.index not in self.written]
        pending = list(todo)
        busy: set[str] = set()
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        running: dict[Future[SlotOutcome], Slot] = {}
        try:
            while (pending and not self.stop_event.is_set()) or running:
                self._submit(pool, pending, running, busy)
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f].index):
                    slot = running.pop(future)
                    busy.discard(slot.doc_id)
                    outcome = self._result(future)
                    if outcome is not None:
                        self._record(outcome)
                self._flush(todo, in_order=True)
        except BaseException:
            self.stop_event.set()  # Ctrl-C: start nothing more, wait for nothing
            raise
        finally:
            pool.shutdown(wait=not self.stop_event.is_set(), cancel_futures=True)
            self._flush(todo, in_order=False)

    def _submit(
        self,
        pool: ThreadPoolExecutor,
        pending: list[Slot],
        running: dict[Future[SlotOutcome], Slot],
        busy: set[str],
    ) -> None:
        """Start the next slots in plan order whose document has no slot running."""
        blocked: set[str] = set()
        for slot in list(pending):
            if self.stop_event.is_set() or len(running) >= self.concurrency:
                return
            if slot.doc_id in busy or slot.doc_id in blocked:
                blocked.add(slot.doc_id)
                continue
            pending.remove(slot)
            busy.add(slot.doc_id)
            asked = self.asked_before(slot)
            running[pool.submit(self.work, slot, asked)] = slot

    def _result(self, future: Future[SlotOutcome]) -> SlotOutcome | None:
        """The slot's outcome, or None (the slot stays pending) when the run stops."""
        try:
            return future.result()
        except _Stopping:
            pass
        except BudgetReached as exc:
            self._stop(exc.problem)
        except LLMError as exc:
            self._stop(str(exc))
            if self.error is None:
                self.error = exc
        return None

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
        self.stop_event.set()

    def _record(self, outcome: SlotOutcome) -> None:
        self.outcomes[outcome.slot.index] = outcome
        if self.progress is not None:
            self.progress(outcome)

    def _flush(self, todo: Sequence[Slot], *, in_order: bool) -> None:
        """Write the accepted outcomes not yet written: the ones that continue the plan order
        (``in_order``), or every finished one (when the run stops)."""
        for slot in todo:
            if slot.index in self.written:
                continue
            outcome = self.outcomes.get(slot.index)
            if outcome is None:
                if in_order:
                    return
                continue
            if outcome.accepted:
                qid = f"q{slot.index:0{self._width}d}"
                line = self.output.line(outcome, qid, self.options.mode)
                self.output.append(line)
                self.written[slot.index] = _written(outcome, line)

    def work(self, slot: Slot, asked: Sequence[str]) -> SlotOutcome:
        """Ask for one slot's question, at most :data:`MAX_ATTEMPTS` times."""
        doc = self.by_id[slot.doc_id]
        o = self.options
        prompt = build_prompt(
            doc, slot, mode=o.mode, asked=asked, examples=o.examples, min_chars=o.min_excerpt_chars
        )
        schema = prompt.schema if o.json_schema else None
        user = prompt.user
        rejected: Counter[str] = Counter()
        detail = ""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            answer = self._ask(prompt, user, schema)
            if answer is None:
                verdict = _reject(EMPTY_ANSWER, "the answer was empty")
                answer = ""
            else:
                verdict = judge(
                    answer,
                    doc,
                    slot,
                    prompt,
                    mode=o.mode,
                    asked=asked,
                    min_chars=o.min_excerpt_chars,
                    normalised=self._normalised_text(doc),
                )
            if verdict.reason is None:
                return SlotOutcome(slot, verdict.question, verdict.excerpts, attempt, rejected)
            rejected[verdict.reason] += 1
            detail = verdict.detail
            user = correction_prompt(prompt.user, answer, verdict.detail)
        return SlotOutcome(slot, "", (), MAX_ATTEMPTS, rejected, detail)

    def _ask(self, prompt: Prompt, user: str, schema: dict[str, Any] | None) -> str | None:
        """One request (None for an empty answer), within the budget; stops early when the
        run is stopping."""
        if self.stop_event.is_set():
            raise _Stopping()
        estimate = 0.0
        if self.meter.limit is not None and not is_cached(self.llm, prompt.system, user, schema):
            price = self.meter.price
            tokens = request_tokens(prompt, user)
            estimate = price.cost(tokens, ANSWER_TOKENS) if price is not None else 0.0
        with self.meter.request(estimate):
            try:
                return self.llm.complete(
                    prompt.system, user, max_tokens=ANSWER_TOKENS, json_schema=schema
                )
            except EmptyAnswerError:
                return None

    def _normalised_text(self, doc: Document) -> ex.NormalisedText:
        with self._lock:
            found = self._normalised.get(doc.id)
            if found is None:
                found = ex.NormalisedText(doc.text)
                self._normalised[doc.id] = found
        return found

    def finish(self) -> None:
        """Put the questions in plan order (when a stopped run left them otherwise) and write
        the manifest."""
        if self.finished():
            self.output.sort(self.written)
        self.write_manifest()

    def report(self, resumed: int) -> GenerationReport:
        return GenerationReport(
            out=self.out,
            requested=self.options.questions,
            accepted=len(self.written),
            resumed=resumed,
            counts=self.counts(),
            documents=self.document_rows(),
            stopped=self.stopped,
            llm=self.meter.usage(),
            cost_usd=self.meter.spent(),
        )


class _Stopping(SynthError):
    """Raised in a worker that finds the run stopping before its request."""

    def __init__(self) -> None:
        super().__init__("The run is stopping.")


def generate(
    corpus: str | Path,
    llm: LLM,
    out: str | Path,
    *,
    questions: int = 50,
    seed: int = 0,
    window_chars: int = 4000,
    mode: str = "exact",
    styles: Sequence[str] = ("factoid",),
    examples: Sequence[str] = (),
    layout: str = "jsonl",
    min_excerpt_chars: int = 20,
    json_schema: bool = True,
    concurrency: int = 1,
    max_cost: float | None = None,
    prices: LLMPrices | None = None,
    progress: Progress | None = None,
) -> GenerationReport:
    """Generate ``questions`` questions with exact excerpts about the documents of ``corpus``
    into the dataset folder ``out`` (see the module docs), continuing a run of the same
    settings that was stopped.

    ``llm`` should be built with the same ``seed`` (its answers are cached per seed). With
    ``max_cost`` (US dollars) the run stops cleanly before the first request whose estimate
    would cross it; ``prices`` defaults to the shipped table. Returns the report; an
    :class:`~chunkmark.errors.LLMError` of the client is raised after everything accepted so
    far is written and the manifest says where the run stopped.
    """
    options = Options(
        questions=questions,
        seed=seed,
        window_chars=window_chars,
        mode=mode,
        styles=tuple(styles),
        examples=tuple(examples),
        layout=layout,
        min_excerpt_chars=min_excerpt_chars,
        json_schema=json_schema,
    )
    options.check()
    if concurrency < 1:
        raise SynthError(f"--concurrency must be at least 1, got {concurrency}.", "Pass 1 or more.")
    documents, sources = load_corpus(corpus)
    _check_out(Path(out), Path(corpus))
    price = None
    if max_cost is not None:
        table = prices if prices is not None else load_prices()
        price = price_of(llm, table)
        if price is None:
            raise unknown_price(llm, table)
    meter = CostMeter(llm, price, max_cost)
    run = Generation(
        documents,
        sources,
        llm,
        Path(out),
        options,
        concurrency=concurrency,
        meter=meter,
        progress=progress,
    )
    run.open()
    resumed = len(run.written)
    try:
        run.run()
    finally:
        run.finish()
    if run.error is not None:
        raise run.error
    return run.report(resumed)


def _check_out(out: Path, corpus: Path) -> None:
    if out.resolve() == corpus.resolve():
        raise SynthError(
            f"The output folder {out} is the corpus folder.",
            "Pass another folder to --out; the corpus is only read.",
        )


def estimate(
    corpus: str | Path,
    llm: LLM,
    out: str | Path,
    *,
    questions: int = 50,
    seed: int = 0,
    window_chars: int = 4000,
    mode: str = "exact",
    styles: Sequence[str] = ("factoid",),
    examples: Sequence[str] = (),
    layout: str = "jsonl",
    min_excerpt_chars: int = 20,
    json_schema: bool = True,
    prices: LLMPrices | None = None,
) -> Estimate:
    """What generating would ask, without asking: one request per slot not yet written in
    ``out``, its prompt tokens (earlier questions of a document that are not written yet
    counted as :data:`QUESTION_TOKENS` each) and at most :data:`ANSWER_TOKENS` answer tokens;
    requests answered in the cache cost nothing. The cost is None when the model has no price.
    Nothing is written."""
    options = Options(
        questions=questions,
        seed=seed,
        window_chars=window_chars,
        mode=mode,
        styles=tuple(styles),
        examples=tuple(examples),
        layout=layout,
        min_excerpt_chars=min_excerpt_chars,
        json_schema=json_schema,
    )
    options.check()
    documents, sources = load_corpus(corpus)
    run = Generation(documents, sources, llm, Path(out), options, meter=CostMeter(llm, None, None))
    written = _peek_written(run)
    run.written = written
    table = prices if prices is not None else load_prices()
    price = price_of(llm, table)
    calls = cached = input_tokens = 0
    for slot in run.plan:
        if slot.index in written:
            continue
        asked = run.asked_before(slot)
        unknown = sum(
            1 for s in run.plan[: slot.index] if s.doc_id == slot.doc_id and s.index not in written
        )
        doc = run.by_id[slot.doc_id]
        prompt = build_prompt(
            doc,
            slot,
            mode=mode,
            asked=asked,
            examples=options.examples,
            min_chars=min_excerpt_chars,
        )
        schema = prompt.schema if json_schema else None
        if not unknown and is_cached(llm, prompt.system, prompt.user, schema):
            cached += 1
            continue
        calls += 1
        input_tokens += request_tokens(prompt) + QUESTION_TOKENS * min(unknown, ASKED_LIMIT)
    output_tokens = calls * ANSWER_TOKENS
    cost = None if price is None else price.cost(input_tokens, output_tokens)
    worst = None if cost is None else cost * MAX_ATTEMPTS
    return Estimate(
        slots=len(run.plan) - len(written),
        cached=cached,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        worst_cost_usd=worst,
    )


def _peek_written(run: Generation) -> dict[int, Written]:
    """The questions already in the output folder, if it continues this same run (read only)."""
    path = run.out / MANIFEST
    if not path.is_file() or not run.output.questions.is_file():
        return {}
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(old, dict) or old.get("settings") != json.loads(json.dumps(run.settings())):
        return {}
    return run.output.read()
