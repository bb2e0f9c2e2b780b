"""QMSum (Zhong et al., NAACL 2021; MIT): meeting transcripts with query-focused summaries.

Raw files: ``data/ALL/{train,val,test}/<meeting>.json``, each with ``meeting_transcripts`` (turns:
``speaker``, ``content``) and ``specific_query_list`` (``query``, ``answer``,
``relevant_text_span``: a list of ``[first turn, last turn]`` pairs, both inclusive, as strings).

- document ``<meeting>``: every turn written ``"{speaker}: {content}"``, turns joined by one
  newline;
- question ``<meeting>-q<i>`` (the i-th specific query, from 0): the query; its excerpts are the
  annotated turn ranges, each from the first character of its first turn to the last character of
  its last turn (ranges that overlap merged). Placed ``structural``.
- metadata: ``split``, ``answers`` (the one reference answer), ``scope: "document"``.

The general queries ("Summarize the meeting") have no evidence and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chunkmark.datasets.model import Document
from chunkmark.datasets.suite.base import (
    DOCUMENT_SCOPE,
    Converted,
    Sample,
    field_of,
    files_under,
    joined,
    read_json,
)
from chunkmark.datasets.suite.manifest import Reason
from chunkmark.datasets.suite.pinned import SetInfo
from chunkmark.errors import DatasetError
from chunkmark.spans import Span

SPLITS = ("train", "val", "test")
TURN_SEPARATOR = "\n"


def convert(root: Path, files: Sequence[str], sample: Sample) -> Converted:
    meetings: dict[str, tuple[str, str]] = {}  # meeting -> (split, relative path)
    for split in SPLITS:
        for relative in files_under(files, f"data/ALL/{split}/", ".json"):
            meeting = Path(relative).stem
            if meeting in meetings:
                raise DatasetError(
                    f"{root / relative}: meeting {meeting!r} is also in {meetings[meeting][1]}.",
                    "Fetch the files again: chunkmark datasets download qmsum --force.",
                )
            meetings[meeting] = (split, relative)
    out = Converted(documents_in_source=len(meetings))
    for meeting in sample.pick(list(meetings)):
        split, relative = meetings[meeting]
        _meeting(root / relative, meeting, split, out)
    return out


def _meeting(path: Path, meeting: str, split: str, out: Converted) -> None:
    data = read_json(path)
    turns = field_of(data, "meeting_transcripts", path, "the meeting")
    parts = [
        f"{field_of(t, 'speaker', path, f'turn {i}')}: {field_of(t, 'content', path, f'turn {i}')}"
        for i, t in enumerate(turns)
    ]
    text, spans = joined(parts, TURN_SEPARATOR)
    out.documents.append(Document(meeting, text))
    for i, query in enumerate(field_of(data, "specific_query_list", path, "the meeting")):
        where = f"specific query {i}"
        qid = f"{meeting}-q{i}"
        ranges = field_of(query, "relevant_text_span", path, where)
        excerpts: list[Span] = []
        bad = ""
        for pair in ranges:
            try:
                first, last = (int(x) for x in pair)
            except (TypeError, ValueError):
                bad = f"turn range {pair!r} is not two turn numbers"
                break
            if not 0 <= first <= last < len(spans):
                bad = f"turn range {first}-{last} is outside the {len(spans)} turns"
                break
            excerpts.append(Span(spans[first].start, spans[last].end))
        if bad or not excerpts:
            reason: Reason = "evidence not found" if bad else "empty evidence"
            out.tally.miss(reason)
            out.tally.drop(qid, meeting, reason, bad)
            continue
        text = str(field_of(query, "query", path, where))
        answers = [str(field_of(query, "answer", path, where))]
        metadata = {"split": split, "answers": answers, "scope": DOCUMENT_SCOPE}
        out.keep(qid, text, meeting, excerpts, metadata, split=split, structural=True)


QMSUM = SetInfo(
    name="qmsum",
    title="QMSum",
    description="QMSum: 232 meeting transcripts, 1,576 queries with annotated turn ranges (MIT).",
    licence="MIT (repository); transcripts from AMI, ICSI and public parliamentary records",
    homepage="https://github.com/Yale-LILY/QMSum",
    convert=convert,
    docs=8,
    scope=DOCUMENT_SCOPE,
)
