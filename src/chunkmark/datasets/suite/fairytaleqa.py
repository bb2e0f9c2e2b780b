"""FairytaleQA (Xu et al., ACL 2022; Apache-2.0; stories in the public domain): questions on
children's stories with the sections that answer them marked by experts.

Raw files (``data-by-train-split/``): ``section-stories/{split}/<story>-story.csv`` (``section``,
``text``) and ``questions/{split}/<story>-questions.csv`` (``question_id``, ``local-or-sum``,
``cor_section``: one or more section numbers separated by commas, ``attribute1``, ``question``,
``ex-or-im1``, ``answer1`` to ``answer6``).

- document ``<story>``: the sections' texts in file order, joined by a blank line;
- question ``<story>-<n>`` (``n`` the question's row in its file, from 1: a few files repeat a
  ``question_id``); its excerpts are the named sections' texts. Placed ``structural``.
- a section number that no section has is ``evidence not found``; one that two sections share
  (one story numbers two sections 5) is ``ambiguous evidence``: the question is dropped, never
  given either section.
- metadata: ``split``, ``answers`` (the distinct non-empty answers, in column order),
  ``attribute`` (``attribute1``), ``local_or_summary``, ``explicit_or_implicit`` (``ex-or-im1``),
  ``question_id`` (the file's own), ``scope: "document"``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from chunkmark.datasets.model import Document
from chunkmark.datasets.suite.base import (
    DOCUMENT_SCOPE,
    Converted,
    Sample,
    files_under,
    joined,
    read_csv,
)
from chunkmark.datasets.suite.manifest import Reason
from chunkmark.datasets.suite.pinned import SetInfo
from chunkmark.errors import DatasetError
from chunkmark.spans import Span

SPLITS = ("train", "val", "test")
BASE = "data-by-train-split"
SECTION_SEPARATOR = "\n\n"
ANSWERS = tuple(f"answer{i}" for i in range(1, 7))


def convert(root: Path, files: Sequence[str], sample: Sample) -> Converted:
    stories: dict[str, tuple[str, str, str]] = {}  # story -> (split, sections, questions)
    for split in SPLITS:
        for relative in files_under(files, f"{BASE}/section-stories/{split}/", "-story.csv"):
            story = Path(relative).name.removesuffix("-story.csv")
            questions = f"{BASE}/questions/{split}/{story}-questions.csv"
            if questions not in files:
                raise DatasetError(
                    f"{root / relative} has no questions file {questions}.",
                    "Fetch the files again: chunkmark datasets download fairytaleqa --force.",
                )
            stories[story] = (split, relative, questions)
    out = Converted(documents_in_source=len(stories))
    for story in sample.pick(list(stories)):
        split, sections, questions = stories[story]
        _story(root, story, split, sections, questions, out)
    return out


def _story(
    root: Path, story: str, split: str, sections: str, questions: str, out: Converted
) -> None:
    rows = read_csv(root / sections, ("section", "text"))
    text, spans = joined([r["text"] for r in rows], SECTION_SEPARATOR)
    out.documents.append(Document(story, text))
    numbers = Counter(r["section"].strip() for r in rows)
    span_of = {r["section"].strip(): s for r, s in zip(rows, spans, strict=True)}
    needed = ("question_id", "local-or-sum", "cor_section", "question", "attribute1", *ANSWERS)
    for n, row in enumerate(read_csv(root / questions, needed), start=1):
        qid = f"{story}-{n}"
        named = [s.strip() for s in row["cor_section"].split(",") if s.strip()]
        reason: Reason | None = None
        if not named:
            reason = "empty evidence"
        elif any(numbers[s] == 0 for s in named):
            reason = "evidence not found"
        elif any(numbers[s] > 1 for s in named):
            reason = "ambiguous evidence"
        if reason is not None:
            out.tally.miss(reason)
            out.tally.drop(qid, story, reason, f"cor_section {row['cor_section']!r}")
            continue
        excerpts: list[Span] = []
        for s in dict.fromkeys(named):
            excerpts.append(span_of[s])
        answers = [row[a].strip() for a in ANSWERS if (row.get(a) or "").strip()]
        metadata = {
            "split": split,
            "answers": list(dict.fromkeys(answers)),
            "attribute": row["attribute1"],
            "local_or_summary": row["local-or-sum"],
            "explicit_or_implicit": row.get("ex-or-im1") or "",
            "question_id": row["question_id"],
            "scope": DOCUMENT_SCOPE,
        }
        out.keep(qid, row["question"], story, excerpts, metadata, split=split, structural=True)


FAIRYTALEQA = SetInfo(
    name="fairytaleqa",
    title="FairytaleQA",
    description="FairytaleQA: 278 stories, 10,580 questions with expert-marked sections "
    "(Apache-2.0).",
    licence="Apache-2.0; the stories are in the public domain",
    homepage="https://github.com/uci-soe/FairytaleQAData",
    convert=convert,
    docs=20,
    scope=DOCUMENT_SCOPE,
)
