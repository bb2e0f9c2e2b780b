"""Real queries to label, read from a file: plain text, CSV or JSON lines.

- ``.txt`` (or any other suffix): one query per line; blank lines are skipped.
- ``.csv``: one query per row, from ``column`` (or the column named ``query``, ``question`` or
  ``text``, or the only column).
- ``.jsonl``: one query per line, a JSON string or an object with ``query``, ``question`` or
  ``text`` (or ``column``).

Repeated queries are kept once, in first order. Anything malformed is one line naming the file,
the line or row and the fix.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from chunkmark.datasets.validate import Problem, read_text
from chunkmark.label.store import LabelError, json_lines

KEYS = ("query", "question", "text")


def read_queries(path: Path, column: str | None = None) -> list[str]:
    """The queries in ``path`` (see the module docstring)."""
    content = read_text(path, _raise, universal_newlines=True)
    assert content is not None  # _raise raises instead
    content = content.removeprefix("\ufeff")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        found = _csv(path, content, column)
    elif suffix in (".jsonl", ".ndjson"):
        found = _jsonl(path, content, column)
    else:
        found = [line.strip() for line in content.split("\n")]
    queries = list(dict.fromkeys(q for q in found if q))
    if not queries:
        raise LabelError(f"{path}: no queries in the file.", "Write one query per line.")
    return queries


def _raise(problem: Problem) -> None:
    raise LabelError(f"{problem.where}: {problem.message}", problem.fix)


def _csv(path: Path, content: str, column: str | None) -> list[str]:
    reader = csv.reader(io.StringIO(content))
    header = next(reader, None)
    if not header:
        raise LabelError(
            f"{path}: the CSV file is empty.", "Give it a header row and one query per row."
        )
    names = [h.strip() for h in header]
    wanted = column or next((k for k in KEYS if k in names), None)
    if wanted is None and len(names) == 1:
        wanted = names[0]
    if wanted is None or wanted not in names:
        what = f"no column {column!r}" if column else f"no column named {', '.join(KEYS)}"
        raise LabelError(
            f"{path}: {what} (the columns are {', '.join(repr(n) for n in names)}).",
            "Name the column of queries with --column.",
        )
    at = names.index(wanted)
    out: list[str] = []
    for row_number, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(names):
            raise LabelError(
                f"{path}, row {row_number}: {len(row)} fields where the header has {len(names)}.",
                'Quote fields that hold commas ("..."), or fix the row.',
            )
        out.append(row[at].strip())
    return out


def _jsonl(path: Path, content: str, column: str | None) -> list[str]:
    keys = (column,) if column else KEYS
    out: list[str] = []
    for number, value in json_lines(path, content, "Write one JSON string or object per line."):
        if isinstance(value, str):
            out.append(value.strip())
            continue
        text = next((value[k] for k in keys if isinstance(value, dict) and k in value), None)
        if not isinstance(text, str):
            raise LabelError(
                f"{path}, line {number}: no {' or '.join(repr(k) for k in keys)} string.",
                "Give each object its query under one of those keys, or name it with --column.",
            )
        out.append(text.strip())
    return out
