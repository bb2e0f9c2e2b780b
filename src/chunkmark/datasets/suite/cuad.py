"""CUAD v1 (Hendrycks et al., NeurIPS 2021 Datasets; CC BY 4.0, The Atticus Project): clauses
of 41 categories that lawyers marked in commercial contracts.

Raw files (``data/CUAD_v1/``): ``master_clauses.csv`` (``Filename``, then per category a column
holding the clause texts as a Python list literal and a ``<category>-Answer`` column),
``CUAD_v1_README.txt`` (the category list: ``Category:`` and ``Description:`` lines) and
``full_contract_txt/<contract>.txt``.

- document ``<contract>`` (the text file's name without ``.txt``): the file, unchanged. A row's
  ``Filename`` names the PDF; it is matched to the text file whose name agrees on letters and
  digits alone (the copies write ``&`` and ``'`` as ``_``); a row with no such file has its
  questions dropped (``document missing``).
- question ``<contract>#<category>`` for each category with at least one clause: the authors'
  template, 'Highlight the parts (if any) of this contract related to "CATEGORY" that should be
  reviewed by a lawyer. Details: DESCRIPTION', CATEGORY the CSV column's name and DESCRIPTION the
  README's (the README names a few categories differently; :data:`README_NAMES` pairs them).
- its excerpts: each clause located in the contract as
  :mod:`~chunkmark.datasets.suite.locate` does. The CSV gives no offsets, so a clause found more
  than once is placed at its first occurrence and counted (``first_of_several`` in the manifest):
  most are parties' names, dates and repeated boilerplate, whose first occurrence is where the
  contract defines them. A question with any clause that cannot be placed is dropped whole
  (clauses the annotators shortened with ``<omitted>`` are the usual case), so no question keeps
  part of its evidence.
- metadata: ``category``, ``answers`` (the ``-Answer`` column, when not empty),
  ``scope: "document"`` (the questions name no contract). CUAD's master file has no splits.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

from chunkmark.datasets.model import Document
from chunkmark.datasets.suite.base import (
    DOCUMENT_SCOPE,
    Converted,
    Evidence,
    Sample,
    read_csv,
    read_text,
)
from chunkmark.datasets.suite.locate import Locator
from chunkmark.datasets.suite.pinned import SetInfo
from chunkmark.errors import DatasetError

BASE = "data/CUAD_v1"
MASTER = f"{BASE}/master_clauses.csv"
README = f"{BASE}/CUAD_v1_README.txt"
TEXTS = f"{BASE}/full_contract_txt/"
TEMPLATE = (
    'Highlight the parts (if any) of this contract related to "{category}" that should be '
    "reviewed by a lawyer. Details: {description}"
)
# CSV column -> README category, where the two are not the same name up to case and spacing.
README_NAMES = {
    "Notice Period To Terminate Renewal": "Notice to Terminate Renewal",
    "Rofr/Rofo/Rofn": "Right of First Refusal, Offer or Negotiation (ROFR/ROFO/ROFN)",
    "Price Restrictions": "Price Restriction",
    "Affiliate License-Licensor": "Affiliate IP License-Licensor",
    "Affiliate License-Licensee": "Affiliate IP License-Licensee",
    "Unlimited/All-You-Can-Eat-License": "Unlimited/All-You-Can-Eat License",
}
_FIX = "Fetch the files again: chunkmark datasets download cuad --force."


# Where the annotators shortened a clause, its text reads "... <omitted> ..."; its pieces are
# placed in order, each at most MAX_GAP characters after the one before (a long clause's cut
# part, not another section of the contract).
OMITTED = "<omitted>"
MAX_GAP = 5_000


def descriptions(readme: str) -> dict[str, str]:
    """README category -> description, from its "Category:" and "Description:" lines."""
    pairs = re.findall(r"^\s*Category:\s*(.+?)\s*$\s*^\s*Description:\s*(.+?)\s*$", readme, re.M)
    if len(pairs) != 41:
        raise DatasetError(
            f"{README} lists {len(pairs)} categories with descriptions, not CUAD's 41.", _FIX
        )
    return dict(pairs)


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _contract_key(filename: str) -> str:
    return _key(re.sub(r"(?i)\.(pdf|txt)'?\s*$", "", filename.strip()))


def convert(root: Path, files: Sequence[str], sample: Sample) -> Converted:
    described = {_key(name): text for name, text in descriptions(read_text(root / README)).items()}
    rows = read_csv(root / MASTER, ("Filename",))
    columns = [c for c in rows[0] if c != "Filename" and not re.search(r"-\s*Answer$", c)]
    answers = {c: _answer_column(c, list(rows[0])) for c in columns}
    templates: dict[str, str] = {}
    for column in columns:
        description = described.get(_key(README_NAMES.get(column, column)))
        if description is None:
            raise DatasetError(f"{MASTER}: column {column!r} is not a category of {README}.", _FIX)
        templates[column] = TEMPLATE.format(category=column, description=description)
    texts = {_contract_key(Path(f).name): f for f in files if f.startswith(TEXTS)}
    contracts: dict[str, tuple[dict[str, str], str | None]] = {}
    for row in rows:
        relative = texts.get(_contract_key(row["Filename"]))
        doc_id = Path(relative).stem if relative else _contract_key(row["Filename"])
        contracts[doc_id] = (row, relative)
    out = Converted(documents_in_source=len(contracts), notes={"categories": len(columns)})
    for doc_id in sample.pick(list(contracts)):
        row, relative = contracts[doc_id]
        text = read_text(root / relative) if relative else None
        if text is not None:
            out.documents.append(Document(doc_id, text))
        locator = Locator(text) if text is not None else None
        for column in columns:
            clauses = _clauses(row[column], row["Filename"], column)
            if not clauses:
                continue
            qid = f"{doc_id}#{column}"
            if locator is None:
                for _ in clauses:
                    out.tally.miss("document missing")
                out.tally.drop(qid, doc_id, "document missing", row["Filename"])
                continue
            answer = (row.get(answers[column] or "") or "").strip()
            _question(qid, doc_id, column, templates[column], clauses, answer, locator, out)
    return out


def _answer_column(column: str, header: list[str]) -> str | None:
    for name in header:
        if name != column and _key(name) == _key(column) + "answer":
            return name
    return None


def _clauses(cell: str, filename: str, column: str) -> list[str]:
    if not cell.strip():
        return []
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError):
        raise DatasetError(
            f"{MASTER}: the {column!r} cell of {filename!r} is not a list of clauses.", _FIX
        ) from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatasetError(
            f"{MASTER}: the {column!r} cell of {filename!r} is not a list of clauses.", _FIX
        )
    return value


def _question(
    qid: str,
    doc_id: str,
    column: str,
    template: str,
    clauses: list[str],
    answer: str,
    locator: Locator,
    out: Converted,
) -> None:
    evidence = Evidence(out.tally)
    for number, clause in enumerate(clauses, start=1):
        found = locator.locate(clause, many="first")
        if found == "not found" and OMITTED in clause:
            found = locator.elided(clause.split(OMITTED), MAX_GAP, many="first")
        evidence.add(found, f"clause {number} of {len(clauses)}")
    if evidence.dropped(qid, doc_id):
        return
    metadata: dict[str, object] = {"category": column}
    if answer:
        metadata["answers"] = [answer]
    metadata["scope"] = DOCUMENT_SCOPE
    out.keep(qid, template, doc_id, evidence.spans, metadata)


CUAD = SetInfo(
    name="cuad",
    title="CUAD",
    description="CUAD v1: 510 commercial contracts, lawyers' clauses in 41 categories (CC BY 4.0).",
    licence="CC BY 4.0 (The Atticus Project)",
    homepage="https://www.atticusprojectai.org/cuad",
    convert=convert,
    docs=8,
    scope=DOCUMENT_SCOPE,
)
