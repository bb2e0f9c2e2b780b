"""One cell of an experiment: a (dataset, chunker, embedder) combination, every retrieval
setting and scoring option of the grid computed from it.

A :class:`Cell` owns its whole pipeline and returns a typed :class:`CellResult`:

1. chunk: read the chunks from the chunk store when the chunker declares its output reusable
   (deterministic, no LLM) and they are there; else build the chunker, chunk every document,
   count the chunks' tokens and store them;
2. embed: the chunks' texts, through the run's cached embedder (a cell of many chunks embeds
   them in slices into a memory-mapped vector file, see :func:`embed_chunks`); query and chunk
   vectors must come from the same embedder (identity and dimension), else an error before any
   search;
3. retrieve: one search per question and *ranker* (dense, bm25, hybrid, rerank), as deep as the
   deepest setting that reads it needs: ``top_k`` (every k, ``min`` included), ``token_budget``
   and ``threshold`` read that one ranking, never a second search or embedding pass;
4. score: every metric of the catalog (:data:`chunkmark.metrics.METRICS`) for every retrieval
   setting and scoring option, from the selected prefixes of those rankings;
5. check: whether the queries carry signal (:func:`chunkmark.experiments.checks.query_signal`).

What the cells of one embedder share (the cached embedder, the question vectors, the stores)
is a :class:`CellEnv`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, ChunkerFn, chunk_documents
from chunkmark.chunkers.diagnostics import diagnose
from chunkmark.counters import ChunkerStats, EmbedderStats
from chunkmark.datasets.model import Dataset
from chunkmark.embedders.base import DocSpan, Embedder, FloatArray, SpanEmbedder, embeds_spans
from chunkmark.errors import ChunkmarkError
from chunkmark.experiments.checks import check_same_embedder, query_signal
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.config import MIN_K_CAP
from chunkmark.experiments.outcome import chunker_name
from chunkmark.experiments.scoring_tables import ScoringTables
from chunkmark.metrics import (
    METRICS,
    ChunkTable,
    OmegaScores,
    QuestionTable,
    ScoreInputs,
    Scoring,
    min_k_depth,
    score_chunking,
)
from chunkmark.retrieval import (
    RETRIEVAL,
    RankContext,
    RetrievalSetting,
    Retriever,
    rank,
)
from chunkmark.retrieval.settings import valid_depth
from chunkmark.retrieval.vectors import VectorFile
from chunkmark.specs import Spec
from chunkmark.timing import PhaseTimer

IntArray = npt.NDArray[np.int64]
TokenCounter = Callable[[list[str]], list[int]]
DEFAULT_SCORING = (Scoring(),)
# Result columns before the metrics, in order; the cell's names (dataset, chunker, embedder)
# come first in every table.
SETTING_COLUMNS = ("retrieval", "excerpts", "unit", "denominator", "k")
QUESTION_COLUMNS = ("question_id", "doc_id", "k_used", "retrieved_tokens")
# Chunk texts embedded (and counted) per call: a cell with more chunks embeds them in slices
# into a memory-mapped vector file instead of holding every text and vector at once.
EMBED_SLICE = 65_536


def count_cl100k(texts: list[str]) -> list[int]:
    """Chunk sizes are reported in ``cl100k_base`` tokens, whatever the embedder."""
    from chunkmark.tokenizers import count_tokens

    return count_tokens(texts, "cl100k_base")


@dataclass
class CellEnv:
    """What the cells of one (dataset, embedder) share.

    ``embedder`` is the run's (cached) embedder, ``identity`` the inner model's identity (it
    keys stored chunks of chunkers that embed). ``embed_queries`` embeds the dataset's
    questions; it is called once, by the first cell that needs them, and a failure is kept and
    raised again for every later cell (never a second round of retries). ``embed_slice`` chunk
    texts are embedded (and token-counted) per call; a cell with more chunks writes its vectors
    to a file in a temporary folder under ``scratch_dir`` (the system's temporary folder when
    None), deleted when the cell ends.
    """

    embedder: Embedder
    identity: dict[str, Any]
    embed_queries: Callable[[], FloatArray]
    chunk_store: ChunkStore | None = None
    cache_dir: Path | None = None
    seed: int = 0
    count_tokens: TokenCounter = count_cl100k
    embed_slice: int = EMBED_SLICE
    scratch_dir: Path | None = None
    _queries: FloatArray | None = field(default=None, repr=False)
    _query_error: Exception | None = field(default=None, repr=False)
    query_identity: dict[str, Any] | None = field(default=None, repr=False)

    def query_vectors(self) -> FloatArray:
        if self._query_error is not None:
            raise self._query_error
        if self._queries is None:
            try:
                self._queries = self.embed_queries()
            except Exception as exc:
                self._query_error = exc
                raise
            self.query_identity = self.identity
        return self._queries


@dataclass
class CellResult:
    """Everything one cell produced: per-question columns for every retrieval setting and
    scoring option, and the cell's facts."""

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
    rankings: dict[str, tuple[IntArray, npt.NDArray[np.float32]]] = field(default_factory=dict)
    retrieval_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    query_check: dict[str, Any] | None = None
    model_seconds_attributed: float | None = None
    chunking: ChunkerStats | None = None
    chunks_reused: bool = False
    fingerprint: str = ""
    diagnostics: dict[str, Any] | None = None

    @property
    def chunk_doc(self) -> list[str]:
        return [c.doc_id for c in self.chunks]

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_doc)

    @property
    def ranking(self) -> IntArray:
        """The dense ranking (chunk indices, best first), if the cell searched densely."""
        return self._dense()[0]

    @property
    def similarity(self) -> npt.NDArray[np.float32]:
        """The dense ranking's cosine similarities."""
        return self._dense()[1]

    def _dense(self) -> tuple[IntArray, npt.NDArray[np.float32]]:
        for ranker, pair in self.rankings.items():
            if ranker.startswith("exact("):
                return pair
        return np.zeros((0, 0), np.int64), np.zeros((0, 0), np.float32)

    def table(self) -> pa.Table:
        """One row per question x retrieval setting x scoring: the cell's names, then the
        scored columns."""
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
        """Per ranker and question, the chunk indices retrieved (best first, as deep as the
        deepest setting reading that ranker needs) and their scores."""
        rankers: list[str] = []
        ids: list[str] = []
        chunks: list[list[int]] = []
        scores: list[list[float]] = []
        for ranker, (ranking, similarity) in self.rankings.items():
            rankers.extend([ranker] * len(self.question_ids))
            ids.extend(self.question_ids)
            # a document-scoped ranking ends in -1 entries past the document's chunks
            valid = valid_depth(ranking).tolist()
            chunks.extend(row[:n] for row, n in zip(ranking.tolist(), valid, strict=True))
            scores.extend(row[:n] for row, n in zip(similarity.tolist(), valid, strict=True))
        return pa.table(
            {
                "ranker": pa.array(rankers, pa.string()),
                "question_id": pa.array(ids, pa.string()),
                "chunks": pa.array(chunks, pa.list_(pa.int32())),
                "scores": pa.array(scores, pa.list_(pa.float32())),
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
            "fingerprint": self.fingerprint,
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
            "retrieval": self.retrieval_stats,
            "query_check": self.query_check,
            "diagnostics": self.diagnostics,
        }


@dataclass(frozen=True)
class Cell:
    """One (dataset, chunker, embedder) combination, scored for every retrieval setting in
    ``retrieval`` (canonical single-setting specs such as ``top_k(k=5)``) and every scoring
    option in ``scoring``.

    Specs are canonical (``Registry.resolve``); ``embedder`` names the model whose cached
    instance the :class:`CellEnv` holds.
    """

    dataset: Dataset
    chunker: Spec
    embedder: Spec
    retrieval: tuple[Spec, ...]
    scoring: tuple[Scoring, ...] = DEFAULT_SCORING

    def run(self, env: CellEnv, timer: PhaseTimer | None = None) -> CellResult:
        """Chunk, embed, retrieve, score and check; phases are timed into ``timer``.

        A cell of more than ``env.embed_slice`` chunks embeds them a slice at a time into a
        vector file in a temporary folder (deleted when the cell ends) and searches that file
        memory-mapped; chunk texts are read from the documents when needed, never all held.
        """
        timer = timer or PhaseTimer()
        query_vectors = env.query_vectors()
        before = env.embedder.stats()  # the cell's share includes what its chunker embedded
        chunks, tokens, chunk_stats, reused = self._chunk(env, timer)
        texts = ChunkTexts(self.dataset, chunks)
        with ExitStack() as stack:
            with timer("embed_documents"):
                vectors, attributed = embed_chunks(
                    env, texts, query_vectors, stack, DocSpans(self.dataset, chunks)
                )
            check_same_embedder(
                env.query_identity or env.identity, env.identity, query_vectors, vectors
            )
            result = self._score(env, chunks, tokens, texts, vectors, query_vectors, timer, {})
            del vectors  # the vector file's map closes before its folder is deleted
        result.embedding = env.embedder.stats() - before
        result.model_seconds_attributed = attributed
        result.chunking = chunk_stats
        result.chunks_reused = reused
        return result

    def run_stored(
        self,
        env: CellEnv,
        chunks: list[Chunk],
        tokens: IntArray,
        vectors: FloatArray,
        rankers: Mapping[str, Retriever],
        timer: PhaseTimer | None = None,
    ) -> CellResult:
        """Score chunks that were chunked and embedded elsewhere (a vector store's collection,
        read by ``chunkmark audit``): ``chunks`` in dataset order with their cl100k ``tokens``
        and stored ``vectors`` (one row each, L2-normalised). Nothing is chunked or embedded
        but the questions; every later step is :meth:`run`'s. ``rankers`` holds built rankers
        by canonical spec for rankings a spec cannot produce (the store's own search)."""
        timer = timer or PhaseTimer()
        query_vectors = env.query_vectors()
        before = env.embedder.stats()
        if len(vectors) != len(chunks):
            raise ValueError(f"{len(vectors)} vectors for {len(chunks)} chunks")
        texts = ChunkTexts(self.dataset, chunks)
        result = self._score(env, chunks, tokens, texts, vectors, query_vectors, timer, rankers)
        result.embedding = env.embedder.stats() - before
        return result

    def _score(
        self,
        env: CellEnv,
        chunks: list[Chunk],
        tokens: IntArray,
        texts: Sequence[str],
        vectors: FloatArray,
        query_vectors: FloatArray,
        timer: PhaseTimer,
        rankers: Mapping[str, Retriever],
    ) -> CellResult:
        """Retrieve, score and check the chunks (every phase after embedding)."""
        scored = _Scored(self, chunks, tokens)
        columns, rankings, stats = scored.run(texts, vectors, query_vectors, timer, rankers)
        with timer("score"):
            check = query_signal(scored.questions, scored.table, query_vectors, vectors, env.seed)
        per_doc: dict[str, int] = {d.id: 0 for d in self.dataset.documents}
        for c in chunks:
            per_doc[c.doc_id] += 1
        with timer("score"):
            diagnostics = diagnose(self.dataset, chunks, tokens=tokens).to_dict()
        return CellResult(
            dataset=self.dataset.name,
            chunker=chunker_name(self.chunker),
            embedder=str(self.embedder),
            chunks=chunks,
            chunk_tokens=tokens,
            chunks_per_doc=per_doc,
            columns=columns,
            timings=dict(timer.seconds),
            embedding=EmbedderStats(),
            question_ids=[q.id for q in self.dataset.questions],
            rankings=rankings,
            retrieval_stats=stats,
            query_check=check,
            fingerprint=self.dataset.fingerprint,
            diagnostics=diagnostics,
        )

    def _chunk(
        self, env: CellEnv, timer: PhaseTimer
    ) -> tuple[list[Chunk], IntArray, ChunkerStats | None, bool]:
        """The chunks and their token counts: from the chunk store, or computed (and stored)."""
        traits = CHUNKERS.traits(self.chunker)
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
        spans = SpanTexts(self.dataset, chunks)
        with timer("count_tokens"):
            tokens = np.concatenate(
                [
                    np.asarray(env.count_tokens(spans[lo : lo + env.embed_slice]), dtype=np.int64)
                    for lo in range(0, len(spans), env.embed_slice)
                ]
                or [np.zeros(0, dtype=np.int64)]
            )
        if key is not None and env.chunk_store is not None:
            with timer("write"):
                env.chunk_store.put(key, chunks, tokens)
        return chunks, tokens, chunker_stats(chunker), False


class _Scored:
    """Retrieval and scoring of one cell's chunks: one search per ranker, then every setting
    and scoring option read from those rankings."""

    def __init__(self, cell: Cell, chunks: list[Chunk], tokens: IntArray) -> None:
        self.cell = cell
        self.chunks = chunks
        self.tokens = tokens
        self.table = chunk_table(cell.dataset, chunks)
        self.questions = question_table(cell.dataset)

    def run(
        self,
        texts: Sequence[str],
        vectors: FloatArray,
        query_vectors: FloatArray,
        timer: PhaseTimer,
        rankers: Mapping[str, Retriever],
    ) -> tuple[
        dict[str, list[Any]],
        dict[str, tuple[IntArray, npt.NDArray[np.float32]]],
        dict[str, dict[str, Any]],
    ]:
        dataset = self.cell.dataset
        with timer("score"):
            omega = score_chunking(self.questions, self.table)
            min_depth = min_k_depth(omega.n_touching, MIN_K_CAP)
            spans = SpanTexts(dataset, self.chunks)
            ctx = RankContext(chunk_tokens=self.tokens, span_texts=spans, min_depth=min_depth)
            settings: list[tuple[Spec, RetrievalSetting]] = [
                (spec, RETRIEVAL.build(spec)[0]) for spec in self.cell.retrieval
            ]
        rankings: dict[str, tuple[IntArray, npt.NDArray[np.float32]]] = {}
        stats: dict[str, dict[str, Any]] = {}
        query_texts = [q.text for q in dataset.questions]
        chunk_docs = [c.doc_id for c in self.chunks]
        query_docs = [q.doc_id for q in dataset.questions]
        with timer("search"):
            for ranker, depth in _depths(settings, ctx).items():
                ranking, scores, ranker_stats = rank(
                    rankers.get(str(ranker)) or ranker,
                    vectors,
                    texts,
                    query_vectors,
                    query_texts,
                    depth,
                    chunk_docs=chunk_docs,
                    query_docs=query_docs,
                )
                rankings[str(ranker)] = (ranking, np.asarray(scores, np.float32))
                if ranker_stats:
                    stats[str(ranker)] = dict(ranker_stats)
        with timer("score"):
            columns = self._score(settings, rankings, ctx, omega)
        return columns, rankings, stats

    def _score(
        self,
        settings: list[tuple[Spec, RetrievalSetting]],
        rankings: dict[str, tuple[IntArray, npt.NDArray[np.float32]]],
        ctx: RankContext,
        omega: OmegaScores,
    ) -> dict[str, list[Any]]:
        names = METRICS.names()
        columns: dict[str, list[Any]] = {
            name: [] for name in (*SETTING_COLUMNS, *QUESTION_COLUMNS, *names, "n_touching")
        }
        dataset = self.cell.dataset
        q_ids = [q.id for q in dataset.questions]
        q_docs = [q.doc_id for q in dataset.questions]
        n = len(q_ids)
        tables = ScoringTables(
            dataset_texts(dataset), self.questions, self.table, dataset.fingerprint, omega
        )
        selections = {
            str(spec): setting.select(*rankings[str(setting.ranker)], ctx)
            for spec, setting in settings
        }
        for scoring in self.cell.scoring:
            for spec, setting in settings:
                ranking = rankings[str(setting.ranker)][0]
                sel = selections[str(spec)]
                last_end = _last_end(self.table, ranking, sel.depth, sel.last_chars)
                scores, inputs_tables = tables.score(scoring, ranking, sel.depth, last_end=last_end)
                inputs = ScoreInputs(
                    inputs_tables.questions,
                    inputs_tables.chunks,
                    ranking,
                    scores.k,
                    scores,
                    inputs_tables.omega,
                )
                values = METRICS.score(inputs)
                for key, value in (
                    ("retrieval", str(spec)),
                    *scoring.columns().items(),
                    ("k", setting.k_label),
                ):
                    columns[key].extend([value] * n)
                columns["question_id"].extend(q_ids)
                columns["doc_id"].extend(q_docs)
                columns["k_used"].extend(scores.k.tolist())
                columns["retrieved_tokens"].extend(sel.tokens.tolist())
                for name in names:
                    columns[name].extend(values[name].tolist())
                columns["n_touching"].extend(omega.n_touching.tolist())
        return columns


def _depths(settings: list[tuple[Spec, RetrievalSetting]], ctx: RankContext) -> dict[Spec, int]:
    """Each ranker the settings read, and the deepest ranking any of them needs."""
    out: dict[Spec, int] = {}
    for _, setting in settings:
        out[setting.ranker] = max(out.get(setting.ranker, 0), int(setting.depth(ctx)))
    return out


def _last_end(
    table: ChunkTable, ranking: IntArray, depth: IntArray, last_chars: IntArray
) -> IntArray:
    """Per question, where the last counted chunk ends once cut to ``last_chars`` characters
    (its own end when not cut; 0 when nothing is counted)."""
    if ranking.shape[1] == 0:
        return np.zeros(len(depth), dtype=np.int64)
    slot = np.clip(depth - 1, 0, ranking.shape[1] - 1)
    last = ranking[np.arange(len(depth)), slot]
    return np.where(depth > 0, table.start[last] + last_chars, 0).astype(np.int64)


class _ChunkTextsBase(Sequence[str]):
    """One text per chunk, sliced from its document when asked for: nothing is held but the
    chunks and the dataset's documents."""

    def __init__(self, dataset: Dataset, chunks: Sequence[Chunk]) -> None:
        self._docs = dataset.by_id
        self._chunks = chunks

    def _text(self, chunk: Chunk) -> str:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._chunks)

    def __iter__(self) -> Iterator[str]:
        return (self._text(c) for c in self._chunks)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._text(c) for c in self._chunks[index]]
        return self._text(self._chunks[index])


