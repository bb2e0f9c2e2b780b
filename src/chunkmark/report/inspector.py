"""What the report's inspector needs: document text, chunk spans, excerpts and rankings.

Only what the page can show is carried: the documents questions point at (and the parts of
others that a retrieved chunk comes from); a document longer than :data:`FULL_TEXT_LIMIT`
characters is cut down to windows around its excerpts and retrieved chunks (the page says it is
trimmed); a cell's chunks are those that meet the text carried, and cells with the same chunks
(one chunker, several embedders) share them. The rankings are the dense ones (ranker
``exact(...)``): what the ``top_k``, ``token_budget`` and ``threshold`` settings read. Numbers are
packed (see :func:`_chunk_set` and :func:`_ranking`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chunkmark.datasets import Dataset, load_dataset
from chunkmark.errors import ChunkmarkError
from chunkmark.report.data import ChunkSpans, DatasetInfo, Ranking, ReportData
from chunkmark.report.settings import fixed_depth, is_dense

FULL_TEXT_LIMIT = 20_000  # characters: longer documents are carried as windows
EXCERPT_MARGIN = 300  # characters of context kept on each side of an excerpt
MAX_DEPTH = 20  # the deepest ranking carried per question
Interval = tuple[int, int]


@dataclass(frozen=True)
class _CellView:
    """One cell's chunks and ranking, read from its files."""

    cell: int
    chunks: ChunkSpans
    ranking: Ranking


def load_report_dataset(info: DatasetInfo) -> tuple[Dataset | None, str]:
    """The dataset behind ``info`` from its recorded source, or None and why not."""
    if not info.source:
        return None, f"The runs do not record where the dataset {info.name!r} came from."
    try:
        dataset = load_dataset(info.source)
    except ChunkmarkError as exc:
        return None, f"The dataset {info.name!r} could not be loaded from {info.source}: {exc}"
    if dataset.fingerprint != info.fingerprint:
        return None, (
            f"The dataset at {info.source} has changed since the run (fingerprint "
            f"{dataset.fingerprint}, the run used {info.fingerprint}): the inspector would show "
            "the wrong text."
        )
    return dataset, ""


def build_inspector(
    data: ReportData, info: DatasetInfo, dataset: Dataset | None, message: str = ""
) -> dict[str, Any]:
    """The inspector's data for one dataset (``available`` false, with ``message``, when the
    dataset or the cells' files are missing)."""
    base: dict[str, Any] = {"dataset": info.key, "available": False, "message": message}
    if dataset is None:
        return base
    views = _cell_views(data, info.key)
    if not views:
        base["message"] = (
            "The runs kept no chunk or ranking files (cells/<id>.chunks.parquet and "
            ".ranking.parquet); rerun them with this chunkmark version to inspect chunks."
        )
        return base
    asked = _asked_questions(data, info.key)
    questions = [q for q in dataset.questions if q.id in asked]
    depth = _depth(data, views)
    windows = _windows(dataset, questions, views, depth)
    doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
    docs = [_doc_payload(dataset, d.id, windows.get(d.id, [])) for d in dataset.documents]
    q_payload = [
        {
            "id": q.id,
            "text": q.text,
            "doc": doc_index[q.doc_id],
            "excerpts": [[s.start, s.end] for s in q.excerpts],
        }
        for q in questions
    ]
    sets, used = _chunk_sets(views, windows, doc_index)
    cells = {
        str(v.cell): {"chunks": used[v.cell], **_ranking(data, v, questions, depth)} for v in views
    }
    return {
        **base,
        "available": True,
        "message": "",
        "fullTextLimit": FULL_TEXT_LIMIT,
        "trimmed": any(d["trimmed"] for d in docs),
        "depth": depth,
        "docs": docs,
        "questions": q_payload,
        "chunkSets": sets,
        "cells": cells,
    }


def _cell_views(data: ReportData, dataset: str) -> list[_CellView]:
    views = []
    for cell in data.cells_of(dataset):
        chunks, ranking = data.chunks(cell.index), data.ranking(cell.index)
        if chunks is not None and ranking is not None:
            views.append(_CellView(cell.index, chunks, ranking))
    return views


def _asked_questions(data: ReportData, dataset: str) -> set[str]:
    asked: set[str] = set()
    for (cell, _, _), scores in data.scores.items():
        if data.cells[cell].dataset == dataset:
            asked.update(scores.question_ids)
    return asked


def _depth(data: ReportData, views: list[_CellView]) -> int:
    """How deep the rankings are carried: the deepest k used by any row of a setting that reads
    the dense ranking, at most MAX_DEPTH."""
    cells = {v.cell for v in views}
    deepest = max(
        (
            int(s.k_used.max(initial=0))
            for (c, retrieval, _), s in data.scores.items()
            if c in cells and is_dense(retrieval)
        ),
        default=1,
    )
    return max(1, min(MAX_DEPTH, deepest))


