"""One cell of an experiment: a (dataset, chunker, embedder, retriever) combination.

A :class:`Cell` owns its whole pipeline and returns a typed :class:`CellResult`:

1. chunk: read the chunks from the chunk store when the chunker declares its output reusable
   (deterministic, no LLM) and they are there; else build the chunker, chunk every document,
   count the chunks' tokens and store them;
2. embed: the chunks' texts, through the run's cached embedder;
3. retrieve: one search per question, as deep as the deepest k (``min`` included);
4. score: every metric of the catalog (:data:`chunkmark.metrics.METRICS`) at every k, from
   prefixes of that one ranking.

What the cells of one embedder share (the cached embedder, the question vectors, the stores)
is a :class:`CellEnv`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, ChunkerFn, chunk_document
from chunkmark.datasets.model import Dataset
from chunkmark.embedders.base import Embedder, FloatArray
from chunkmark.errors import ChunkmarkError
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.config import MIN_K_CAP, KValue
from chunkmark.metrics import (
    METRICS,
    ChunkTable,
    QuestionTable,
    ScoreInputs,
    min_k_depth,
    score_chunking,
    score_retrieval,
)
from chunkmark.retrieval import RETRIEVERS
from chunkmark.specs import Spec
from chunkmark.stats import ChunkerStats, EmbedderStats
from chunkmark.timing import PhaseTimer

DEFAULT_RETRIEVER = Spec.of("exact", block_rows=1024)
IntArray = npt.NDArray[np.int64]
TokenCounter = Callable[[list[str]], list[int]]


def count_cl100k(texts: list[str]) -> list[int]:
    """Chunk sizes are reported in ``cl100k_base`` tokens, whatever the embedder."""
    from chunkmark.tokenizers import count_tokens

    return count_tokens(texts, "cl100k_base")


@dataclass
class CellEnv:
    """What the cells of one embedder share.

    ``embedder`` is the run's (cached) embedder, ``identity`` the inner model's identity (it
    keys stored chunks of chunkers that embed). ``embed_queries`` embeds the dataset's
    questions; it is called once, by the first cell that needs them.
    """

    embedder: Embedder
    identity: dict[str, Any]
    embed_queries: Callable[[], FloatArray]
    chunk_store: ChunkStore | None = None
    cache_dir: Path | None = None
    seed: int = 0
    count_tokens: TokenCounter = count_cl100k
    _queries: FloatArray | None = field(default=None, repr=False)

    def query_vectors(self) -> FloatArray:
        if self._queries is None:
            self._queries = self.embed_queries()
        return self._queries


@dataclass
class CellResult:
    """Everything one cell produced: per-question columns for every k, and the cell's facts."""

    dataset: str
    chunker: str
    embedder: str
    chunks: list[Chunk]
    chunk_tokens: IntArray
    chunks_per_doc: dict[str, int]
    columns: dict[str, list[Any]]
    timings: dict[str, float]
    embedding: EmbedderStats
    question_ids: list[str] = field(default_factory=list)
    ranking: IntArray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    similarity: npt.NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, 0), np.float32)
    )
    model_seconds_attributed: float | None = None
    chunking: ChunkerStats | None = None
    chunks_reused: bool = False

    @property
    def chunk_doc(self) -> list[str]:
        return [c.doc_id for c in self.chunks]

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_doc)

    def table(self) -> pa.Table:
        """One row per question x k: the cell's names, then the scored columns."""
        n = len(self.columns["question_id"])
        cols: dict[str, Any] = {
            "dataset": [self.dataset] * n,
            "chunker": [self.chunker] * n,
            "embedder": [self.embedder] * n,
        }
        cols.update(self.columns)
        return pa.table(cols)

    def chunks_table(self) -> pa.Table:
        """The cell's chunks in index order: document, span, cl100k tokens, embedded text."""
        return pa.table(
            {
                "doc_id": pa.array([c.doc_id for c in self.chunks], pa.string()),
                "start": pa.array([c.start for c in self.chunks], pa.int64()),
                "end": pa.array([c.end for c in self.chunks], pa.int64()),
                "tokens": pa.array(self.chunk_tokens.tolist(), pa.int64()),
                "embed_text": pa.array([c.embed_text for c in self.chunks], pa.string()),
            }
        )

    def ranking_table(self) -> pa.Table:
        """Per question, the chunk indices retrieved (best first, as deep as the deepest k) and
        their similarity scores."""
        return pa.table(
            {
                "question_id": pa.array(self.question_ids, pa.string()),
                "chunks": pa.array(self.ranking.tolist(), pa.list_(pa.int32())),
                "scores": pa.array(self.similarity.tolist(), pa.list_(pa.float32())),
            }
        )

    def facts(self, cell_id: str) -> dict[str, Any]:
        """The cell's facts for its file and the manifest (JSON-able)."""
        tokens_per_doc: dict[str, int] = dict.fromkeys(self.chunks_per_doc, 0)
        for doc, t in zip(self.chunk_doc, self.chunk_tokens.tolist(), strict=True):
            tokens_per_doc[doc] += int(t)
        embedding = self.embedding.to_dict()
        if self.model_seconds_attributed is not None:
            embedding["model_seconds_attributed"] = round(self.model_seconds_attributed, 6)
        return {
            "id": cell_id,
            "dataset": self.dataset,
            "chunker": self.chunker,
            "embedder": self.embedder,
            "n_chunks": self.n_chunks,
            "chunks_per_doc": self.chunks_per_doc,
            "chunk_tokens": int(self.chunk_tokens.sum()),
            "chunk_tokens_per_doc": tokens_per_doc,
            "chunks_reused": self.chunks_reused,
            "timings": self.timings,
            "embedding": embedding,
            "chunking": None if self.chunking is None else self.chunking.to_dict(),
        }