class ChunkTexts(_ChunkTextsBase):
    """The texts the embedder sees (``Chunk.text``: the embed text, else the span's text); a
    slice is a list."""

    def _text(self, chunk: Chunk) -> str:
        return chunk.text(self._docs[chunk.doc_id].text)


class SpanTexts(_ChunkTextsBase):
    """The chunks' span texts (``doc.text[start:end]``); a slice is a list."""

    def _text(self, chunk: Chunk) -> str:
        return self._docs[chunk.doc_id].text[chunk.start : chunk.end]


class DocSpans:
    """The chunks as ``(document text, start, end)``, for embedders that embed chunks in their
    documents (late chunking); a slice is a list."""

    def __init__(self, dataset: Dataset, chunks: Sequence[Chunk]) -> None:
        self._docs = dataset.by_id
        self._chunks = chunks

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, index: slice) -> list[DocSpan]:
        return [(self._docs[c.doc_id].text, c.start, c.end) for c in self._chunks[index]]


def embed_chunks(
    env: CellEnv,
    texts: Sequence[str],
    query_vectors: FloatArray,
    stack: ExitStack,
    spans: DocSpans | None = None,
) -> tuple[FloatArray, float | None]:
    """The chunks' vectors and the model seconds attributed to them (None when the embedder
    cannot say).

    An embedder that embeds chunks in their documents (late chunking) is given ``spans``;
    the others the chunk ``texts``. Up to ``env.embed_slice`` chunks are embedded in one call,
    in memory. More are embedded ``env.embed_slice`` at a time into a vector file in a
    temporary folder that ``stack`` deletes, returned memory-mapped; a text embedded in an
    earlier slice adds no seconds again.
    """
    embedder = env.embedder
    late = spans is not None and embeds_spans(embedder)
    attribute = None if late else getattr(embedder, "model_seconds_for", None)

    def part(lo: int, hi: int) -> FloatArray:
        if late:
            assert spans is not None and isinstance(embedder, SpanEmbedder)
            return embedder.embed_spans(spans[lo:hi])
        return embedder.embed(list(texts[lo:hi]), kind="document")

    if len(texts) <= env.embed_slice:
        if len(texts):
            vectors = part(0, len(texts))
        else:
            dim = query_vectors.shape[1] if query_vectors.ndim == 2 else 1
            vectors = np.zeros((0, dim), np.float32)
        return vectors, None if attribute is None else float(attribute(list(texts)))
    folder = stack.enter_context(
        tempfile.TemporaryDirectory(
            prefix="chunkmark-vectors-", dir=env.scratch_dir, ignore_cleanup_errors=True
        )
    )
    out = VectorFile(Path(folder) / "chunks.npy", len(texts))
    seconds = 0.0
    seen = np.zeros(0, dtype=np.int64)
    for lo in range(0, len(texts), env.embed_slice):
        hi = min(lo + env.embed_slice, len(texts))
        out.write(part(lo, hi))
        if attribute is not None:
            chosen = list(texts[lo:hi])
            hashes = np.fromiter((hash(t) for t in chosen), dtype=np.int64, count=len(chosen))
            new = ~np.isin(hashes, seen)
            seconds += float(attribute([t for t, keep in zip(chosen, new, strict=True) if keep]))
            seen = np.union1d(seen, hashes)
    return out.finish(), None if attribute is None else seconds


