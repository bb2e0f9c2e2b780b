"""Datasets: documents, questions with exact answer excerpts, and the formats they come in.

:func:`load_dataset` accepts a built-in name (``"demo"``, ``"chroma-general"``) or a folder in
either layout (Chroma's ``questions_df.csv`` + ``corpora/``, or chunkmark's JSONL).
"""

from __future__ import annotations

import sys
from pathlib import Path

from chunkmark.datasets.chroma import load_chroma, read_corpus, scan_chroma, write_chroma
from chunkmark.datasets.demo import DEMO_NAME, load_demo
from chunkmark.datasets.jsonl import load_jsonl, scan_jsonl, write_jsonl
from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.datasets.validate import Problem, detect_layout, raise_first
from chunkmark.errors import DatasetError

BUILTIN_NAMES = (DEMO_NAME, "chroma-general")

__all__ = [
    "BUILTIN_NAMES",
    "Dataset",
    "Document",
    "Problem",
    "Question",
    "find_problems",
    "load_chroma",
    "load_dataset",
    "load_demo",
    "load_jsonl",
    "read_corpus",
    "write_chroma",
    "write_jsonl",
]


def load_dataset(source: str | Path) -> Dataset:
    """Load a dataset by built-in name or folder.

    A string equal to a built-in name wins over a folder of that name (write ``./demo`` for the
    folder). ``"chroma-general"`` is downloaded into the cache on first use, with a note on
    stderr. Raises :class:`~chunkmark.errors.DatasetError` for anything else.
    """
    if isinstance(source, str) and source == DEMO_NAME:
        return load_demo()
    if isinstance(source, str) and source == "chroma-general":
        from chunkmark.datasets import download

        if not download.is_downloaded(source):
            where = download.dataset_dir(source)
            _note(f"downloading the {source} dataset into {where} (first use only)")
            download.download(source)
        return load_chroma(download.dataset_dir(source))
    folder = Path(source)
    if not folder.exists():
        raise DatasetError(
            f"{str(source)!r} is neither a dataset folder nor a built-in dataset name.",
            f"Use one of {', '.join(BUILTIN_NAMES)}, or the path of a folder holding "
            "questions_df.csv (Chroma layout) or questions.jsonl (JSONL layout).",
        )
    layout = detect_layout(folder, raise_first(folder))
    return load_chroma(folder) if layout == "chroma" else load_jsonl(folder)


def find_problems(path: str | Path) -> list[Problem]:
    """Every problem in the dataset folder ``path`` (either layout); empty when it loads.

    It lives here, above both loaders, because it picks a layout's scanner:
    :mod:`~chunkmark.datasets.validate` holds only the checks the loaders share.
    """
    folder = Path(path)
    problems: list[Problem] = []
    layout = detect_layout(folder, problems.append)
    if layout == "chroma":
        scan_chroma(folder, problems.append)
    elif layout == "jsonl":
        scan_jsonl(folder, problems.append)
    return problems


def _note(line: str) -> None:
    print(f"chunkmark: {line}", file=sys.stderr)
