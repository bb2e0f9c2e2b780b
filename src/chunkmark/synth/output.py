"""The dataset folder a generation writes: documents first, then one question per line (JSONL or
the Chroma CSV), each appended, flushed and synced as it is accepted, every excerpt checked to
be its document's slice; read back to resume a stopped run."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkmark.datasets import Dataset, Document, write_chroma
from chunkmark.files import write_bytes_atomic
from chunkmark.synth.answers import SlotOutcome
from chunkmark.synth.options import SynthError

MANIFEST = "manifest.json"
_CSV_COLUMNS = ("question", "references", "corpus_id", "metadata")
_JSONL_DOCUMENTS = "documents.jsonl"
_JSONL_QUESTIONS = "questions.jsonl"
_CSV_QUESTIONS = "questions_df.csv"


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


def written_of(outcome: SlotOutcome, line: str) -> Written:
    """The record of an accepted outcome written as ``line``."""
    return Written(
        outcome.slot.index,
        outcome.question,
        line,
        outcome.attempts,
        dict(outcome.rejected),
        tuple(e.method for e in outcome.excerpts),
        tuple(e.ambiguous for e in outcome.excerpts),
    )
