"""Stitched corpora: short segments of different sources joined into files, with the true topic
boundaries recorded, to measure how well a chunker finds topic changes.

:func:`stitch` cuts each source document into consecutive segments of ``segment_chars``
characters (ending at a blank line where one falls in the allowed range, else a line break,
else a sentence end, else a space; leading and trailing whitespace dropped), draws segments at
random (seeded) and joins ``docs_per_file`` of them per file with a blank line between, never
two segments of one source side by side, so every segment start after the first is a topic
change. A *source* is one document of one input dataset (``<dataset>/<document id>``).

Questions come along when all their excerpts fall inside segments of one file, with offsets
shifted, so the result is an ordinary dataset. :func:`write_stitched` writes it (Chroma or JSONL
layout) plus ``boundaries.json``, which :func:`read_boundaries` reads back::

    {"format": "chunkmark-stitched", "version": 1, "seed": 0, "docs_per_file": 8,
     "files": 10, "segment_chars": [500, 3000], "separator": "\\n\\n",
     "sources": ["chroma_general/finance", ...],
     "documents": [{"id": "stitched-000", "length": 14234,
                    "segments": [{"start": 0, "end": 1623, "source": "chroma_general/pubmed",
                                  "source_start": 90211, "source_end": 91834}, ...]}, ...],
     "questions": [{"id": "0", "source": "chroma_general/17"}, ...]}

The true boundaries of a document are its segments' starts after the first.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from chunkmark.datasets.chroma import write_chroma
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.errors import DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.spans import Span

BOUNDARIES_FILE = "boundaries.json"
FORMAT = "chunkmark-stitched"
FORMAT_VERSION = 1
SEPARATOR = "\n\n"
DOCUMENT_PREFIX = "stitched"  # documents are stitched-000, stitched-001, ...
DEFAULT_SEGMENT_CHARS = (500, 3000)
DEFAULT_DOCS_PER_FILE = 8
DEFAULT_FILES = 10

# Where a segment may end, best first: the cut is where a match ends.
_CUTS = (
    re.compile(r"(?=\n[ \t]*\n)"),  # before a blank line
    re.compile(r"(?=\n)"),  # before a line break
    re.compile(r"[.!?][\"')\]]*(?=\s)"),  # after a sentence end
    re.compile(r"(?=\s)"),  # before a space
)
_NON_SPACE = re.compile(r"\S")


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece ``[source_start, source_end)`` of a source document, placed at ``[start, end)``
    of a stitched document."""

    start: int
    end: int
    source: str
    source_start: int
    source_end: int


@dataclass(frozen=True)
class Stitched:
    """A stitched dataset, its segments per document, and each question's source
    (``<dataset>/<question id>``)."""

    dataset: Dataset
    segments: Mapping[str, tuple[Segment, ...]]
    question_sources: tuple[str, ...]
    settings: Mapping[str, Any]

    def boundaries(self) -> dict[str, list[int]]:
        """The true topic boundaries per document: every segment start after the first."""
        return {doc_id: [s.start for s in segs[1:]] for doc_id, segs in self.segments.items()}

    def to_json(self) -> dict[str, Any]:
        """The content of ``boundaries.json``."""
        lengths = {d.id: len(d.text) for d in self.dataset.documents}
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            **self.settings,
            "separator": SEPARATOR,
            "documents": [
                {"id": doc_id, "length": lengths[doc_id], "segments": [asdict(s) for s in segs]}
                for doc_id, segs in self.segments.items()
            ],
            "questions": [
                {"id": q.id, "source": source}
                for q, source in zip(self.dataset.questions, self.question_sources, strict=True)
            ],
        }


def cut_segments(
    text: str, min_chars: int, max_chars: int, rng: random.Random
) -> list[tuple[int, int]]:
    """Consecutive segments ``(start, end)`` of ``text``, each about a random length in
    ``[min_chars, max_chars]``, cut at the best break near that length (see the module
    documentation), without leading or trailing whitespace. A tail shorter than ``min_chars``
    is dropped."""
    out: list[tuple[int, int]] = []
    pos = _skip_space(text, 0)
    while len(text) - pos >= min_chars:
        target = pos + rng.randint(min_chars, max_chars)
        cut = (
            len(text) if target >= len(text) else _best_cut(text, pos, target, min_chars, max_chars)
        )
        end = len(text[pos:cut].rstrip()) + pos
        if end > pos:
            out.append((pos, end))
        pos = _skip_space(text, cut)
    return out


def _best_cut(text: str, pos: int, target: int, min_chars: int, max_chars: int) -> int:
    lo, hi = pos + min_chars, min(pos + max_chars, len(text))
    for pattern in _CUTS:
        cuts = [m.end() for m in pattern.finditer(text, lo, hi)]
        if cuts:
            return min(cuts, key=lambda c: (abs(c - target), c))
    return target


def _skip_space(text: str, pos: int) -> int:
    m = _NON_SPACE.search(text, pos)
    return len(text) if m is None else m.start()