def chunk_table(dataset: Dataset, chunks: Sequence[Chunk]) -> ChunkTable:
    """The chunks' document indices (dataset order) and spans, as arrays."""
    doc_index = {d.id: i for i, d in enumerate(dataset.documents)}
    n = len(chunks)
    return ChunkTable(
        np.fromiter((doc_index[c.doc_id] for c in chunks), dtype=np.int64, count=n),
        np.fromiter((c.start for c in chunks), dtype=np.int64, count=n),
        np.fromiter((c.end for c in chunks), dtype=np.int64, count=n),
    )


def dataset_texts(dataset: Dataset) -> list[str]:
    """The documents' texts in dataset order (the document index of the span tables)."""
    return [d.text for d in dataset.documents]


def chunker_stats(chunker: ChunkerFn) -> ChunkerStats | None:
    """The chunker's :class:`ChunkerStats`, if it reports any."""
    report = getattr(chunker, "stats", None)
    if report is None:
        return None
    stats = report()
    if not isinstance(stats, ChunkerStats):
        raise ChunkmarkError(
            f"Chunker {type(chunker).__name__}.stats() returned {type(stats).__name__}.",
            "A chunker's stats() must return chunkmark.counters.ChunkerStats.",
        )
    return stats


def chunk_dataset(dataset: Dataset, chunker: ChunkerFn) -> list[Chunk]:
    """Every document's chunks, in document order (an LLM chunker's requests for all the
    documents sent concurrently: :func:`~chunkmark.chunkers.chunk_documents`)."""
    return chunk_documents(chunker, [(doc.id, doc.text) for doc in dataset.documents])


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
