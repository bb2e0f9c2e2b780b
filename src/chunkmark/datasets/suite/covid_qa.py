"""COVID-QA (Möller et al., 2020; Apache-2.0; papers from CORD-19 under their own licences):
SQuAD-style questions on COVID-19 research papers, answered by biomedical experts.

Raw file: ``data/question-answering/200423_covidQA.json`` (``data`` -> one paragraph per paper:
``document_id``, ``context`` (the whole paper), ``qas``: ``id``, ``question``, ``answers``:
``text``, ``answer_start``).

- document ``<document_id>``: the context, unchanged;
- question ``<id>``: its excerpt is the answer text. Where ``context[answer_start:]`` begins
  with the text, that is the span (``exact``). About 17% of the stated starts are a few characters
  off: the occurrence of the text nearest the stated start, no further than
  :data:`REPAIR_WINDOW` characters away, is taken instead (``repaired``, each listed in the
  manifest with its stated and found start). No occurrence in the window is
  ``evidence not found``; two at the same distance are ``ambiguous evidence``.
- metadata: ``answers`` (the answer texts), ``scope: "document"``. The set has no splits.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkmark.datasets.model import Document
from chunkmark.datasets.suite.base import (
    DOCUMENT_SCOPE,
    Converted,
    Sample,
    field_of,
    read_json,
)
from chunkmark.datasets.suite.locate import Locator
from chunkmark.datasets.suite.manifest import MISSES
from chunkmark.datasets.suite.pinned import SetInfo
from chunkmark.spans import Span

FILE = "data/question-answering/200423_covidQA.json"
# The farthest a stated start was found from its answer text is 3 characters (measured on the
# 234 that are off); the window leaves room without reaching other sentences.
REPAIR_WINDOW = 16


def convert(root: Path, files: Sequence[str], sample: Sample) -> Converted:
    path = root / FILE
    data = field_of(read_json(path), "data", path, "the file")
    papers: dict[str, Any] = {}
    for i, item in enumerate(data):
        paragraphs = field_of(item, "paragraphs", path, f"data[{i}]")
        for j, paragraph in enumerate(paragraphs):
            doc_id = str(field_of(paragraph, "document_id", path, f"data[{i}].paragraphs[{j}]"))
            papers[doc_id] = paragraph
    out = Converted(documents_in_source=len(papers), notes={"repair_window": REPAIR_WINDOW})
    for doc_id in sample.pick(list(papers)):
        _paper(path, doc_id, papers[doc_id], out)
    return out


def _paper(path: Path, doc_id: str, paragraph: Any, out: Converted) -> None:
    where = f"document {doc_id}"
    context = str(field_of(paragraph, "context", path, where))
    out.documents.append(Document(doc_id, context))
    locator = Locator(context)
    for qa in field_of(paragraph, "qas", path, where):
        qid = str(field_of(qa, "id", path, where))
        spans: list[Span] = []
        texts: list[str] = []
        for answer in field_of(qa, "answers", path, f"question {qid}"):
            text = str(field_of(answer, "text", path, f"question {qid}"))
            stated = int(field_of(answer, "answer_start", path, f"question {qid}"))
            texts.append(text)
            if not text.strip():
                out.tally.miss("empty evidence")
                out.tally.drop(qid, doc_id, "empty evidence")
                break
            if context[stated : stated + len(text)] == text:
                spans.append(Span(stated, stated + len(text)))
                out.tally.place("exact")
                continue
            found = locator.nearest(text, stated, REPAIR_WINDOW)
            if isinstance(found, str):
                reason = MISSES[found]
                detail = f"answer_start {stated}, window {REPAIR_WINDOW}"
                out.tally.miss(reason)
                out.tally.drop(qid, doc_id, reason, detail)
                break
            spans.append(found)
            out.tally.place("repaired")
            out.tally.repaired.append({"id": qid, "stated_start": stated, "start": found.start})
        else:
            if not spans:
                out.tally.drop(qid, doc_id, "empty evidence", "no answers")
                continue
            question = str(field_of(qa, "question", path, f"question {qid}"))
            metadata = {"answers": texts, "scope": DOCUMENT_SCOPE}
            out.keep(qid, question, doc_id, spans, metadata)


COVID_QA = SetInfo(
    name="covid_qa",
    title="COVID-QA",
    description="COVID-QA: 98 COVID-19 papers, 1,380 expert questions with answer offsets "
    "(Apache-2.0).",
    licence="Apache-2.0 (repository); each paper carries its own licence",
    homepage="https://github.com/deepset-ai/COVID-QA",
    convert=convert,
    docs=10,
    scope=DOCUMENT_SCOPE,
)
