"""``chunkmark audit``: span-level scores for the chunks and vectors a vector-store collection
already holds, through the same scoring path as ``chunkmark run``.

1. open the collection read-only and read every chunk: id, text, metadata, stored vector;
2. place each chunk in its document (:mod:`chunkmark.audit.placement`); the document is the one
   a metadata key names (``doc_key``, else chunkmark's own ``chunkmark_doc_id``), else found by
   content. Chunks no way places are kept: they become spans of one extra document,
   ``__unplaced__`` (their texts), that no question asks about, so they are retrieved text that
   covers no excerpt;
3. embed the questions only, with the embedder spec given (its dimension must be the
   collection's); the corpus is never embedded: the cell asks the embedder for nothing and the
   manifest says so;
4. score one cell, ``stored(store=..., collection=...)`` x the embedder, with
   :meth:`chunkmark.experiments.cell.Cell.run_stored`: ``top_k`` settings read exact search over
   the stored vectors, ``store`` settings the store's own search (its index as deployed);
5. write what ``chunkmark run`` writes (``results.parquet``, ``summary.csv``, ``manifest.json``,
   ``cells/``, the report) plus ``audit.csv``: per question and k, the share of the exact top k
   the store returned and the recall each search gives, so what the approximate index costs is
   read per question and in total (the manifest's ``audit`` section).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import numpy as np

from chunkmark.audit.placement import (
    DEFAULT_FUZZY_THRESHOLD,
    METHODS,
    Placement,
    StoredChunk,
    counts,
    place_chunks,
)
from chunkmark.audit.stores import StoreAddress, StoredChunks, VectorStore, open_store
from chunkmark.audit.stores import parse_address as parse_store_address
from chunkmark.audit.stores.base import FloatArray, StoreError
from chunkmark.chunkers import CHUNKERS, Chunk
from chunkmark.datasets.model import Dataset, Document
from chunkmark.errors import ConfigError, DatasetError
from chunkmark.experiments.analysis import AnalysisOutput, FinishedCell, FinishedRun
from chunkmark.experiments.cell import Cell, count_cl100k
from chunkmark.experiments.config import DEFAULT_K, make_config
from chunkmark.experiments.outcome import CellTask
from chunkmark.experiments.runner import Progress, ReportWriter, Results, Session
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS, StoreRetriever
from chunkmark.timing import PhaseTimer

UNPLACED_DOC = "__unplaced__"
DOC_KEY = "chunkmark_doc_id"
START_KEYS = ("chunkmark_start", "start_index", "start_char_idx")
END_KEYS = ("chunkmark_end", "end_char_idx")
TEXT_KEYS = ("_node_text",)  # a LlamaIndex node's text when the store keeps it apart
_UNIT_NORM = 1e-4  # stored rows this close to unit length are searched as they are
_EXAMPLES = 3


@dataclass
class AuditResults:
    """What an audit produced: the run's results, and the audit's own facts (``section``, also
    in the manifest under ``audit``)."""

    results: Results
    section: dict[str, Any]
    placements: list[Placement] = field(default_factory=list)


def audit(
    store: str,
    dataset: str = "demo",
    embedder: str = "sentence_transformers()",
    *,
    k: Sequence[int | str] = DEFAULT_K,
    out: Path | None = None,
    doc_key: str | None = None,
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
    cache_dir: Path | None = None,
    no_cache: bool = False,
    seed: int = 0,
    report: bool = True,
    progress: Progress | None = None,
    report_writer: ReportWriter | None = None,
) -> AuditResults:
    """Audit the collection ``store`` (a store URI, see :mod:`chunkmark.audit.stores.base`)
    against ``dataset`` with questions embedded by ``embedder`` (module docstring)."""
    say = progress or (lambda _msg: None)
    address = parse_store_address(store)
    stored_spec = str(
        CHUNKERS.resolve(f"stored(store={address.kind!r}, collection={address.collection!r})")
    )
    depths = tuple(k)
    retrieval = [f"top_k(k={d!r})" for d in depths] + [f"store(k={d!r})" for d in depths]
    config = make_config(
        {
            "datasets": [dataset],
            "chunkers": [stored_spec],
            "embedders": [embedder],
            "retrieval": retrieval,
            "out": out,
            "cache_dir": cache_dir,
            "no_cache": no_cache,
            "seed": seed,
            "report": report,
        }
    )
    opened = open_store(address)
    try:
        say(f"reading {address.label()}")
        stored = opened.read()
        described = opened.describe()
        analysis = AuditAnalysis(address, described, fuzzy_threshold)
        session = Session(config, say, None, (analysis,), report_writer)
        try:
            return _audit(session, opened, stored, analysis, doc_key, say)
        finally:
            session.close()
    finally:
        opened.close()


def _audit(
    session: Session,
    opened: VectorStore,
    stored: StoredChunks,
    analysis: AuditAnalysis,
    doc_key: str | None,
    say: Progress,
) -> AuditResults:
    address = opened.address
    dataset = session.datasets[0]
    texts = chunk_texts(stored, address)
    if not texts:
        raise StoreError(
            f"The {address.label()} holds no chunks.", "Audit a collection that holds chunks."
        )
    wanted = stored_chunks(stored, texts, dataset, doc_key, address)
    placements = place_chunks(wanted, {d.id: d.text for d in dataset.documents}, analysis.fuzzy)
    placed_counts = counts(placements)
    say(
        "placed "
        + ", ".join(f"{placed_counts[m]} {m}" for m in METHODS)
        + f" of {len(placements)} chunks"
    )
    dataset, chunks = placed_dataset(dataset, placements, texts)
    session.datasets = [dataset]
    order = sorted(range(len(chunks)), key=lambda i: _chunk_order(dataset, chunks[i]))
    chunks = [chunks[i] for i in order]
    vectors = search_vectors(stored.vectors[order])
    index_of = {stored.ids[i]: row for row, i in enumerate(order)}
    e_spec = session.embedder_specs[0]
    env = session.env(dataset, e_spec)
    queries = env.query_vectors()
    check_dimension(address, queries, stored.vectors)
    tokens = np.asarray(
        count_cl100k([dataset.by_id[c.doc_id].text[c.start : c.end] for c in chunks]),
        dtype=np.int64,
    )

    def search(query_vectors: FloatArray, depth: int) -> tuple[list[list[int]], list[list[float]]]:
        ids, scores = opened.search(query_vectors, depth)
        return [[index_of.get(i, -1) for i in row] for row in ids], scores

    task = CellTask(dataset, CHUNKERS.resolve(session.config.chunkers[0]), e_spec)
    cell = Cell(dataset, task.chunker, e_spec, session.retrieval, session.scoring)
    timer = PhaseTimer()
    store_ranker = str(RETRIEVERS.resolve("store()"))
    analysis.placements = placed_counts
    analysis.chunks = len(chunks)
    result = cell.run_stored(
        env, chunks, tokens, vectors, {store_ranker: StoreRetriever(search)}, timer
    )
    outcome = session.record(task, result, timer)
    results = session.finish([outcome])
    section = results.manifest.get(AuditAnalysis.name, {})
    return AuditResults(results, section, placements)


def chunk_texts(stored: StoredChunks, address: StoreAddress) -> list[str]:
    """Every chunk's text (a LlamaIndex node's from its stored node when kept apart); a
    StoreError naming the collection when some chunk has none."""
    texts: list[str] = []
    missing: list[str] = []
    for chunk_id, text, meta in zip(stored.ids, stored.texts, stored.metadata, strict=True):
        if not text:
            text = next((meta[key] for key in TEXT_KEYS if isinstance(meta.get(key), str)), None)
        if not text:
            missing.append(chunk_id)
            continue
        texts.append(text)
    if missing:
        shown = ", ".join(repr(i) for i in missing[:_EXAMPLES])
        raise StoreError(
            f"{len(missing)} of {len(stored.ids)} chunks of the {address.label()} have no text "
            f"stored (ids {shown}{', ...' if len(missing) > _EXAMPLES else ''}): they cannot "
            "be placed in their documents.",
            "Store each chunk's text with its vector (LangChain and LlamaIndex vector stores do "
            "by default; with a raw client pass documents=/payload text), then audit again.",
        )
    return texts


def stored_chunks(
    stored: StoredChunks,
    texts: Sequence[str],
    dataset: Dataset,
    doc_key: str | None,
    address: StoreAddress,
) -> list[StoredChunk]:
    """What placement needs of each chunk: its text, the dataset document its metadata names
    (``doc_key``, else ``chunkmark_doc_id``; None: found by content) and its stored offsets.
    A named document the dataset lacks is a DatasetError naming the collection."""
    resolve = _doc_resolver(dataset)
    key = doc_key or DOC_KEY
    out: list[StoredChunk] = []
    unknown: dict[str, int] = {}
    absent = 0
    for text, meta in zip(texts, stored.metadata, strict=True):
        value = meta.get(key)
        doc_id = None
        if value is None:
            absent += 1
        else:
            doc_id = resolve(str(value))
            if doc_id is None:
                unknown[str(value)] = unknown.get(str(value), 0) + 1
        start = _int(meta, START_KEYS) if doc_id is not None else None
        end = _int(meta, END_KEYS) if start is not None else None
        out.append(StoredChunk(text, doc_id, start, end))
    if unknown:
        shown = ", ".join(repr(v) for v in list(unknown)[:_EXAMPLES])
        n = sum(unknown.values())
        raise DatasetError(
            f"{n} chunks of the {address.label()} name documents that dataset "
            f"{dataset.name!r} does not have under metadata key {key!r} ({shown}"
            f"{', ...' if len(unknown) > _EXAMPLES else ''}).",
            "Audit against the dataset those documents belong to (its document ids, file "
            "names or stems must match), or pass --doc-key naming the metadata key that holds "
            "them.",
        )
    if doc_key is not None and absent == len(texts):
        raise DatasetError(
            f"No chunk of the {address.label()} has the metadata key {doc_key!r}.",
            "Pass --doc-key naming a key the chunks' metadata holds, or leave it out to find "
            "each chunk's document by its text.",
        )
    return out


def _doc_resolver(dataset: Dataset) -> Callable[[str], str | None]:
    """A dataset document id from a metadata value: the id itself, else its file name, else
    its file name without extension (``docs/guide.md`` -> ``guide.md`` -> ``guide``)."""
    by_name: dict[str, str] = {}
    for doc in dataset.documents:
        by_name.setdefault(doc.id, doc.id)
    ids = set(by_name)

    def resolve(value: str) -> str | None:
        if value in ids:
            return value
        for path in (PurePosixPath(value), PureWindowsPath(value)):
            for name in (path.name, path.stem):
                if name in ids:
                    return name
        return None

    return resolve


def _int(meta: dict[str, Any], keys: Sequence[str]) -> int | None:
    for key in keys:
        value = meta.get(key)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
    return None


def placed_dataset(
    dataset: Dataset, placements: Sequence[Placement], texts: Sequence[str]
) -> tuple[Dataset, list[Chunk]]:
    """The dataset (with the ``__unplaced__`` document when some chunk is unplaced) and one
    chunk per placement, in the placements' order. A chunk placed by normalisation or fuzzily
    keeps its stored text as the text it was embedded from."""
    chunks: list[Chunk] = []
    lost: list[str] = []
    pos = 0
    for placement, text in zip(placements, texts, strict=True):
        if placement.method == "unplaced" or placement.doc_id is None:
            chunks.append(Chunk(UNPLACED_DOC, pos, pos + len(text)))
            lost.append(text)
            pos += len(text) + 1
            continue
        span = dataset.by_id[placement.doc_id].text[placement.start : placement.end]
        embed = None if span == text else text
        chunks.append(Chunk(placement.doc_id, placement.start, placement.end, embed))
    if not lost:
        return dataset, chunks
    extra = Document(UNPLACED_DOC, "\n".join(lost))
    grown = Dataset(dataset.name, (*dataset.documents, extra), dataset.questions, dataset.source)
    return grown, chunks


def _chunk_order(dataset: Dataset, chunk: Chunk) -> tuple[int, int, int]:
    index = {d.id: i for i, d in enumerate(dataset.documents)}
    return index[chunk.doc_id], chunk.start, chunk.end


def search_vectors(vectors: FloatArray) -> FloatArray:
    """Stored vectors for exact cosine search: as stored when every row is of unit length
    (within 1e-4), else each row L2-normalised (a zero row stays zero)."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    if not len(rows):
        return rows
    norms = np.linalg.norm(rows, axis=1)
    if np.all(np.abs(norms - 1.0) <= _UNIT_NORM):
        return rows
    safe = np.where(norms > 0, norms, 1.0).astype(np.float32)
    return (rows / safe[:, None]).astype(np.float32)


