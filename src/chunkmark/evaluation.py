"""One cell of an experiment: chunk -> embed -> retrieve -> score.

All k values of a cell come from one max-k search; questions are embedded once per embedder by
the caller and passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers.base import Chunk, ChunkerFn, chunk_document
from chunkmark.datasets.model import Dataset
from chunkmark.embedders.base import Embedder
from chunkmark.errors import ConfigError
from chunkmark.experiments.chunk_store import ChunkStore
from chunkmark.metrics.span_metrics import (
    ChunkTable,
    QuestionTable,
    min_k_depth,
    score_chunking,
    score_retrieval,
)
from chunkmark.retrieval.exact import ExactIndex
from chunkmark.timing import PhaseTimer

KValue = int | Literal["min"]
MIN_K_CAP = 20

METRICS = ("recall", "precision", "precision_omega", "iou", "f1", "hit", "mrr", "ndcg")


def parse_k(values: str | Sequence[str | int]) -> list[KValue]:
    """``"1,3,5,min"`` or a list -> validated k values (positive integers or ``"min"``)."""
    items = values.split(",") if isinstance(values, str) else list(values)
    out: list[KValue] = []
    for raw in items:
        text = str(raw).strip()
        if text == "min":
            value: KValue = "min"
        else:
            try:
                value = int(text)
            except ValueError:
                value = 0
            if value <= 0 or str(value) != text.lstrip("+"):
                raise ConfigError(
                    f"Invalid k value {text!r}.",
                    "Use positive integers or 'min', comma-separated, e.g. --k 1,3,5,10,min.",
                )
        if value not in out:
            out.append(value)
    if not out:
        raise ConfigError("No k values given.", "Use e.g. --k 1,3,5,10,min.")
    return out


def question_table(dataset: Dataset) -> QuestionTable:
    """The dataset's questions as padded arrays, built once per dataset object."""
    cached = _QUESTION_TABLES.get(id(dataset))
    if cached is not None and cached[0] is dataset:
        return cached[1]
    table = _question_table(dataset)
    _QUESTION_TABLES.clear()  # one dataset at a time: never keeps old datasets alive
    _QUESTION_TABLES[id(dataset)] = (dataset, table)
    return table


_QUESTION_TABLES: dict[int, tuple[Dataset, QuestionTable]] = {}


def _question_table(dataset: Dataset) -> QuestionTable:
    doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
    return QuestionTable.from_lists(
        [doc_index[q.doc_id] for q in dataset.questions],
        [[(s.start, s.end) for s in q.excerpts] for q in dataset.questions],
    )


def chunk_dataset(dataset: Dataset, chunker: ChunkerFn) -> list[Chunk]:
    chunks: list[Chunk] = []
    for doc in dataset.documents:
        chunks.extend(chunk_document(chunker, doc.id, doc.text))
    return chunks


@dataclass
class CellResult:
    """Everything one cell produced: per-question columns for every k, and cell facts."""

    dataset: str
    chunker: str
    embedder: str
    n_chunks: int
    chunks_per_doc: dict[str, int]
    chunk_tokens: npt.NDArray[np.int64]
    chunk_doc: list[str]
    columns: dict[str, list[Any]]
    timings: dict[str, float] = field(default_factory=dict)
    embedding: dict[str, Any] = field(default_factory=dict)


def evaluate_cell(
    dataset: Dataset,
    chunker: ChunkerFn,
    chunker_spec: str,
    embedder: Embedder,
    embedder_spec: str,
    query_vectors: npt.NDArray[np.float32],
    ks: Sequence[KValue],
    count_tokens: Callable[[list[str]], list[int]],
    timer: PhaseTimer | None = None,
    store: tuple[ChunkStore, str] | None = None,
) -> CellResult:
    """Evaluate one (dataset, chunker, embedder) combination at every k in ``ks``.

    With ``store=(chunk_store, key)`` the chunks and their token counts are read from the
    store when present, and written to it when computed.
    """
    timer = timer or PhaseTimer()
    before = _counters(embedder)
    docs = dataset.documents
    doc_index = {d.id: i for i, d in enumerate(docs)}
    with timer("chunk"):
        stored = store[0].get(store[1]) if store is not None else None
        chunks = stored[0] if stored is not None else chunk_dataset(dataset, chunker)
    texts = [c.text(dataset.by_id[c.doc_id].text) for c in chunks]
    with timer("embed_documents"):
        vectors = embedder.embed(texts, kind="document") if texts else np.zeros((0, 1), np.float32)
    embedding = _delta(before, _counters(embedder))
    attribute = getattr(embedder, "model_seconds_for", None)
    if attribute is not None:
        embedding["model_seconds_attributed"] = round(float(attribute(texts)), 6)
    with timer("score"):
        table = ChunkTable.from_rows([(doc_index[c.doc_id], c.start, c.end) for c in chunks])
        questions = question_table(dataset)
        omega = score_chunking(questions, table)
        min_depth = min_k_depth(omega.n_touching, MIN_K_CAP)
        depths = [k if k != "min" else int(min_depth.max(initial=0)) for k in ks]
        max_k = max(depths, default=1)
    with timer("search"):
        index = ExactIndex()
        if len(vectors):
            index.add(vectors)
        ranking, _ = index.search(query_vectors, max_k)
    with timer("score"):
        columns: dict[str, list[Any]] = {
            name: [] for name in ("k", "question_id", "doc_id", "k_used", *METRICS, "n_touching")
        }
        q_ids = [q.id for q in dataset.questions]
        q_docs = [q.doc_id for q in dataset.questions]
        for k in ks:
            depth = min_depth if k == "min" else np.int64(k)
            s = score_retrieval(questions, table, ranking, depth, omega.n_relevant)
            columns["k"].extend([str(k)] * len(q_ids))
            columns["question_id"].extend(q_ids)
            columns["doc_id"].extend(q_docs)
            columns["k_used"].extend(s.k.tolist())
            columns["precision_omega"].extend(omega.precision_omega.tolist())
            columns["n_touching"].extend(omega.n_touching.tolist())
            for name in ("recall", "precision", "iou", "f1", "hit", "mrr", "ndcg"):
                columns[name].extend(getattr(s, name).tolist())
    if stored is not None:
        tokens = stored[1]
    else:
        with timer("count_tokens"):
            tokens = np.asarray(
                count_tokens([docs[doc_index[c.doc_id]].text[c.start : c.end] for c in chunks]),
                dtype=np.int64,
            )
        if store is not None:
            with timer("write"):
                store[0].put(store[1], chunks, tokens)
    per_doc: dict[str, int] = {d.id: 0 for d in docs}
    for c in chunks:
        per_doc[c.doc_id] += 1
    return CellResult(
        dataset=dataset.name,
        chunker=chunker_spec,
        embedder=embedder_spec,
        n_chunks=len(chunks),
        chunks_per_doc=per_doc,
        chunk_tokens=tokens,
        chunk_doc=[c.doc_id for c in chunks],
        columns=columns,
        timings=dict(timer.seconds),
        embedding=embedding,
    )


def _counters(embedder: Embedder) -> dict[str, float]:
    stats = embedder.stats()
    return {
        k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """What one cell added to the embedder's counters (texts, hits, inputs embedded, seconds)."""
    out: dict[str, Any] = {}
    for key, value in after.items():
        diff = value - before.get(key, 0)
        out[key] = round(diff, 6) if isinstance(diff, float) else diff
    return out
