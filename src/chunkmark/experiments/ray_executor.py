"""Run a grid's cells on a Ray cluster: ``executor: ray`` (``chunkmark run --executor ray``).

A run goes through three stages, each spread over the cluster; the driver (the process that
runs ``chunkmark``) is the only one that writes files:

1. **chunk**: chunkers that neither embed nor call an LLM chunk as Ray tasks, one per
   (dataset, chunker), shared by every embedder of the grid. The others chunk in the driver,
   where the embedding and LLM caches are; a semantic chunker's sentence embeddings still go to
   the cluster (stage 2's embedder serves them).
2. **embed**: every chunk text of the pending cells of one embedder goes through the run's
   cached embedder in one call. The cache answers what it holds; the misses (their distinct
   model inputs) are embedded by Ray Data batch inference: ``map_batches`` over a pool of
   actors (``ActorPoolStrategy``), each loading the model once, with ``num_gpus=1`` per actor
   when the cluster has GPUs. An API embedder gets exactly one actor: one client, whose retries
   and backoff pace every request of the cluster. Vectors stream back to the driver slice by
   slice and the driver writes them to the cache, so the SQLite cache has one writer on one
   disk and worker nodes need no shared filesystem.
3. **score**: each cell's search and scoring runs as a Ray task, given its chunks and vectors
   through the object store; the driver writes the cell's files the moment it finishes, with
   the id of the Ray node that scored it (the cell's ``ray_node`` fact, in the manifest).

Rows are the local executor's: the same chunks, the same vectors (equal for a deterministic
embedder; for a neural model, equal up to float rounding where batches are composed
differently, and equal once the driver's cache holds them), the same search and scoring code,
whose results do not depend on the number of threads a worker has. A task whose worker dies is run again up to
``ray.max_retries`` times, then its cell is recorded as failed; cells already written stay,
and a rerun into the same results folder computes only what is missing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext
from chunkmark.counters import ChunkerStats, EmbedderStats
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.base import (
    DocSpan,
    Embedder,
    FloatArray,
    InputAwareEmbedder,
    Kind,
    SpanEmbedder,
    embeds_spans,
)
from chunkmark.errors import ChunkmarkError, EmbeddingError
from chunkmark.experiments.cell import (
    Cell,
    CellEnv,
    CellResult,
    chunk_dataset,
    chunker_stats,
    count_cl100k,
)
from chunkmark.experiments.chunk_store import chunk_key
from chunkmark.experiments.config import RayOptions
from chunkmark.experiments.outcome import CellOutcome, CellTask
from chunkmark.optional import import_optional
from chunkmark.remote import RemoteClient
from chunkmark.specs import Spec
from chunkmark.timing import PhaseTimer

if TYPE_CHECKING:
    from chunkmark.datasets.model import Dataset
    from chunkmark.experiments.chunk_store import ChunkStore
    from chunkmark.experiments.config import ExperimentConfig
    from chunkmark.metrics import Scoring


class Session(Protocol):
    """What the executor uses of :class:`chunkmark.experiments.runner.Session`."""

    config: ExperimentConfig
    chunk_store: ChunkStore | None
    retrieval: tuple[Spec, ...]
    scoring: tuple[Scoring, ...]
    totals: PhaseTimer

    def say(self, message: str) -> None: ...
    def label(self, task: CellTask) -> str: ...
    def env(self, dataset: Dataset, e_spec: Spec) -> CellEnv: ...
    def track(self, embedder: Any, what: str) -> None: ...
    def resumed(self, task: CellTask) -> CellOutcome | None: ...
    def failed(self, task: CellTask, exc: BaseException) -> CellOutcome: ...
    def record(
        self, task: CellTask, result: CellResult, timer: PhaseTimer, ray_node: str | None = None
    ) -> CellOutcome: ...


IntArray = npt.NDArray[np.int64]
# Rows per map_batches call; the model batches within it by its own batch size.
BATCH_ROWS = 256
# CPUs per embedding actor on a cluster without GPUs (torch threads use what the actor holds).
CPUS_PER_ACTOR = 4
# Chunkers whose spec names an object that lives only in the process that registered it.
PROCESS_LOCAL_CHUNKERS = frozenset({"splitter"})
# Seconds between checks that some live node still offers the tasks' custom resources.
FEASIBLE_CHECK_SECONDS = 2.0
STAT_FIELDS = ("inputs", "measured", "truncated", "tokens", "requests", "retries", "model_seconds")


def require_ray() -> Any:
    """The ``ray`` module, or an error naming the extra that installs it."""
    return import_optional(
        "ray", "ray[data]", "ray", "Running cells on a Ray cluster (executor: ray)"
    )


def connect(options: RayOptions) -> Any:
    """Join the cluster at ``options.address`` (or start a local Ray), unless this process
    already did; Ray Data's progress bars and info logs are turned off (the CLI shows its own)."""
    ray = require_ray()
    if not ray.is_initialized():
        try:
            ray.init(
                address=options.address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ChunkmarkError(
                f"Could not join the Ray cluster at {options.address or 'a new local Ray'}: {exc}",
                "Start the cluster first (`ray start --head`), or check ray.address "
                "(`auto` for the cluster on this machine, `ray://HOST:10001` for a remote one).",
            ) from exc
    from ray.data import DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


# --- stage 2: the cluster's embedder -------------------------------------------------------------


class ClusterEmbedder:
    """An embedder whose large requests run as Ray Data batch inference on the cluster.

    The local instance (built in the driver) gives the name, the identity and, for the cache's
    model-input keys, the tokenisation; requests of fewer than ``options.batch_min_texts``
    texts run on it too. Larger ones go to a pool of actors that each build the embedder from
    ``spec`` once.
    """

    def __init__(self, local: Embedder, spec: Spec, options: RayOptions) -> None:
        self.local = local
        self.spec = spec
        self.options = options
        self._remote = dict.fromkeys(STAT_FIELDS, 0.0)
        self.jobs = 0

    @property
    def name(self) -> str:
        return self.local.name

    def identity(self) -> dict[str, Any]:
        return self.local.identity()

    def stats(self) -> EmbedderStats:
        """The local instance's stats plus the work the actors reported."""
        stats = self.local.stats()
        added = {
            name: type(getattr(stats, name))(getattr(stats, name) + self._remote[name])
            for name in STAT_FIELDS
        }
        extra = {**stats.extra, "cluster_jobs": self.jobs}
        return dataclasses.replace(stats, **added, extra=extra)

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        return next(iter(self.embed_slices([list(texts)], kind, inputs=False)))

    def embeds_spans(self) -> bool:
        return embeds_spans(self.local)

    def embed_spans(self, spans: Sequence[DocSpan]) -> FloatArray:
        """Late chunking runs in the driver: a chunk's vector needs its whole document's
        windows, which do not split into independent texts for the actors."""
        local = self.local
        assert isinstance(local, SpanEmbedder)
        return local.embed_spans(spans)

    def supports_model_inputs(self, kind: Kind = "document") -> bool:
        local = self.local
        return isinstance(local, InputAwareEmbedder) and local.supports_model_inputs(kind)

    def model_inputs(self, texts: Sequence[str], kind: Kind = "document") -> list[bytes]:
        local = self.local
        if not isinstance(local, InputAwareEmbedder):
            raise EmbeddingError(f"{self.name} has no model inputs.", "Embed texts instead.")
        return local.model_inputs(texts, kind)

    def embed_inputs(self, inputs: Sequence[bytes], kind: Kind = "document") -> FloatArray:
        return next(iter(self.embed_slices([list(inputs)], kind, inputs=True)))

    def embed_slices(
        self, parts: Sequence[Sequence[str | bytes]], kind: Kind, *, inputs: bool
    ) -> Iterator[FloatArray]:
        """Each part's vectors, in order; one batch-inference job for all of them when they
        are many."""
        if sum(len(p) for p in parts) < self.options.batch_min_texts:
            for part in parts:
                yield _embed_with(self.local, part, kind, inputs)
            return
        yield from self._batch_inference(parts, kind, inputs)

    def pool(self, resources: dict[str, float]) -> tuple[int, int, float]:
        """Actors, GPUs per actor and CPUs per actor for a cluster with ``resources`` (the
        nodes that offer ``ray.resources``, each actor asking for those too)."""
        if isinstance(self.local, RemoteClient):  # one client: one rate limit for the cluster
            return 1, 0, 1.0
        gpus = int(resources.get("GPU", 0))
        cpus = max(1.0, float(resources.get("CPU", 1)))
        uses_gpu = gpus > 0 and hasattr(self.local, "device")  # a local model, not an API
        actors = self.options.embed_actors or (gpus if uses_gpu else int(cpus // CPUS_PER_ACTOR))
        for name, amount in self.options.resources.items():  # as many as the resources allow
            actors = min(actors, int(resources.get(name, 0.0) // amount))
        actors = max(1, actors)
        per_actor_cpus = 1.0 if uses_gpu else max(1.0, float(int(cpus // actors)))
        return actors, (1 if uses_gpu else 0), per_actor_cpus

    def _batch_inference(
        self, parts: Sequence[Sequence[str | bytes]], kind: Kind, inputs: bool
    ) -> Iterator[FloatArray]:
        ray = connect(self.options)
        from ray.data import ActorPoolStrategy

        capacity, largest = _capacity(ray, self.options.resources)
        actors, gpus, cpus = self.pool(capacity)
        cpus = min(cpus, largest)  # an actor fits on one node
        rows = [
            {"part": p, "row": r, "item": item}
            for p, part in enumerate(parts)
            for r, item in enumerate(part)
        ]
        results = ray.data.from_items(rows).map_batches(
            EmbedActor,
            fn_constructor_kwargs={"spec": self.spec, "kind": kind, "inputs": inputs},
            compute=ActorPoolStrategy(min_size=1, max_size=actors),
            batch_size=BATCH_ROWS,
            batch_format="numpy",
            num_cpus=cpus,
            num_gpus=gpus or None,
            **({"resources": dict(self.options.resources)} if self.options.resources else {}),
        )
        self.jobs += 1
        sizes = [len(p) for p in parts]
        out: dict[int, FloatArray] = {}
        filled = dict.fromkeys(range(len(parts)), 0)
        ready = 0
        for batch in results.iter_batches(batch_size=None, batch_format="numpy"):
            vectors = np.asarray(batch["vector"], dtype=np.float32)
            for name in STAT_FIELDS:
                self._remote[name] += float(np.asarray(batch[name], dtype=np.float64).sum())
            for part, row, vector in zip(batch["part"], batch["row"], vectors, strict=True):
                p = int(part)
                if p not in out:
                    out[p] = np.empty((sizes[p], len(vector)), dtype=np.float32)
                out[p][int(row)] = vector
                filled[p] += 1
            while ready < len(parts) and filled[ready] == sizes[ready]:
                yield out.pop(ready, np.zeros((0, vectors.shape[1]), np.float32))
                ready += 1
        if ready < len(parts):
            raise EmbeddingError(
                f"The cluster returned vectors for {ready} of {len(parts)} slices.",
                "Rerun: the texts embedded so far are in the cache.",
            )


class EmbedActor:
    """A batch-inference actor: builds the embedder from its spec once, then embeds batches,
    reporting each batch's share of the work in per-row columns."""

    def __init__(self, spec: Spec, kind: Kind, inputs: bool) -> None:
        self.embedder, _ = EMBEDDERS.build(spec)
        self.kind: Kind = kind
        self.inputs = inputs

    def __call__(self, batch: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        items = [bytes(x) if self.inputs else str(x) for x in batch["item"]]
        before = self.embedder.stats()
        vectors = _embed_with(self.embedder, items, self.kind, self.inputs)
        work = self.embedder.stats() - before
        n = len(items)
        columns: dict[str, npt.NDArray[Any]] = {
            "part": np.asarray(batch["part"]),
            "row": np.asarray(batch["row"]),
            "vector": np.asarray(vectors, dtype=np.float32),
        }
        for name in STAT_FIELDS:  # the batch's totals on its first row
            column = np.zeros(n, dtype=np.float64)
            if n:
                column[0] = float(getattr(work, name))
            columns[name] = column
        return columns


def _embed_with(
    embedder: Embedder, items: Sequence[str | bytes], kind: Kind, inputs: bool
) -> FloatArray:
    if inputs:
        if not isinstance(embedder, InputAwareEmbedder):
            raise EmbeddingError(f"{embedder.name} has no model inputs.", "Embed texts instead.")
        return embedder.embed_inputs([bytes(i) for i in items], kind)  # type: ignore[arg-type]
    return embedder.embed([str(t) for t in items], kind)


# --- stages 1 and 3: chunk and score tasks --------------------------------------------------------


@dataclass
class Prepared:
    """A cell's chunks, as the chunk stage made them (or the chunk store gave them back)."""

    chunks: list[Chunk]
    tokens: IntArray
    stats: ChunkerStats | None
    reused: bool
    seconds: dict[str, float]


@dataclass(frozen=True)
class PreparedCell(Cell):
    """A :class:`Cell` whose chunks were made by the chunk stage."""

    prepared: Prepared | None = None

    def _chunk(
        self, env: CellEnv, timer: PhaseTimer
    ) -> tuple[list[Chunk], IntArray, ChunkerStats | None, bool]:
        if self.prepared is None:
            return super()._chunk(env, timer)
        for phase, seconds in self.prepared.seconds.items():
            timer.add(phase, seconds)
        p = self.prepared
        return p.chunks, p.tokens, p.stats, p.reused


class GivenVectors:
    """The embedder of a score task: the cell's vectors, computed by the embed stage."""

    def __init__(self, name: str, vectors: FloatArray) -> None:
        self._name = name
        self.vectors = vectors

    @property
    def name(self) -> str:
        return self._name

    def identity(self) -> dict[str, Any]:
        return {"name": self._name}

    def stats(self) -> EmbedderStats:
        return EmbedderStats()

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        if len(texts) != len(self.vectors):
            raise EmbeddingError(
                f"A score task was given {len(self.vectors)} vectors for {len(texts)} texts.",
                "The cell's chunks changed between stages; rerun the grid.",
            )
        return self.vectors


def chunk_task(dataset: Dataset, spec: Spec, seed: int) -> Prepared:
    """Stage 1 on a worker: chunk every document and count the chunks' tokens."""
    timer = PhaseTimer()
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(seed=seed))
    with timer("chunk"):
        chunks = chunk_dataset(dataset, chunker)
    docs = dataset.by_id
    with timer("count_tokens"):
        texts = [docs[c.doc_id].text[c.start : c.end] for c in chunks]
        tokens = np.asarray(count_cl100k(texts), dtype=np.int64)
    return Prepared(chunks, tokens, chunker_stats(chunker), False, dict(timer.seconds))


def score_task(
    dataset: Dataset,
    chunker: Spec,
    embedder: Spec,
    retrieval: tuple[Spec, ...],
    scoring: tuple[Any, ...],
    prepared: Prepared,
    vectors: FloatArray,
    query_vectors: FloatArray,
    identity: dict[str, Any],
    seed: int,
) -> tuple[CellResult, dict[str, float], str]:
    """Stage 3 on a worker: search and score one cell; also the id of the Ray node it ran on."""
    import ray

    given = GivenVectors(str(embedder), vectors)
    env = CellEnv(
        embedder=given,
        identity=identity,
        embed_queries=lambda: query_vectors,
        seed=seed,
    )
    timer = PhaseTimer()
    cell = PreparedCell(dataset, chunker, embedder, retrieval, scoring, prepared=prepared)
    result = cell.run(env, timer)
    return result, dict(timer.seconds), str(ray.get_runtime_context().get_node_id())


# --- the driver ---------------------------------------------------------------------------------


def portable(spec: Spec) -> bool:
    """Whether a chunker can run on any worker: it neither embeds nor calls an LLM, and its
    spec does not name an object of this process."""
    traits = CHUNKERS.traits(spec)
    return not traits.embeds and not traits.calls_llm and spec.name not in PROCESS_LOCAL_CHUNKERS


def run_on_ray(session: Session, todo: Sequence[CellTask]) -> list[CellOutcome]:
    """Every cell of ``todo``, resumed, or computed on the cluster (see the module docs)."""
    ray = connect(session.config.ray)
    outcomes: list[CellOutcome | None] = [session.resumed(task) for task in todo]
    pending = [i for i, outcome in enumerate(outcomes) if outcome is None]
    if pending:
        driver = _Driver(ray, session, todo)
        prepared = driver.chunk(pending)
        vectors = driver.embed(prepared)
        for i, outcome in driver.score(prepared, vectors).items():
            outcomes[i] = outcome
        for i, error in {**prepared, **vectors}.items():
            if isinstance(error, BaseException) and outcomes[i] is None:
                outcomes[i] = session.failed(todo[i], error)
    missing = [todo[i].names for i, o in enumerate(outcomes) if o is None]
    if missing:
        raise ChunkmarkError(f"Cells left without an outcome: {missing}.", "Rerun the grid.")
    return [o for o in outcomes if o is not None]


class _Driver:
    """The stages of one Ray run, driven from the session's process."""

    def __init__(self, ray: Any, session: Session, todo: Sequence[CellTask]) -> None:
        self.ray = ray
        self.session = session
        self.todo = todo
        options = session.config.ray
        self.retries: dict[str, Any] = {
            "max_retries": options.max_retries,
            "retry_exceptions": False,
        }
        if options.resources:
            self.retries["resources"] = dict(options.resources)
        self._datasets: dict[str, Any] = {}

    def dataset_ref(self, dataset: Dataset) -> Any:
        if dataset.fingerprint not in self._datasets:
            self._datasets[dataset.fingerprint] = self.ray.put(dataset)
        return self._datasets[dataset.fingerprint]

    def chunk(self, pending: list[int]) -> dict[int, Prepared | BaseException]:
        """Stage 1: each pending cell's chunks, or the error that stopped its chunker."""
        session, ray = self.session, self.ray
        store = session.chunk_store
        out: dict[int, Prepared | BaseException] = {}
        waiting: dict[Any, list[int]] = {}
        submitted: dict[tuple[str, Spec], Any] = {}
        remote = ray.remote(chunk_task).options(num_cpus=1, **self.retries)
        for i in pending:
            task = self.todo[i]
            if not portable(task.chunker):
                out[i] = self._chunk_here(task)
                continue
            key = chunk_key(str(task.chunker), task.dataset.fingerprint, None)
            reusable = CHUNKERS.traits(task.chunker).reusable
            stored = store.get(key) if store is not None and reusable else None
            if stored is not None:
                out[i] = Prepared(stored[0], stored[1], None, True, {})
                continue
            at = (task.dataset.fingerprint, task.chunker)
            if at not in submitted:
                session.say(f"chunk    {task.dataset.name}: {CHUNKERS.short(task.chunker)}")
                ref = remote.remote(
                    self.dataset_ref(task.dataset), task.chunker, session.config.seed
                )
                submitted[at] = ref
                waiting[ref] = []
            waiting[submitted[at]].append(i)
        for ref, result in _as_completed(ray, list(waiting), session.config.ray.resources):
            cells = waiting[ref]
            reusable = CHUNKERS.traits(self.todo[cells[0]].chunker).reusable
            if isinstance(result, Prepared) and store is not None and reusable:
                task = self.todo[cells[0]]
                store.put(
                    chunk_key(str(task.chunker), task.dataset.fingerprint, None),
                    result.chunks,
                    result.tokens,
                )
            for i in cells:
                out[i] = result
        return out

    def _chunk_here(self, task: CellTask) -> Prepared | BaseException:
        session = self.session
        session.say(f"chunk    {session.label(task)} (in this process)")
        timer = PhaseTimer()
        cell = Cell(task.dataset, task.chunker, task.embedder, session.retrieval, session.scoring)
        try:
            env = session.env(task.dataset, task.embedder)
            chunks, tokens, stats, reused = cell._chunk(env, timer)
        except Exception as exc:  # the cell fails; the others go on
            return exc
        return Prepared(chunks, tokens, stats, reused, dict(timer.seconds))

    def embed(
        self, prepared: dict[int, Prepared | BaseException]
    ) -> dict[int, tuple[FloatArray, FloatArray] | BaseException]:
        """Stage 2: per embedder, every chunk text of its cells in one call of the cached
        embedder (misses go to the cluster); then each cell's chunk and question vectors."""
        session = self.session
        out: dict[int, tuple[FloatArray, FloatArray] | BaseException] = {}
        by_embedder: dict[Spec, list[int]] = {}
        for i, p in prepared.items():
            if isinstance(p, Prepared):
                by_embedder.setdefault(self.todo[i].embedder, []).append(i)
        for e_spec, cells in by_embedder.items():
            texts: list[str] = []
            bounds: dict[int, tuple[int, int]] = {}
            env = session.env(self.todo[cells[0]].dataset, e_spec)
            late = embeds_spans(env.embedder)
            spans: list[DocSpan] = []
            for i in cells:
                p = prepared[i]
                assert isinstance(p, Prepared)
                docs = self.todo[i].dataset.by_id
                start = len(texts)
                if late:  # chunks in their documents; texts stay empty
                    spans.extend((docs[c.doc_id].text, c.start, c.end) for c in p.chunks)
                    bounds[i] = (start, len(spans))
                    continue
                texts.extend(c.text(docs[c.doc_id].text) for c in p.chunks)
                bounds[i] = (start, len(texts))
            short = EMBEDDERS.short(e_spec)
            what = f"{len(spans)} chunks in context" if late else f"{len(texts)} chunk texts"
            session.say(f"embed    {what} of {len(cells)} cells with {short}")
            session.track(env.embedder, f"chunks x {short}")
            began = time.perf_counter()
            try:
                if late:
                    assert isinstance(env.embedder, SpanEmbedder)
                    vectors = env.embedder.embed_spans(spans) if spans else None
                else:
                    vectors = env.embedder.embed(texts, kind="document") if texts else None
            except Exception as exc:  # every cell of this embedder fails; the others go on
                for i in cells:
                    out[i] = exc
                continue
            finally:
                session.totals.add("embed_documents", time.perf_counter() - began)
            for i in cells:
                task = self.todo[i]
                try:
                    query_vectors = session.env(task.dataset, e_spec).query_vectors()
                except Exception as exc:
                    out[i] = exc
                    continue
                lo, hi = bounds[i]
                chunk_vectors = (
                    vectors[lo:hi]
                    if vectors is not None
                    else np.zeros((0, query_vectors.shape[1]), np.float32)
                )
                out[i] = (chunk_vectors, query_vectors)
        return out

    def score(
        self,
        prepared: dict[int, Prepared | BaseException],
        vectors: dict[int, tuple[FloatArray, FloatArray] | BaseException],
    ) -> dict[int, CellOutcome]:
        """Stage 3: each cell's search and scoring as a task; each written as it finishes."""
        session, ray = self.session, self.ray
        remote = ray.remote(score_task).options(num_cpus=1, **self.retries)
        refs: dict[Any, int] = {}
        query_refs: dict[tuple[str, Spec], Any] = {}
        for i, pair in vectors.items():
            p = prepared[i]
            if isinstance(pair, BaseException) or not isinstance(p, Prepared):
                continue
            task = self.todo[i]
            at = (task.dataset.fingerprint, task.embedder)
            if at not in query_refs:
                query_refs[at] = ray.put(pair[1])
            env = session.env(task.dataset, task.embedder)
            session.say(f"cell     {session.label(task)}")
            ref = remote.remote(
                self.dataset_ref(task.dataset),
                task.chunker,
                task.embedder,
                session.retrieval,
                session.scoring,
                p,
                pair[0],
                query_refs[at],
                env.identity,
                session.config.seed,
            )
            refs[ref] = i
        outcomes: dict[int, CellOutcome] = {}
        for ref, result in _as_completed(ray, list(refs), session.config.ray.resources):
            i = refs[ref]
            if isinstance(result, BaseException):
                outcomes[i] = session.failed(self.todo[i], result)
                continue
            cell_result, seconds, node = result
            timer = PhaseTimer()
            for phase, s in seconds.items():
                timer.add(phase, s)
            outcomes[i] = session.record(self.todo[i], cell_result, timer, ray_node=node)
        return outcomes


def _as_completed(
    ray: Any, refs: list[Any], resources: dict[str, float] | None = None
) -> Iterator[tuple[Any, Any]]:
    """``(ref, value or exception)`` for each ref, in the order they finish.

    Tasks that ask for custom ``resources`` can only run on nodes that offer them; when no
    live node does any more (the last one was lost), the tasks still waiting are cancelled
    and each gets an error, instead of waiting for a node that may never join.
    """
    left = list(refs)
    while left:
        done, left = ray.wait(left, num_returns=1, timeout=FEASIBLE_CHECK_SECONDS)
        if not done:
            if resources and not _offered(ray, resources):
                for ref in left:
                    ray.cancel(ref, force=True)
                    yield ref, _lost(resources)
                return
            continue
        ref = done[0]
        try:
            yield ref, ray.get(ref)
        except Exception as exc:  # a task's error, or its worker died: the cell's error
            yield ref, _cause(ray, exc)


def _capacity(ray: Any, resources: dict[str, float]) -> tuple[dict[str, float], float]:
    """The summed resources of the live nodes that offer ``resources`` (every live node when
    there are none), and the most CPUs one of them has."""
    total: dict[str, float] = {}
    largest = 0.0
    for node in ray.nodes():
        offered = node.get("Resources", {})
        if not node.get("Alive") or any(offered.get(n, 0.0) < a for n, a in resources.items()):
            continue
        for name, amount in offered.items():
            total[name] = total.get(name, 0.0) + float(amount)
        largest = max(largest, float(offered.get("CPU", 0.0)))
    return total, max(1.0, largest)


def _offered(ray: Any, resources: dict[str, float]) -> bool:
    """Whether a live node of the cluster offers every one of ``resources``."""
    for node in ray.nodes():
        if node.get("Alive") and all(
            node.get("Resources", {}).get(name, 0.0) >= amount for name, amount in resources.items()
        ):
            return True
    return False


def _lost(resources: dict[str, float]) -> ChunkmarkError:
    return ChunkmarkError(
        f"No live node of the Ray cluster offers the resources {resources} any more "
        "(a node was lost).",
        "Start a node that offers them (ray start --resources ...) and rerun into the same "
        "results folder: finished cells are kept.",
    )


def _cause(ray: Any, exc: Exception) -> BaseException:
    """The exception a task raised (not Ray's wrapper), or Ray's error when a worker died."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            return cause
    died = (ray.exceptions.WorkerCrashedError, ray.exceptions.RayActorError)
    died += tuple(
        error
        for name in ("NodeDiedError", "LocalRayletDiedError", "TaskUnschedulableError")
        if isinstance(error := getattr(ray.exceptions, name, None), type)
    )
    if isinstance(exc, died):
        return ChunkmarkError(
            f"A Ray worker died while running this cell ({type(exc).__name__}).",
            "Rerun into the same results folder: finished cells are kept, this one is redone.",
        )
    return exc
