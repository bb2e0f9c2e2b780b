"""The LLM calls of a plan: each chunker that calls an LLM is asked what it would ask.

The planner names no chunker. It builds one registered with ``calls_llm=True`` with LLM
clients that have no cache (nothing is opened, written or sent) and, when the chunker is a
:class:`~chunkmark.chunkers.base.RequestEstimator`, asks it document by document for its
:class:`~chunkmark.llm.estimate.LLMUsage`: answers the LLM cache holds are replayed (when
the run reads the cache), the provider's prompt-cache rule is passed along, and the client's
identity prices the tokens. A wrapper's chunks come from :func:`estimate_chunks`; when they are
known only once the wrapped chunker runs, so are the wrapper's calls. A chunker that is no
estimator, or that wraps one whose chunks are unknown, is reported as unknown; one that, as set,
asks no LLM is chunked like a chunker that needs no model.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.chunkers.base import RequestEstimator
from chunkmark.costs.llm_prices import LLMPrices, price_of
from chunkmark.costs.prices import Price
from chunkmark.costs.prompt_cache import PROMPT_CACHES
from chunkmark.embedders.base import Embedder
from chunkmark.experiments.chunk_store import ChunkStore
from chunkmark.experiments.plan_chunks import estimate_chunks
from chunkmark.experiments.plan_embedding import RecordingEmbedder
from chunkmark.experiments.plan_model import LLMChunkerPlan
from chunkmark.llm.estimate import Asking, LLMUsage, Replay
from chunkmark.specs import Spec

if TYPE_CHECKING:
    from chunkmark.datasets.model import Dataset
    from chunkmark.llm.cache import LLMCache


@dataclass
class PlanContext(ChunkerContext):
    """The context a planned LLM chunker is built with: LLM clients without a cache (the
    planner reads the cache itself), the spec each was built from, and stand-in embedders
    (a wrapped semantic chunker is built, never run)."""

    llm_specs: dict[int, str] = field(default_factory=dict)

    def resolve_embedder(self, spec: str | None) -> Embedder:
        return RecordingEmbedder()

    def llm(self, spec: str) -> Any:
        from chunkmark.llm import build_llm

        client = build_llm(spec, cache_dir=None, seed=self.seed)
        self.llm_specs[id(client)] = spec
        return client


@dataclass(frozen=True)
class LLMPlanning:
    """What planning an LLM chunker reads: the seed, how often it runs over a dataset (once
    with the cache, once per embedder without), the LLM answers to replay, the price table and
    the chunk store."""

    seed: int
    runs: int
    answers: LLMCache | None
    prices: LLMPrices
    store: ChunkStore | None


@dataclass
class LLMOutcome:
    """An LLM chunker on one dataset: its plan, or (when it asks no LLM as set) its chunk
    texts; what the plan leaves unknown."""

    plan: LLMChunkerPlan | None = None
    texts: list[str] | None = None
    note: str = ""
    unknown: list[str] = field(default_factory=list)


def plan_llm_chunker(dataset: Dataset, c_spec: Spec, p: LLMPlanning) -> LLMOutcome:
    """Ask the chunker ``c_spec`` names what it would ask of its LLM over ``dataset``."""
    context = PlanContext(seed=p.seed)
    chunker, _ = CHUNKERS.build(c_spec, context=context)
    if not isinstance(chunker, RequestEstimator):
        return _unknown(
            dataset,
            c_spec,
            context,
            p.runs,
            f"chunkmark cannot estimate the LLM calls of {c_spec.name!r} without running it: "
            "it does not say what it would ask (it is no RequestEstimator, see "
            "chunkmark.llm.estimate), so its cost cannot be estimated",
        )
    inner: dict[str, list[Chunk]] | None = None
    wrapped = chunker.estimate_wraps()
    if wrapped is not None:
        found = estimate_chunks(dataset, wrapped, store=p.store, seed=p.seed)
        if found.chunks is None:
            return _unknown(
                dataset,
                c_spec,
                context,
                p.runs,
                f"chunkmark cannot estimate the LLM calls of {c_spec.name!r} without running "
                f"it: the chunker it wraps ({CHUNKERS.short(wrapped)}) calls an LLM or embeds, "
                "so its chunks are known only once it has run",
            )
        inner = defaultdict(list)
        for c in found.chunks:
            inner[c.doc_id].append(c)
    llm = chunker.estimate_llm()
    if llm is None:  # as set, it asks no LLM: chunked like a chunker that needs no model
        docs = dataset.by_id
        chunks = [c for d in dataset.documents for c in chunk_document(chunker, d.id, d.text)]
        texts = [c.text(docs[c.doc_id].text) for c in chunks]
        return LLMOutcome(texts=texts, note="asks no LLM as set")
    identity = llm.identity()
    replay = Replay(llm, p.answers if p.runs == 1 else None)
    asking = Asking(replay, PROMPT_CACHES.get(str(identity.get("provider"))))
    usage = LLMUsage()
    for doc in dataset.documents:
        chunks = None if inner is None else inner.get(doc.id, [])
        usage.add(chunker.estimate_requests(doc.text, chunks, asking))
    price = price_of(llm, p.prices)
    model = str(identity.get("model", llm.name))
    if price is None and usage.calls_max == 0:
        price = Price(model, 0.0, 0.0, "no call to make")
    unknown = []
    if price is None:
        unknown.append(f"the price of the LLM {model!r} (used by {CHUNKERS.short(c_spec)})")
    llm_spec = context.llm_specs.get(id(llm), llm.name)
    plan = _llm_plan(dataset, c_spec, llm_spec, model, p.runs, usage, price)
    return LLMOutcome(plan=plan, unknown=unknown)


def _unknown(
    dataset: Dataset, c_spec: Spec, context: PlanContext, runs: int, note: str
) -> LLMOutcome:
    specs = list(context.llm_specs.values())
    plan = LLMChunkerPlan(
        dataset=dataset.name,
        chunker=str(c_spec),
        llm=specs[0] if specs else None,
        model=None,
        known=False,
        runs=runs,
        note=note,
    )
    return LLMOutcome(plan=plan, unknown=[f"LLM calls of {CHUNKERS.short(c_spec)}"])


def _llm_plan(
    dataset: Dataset,
    c_spec: Spec,
    llm_spec: str,
    model: str,
    runs: int,
    usage: LLMUsage,
    price: Price | None,
) -> LLMChunkerPlan:
    calls, calls_max = usage.calls * runs, usage.calls_max * runs
    inp, inp_max = usage.input_tokens * runs, usage.input_tokens_max * runs
    out, out_max = usage.output_tokens * runs, usage.output_tokens_max * runs
    read, write = usage.cached_input_tokens * runs, usage.cache_write_tokens * runs
    write_max = usage.cache_write_tokens_max * runs
    cached = usage.cached * runs if runs == 1 else 0
    return LLMChunkerPlan(
        dataset=dataset.name,
        chunker=str(c_spec),
        llm=llm_spec,
        model=model,
        known=True,
        runs=runs,
        cached_calls=cached,
        calls=calls,
        calls_max=calls_max,
        input_tokens=inp,
        input_tokens_max=inp_max,
        output_tokens=out,
        output_tokens_max=out_max,
        cached_input_tokens=read,
        cache_write_tokens=write,
        cache_write_tokens_max=write_max,
        usd_per_million=None if price is None else price.per_million(),
        usd=None if price is None else price.cost(inp, out, read, write),
        usd_max=None if price is None else price.cost(inp_max, out_max, 0, write_max),
        note="" if price is not None else f"no price for {model!r}",
    )
