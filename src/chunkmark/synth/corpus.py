"""The documents a generation asks about: a corpus folder, a folder of ``.md``/``.txt`` files or
a dataset chunkmark loads, and a fingerprint of them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkmark.datasets import BUILTIN_NAMES, Document, load_dataset, read_corpus
from chunkmark.datasets.chroma import has_documents, read_documents
from chunkmark.datasets.validate import CHROMA_QUESTIONS, JSONL_QUESTIONS
from chunkmark.synth.options import SynthError
from chunkmark.synth.output import MANIFEST


def load_corpus(corpus: str | Path) -> tuple[list[Document], list[Any]]:
    """The documents of a corpus folder (``corpora/``, as ``datasets import`` writes), of a
    folder holding ``.md``/``.txt`` files directly (one document each; subfolders are not read)
    or of a dataset chunkmark loads (its questions ignored), and the ``sources`` list of the
    folder's ``manifest.json`` when it has one."""
    folder = Path(corpus)
    if (folder / "corpora").is_dir():
        documents = read_corpus(folder)
    elif _is_document_folder(corpus):
        documents = read_documents(folder)
    elif folder.is_dir() and not _holds_questions(folder):
        raise SynthError(
            f"{folder} holds no .md or .txt files, no corpora/ folder and no dataset.",
            f"Convert its documents first (PDF, HTML, Word, or files in subfolders): chunkmark "
            f"datasets import {folder} --out CORPUS, then pass CORPUS to synth generate.",
        )
    else:
        documents = list(load_dataset(corpus).documents)
    sources: list[Any] = []
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            found = json.loads(manifest.read_text(encoding="utf-8")).get("sources")
        except (ValueError, AttributeError):
            found = None
        if isinstance(found, list):
            sources = found
    return documents, sources


def _is_document_folder(corpus: str | Path) -> bool:
    """A folder of documents, not a dataset: ``.md``/``.txt`` files at its top and no question
    file (a built-in dataset name is a dataset even when a folder has its name)."""
    if isinstance(corpus, str) and corpus in BUILTIN_NAMES:
        return False
    folder = Path(corpus)
    return has_documents(folder) and not _holds_questions(folder)


def _holds_questions(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (CHROMA_QUESTIONS, JSONL_QUESTIONS))


def corpus_fingerprint(documents: Sequence[Document]) -> str:
    """A stable hash of the documents' ids and texts."""
    h = hashlib.sha256()
    for d in documents:
        h.update(json.dumps([d.id, d.text], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()[:16]