def _windows(
    dataset: Dataset, questions: list[Any], views: list[_CellView], depth: int
) -> dict[str, list[Interval]]:
    """Per document, the merged character ranges to carry."""
    wanted: dict[str, list[Interval]] = {}
    asked_docs = {q.doc_id for q in questions}
    for doc_id in asked_docs:
        text = dataset.by_id[doc_id].text
        if len(text) <= FULL_TEXT_LIMIT:
            wanted[doc_id] = [(0, len(text))]
    for q in questions:
        n = len(dataset.by_id[q.doc_id].text)
        for s in q.excerpts:
            wanted.setdefault(q.doc_id, []).append(
                (max(0, s.start - EXCERPT_MARGIN), min(n, s.end + EXCERPT_MARGIN))
            )
    for v in views:
        for ids in v.ranking.chunks:
            for i in ids[:depth]:
                doc = v.chunks.doc_ids[i]
                wanted.setdefault(doc, []).append((int(v.chunks.start[i]), int(v.chunks.end[i])))
    return {doc: merge(spans) for doc, spans in wanted.items()}


def merge(spans: Iterable[Interval]) -> list[Interval]:
    """Sorted, non-overlapping ranges covering ``spans`` (touching ranges are joined)."""
    out: list[Interval] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _doc_payload(dataset: Dataset, doc_id: str, windows: list[Interval]) -> dict[str, Any]:
    text = dataset.by_id[doc_id].text
    full = windows == [(0, len(text))]
    return {
        "id": doc_id,
        "length": len(text),
        "trimmed": not full,
        "pieces": [[start, text[start:end]] for start, end in windows],
    }


def _chunk_sets(
    views: list[_CellView], windows: dict[str, list[Interval]], doc_index: dict[str, int]
) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The distinct chunkings of the cells (cells of one chunker under several embedders share
    one), packed, and which one each cell uses."""
    sets: list[dict[str, Any]] = []
    seen: dict[tuple[tuple[str, ...], bytes, bytes], int] = {}
    used: dict[int, int] = {}
    for v in views:
        key = (v.chunks.doc_ids, v.chunks.start.tobytes(), v.chunks.end.tobytes())
        if key not in seen:
            seen[key] = len(sets)
            sets.append(_chunk_set(v.chunks, windows, doc_index))
        used[v.cell] = seen[key]
    return sets, used


def _chunk_set(
    chunks: ChunkSpans, windows: dict[str, list[Interval]], doc_index: dict[str, int]
) -> dict[str, Any]:
    """The chunks that meet the carried text: their indices as ``[first, count]`` ranges, their
    documents as ``[document, count]`` runs, each start as the gap from the previous chunk's end
    in the same document (the first: from 0), and their lengths."""
    keep = _visible_chunks(chunks, windows)
    ids: list[list[int]] = []
    docs: list[list[int]] = []
    gaps: list[int] = []
    previous_end = 0
    for i in keep:
        if ids and ids[-1][0] + ids[-1][1] == i:
            ids[-1][1] += 1
        else:
            ids.append([i, 1])
        d = doc_index[chunks.doc_ids[i]]
        if docs and docs[-1][0] == d:
            docs[-1][1] += 1
        else:
            docs.append([d, 1])
            previous_end = 0
        gaps.append(int(chunks.start[i]) - previous_end)
        previous_end = int(chunks.end[i])
    lengths = [int(chunks.end[i] - chunks.start[i]) for i in keep]
    return {"ids": ids, "docs": docs, "gaps": gaps, "lengths": lengths}


def _ranking(data: ReportData, view: _CellView, questions: list[Any], depth: int) -> dict[str, Any]:
    """The cell's ranking per question (in the order of ``questions``): chunk indices as
    differences from the previous one, similarities in units of 1e-4."""
    position = {q: i for i, q in enumerate(view.ranking.question_ids)}
    rank: list[list[int]] = []
    score: list[list[int]] = []
    for q in questions:
        at = position.get(q.id)
        ids = view.ranking.chunks[at][:depth] if at is not None else []
        scores = view.ranking.scores[at][:depth] if at is not None else []
        rank.append(_deltas(ids))
        score.append([round(float(s) * 10_000) for s in scores])
    return {"rank": rank, "score": score, "kUsed": _k_used(data, view.cell, questions)}


def _visible_chunks(chunks: ChunkSpans, windows: dict[str, list[Interval]]) -> list[int]:
    """Indices of the chunks that overlap a carried range of their document."""
    starts = {doc: [a for a, _ in spans] for doc, spans in windows.items()}
    keep = []
    for i, doc in enumerate(chunks.doc_ids):
        spans = windows.get(doc)
        if not spans:
            continue
        start, end = int(chunks.start[i]), int(chunks.end[i])
        j = bisect_left(starts[doc], end) - 1  # the last range starting before the chunk ends
        if j >= 0 and spans[j][1] > start:
            keep.append(i)
    return keep


def _deltas(values: list[int]) -> list[int]:
    """Each value minus the previous one (the first as is)."""
    out: list[int] = []
    previous = 0
    for v in values:
        out.append(int(v) - previous)
        previous = int(v)
    return out


def _k_used(data: ReportData, cell: int, questions: list[Any]) -> dict[str, list[int]]:
    """Per dense retrieval setting without a fixed depth (``top_k(k='min')``, ``token_budget``,
    ``threshold``), the depth each question used (the settings' depths agree across scorings:
    the first scoring's are carried)."""
    out: dict[str, list[int]] = {}
    for (c, retrieval, _), scores in data.scores.items():
        if c != cell or not is_dense(retrieval) or fixed_depth(retrieval) is not None:
            continue
        if retrieval in out:
            continue
        used = dict(zip(scores.question_ids, scores.k_used.tolist(), strict=True))
        out[retrieval] = [int(used.get(q.id, 0)) for q in questions]
    return out
