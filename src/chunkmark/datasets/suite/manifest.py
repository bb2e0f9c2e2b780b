"""What a conversion kept, dropped and how it placed the evidence: the ``manifest.json`` of a
converted set.

A :class:`Tally` is filled while a set converts: each source question is either kept (with how
each of its excerpts was placed) or dropped with one reason, so ``kept + dropped == raw`` holds
by construction and :meth:`Tally.manifest` checks it again.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from chunkmark.files import write_bytes_atomic

MANIFEST_FILE = "manifest.json"

# How a kept excerpt was placed: text found as given; found after whitespace normalisation;
# given by the set's structure (a turn range, a section id); found near an offset the set
# stated wrongly (COVID-QA); pieces of a passage its annotators shortened, found in order (CUAD's
# ``<omitted>``).
Placed = Literal["exact", "normalised", "structural", "repaired", "elided"]
PLACED: tuple[Placed, ...] = get_args(Placed)

# Why a source question was dropped.
Reason = Literal[
    "evidence not found",
    "ambiguous evidence",
    "empty evidence",
    "document missing",
    "flagged incorrect by the set's authors",
    "no evidence accepted",
]
REASONS: tuple[Reason, ...] = get_args(Reason)

# Why :meth:`Locator.locate <chunkmark.datasets.suite.locate.Locator.locate>` placed nothing,
# as a drop reason.
MISSES: dict[str, Reason] = {
    "empty": "empty evidence",
    "ambiguous": "ambiguous evidence",
    "not found": "evidence not found",
}


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where a set's raw files come from."""

    repository: str  # owner/name on GitHub
    commit: str | None  # None: a branch's head (Re-DocRED's evidence set)
    licence: str
    homepage: str


@dataclass
class Tally:
    """Counts and records of one conversion (see the module docstring)."""

    raw_questions: int = 0
    kept: int = 0
    placed: Counter[str] = field(default_factory=Counter)
    unplaced: Counter[str] = field(default_factory=Counter)
    first_of_several: int = 0
    evidence_set_aside: Counter[str] = field(default_factory=Counter)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    repaired: list[dict[str, Any]] = field(default_factory=list)
    splits: Counter[str] = field(default_factory=Counter)

    def place(self, method: Placed, *, first_of_several: bool = False) -> None:
        """One piece of evidence placed (its question may still be dropped for another piece);
        ``first_of_several``: put at the first of several occurrences."""
        self.placed[method] += 1
        self.first_of_several += first_of_several

    def miss(self, reason: Reason) -> None:
        """One piece of evidence that could not be placed."""
        self.unplaced[reason] += 1

    def keep(self, *, split: str | None = None) -> None:
        """A source question kept."""
        self.raw_questions += 1
        self.kept += 1
        if split is not None:
            self.splits[split] += 1

    def drop(self, question_id: str, doc_id: str, reason: Reason, detail: str = "") -> None:
        """A source question dropped, with its reason (and a short detail)."""
        self.raw_questions += 1
        item: dict[str, Any] = {"id": question_id, "doc_id": doc_id, "reason": reason}
        if detail:
            item["detail"] = detail
        self.dropped.append(item)

    def set_aside(self, reason: str, count: int = 1) -> None:
        """Evidence rows of kept or dropped questions left out on purpose (counted, by reason)."""
        self.evidence_set_aside[reason] += count

    def dropped_by_reason(self) -> dict[str, int]:
        counts = Counter(item["reason"] for item in self.dropped)
        return {reason: counts[reason] for reason in REASONS if counts[reason]}

    def manifest(
        self,
        *,
        name: str,
        title: str,
        source: SourceInfo,
        documents: int,
        documents_in_source: int | None,
        docs: int | None,
        seed: int,
        mean_document_chars: float,
        notes: dict[str, Any],
    ) -> dict[str, Any]:
        dropped = self.dropped_by_reason()
        if self.kept + sum(dropped.values()) != self.raw_questions:
            raise AssertionError("kept and dropped questions do not add up to the source's")
        return {
            "set": name,
            "title": title,
            "source": {
                "repository": f"https://github.com/{source.repository}",
                "commit": source.commit,
                "licence": source.licence,
                "homepage": source.homepage,
            },
            "sampling": {
                "docs": docs,
                "seed": seed,
                "documents_in_source": documents_in_source,
            },
            "documents": documents,
            "mean_document_chars": round(mean_document_chars, 1),
            "questions": {
                "raw": self.raw_questions,
                "kept": self.kept,
                "dropped": dropped,
            },
            "splits": dict(sorted(self.splits.items())),
            "evidence": {
                "placed": {kind: self.placed[kind] for kind in PLACED},
                "not_placed": {r: self.unplaced[r] for r in REASONS if self.unplaced[r]},
                "first_of_several": self.first_of_several,
                "set_aside": dict(sorted(self.evidence_set_aside.items())),
            },
            "notes": notes,
            "dropped": self.dropped,
            "repaired": self.repaired,
        }


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    """Write ``manifest`` as ``folder/manifest.json`` (atomically); returns the path."""
    path = folder / MANIFEST_FILE
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))
    return path


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a converted set (``folder/manifest.json``)."""
    value: dict[str, Any] = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    return value


def summary(folder: Path, manifest: dict[str, Any]) -> str:
    """The line saying a set is ready in ``folder``, from its manifest."""
    dropped = sum(manifest["questions"]["dropped"].values())
    return summary_line(
        manifest["set"], folder, manifest["documents"], manifest["questions"]["kept"], dropped
    )


def summary_line(
    name: str, folder: Path, documents: int, questions: int, dropped: int | None
) -> str:
    """The line saying the set ``name`` is ready in ``folder`` (``dropped``: None when the set
    drops nothing on conversion)."""
    tail = "" if dropped is None else f", {dropped} dropped (see {MANIFEST_FILE})"
    return f"ok: {name} in {folder} ({documents} documents, {questions} questions{tail})"