def stitch(
    sources: Sequence[Dataset],
    *,
    docs_per_file: int = DEFAULT_DOCS_PER_FILE,
    files: int = DEFAULT_FILES,
    segment_chars: tuple[int, int] = DEFAULT_SEGMENT_CHARS,
    seed: int = 0,
    name: str = "stitched",
) -> Stitched:
    """A corpus of ``files`` documents of ``docs_per_file`` segments each, from ``sources``;
    the dataset is called ``name``.

    Same sources and settings, same corpus. Fewer files (or segments in the last one) are made
    when the sources run out of segments. Raises :class:`DatasetError` when there are fewer
    than two sources or no file of two segments can be made.
    """
    min_chars, max_chars = segment_chars
    _check_settings(docs_per_file, files, min_chars, max_chars)
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    pools: dict[str, list[tuple[int, int]]] = {}
    for dataset in sources:
        for doc in dataset.documents:
            label = f"{dataset.name}/{doc.id}"
            if label in texts:
                raise DatasetError(
                    f"source {label!r} is given twice.",
                    "Give each dataset once (datasets are told apart by folder name).",
                )
            texts[label] = doc.text
            segments = cut_segments(doc.text, min_chars, max_chars, rng)
            rng.shuffle(segments)
            pools[label] = segments
    if len(texts) < 2:
        raise DatasetError(
            f"stitching needs at least two source documents; got {len(texts)}.",
            "Give datasets with several documents, or several datasets.",
        )
    placed = _place(pools, texts, docs_per_file, files, rng)
    if not placed:
        raise DatasetError(
            f"no file of two segments can be made: segments of {min_chars} to {max_chars} "
            "characters do not fit in at least two sources.",
            "Lower --segment-chars, or add longer source documents.",
        )
    documents = {doc_id: _join(segs, texts) for doc_id, segs in placed.items()}
    questions, question_sources = _carry_questions(sources, placed, documents)
    # The Chroma layout orders documents by first use in the questions, then by file name: the
    # same order here, so the dataset written and read back is this one.
    order = list(dict.fromkeys(q.doc_id for q in questions))
    used = set(order)
    order += [d for d in documents if d not in used]
    dataset = Dataset(
        name,
        tuple(Document(doc_id, documents[doc_id]) for doc_id in order),
        tuple(questions),
    )
    settings = {
        "seed": seed,
        "docs_per_file": docs_per_file,
        "files": files,
        "segment_chars": [min_chars, max_chars],
        "sources": list(texts),
    }
    return Stitched(dataset, {d: placed[d] for d in order}, tuple(question_sources), settings)


def _check_settings(docs_per_file: int, files: int, min_chars: int, max_chars: int) -> None:
    if docs_per_file < 2:
        raise DatasetError(
            f"docs per file is {docs_per_file}; a file needs at least two segments to have a "
            "boundary.",
            "Set --docs-per-file to 2 or more.",
        )
    if files < 1:
        raise DatasetError(f"files is {files}.", "Set --files to 1 or more.")
    if not 1 <= min_chars <= max_chars:
        raise DatasetError(
            f"segment lengths {min_chars},{max_chars} are not 1 <= MIN <= MAX.",
            "Give --segment-chars MIN,MAX with 1 <= MIN <= MAX, e.g. 500,3000.",
        )


def _place(
    pools: dict[str, list[tuple[int, int]]],
    texts: dict[str, str],
    docs_per_file: int,
    files: int,
    rng: random.Random,
) -> dict[str, tuple[Segment, ...]]:
    """Draw the segments of each file: a random source other than the previous one, then the
    next segment of its (shuffled) pool; offsets in the file follow from the lengths."""
    width = max(3, len(str(files - 1)))
    placed: dict[str, tuple[Segment, ...]] = {}
    for f in range(files):
        segments: list[Segment] = []
        position = 0
        previous = None
        for _ in range(docs_per_file):
            choices = [label for label, pool in pools.items() if pool and label != previous]
            if not choices:
                break
            label = rng.choice(choices)
            source_start, source_end = pools[label].pop()
            if segments:
                position += len(SEPARATOR)
            end = position + source_end - source_start
            segments.append(Segment(position, end, label, source_start, source_end))
            position, previous = end, label
        if len(segments) < 2:
            break
        placed[f"{DOCUMENT_PREFIX}-{f:0{width}d}"] = tuple(segments)
    return placed


def _join(segments: Sequence[Segment], texts: Mapping[str, str]) -> str:
    return SEPARATOR.join(texts[s.source][s.source_start : s.source_end] for s in segments)