@dataclass(frozen=True)
class Cell:
    """One (dataset, chunker, embedder, retriever) combination, scored at every k in ``ks``.

    Specs are canonical (``Registry.resolve``); ``embedder`` names the model whose cached
    instance the :class:`CellEnv` holds.
    """

    dataset: Dataset
    chunker: Spec
    embedder: Spec
    ks: tuple[KValue, ...]
    retriever: Spec = DEFAULT_RETRIEVER

    def run(self, env: CellEnv, timer: PhaseTimer | None = None) -> CellResult:
        """Chunk, embed, retrieve and score; phases are timed into ``timer``."""
        timer = timer or PhaseTimer()
        query_vectors = env.query_vectors()
        before = env.embedder.stats()  # the cell's share includes what its chunker embedded
        chunks, tokens, chunk_stats, reused = self._chunk(env, timer)
        texts = [c.text(self.dataset.by_id[c.doc_id].text) for c in chunks]
        with timer("embed_documents"):
            vectors = (
                env.embedder.embed(texts, kind="document")
                if texts
                else np.zeros((0, 1), np.float32)
            )
        embedding: EmbedderStats = env.embedder.stats() - before
        attribute = getattr(env.embedder, "model_seconds_for", None)
        attributed = None if attribute is None else float(attribute(texts))
        columns, ranking, similarity = self._retrieve_and_score(
            chunks, texts, vectors, query_vectors, timer
        )
        per_doc: dict[str, int] = {d.id: 0 for d in self.dataset.documents}
        for c in chunks:
            per_doc[c.doc_id] += 1
        return CellResult(
            dataset=self.dataset.name,
            chunker=str(self.chunker),
            embedder=str(self.embedder),
            chunks=chunks,
            chunk_tokens=tokens,
            chunks_per_doc=per_doc,
            columns=columns,
            timings=dict(timer.seconds),
            embedding=embedding,
            question_ids=[q.id for q in self.dataset.questions],
            ranking=ranking,
            similarity=similarity,
            model_seconds_attributed=attributed,
            chunking=chunk_stats,
            chunks_reused=reused,
        )

    def _chunk(
        self, env: CellEnv, timer: PhaseTimer
    ) -> tuple[list[Chunk], IntArray, ChunkerStats | None, bool]:
        """The chunks and their token counts: from the chunk store, or computed (and stored)."""
        traits = CHUNKERS.entry(self.chunker.name).traits
        key = None
        if env.chunk_store is not None and traits.reusable:
            identity = env.identity if traits.embeds else None
            key = chunk_key(str(self.chunker), self.dataset.fingerprint, identity)
            with timer("chunk"):
                stored = env.chunk_store.get(key)
            if stored is not None:
                return stored[0], stored[1], None, True
        context = ChunkerContext(embedder=env.embedder, cache_dir=env.cache_dir, seed=env.seed)
        chunker, _ = CHUNKERS.build(self.chunker, context=context)
        with timer("chunk"):
            chunks = chunk_dataset(self.dataset, chunker)
        docs = self.dataset.by_id
        with timer("count_tokens"):
            tokens = np.asarray(
                env.count_tokens([docs[c.doc_id].text[c.start : c.end] for c in chunks]),
                dtype=np.int64,
            )
        if key is not None and env.chunk_store is not None:
            with timer("write"):
                env.chunk_store.put(key, chunks, tokens)
        return chunks, tokens, chunker_stats(chunker), False

    def _retrieve_and_score(
        self,
        chunks: list[Chunk],
        texts: list[str],
        vectors: FloatArray,
        query_vectors: FloatArray,
        timer: PhaseTimer,
    ) -> tuple[dict[str, list[Any]], IntArray, npt.NDArray[np.float32]]:
        doc_index = {d.id: i for i, d in enumerate(self.dataset.documents)}
        with timer("score"):
            table = ChunkTable.from_rows([(doc_index[c.doc_id], c.start, c.end) for c in chunks])
            questions = question_table(self.dataset)
            omega = score_chunking(questions, table)
            min_depth = min_k_depth(omega.n_touching, MIN_K_CAP)
            depths = [k if k != "min" else int(min_depth.max(initial=0)) for k in self.ks]
            max_k = max(depths, default=1)
        with timer("search"):
            retriever, _ = RETRIEVERS.build(self.retriever)
            retriever.index(vectors, texts)
            query_texts = [q.text for q in self.dataset.questions]
            ranking, similarity = retriever.search(query_vectors, query_texts, max_k)
        with timer("score"):
            names = METRICS.names()
            columns: dict[str, list[Any]] = {
                name: [] for name in ("k", "question_id", "doc_id", "k_used", *names, "n_touching")
            }
            q_ids = [q.id for q in self.dataset.questions]
            q_docs = [q.doc_id for q in self.dataset.questions]
            for k in self.ks:
                depth = min_depth if k == "min" else np.int64(k)
                scores = score_retrieval(questions, table, ranking, depth, omega.n_relevant)
                inputs = ScoreInputs(questions, table, ranking, scores.k, scores, omega)
                values = METRICS.score(inputs)
                columns["k"].extend([str(k)] * len(q_ids))
                columns["question_id"].extend(q_ids)
                columns["doc_id"].extend(q_docs)
                columns["k_used"].extend(scores.k.tolist())
                for name in names:
                    columns[name].extend(values[name].tolist())
                columns["n_touching"].extend(omega.n_touching.tolist())
        return columns, ranking, similarity


