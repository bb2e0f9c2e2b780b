"""The requests of answer scoring: the answering prompt (free text, or one of a set of labels)
and the judge's, as versioned package files (``answers/prompts/<name>_v<VERSION>.md``).

The context is the retrieved passages in rank order, each numbered (``[1] ...``) and separated
by a blank line; the whole-document baseline sends the document as one passage. The question
and, for a labelled question, the allowed labels (one per line) follow it in the user message;
the system message is the prompt file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from chunkmark.files import shipped_prompt
from chunkmark.llm.estimate import Request as Request  # the answers analysis imports it here

VERSION = 1
ANSWER_MAX_TOKENS = 64
JUDGE_MAX_TOKENS = 32
JUDGE_SCHEMA: dict[str, Any] = {
    "title": "judgement",
    "type": "object",
    "properties": {"correct": {"type": "boolean"}, "faithful": {"type": "boolean"}},
    "required": ["correct", "faithful"],
    "additionalProperties": False,
}


def prompt_text(name: str) -> str:
    """The text of ``answers/prompts/<name>_v<VERSION>.md`` shipped in the package."""
    return shipped_prompt("answers", f"{name}_v{VERSION}.md")


def context_text(passages: Sequence[str]) -> str:
    """The passages as the prompt shows them: numbered, in rank order, a blank line apart."""
    return "\n\n".join(f"[{i}] {p.strip()}" for i, p in enumerate(passages, start=1))


def answer_request(
    question: str,
    passages: Sequence[str],
    labels: Sequence[str] = (),
    max_tokens: int = ANSWER_MAX_TOKENS,
) -> Request:
    """The request answering ``question`` from ``passages``; with ``labels``, asking for one
    of them."""
    user = f"Context:\n{context_text(passages)}\n\nQuestion: {question.strip()}\n"
    if labels:
        listed = "\n".join(f"- {label}" for label in labels)
        return Request(prompt_text("label"), f"{user}Labels:\n{listed}\nLabel:", max_tokens)
    return Request(prompt_text("answer"), f"{user}Answer:", max_tokens)


def judge_request(
    question: str, references: Sequence[str], passages: Sequence[str], answer: str
) -> Request:
    """The judge's request: is ``answer`` correct (against ``references``, or the context
    without them) and faithful to ``passages``?"""
    refs = "\n".join(f"- {r}" for r in references) if references else "(none)"
    user = (
        f"Question: {question.strip()}\n\nReference answers:\n{refs}\n\n"
        f"Context:\n{context_text(passages)}\n\nAnswer: {answer.strip()}\n"
    )
    return Request(prompt_text("judge"), user, JUDGE_MAX_TOKENS, JUDGE_SCHEMA)


_FIELD = re.compile(r'"?(correct|faithful)"?\s*[:=]\s*"?(true|false|yes|no)\b', re.IGNORECASE)


def parse_judgement(text: str) -> tuple[bool | None, bool | None]:
    """``(correct, faithful)`` from the judge's answer: the JSON object in it (prose or code
    fences around it are skipped), else ``correct: yes``-style fields; None for a field it
    does not give."""
    found: dict[str, bool] = {}
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            obj = json.loads(text[start : end + 1])
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            for key in ("correct", "faithful"):
                value = obj.get(key)
                if isinstance(value, bool):
                    found[key] = value
                elif isinstance(value, str) and value.lower() in ("true", "false", "yes", "no"):
                    found[key] = value.lower() in ("true", "yes")
    for key, value in _FIELD.findall(text):
        found.setdefault(key.lower(), value.lower() in ("true", "yes"))
    return found.get("correct"), found.get("faithful")
