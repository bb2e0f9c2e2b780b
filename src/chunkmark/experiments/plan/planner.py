"""The planner: every (dataset, chunker, embedder) cell of a grid, what each embedder would
embed, and each LLM chunker's calls, found without a request or a model load."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkmark.chunkers import CHUNKERS
from chunkmark.chunkers.estimate import ENCODING
from chunkmark.costs.overrides import PlanPrices, load_plan_prices
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.errors import ConfigError
from chunkmark.experiments.chunk_store import ChunkStore
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.plan.chunks import CALLS_LLM, estimate_chunks
from chunkmark.experiments.plan.embedding import (
    Bucket,
    RecordingEmbedder,
    embedder_plan,
    identity_without_loading,
    record_chunking,
)
from chunkmark.experiments.plan.llm import LLMPlanning, plan_llm_chunker
from chunkmark.experiments.plan.model import (
    CellPlan,
    DatasetPlan,
    EmbedderPlan,
    LLMChunkerPlan,
    Plan,
    Source,
)
from chunkmark.specs import Spec
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.llm.cache import LLMCache


@dataclass
class _Planner:
    config: ExperimentConfig
    prices: PlanPrices
    cache_dir: Path | None
    buckets: dict[str, Bucket] = field(default_factory=dict)
    identities: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    cells: list[CellPlan] = field(default_factory=list)
    llm_plans: list[LLMChunkerPlan] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    _store: ChunkStore | None = None
    _llm_cache: LLMCache | None = None

    def __post_init__(self) -> None:
        if self.cache_dir is not None and (self.cache_dir / "chunks").is_dir():
            self._store = ChunkStore(self.cache_dir)
        if self.cache_dir is not None:
            from chunkmark.llm.cache import DB_NAME as LLM_DB
            from chunkmark.llm.cache import LLMCache

            if (self.cache_dir / LLM_DB).is_file():
                self._llm_cache = LLMCache(self.cache_dir)

    def bucket(self, spec: Spec | str, in_grid: bool) -> Bucket:
        canonical = EMBEDDERS.resolve(spec)
        key = str(canonical)
        if key not in self.buckets:
            inner, _ = EMBEDDERS.build(canonical)
            self.buckets[key] = Bucket(canonical, inner, in_grid)
            self.identities[key] = identity_without_loading(inner)
        return self.buckets[key]

    def plan_dataset(self, dataset: Dataset, doc_tokens: int) -> None:
        embedders = [self.bucket(s, True) for s in self.config.embedders]
        questions = [q.text for q in dataset.questions]
        for b in embedders:
            b.add("query", questions)
        for c_text in self.config.chunkers:
            c_spec = CHUNKERS.resolve(c_text)
            traits = CHUNKERS.traits(c_spec)
            if traits.calls_llm:
                self._llm_chunker(dataset, c_spec, embedders, doc_tokens)
            elif traits.embeds:
                self._semantic_chunker(dataset, c_spec, embedders, doc_tokens)
            else:
                found = estimate_chunks(dataset, c_spec, store=self._store, seed=self.config.seed)
                texts = found.texts(dataset)
                note = "" if traits.deterministic else "nondeterministic: a run may differ"
                for b in embedders:
                    b.add("document", texts)
                    self._cell(dataset, c_spec, b, len(texts), found.source, note)

    def _cell(
        self,
        dataset: Dataset,
        c_spec: Spec,
        b: Bucket,
        chunks: int | None,
        source: Source,
        note: str = "",
    ) -> None:
        self.cells.append(
            CellPlan(
                dataset=dataset.name,
                chunker=str(c_spec),
                embedder=str(b.spec),
                chunks=chunks,
                source=source,
                note=note,
            )
        )

    def _estimated(self, dataset: Dataset, c_spec: Spec, b: Bucket, doc_tokens: int) -> None:
        """A cell whose chunks are known once its chunker runs: its chunk texts estimated at
        the dataset's document tokens."""
        b.estimated_tokens += doc_tokens
        b.estimated_for.append(f"{CHUNKERS.short(c_spec)} on {dataset.name}")

    def _semantic_chunker(
        self, dataset: Dataset, c_spec: Spec, embedders: list[Bucket], doc_tokens: int
    ) -> None:
        """Chunks from the store when there; else the texts it embeds while chunking (recorded)
        and its chunks estimated."""
        recorded: dict[str | None, RecordingEmbedder] | None = None
        for b in embedders:
            identity = self.identities[str(b.spec)]
            found = estimate_chunks(dataset, c_spec, identity=identity, store=self._store)
            if found.chunks is not None:
                texts = found.texts(dataset)
                b.add("document", texts)
                self._cell(dataset, c_spec, b, len(texts), found.source)
                continue
            if recorded is None:
                recorded = record_chunking(dataset, c_spec, self.config.seed)
            for named, recorder in recorded.items():
                target = b if named is None else self.bucket(named, in_grid=False)
                for call in recorder.calls:
                    target.add("document", call)
            self._estimated(dataset, c_spec, b, doc_tokens)
            self._cell(dataset, c_spec, b, None, "unknown", found.note)

    def _llm_chunker(
        self, dataset: Dataset, c_spec: Spec, embedders: list[Bucket], doc_tokens: int
    ) -> None:
        """A chunker that calls an LLM: its calls estimated (or unknown); its chunk texts
        estimated for every embedder, or chunked when it is set to use no LLM."""
        planning = LLMPlanning(
            seed=self.config.seed,
            runs=1 if self.cache_dir is not None else len(embedders),
            answers=self._llm_cache,
            prices=self.prices.llm,
            store=self._store,
        )
        outcome = plan_llm_chunker(dataset, c_spec, planning)
        if outcome.texts is not None:
            for b in embedders:
                b.add("document", outcome.texts)
                self._cell(dataset, c_spec, b, len(outcome.texts), "chunked", outcome.note)
            return
        if outcome.plan is not None:
            self.llm_plans.append(outcome.plan)
        self.unknown.extend(outcome.unknown)
        for b in embedders:
            self._estimated(dataset, c_spec, b, doc_tokens)
            self._cell(dataset, c_spec, b, None, "unknown", CALLS_LLM)

    def embedder_plans(self) -> list[EmbedderPlan]:
        return [
            embedder_plan(
                b,
                self.identities[key],
                no_cache=self.config.no_cache,
                cache_dir=self.cache_dir,
                prices=self.prices,
                unknown=self.unknown,
            )
            for key, b in self.buckets.items()
        ]