def chunker_stats(chunker: ChunkerFn) -> ChunkerStats | None:
    """The chunker's :class:`ChunkerStats`, if it reports any."""
    report = getattr(chunker, "stats", None)
    if report is None:
        return None
    stats = report()
    if not isinstance(stats, ChunkerStats):
        raise ChunkmarkError(
            f"Chunker {type(chunker).__name__}.stats() returned {type(stats).__name__}.",
            "A chunker's stats() must return chunkmark.stats.ChunkerStats.",
        )
    return stats


def chunk_dataset(dataset: Dataset, chunker: ChunkerFn) -> list[Chunk]:
    """Every document's chunks, in document order."""
    chunks: list[Chunk] = []
    for doc in dataset.documents:
        chunks.extend(chunk_document(chunker, doc.id, doc.text))
    return chunks


def question_table(dataset: Dataset) -> QuestionTable:
    """The dataset's questions as padded arrays, built once per dataset object."""
    cached = _QUESTION_TABLES.get(id(dataset))
    if cached is not None and cached[0] is dataset:
        return cached[1]
    doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
    table = QuestionTable.from_lists(
        [doc_index[q.doc_id] for q in dataset.questions],
        [[(s.start, s.end) for s in q.excerpts] for q in dataset.questions],
    )
    _QUESTION_TABLES.clear()  # one dataset at a time: never keeps old datasets alive
    _QUESTION_TABLES[id(dataset)] = (dataset, table)
    return table


_QUESTION_TABLES: dict[int, tuple[Dataset, QuestionTable]] = {}
