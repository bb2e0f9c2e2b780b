"""The plan of an experiment grid: what a run would chunk, embed and ask, and what it would cost.

:func:`plan_grid` reads a config and answers before anything is spent: no request is sent, no
model is loaded, nothing is written (the chunk store, the embedding cache and the LLM answer
cache are only read, and only when their files exist). :func:`check_budget` turns the plan into
the ``--max-cost`` guard the runner applies before its first request. See ``docs/plan.md``.

This module holds the planner (:func:`plan_grid`) and the budget (:func:`check_budget`); beside
it, ``plan_model`` (the records), ``plan_chunks`` (:func:`estimate_chunks`, the one way an
estimate chunks), ``plan_embedding`` (what each embedder would embed and pay) and ``plan_llm``
(each LLM chunker asked what it would ask).

How it counts
-------------
- **Cells**: datasets x chunkers x embedders (the config's expanded, canonical specs); every
  cell is scored at each retrieval setting and scoring option from one ranking.
- **Set-up**: an embedder that must be built or downloaded before it runs (its
  ``setup_needed()``: model2vec's distilled MiniLM not in the cache yet, a sentence-transformers
  Hub model not in the local Hugging Face cache) is named in ``setup`` with what it takes and
  about how long; the plan never builds or downloads it, so its identity (and the cache's
  share) is unknown until the first run.
- **Chunk texts.** A chunker that neither embeds nor calls an LLM is read from the chunk store
  or run on the documents (cheap, no model). A semantic chunker (trait ``embeds``) is read from
  the store when the cell's embedder identity can be had without loading a model; otherwise its
  chunks are unknown until it runs, and so are those of a chunker that calls an LLM. An unknown
  cell is estimated at its dataset's document tokens (``cl100k_base``): chunks that do not
  overlap cover at most the documents, so this is about an upper bound.
- **What semantic chunkers embed while chunking** (sentences or pieces with their neighbours)
  does not depend on the vectors: it is recorded by running the chunker with a stand-in
  embedder that returns hashed vectors, call by call, and counted for the embedder that will
  embed it (the cell's, or the one its ``embedder=`` names).
- **Per embedder**, the distinct texts it would embed, as ``document`` (chunk texts and chunking
  texts) and ``query`` (questions). With the cache, a text shared by several chunkers, cells or
  datasets counts once (the cache embeds each distinct text once); with ``no_cache`` every
  embedding call counts its own distinct texts. Tokens are *model tokens* for embedders with
  ``prepare()`` (OpenAI-compatible: prompt, ``cl100k_base``, truncation, exactly what is sent),
  else ``cl100k_base`` tokens (an estimate; local models cost 0 anyway). Texts the embedding
  cache holds under their text key are *cached* and excluded from the cost; a new text that
  only shares a model input (after truncation) with a cached one is not recognised, so the
  count is an upper bound there.
- **LLM chunkers**: the planner names none. A chunker registered with ``calls_llm=True`` that
  is a :class:`~chunkmark.chunkers.base.RequestEstimator` says, document by document and
  without asking, the calls and tokens chunking would take (each knows its own prompts):
  ``llm_semantic`` and ``documentation(llm=...)`` their windows at the fewest and the most,
  ``contextual(method='llm')`` and ``propositions`` one request per chunk of the wrapped
  chunker. Cached answers are replayed (exactly what a run would read back); the rest are
  counted at the fewest calls (``calls``) and the most (``calls_max``). Input tokens are
  ``cl100k_base`` tokens of the system and user prompts plus the chat framing; output tokens
  are each call's ``max_tokens``. Without a cache (``no_cache``) the chunker runs again for
  every embedder's cell and nothing is replayed. A wrapper's chunks come from
  :func:`estimate_chunks`, the one way an estimate chunks (shared with the relations dry run);
  a wrapper around a chunker that itself calls an LLM or embeds is *unknown*, and so is a
  chunker that calls an LLM and is no ``RequestEstimator``: its cost cannot be estimated. One
  that, as set, asks no LLM (``documentation(llm=None)``) is chunked.
- **Provider prompt caching** (``contextual`` asks with ``cache_system=True``; the system prompt
  holds the whole document): of each document's requests sent, the first writes the system
  prompt to the provider's cache and every later one reads it, when the provider caches
  prompts that long (:data:`~chunkmark.costs.prompt_cache.PROMPT_CACHES`: OpenAI and Anthropic
  from 1024 tokens, the fake LLM always; OpenAI bills no writes, so none are counted for it;
  other providers: no caching assumed). ``cached_input_tokens`` and ``cache_write_tokens``
  (part of ``input_tokens``) are priced at the table's cached-input and cache-write prices in
  ``usd``; ``usd_max`` assumes no cache read at all and every request writing
  (``cache_write_tokens_max``).
- **Answers** (``answers:``, :mod:`chunkmark.answers.plan`; the answers analysis handed to
  :func:`plan_grid` says it, as it is handed to the runner): one request per question with a
  reference and cell, plus the whole-document baseline's where it fits (cached ones replayed),
  and the judge's one per answer; input tokens at the setting's token budget of context
  (unknown for a setting without one), output at each request's ``max_tokens``.
- **Dollars**: tokens to embed x the embedding price table (``costs/embedding_prices.yaml``),
  and LLM tokens x the LLM price table (``costs/llm_prices.yaml``, with cached-input and
  cache-write prices), each with the experiment file's ``prices:`` overrides
  (:mod:`chunkmark.costs.overrides`) and the entries of ``--prices FILE`` (``price_file``) on
  top. A component that runs on this machine (an embedder listed as local: model2vec,
  sentence-transformers; an OpenAI-compatible client of a loopback ``base_url``) costs 0
  unless a price was given for its model. A model is looked
  up by its exact name, else by the longest name it starts with followed by ``-`` (a dated
  snapshot takes its base model's price). A model with no price makes its cost, and the total,
  unknown (``None``), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkmark.chunkers import CHUNKERS
from chunkmark.costs.budget import CostLimitError, usd
from chunkmark.costs.overrides import PlanPrices, load_plan_prices
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.errors import ConfigError
from chunkmark.experiments.analysis import Analysis, PlansRequests, check_handed
from chunkmark.experiments.chunk_store import ChunkStore
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.plan_chunks import CALLS_LLM, estimate_chunks
from chunkmark.experiments.plan_embedding import (
    Bucket,
    RecordingEmbedder,
    embedder_plan,
    identity_without_loading,
    record_chunking,
    setup_needed,
)
from chunkmark.experiments.plan_llm import LLMPlanning, plan_llm_chunker
from chunkmark.experiments.plan_model import (
    AnswerPlan,
    CellPlan,
    DatasetPlan,
    EmbedderPlan,
    LLMChunkerPlan,
    Plan,
    SetupStep,
    Source,
)
from chunkmark.llm.estimate import ENCODING
from chunkmark.specs import Spec
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.llm.cache import LLMCache

__all__ = [  # the plan's records and its one way of chunking, read from here
    "EmbedderPlan",
    "LLMChunkerPlan",
    "Plan",
    "check_budget",
    "estimate_chunks",
    "plan_grid",
]


@dataclass
class _Planner:
    config: ExperimentConfig
    prices: PlanPrices
    cache_dir: Path | None
    analyses: Sequence[Analysis] = ()
    buckets: dict[str, Bucket] = field(default_factory=dict)
    identities: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    cells: list[CellPlan] = field(default_factory=list)
    llm_plans: list[LLMChunkerPlan] = field(default_factory=list)
    answer_plans: list[AnswerPlan] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    setup: list[SetupStep] = field(default_factory=list)
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
            needed = setup_needed(inner)
            if needed is not None:
                self.setup.append(SetupStep(component=key, needed=needed))
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
        cells = len(self.config.chunkers) * len(embedders)
        for analysis in self.analyses:
            if isinstance(analysis, PlansRequests):
                plans, unknown = analysis.plan(dataset, cells, self.prices.llm, self._llm_cache)
                self.answer_plans.extend(plans)
                self.unknown.extend(unknown)

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


def plan_grid(
    config: ExperimentConfig,
    analyses: Sequence[Analysis] = (),
    datasets: Sequence[Dataset] | None = None,
) -> Plan:
    """What running ``config`` with ``analyses`` would do and cost, found without any request
    or model load (an analysis that asks an LLM says what it would ask: the answers).
    ``datasets``: the config's datasets, loaded already (the runner's); else each is loaded by
    name here, never downloaded.

    Reads the chunk store, the embedding cache and the LLM cache under the config's cache
    folder when their files exist (never with ``no_cache``), and writes nothing.
    """
    from chunkmark.paths import resolve_cache_dir

    check_handed(config, analyses)
    if datasets is None:
        datasets = [_load(name) for name in config.datasets]
    prices = load_plan_prices(config.prices, config.price_file)
    tokens = [sum(count_tokens([d.text for d in ds.documents], ENCODING)) for ds in datasets]
    cache_dir = None if config.no_cache else resolve_cache_dir(config.cache_dir)
    planner = _Planner(config, prices, cache_dir, analyses)
    for dataset, doc_tokens in zip(datasets, tokens, strict=True):
        planner.plan_dataset(dataset, doc_tokens)
    embedding = planner.embedder_plans()
    answers = [p.usd for p in planner.answer_plans]
    parts = [e.usd for e in embedding] + [p.usd for p in planner.llm_plans] + answers
    parts_max = [e.usd for e in embedding] + [p.usd_max for p in planner.llm_plans] + answers
    return Plan(
        datasets=[
            DatasetPlan(
                name=d.name,
                fingerprint=d.fingerprint,
                documents=len(d.documents),
                questions=len(d.questions),
                document_tokens=n,
            )
            for d, n in zip(datasets, tokens, strict=True)
        ],
        chunkers=list(config.chunkers),
        embedders=list(config.embedders),
        retrieval=list(config.retrieval_specs()),
        scoring=config.scoring.combinations(),
        cells=planner.cells,
        embedding=embedding,
        llm_chunkers=planner.llm_plans,
        answers=planner.answer_plans,
        setup=planner.setup,
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


# --- the budget ------------------------------------------------------------------------------


def check_budget(plan: Plan, max_cost: float | None) -> None:
    """Raise :class:`CostLimitError` when the plan's estimate exceeds ``max_cost`` US dollars,
    or when the cost is unknown; nothing to check when ``max_cost`` is None."""
    if max_cost is None:
        return
    if plan.total_usd is None:
        missing = "; ".join(plan.unknown) or "a part of the grid"
        raise CostLimitError(
            f"The cost of this grid cannot be estimated ({missing} is unknown), so "
            f"--max-cost {usd(max_cost)} cannot be enforced.",
            "Give the missing prices with --prices FILE (YAML: 'models: {MODEL: 0.02}' for an "
            "embedding model, 'models: {MODEL: {input: 0.15, output: 0.60}}' for an LLM) or in "
            "the experiment file ('prices: {embedding: {MODEL: 0.02}, llm: {MODEL: {input: "
            "0.15, output: 0.60}}}'); US dollars per million tokens, 0 for a free endpoint. Or "
            "run without --max-cost.",
        )
    if plan.total_usd <= max_cost:
        return
    raise CostLimitError(
        f"Estimated cost {usd(plan.total_usd)} exceeds --max-cost {usd(max_cost)} "
        f"({_spending(plan)}).",
        "Raise --max-cost, or plan a smaller grid (fewer datasets, chunkers or paid "
        "embedders; a cheaper model); texts already in the cache cost nothing "
        "(see `chunkmark plan`).",
    )


def _spending(plan: Plan) -> str:
    """What costs money, in a few words: tokens per paid embedder, calls per paid LLM."""
    parts = [
        f"{e.tokens_to_embed:,} tokens to embed with {e.model or e.spec} at "
        f"{usd(e.usd_per_million or 0)}/M"
        for e in plan.embedding
        if e.usd
    ]
    parts += [
        f"{p.calls:,} LLM calls to {p.model} for {CHUNKERS.short(p.chunker)}"
        for p in plan.llm_chunkers
        if p.usd
    ]
    parts += [
        f"{p.calls:,} LLM calls to {p.model} to {p.role} questions of {p.dataset}"
        for p in plan.answers
        if p.usd
    ]
    return "; ".join(parts) or "nothing is paid"