def _load(name: str) -> Dataset:
    """A dataset by name or folder, never downloaded: planning sends no request."""
    from chunkmark.datasets import BUILTIN_NAMES, load_dataset
    from chunkmark.datasets.demo import DEMO_NAME

    if name in BUILTIN_NAMES and name != DEMO_NAME:
        from chunkmark.datasets import download

        if not download.is_downloaded(name):
            raise ConfigError(
                f"The dataset {name!r} is not downloaded yet, and planning never downloads.",
                f"Run `chunkmark datasets download {name}` first.",
            )
    return load_dataset(name)


def plan_grid(config: ExperimentConfig) -> Plan:
    """What running ``config`` would do and cost, found without any request or model load.

    Reads the chunk store, the embedding cache and the LLM cache under the config's cache
    folder when their files exist (never with ``no_cache``), and writes nothing.
    """
    from chunkmark.paths import resolve_cache_dir

    prices = load_plan_prices(config.prices)
    cache_dir = None if config.no_cache else resolve_cache_dir(config.cache_dir)
    planner = _Planner(config, prices, cache_dir)
    datasets = []
    for name in config.datasets:
        dataset = _load(name)
        doc_tokens = sum(count_tokens([d.text for d in dataset.documents], ENCODING))
        datasets.append(
            DatasetPlan(
                name=dataset.name,
                fingerprint=dataset.fingerprint,
                documents=len(dataset.documents),
                questions=len(dataset.questions),
                document_tokens=doc_tokens,
            )
        )
        planner.plan_dataset(dataset, doc_tokens)
    embedding = planner.embedder_plans()
    parts = [e.usd for e in embedding] + [p.usd for p in planner.llm_plans]
    parts_max = [e.usd for e in embedding] + [p.usd_max for p in planner.llm_plans]
    return Plan(
        datasets=datasets,
        chunkers=list(config.chunkers),
        embedders=list(config.embedders),
        retrieval=list(config.retrieval_specs()),
        scoring=config.scoring.combinations(),
        cells=planner.cells,
        embedding=embedding,
        llm_chunkers=planner.llm_plans,
        cache_dir=None if cache_dir is None else str(cache_dir),
        no_cache=config.no_cache,
        prices=prices.to_dict(),
        total_usd=_sum(parts),
        total_usd_max=_sum(parts_max),
        unknown=list(dict.fromkeys(planner.unknown)),
    )


def _sum(values: Sequence[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return math.fsum(v for v in values if v is not None)
