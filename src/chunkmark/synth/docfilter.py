"""The document filter of a generation (``synth generate --filter-documents``): before the plan
is drawn, the LLM judges each document on two questions, as Chroma's generative benchmarking
does: is it **relevant** (would the people who ask the example questions, or anyone searching
this collection, look for answers in it, rather than boilerplate, navigation or a table of
contents) and is it **complete** (does it hold whole statements a question could be answered
from, rather than a fragment cut off mid-thought). Documents judged no on either are left out of
the plan; the yes/no counts and the documents left out go into the manifest.

One request a document, on its first :data:`JUDGED_CHARS` characters, answered as JSON; the
answers are cached like every other LLM answer, so a rerun judges the same way for free. An
answer that is not the JSON asked for keeps the document (the filter only removes documents it
was told to) and is counted as ``unclear``.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template
from typing import Any

from pydantic import BaseModel, ConfigDict

from chunkmark.datasets import Document
from chunkmark.llm import LLM, EmptyAnswerError
from chunkmark.synth.answers import parse_json
from chunkmark.synth.prompt import prompt_text

JUDGED_CHARS = 3000  # the start of a document the judge reads
JUDGE_TOKENS = 200
EXAMPLES_SHOWN = 5
JUDGE_SCHEMA: dict[str, Any] = {
    "title": "document_judgement",
    "type": "object",
    "properties": {"relevant": {"type": "boolean"}, "complete": {"type": "boolean"}},
    "required": ["relevant", "complete"],
    "additionalProperties": False,
}


class Judgement(BaseModel):
    """The judge's answer about one document."""

    model_config = ConfigDict(extra="forbid")

    relevant: bool
    complete: bool


def judge_prompt(doc: Document, examples: Sequence[str]) -> tuple[str, str]:
    """The system and user messages judging ``doc`` (its start), with up to
    :data:`EXAMPLES_SHOWN` example questions as the use the collection is searched for."""
    shown = list(examples)[:EXAMPLES_SHOWN]
    use = (
        "People search this collection with questions like these:\n"
        + "\n".join(f"- {q}" for q in shown)
        if shown
        else "People search this collection with questions about the facts in its documents."
    )
    text = doc.text[:JUDGED_CHARS]
    cut = " (its first characters)" if len(doc.text) > JUDGED_CHARS else ""
    user = Template(prompt_text("judge_document")).substitute(
        {"document": doc.id, "cut": cut, "text": text, "use": use}
    )
    return prompt_text("judge_system"), user


def filter_documents(
    documents: Sequence[Document], llm: LLM, examples: Sequence[str] = ()
) -> tuple[list[Document], dict[str, Any]]:
    """The documents judged relevant and complete, and the manifest's record: yes/no counts
    per criterion, the unclear answers and the ids left out with why."""
    kept: list[Document] = []
    votes = {"relevant": {"yes": 0, "no": 0}, "complete": {"yes": 0, "no": 0}}
    unclear = 0
    dropped: list[dict[str, Any]] = []
    for doc in documents:
        system, user = judge_prompt(doc, examples)
        verdict = _ask(llm, system, user)
        if verdict is None:
            unclear += 1
            kept.append(doc)
            continue
        said = {"relevant": verdict.relevant, "complete": verdict.complete}
        for name, yes in said.items():
            votes[name]["yes" if yes else "no"] += 1
        if all(said.values()):
            kept.append(doc)
        else:
            dropped.append({"id": doc.id, "not": [n for n, yes in said.items() if not yes]})
    record = {"judged": len(documents), **votes, "unclear": unclear, "dropped": dropped}
    return kept, record


def _ask(llm: LLM, system: str, user: str) -> Judgement | None:
    try:
        answer = llm.complete(system, user, max_tokens=JUDGE_TOKENS, json_schema=JUDGE_SCHEMA)
        return Judgement.model_validate(parse_json(answer))
    except EmptyAnswerError:
        return None
    except ValueError:  # not JSON, or not the object asked for (pydantic's error is one)
        return None