def _carry_questions(
    sources: Sequence[Dataset],
    placed: Mapping[str, tuple[Segment, ...]],
    documents: Mapping[str, str],
) -> tuple[list[Question], list[str]]:
    """The questions whose excerpts all lie in segments of one file, shifted there; ordered by
    file, then by where their first excerpt is; ids are their row numbers."""
    where: dict[str, list[tuple[Segment, str]]] = {}
    for doc_id, segments in placed.items():
        for segment in segments:
            where.setdefault(segment.source, []).append((segment, doc_id))
    file_rank = {doc_id: i for i, doc_id in enumerate(placed)}
    kept: list[tuple[int, int, str, str, tuple[Span, ...]]] = []
    for dataset in sources:
        for q in dataset.questions:
            found = _shift(q, where.get(f"{dataset.name}/{q.doc_id}", []))
            if found is not None:
                doc_id, spans = found
                key = (file_rank[doc_id], spans[0].start)
                kept.append((*key, f"{dataset.name}/{q.id}", q.text, spans))
                _check_excerpts(q, dataset, documents[doc_id], spans)
    kept.sort(key=lambda item: (item[0], item[1]))
    names = list(placed)
    questions = [
        Question(str(i), text, names[rank], spans)
        for i, (rank, _, _, text, spans) in enumerate(kept)
    ]
    return questions, [source for _, _, source, _, _ in kept]


def _shift(
    question: Question, candidates: Sequence[tuple[Segment, str]]
) -> tuple[str, tuple[Span, ...]] | None:
    """The file and shifted excerpts when every excerpt lies inside a placed segment of one
    file; else None."""
    doc_id: str | None = None
    spans: list[Span] = []
    for excerpt in question.excerpts:
        home = next(
            (
                (segment, file)
                for segment, file in candidates
                if segment.source_start <= excerpt.start and excerpt.end <= segment.source_end
            ),
            None,
        )
        if home is None or (doc_id is not None and home[1] != doc_id):
            return None
        segment, doc_id = home
        shift = segment.start - segment.source_start
        spans.append(Span(excerpt.start + shift, excerpt.end + shift))
    return None if doc_id is None else (doc_id, tuple(spans))


def _check_excerpts(question: Question, dataset: Dataset, text: str, spans: Sequence[Span]) -> None:
    source = dataset.by_id[question.doc_id].text
    for old, new in zip(question.excerpts, spans, strict=True):
        if source[old.start : old.end] != text[new.start : new.end]:  # pragma: no cover
            raise DatasetError(
                f"question {question.id!r} of {dataset.name!r}: a shifted excerpt does not "
                "match its source text.",
                "Report this as a bug in chunkmark datasets stitch.",
            )


# --- files ----------------------------------------------------------------------------------


def write_stitched(
    stitched: Stitched, folder: str | Path, *, layout: Literal["chroma", "jsonl"] = "chroma"
) -> Path:
    """Write the dataset in ``layout`` and ``boundaries.json`` into ``folder``; its path."""
    out = Path(folder)
    if layout == "chroma":
        write_chroma(stitched.dataset, out)
    else:
        write_jsonl(stitched.dataset, out)
    path = out / BOUNDARIES_FILE
    text = json.dumps(stitched.to_json(), ensure_ascii=False, indent=1) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))
    return path


def read_boundaries(folder: str | Path, dataset: Dataset | None = None) -> dict[str, list[int]]:
    """The true topic boundaries recorded in ``folder/boundaries.json``, per document.

    With ``dataset``, each document must be in it with the recorded length. Raises
    :class:`DatasetError` naming the file and the fix.
    """
    path = Path(folder) / BOUNDARIES_FILE
    fix = "Point to a folder written by `chunkmark datasets stitch`, or build one again with it."
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no boundaries file.", fix) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot be read as JSON ({exc}).", fix) from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise DatasetError(f"{path}: not a {FORMAT} boundaries file.", fix)
    if raw.get("version") != FORMAT_VERSION:
        raise DatasetError(
            f"{path}: boundaries format version {raw.get('version')!r}; this chunkmark reads "
            f"version {FORMAT_VERSION}.",
            fix,
        )
    out: dict[str, list[int]] = {}
    for i, entry in enumerate(raw.get("documents") or []):
        out.update(_read_entry(entry, i, path, dataset))
    if not out:
        raise DatasetError(f"{path}: lists no documents.", fix)
    return out


def _read_entry(
    entry: Any, index: int, path: Path, dataset: Dataset | None
) -> dict[str, list[int]]:
    where = f"{path}: document {index}"
    try:
        doc_id, length = str(entry["id"]), int(entry["length"])
        starts = [int(s["start"]) for s in entry["segments"]]
    except (KeyError, TypeError, ValueError):
        raise DatasetError(
            f"{where} lacks id, length or segments with a start.",
            "Rebuild the folder with `chunkmark datasets stitch`.",
        ) from None
    if starts != sorted(starts) or any(not 0 <= s < length for s in starts):
        raise DatasetError(
            f"{where} ({doc_id!r}): segment starts are not increasing offsets inside the "
            f"document (length {length}).",
            "Rebuild the folder with `chunkmark datasets stitch`.",
        )
    if dataset is not None:
        doc = dataset.by_id.get(doc_id)
        if doc is None or len(doc.text) != length:
            what = "is not in the dataset" if doc is None else f"has {len(doc.text)} characters"
            raise DatasetError(
                f"{where}: {doc_id!r} {what}, but the boundaries file records {length}.",
                "The corpus changed after stitching: rebuild it with `chunkmark datasets stitch`.",
            )
    return {doc_id: starts[1:]}
