"""The request for one slot (:func:`build_prompt`): the window, the style's instructions, optional
example questions and the questions already accepted for the same document, from the prompt
files shipped in ``prompts/``; the request asked again after an unusable answer; its prompt
tokens and whether the LLM's cache already holds its answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

from chunkmark.costs.meter import MESSAGE_TOKENS
from chunkmark.datasets import Document
from chunkmark.files import shipped_prompt
from chunkmark.llm import LLM, BaseLLM
from chunkmark.spans import Span
from chunkmark.synth import excerpts as ex
from chunkmark.synth.options import GIVEN_CANDIDATES
from chunkmark.synth.plan import Slot
from chunkmark.tokenizers import count_tokens

PROMPT_VERSION = "5"
ANSWER_TOKENS = 1024  # the most an answer may take (and what a request's cost estimate assumes)

ASKED_LIMIT = 40  # earlier questions of a document listed in a prompt (the latest ones)
ENCODING = "cl100k_base"
_SHOWN_ANSWER = 1500  # characters of a rejected answer quoted back to the LLM


def prompt_text(name: str) -> str:
    """The text of the prompt file ``prompts/<name>.txt`` shipped in the package."""
    return shipped_prompt("synth", f"{name}.txt")


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


def questions_schema(candidates: int = GIVEN_CANDIDATES) -> dict[str, Any]:
    """The JSON schema of a given-mode answer: exactly ``candidates`` question strings."""
    return {
        "title": "questions",
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": candidates,
                "maxItems": candidates,
            }
        },
        "required": ["questions"],
        "additionalProperties": False,
    }


QUESTIONS_SCHEMA = questions_schema()
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


# How many passages (or piece ranges) a style's answer may cite; the schema asks for as many.
STYLE_PASSAGES = {"factoid": (1, 3), "multi": (2, 3), "paraphrased": (1, 3)}


def style_schema(schema: dict[str, Any], style: str) -> dict[str, Any]:
    """``schema`` with its list of passages (or piece ranges) bounded to the number the style
    cites (``minItems``/``maxItems``), so a server constraining its output to the schema cannot
    write an answer with too few or too many."""
    low, high = STYLE_PASSAGES[style]
    key = "passages" if "passages" in schema["properties"] else "pieces"
    listed = {**schema["properties"][key], "minItems": low, "maxItems": high}
    return {**schema, "properties": {**schema["properties"], key: listed}}


def build_prompt(
    doc: Document,
    slot: Slot,
    *,
    mode: str,
    asked: Sequence[str] = (),
    examples: Sequence[str] = (),
    min_chars: int = 20,
    evidence_chars: int | None = None,
    form: str | None = None,
    candidates: int = GIVEN_CANDIDATES,
) -> Prompt:
    """The request for ``slot``: the window (numbered pieces in the approximate mode; in the
    given mode the window is the passage, only questions are asked for,
    ``candidates`` of them, and the questions already asked are not listed), the
    style's instructions, the length of evidence asked for (``evidence_chars``, when given),
    the examples, and the latest :data:`ASKED_LIMIT` questions already asked about the
    document.

    The system prompt and the window come first and the parts that change from one question
    of a window to the next (the questions already asked, the part of the window asked about)
    follow it, so a server that keeps its last prompt (llama.cpp's ``cache_prompt``) reads a
    window's later questions mostly from its cache. The questions already asked come right
    after the window and the instructions last: a small model copies the last question it read
    before answering. ``form`` (given mode): the word the questions are asked to start with
    (:func:`~chunkmark.synth.examples.target_form`)."""
    values = {
        "document": doc.id,
        "start": str(slot.start),
        "end": str(slot.end),
        "length": str(len(doc.text)),
        "style": prompt_text(f"style_{slot.style}"),
        "examples": _section("examples", examples, len(examples)),
        "asked": _section("asked", asked, ASKED_LIMIT),
        "min_chars": str(min_chars),
        "evidence": "" if mode == "given" else _evidence(mode, evidence_chars),
        "focus": "",
    }
    system = prompt_text("system")
    if mode == "given":  # the window is the passage: the LLM writes candidate questions alone
        # Each question has its own passage, so the questions already asked are not listed: a
        # small model answered with one of them, whatever the passage (the duplicate checks
        # still compare every answer with them).
        values["asked"] = ""
        values["text"] = doc.text[slot.start : slot.end]
        values["candidates"] = str(candidates)
        shape = [f"<question {n}>" for n in range(1, candidates + 1)]
        values["form"] = json.dumps({"questions": shape})
        values["style"] = Template(prompt_text(f"given_{slot.style}")).substitute(values)
        if form is not None:  # the examples' question forms, one drawn for this passage
            asked = Template(prompt_text("given_form")).substitute(form=form.capitalize())
            values["style"] = f"{values['style'].rstrip()} {asked.strip()}\n"
        user = Template(prompt_text("given")).substitute(values)
        return Prompt(prompt_text("system_given"), user, questions_schema(candidates))
    pieces = tuple(ex.cut_pieces(doc.text, slot.window))
    if slot.parts > 1:
        values["focus"] = _focus(doc.text, pieces, slot.part, slot.parts, mode)
    if mode == "exact":
        values["text"] = doc.text[slot.start : slot.end]
        user = Template(prompt_text("exact")).substitute(values)
        return Prompt(system, user, style_schema(EXACT_SCHEMA, slot.style))
    values["text"] = ex.number_pieces(doc.text, pieces)
    values["pieces"] = str(len(pieces))
    user = Template(prompt_text("approximate")).substitute(values)
    return Prompt(system, user, style_schema(PIECES_SCHEMA, slot.style), pieces)


def focus_pieces(count: int, part: int, parts: int) -> tuple[int, int]:
    """The 1-based piece numbers ``[first, last]`` of part ``part`` of ``parts`` equal parts of
    ``count`` pieces (every piece in one part; a part has at least one piece)."""
    first = 1 + part * count // parts
    last = max(first, (part + 1) * count // parts)
    return first, min(last, count)


def _focus(text: str, pieces: Sequence[Span], part: int, parts: int, mode: str) -> str:
    """The line pointing one of a window's several questions at its own part of the window:
    the same window asked about again would otherwise get its most salient question again."""
    first, last = focus_pieces(len(pieces), part, parts)
    start, end = pieces[first - 1].start, pieces[last - 1].end
    head = " ".join(text[start:end].split()[:8])
    tail = " ".join(text[start:end].split()[-8:])
    if mode == "approximate":
        where = f'pieces {first} to {last} (from "{head}" to "{tail}")'
    else:
        where = f'the part of the text from "{head}" to "{tail}"'
    return (
        f"This is question {part + 1} of {parts} about this text: ask about {where}, "
        "and start the passage you cite there.\n"
    )


def evidence_unit(chars: int) -> str:
    """The length ``chars`` in words: a sentence, a few sentences, a paragraph, a section."""
    if chars < 250:
        return "a sentence or two"
    if chars < 700:
        return "a few sentences"
    if chars < 1500:
        return "a paragraph"
    return "several paragraphs"


def _evidence(mode: str, chars: int | None) -> str:
    """The prompt's line asking for evidence of about ``chars`` characters ("" when None)."""
    if chars is None:
        return ""
    values = {
        "chars": f"{chars:,}",
        "unit": evidence_unit(chars),
        "pieces": str(max(1, round(chars / ex.PIECE_CHARS))),
    }
    return Template(prompt_text(f"evidence_{mode}")).substitute(values) + "\n"


def _section(name: str, items: Sequence[str], limit: int) -> str:
    """A prompt section listing ``items`` (the last ``limit``), or "" when there are none."""
    shown = list(items)[-limit:] if limit else []
    if not shown:
        return ""
    listed = "\n".join(f"- {item}" for item in shown)
    return "\n" + Template(prompt_text(name)).substitute({name: listed}) + "\n"


def correction_prompt(prompt: str, rejected: Sequence[tuple[str, str]]) -> str:
    """The prompt asked again after unusable answers: every rejected answer of the slot so far
    (``(answer, reason)`` in order) and what was wrong with it. Listing them all keeps each
    correction a new request: at temperature 0 a model that repeats its answer would otherwise
    be sent the same correction again (and answered from the cache)."""
    parts = []
    for number, (answer, reason) in enumerate(rejected, start=1):
        shown = answer.strip()
        if len(shown) > _SHOWN_ANSWER:
            shown = shown[:_SHOWN_ANSWER] + " [...]"
        which = "Your previous answer" if len(rejected) == 1 else f"Your previous answer {number}"
        parts.append(f"{which} was:\n{shown or '(nothing)'}\n\nIt cannot be used: {reason}.\n")
    values = {"prompt": prompt, "answers": "\n".join(parts)}
    return Template(prompt_text("correction")).substitute(values)


def request_tokens(prompt: Prompt, user: str | None = None) -> int:
    """The prompt tokens of one request, counted with cl100k_base (an estimate for models with
    another tokenizer), plus the chat framing."""
    system_tokens, user_tokens = count_tokens([prompt.system, user or prompt.user], ENCODING)
    return system_tokens + user_tokens + MESSAGE_TOKENS


def is_cached(llm: LLM, system: str, user: str, schema: dict[str, Any] | None) -> bool:
    """Whether ``llm`` holds the answer to this request in its cache (then it costs nothing)."""
    if not isinstance(llm, BaseLLM):
        return False
    return llm.cached_answer(system, user, max_tokens=ANSWER_TOKENS, json_schema=schema) is not None