def check_dimension(address: StoreAddress, queries: FloatArray, vectors: FloatArray) -> None:
    """The query embedder must give vectors of the collection's dimension."""
    if len(vectors) and queries.shape[1] != vectors.shape[1]:
        raise ConfigError(
            f"The {address.label()} holds {vectors.shape[1]}-dimensional vectors but the "
            f"query embedder gives {queries.shape[1]} dimensions.",
            "Pass --embedder naming the model that filled the collection (the questions must "
            "be embedded by the same model as the chunks).",
        )


class AuditAnalysis:
    """The audit's own files and manifest section: placement counts, chunk embeddings asked of
    the embedder (none), and per question and k what the store's search loses against exact
    search over the same vectors (``audit.csv``)."""

    name = "audit"

    def __init__(self, address: StoreAddress, described: dict[str, Any], fuzzy: float) -> None:
        self.address = address
        self.described = described
        self.fuzzy = fuzzy
        self.placements: dict[str, int] = {}
        self.chunks = 0
        self._rows: list[dict[str, Any]] = []
        self._section: dict[str, Any] = {}

    def cell(self, cell: FinishedCell) -> None:
        rankings = _rankings(cell)
        exact = next(v for key, v in rankings.items() if key.startswith("exact("))
        store = next(v for key, v in rankings.items() if key.startswith("store("))
        table = cell.table.to_pydict()
        recall: dict[tuple[str, str], float] = {}
        first = (
            (table["excerpts"][0], table["unit"][0], table["denominator"][0])
            if table["k"]
            else None
        )
        for i, setting in enumerate(table["retrieval"]):
            if (table["excerpts"][i], table["unit"][i], table["denominator"][i]) != first:
                continue
            recall[(setting, table["question_id"][i])] = float(table["recall"][i])
        depths = sorted({int(v) for v in table["k"] if str(v).isdigit()})
        n = cell.facts["n_chunks"]
        for depth in depths:
            exact_spec = str(RETRIEVAL.resolve(f"top_k(k={depth})"))
            store_spec = str(RETRIEVAL.resolve(f"store(k={depth})"))
            width = min(depth, n)
            for q, question in enumerate(exact[0]):
                truth = set(exact[1][q][:width])
                got = set(store[1][q][:width])
                share = len(truth & got) / width if width else 1.0
                r_exact = recall[(exact_spec, question)]
                r_store = recall[(store_spec, question)]
                self._rows.append(
                    {
                        "question_id": question,
                        "k": depth,
                        "chunks_recall_vs_exact": share,
                        "recall_exact": r_exact,
                        "recall_store": r_store,
                        "recall_lost": r_exact - r_store,
                    }
                )
        embedding = cell.facts.get("embedding") or {}
        cache = embedding.get("cache") or {}
        self._section = {
            "store": self.address.kind,
            "collection": self.address.collection,
            "address": self.address.label(),
            "search": self.described,
            "chunks": self.chunks,
            "placement": self.placements,
            "fuzzy_threshold": self.fuzzy,
            "chunk_embeddings": {
                "requested": int(cache.get("requested", 0)),
                "computed": int(embedding.get("inputs", 0)),
            },
        }

    def finish(self, run: FinishedRun) -> AnalysisOutput:
        by_k: dict[int, list[dict[str, Any]]] = {}
        for row in self._rows:
            by_k.setdefault(row["k"], []).append(row)
        self._section["ann"] = [
            {
                "k": depth,
                "chunks_recall_vs_exact": _mean(rows, "chunks_recall_vs_exact"),
                "recall_exact": _mean(rows, "recall_exact"),
                "recall_store": _mean(rows, "recall_store"),
                "recall_lost": _mean(rows, "recall_lost"),
                "questions_losing": sum(r["recall_lost"] > 0 for r in rows),
                "questions": len(rows),
            }
            for depth, rows in sorted(by_k.items())
        ]
        buffer = io.StringIO()
        columns = (
            "question_id",
            "k",
            "chunks_recall_vs_exact",
            "recall_exact",
            "recall_store",
            "recall_lost",
        )
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self._rows)
        return AnalysisOutput(self._section, {"audit.csv": buffer.getvalue().encode("utf-8")})


def _rankings(cell: FinishedCell) -> dict[str, tuple[list[str], list[list[int]]]]:
    data = cell.rankings.to_pydict()
    out: dict[str, tuple[list[str], list[list[int]]]] = {}
    for ranker, question, chunks in zip(
        data["ranker"], data["question_id"], data["chunks"], strict=True
    ):
        ids, rows = out.setdefault(ranker, ([], []))
        ids.append(question)
        rows.append(list(chunks))
    return out


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")
