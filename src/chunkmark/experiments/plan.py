"""The plan of an experiment grid: what a run would chunk, embed and ask, and what it would cost.

:func:`plan_grid` reads a config and answers before anything is spent: no request is sent, no
model is loaded, nothing is written (the chunk store, the embedding cache and the LLM answer
cache are only read, and only when their files exist). :func:`check_budget` turns the plan into
the ``--max-cost`` guard the runner applies before its first request. See ``docs/plan.md``.

How it counts
-------------
- **Cells**: datasets x chunkers x embedders (the config's expanded, canonical specs); every
  cell is scored at each retrieval setting and scoring option from one ranking.
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
- **LLM chunkers** (``llm_semantic``, ``documentation(llm=...)``): the pieces and the first
  window of every text are known, but where later windows start depends on the answers. Cached
  answers are replayed (exactly what a run would read back); from the first window not in the
  cache, ``calls`` is the fewest calls (each answer ending its window, first time right) and
  ``calls_max`` the most (each answer advancing one piece, every window asked twice). Input
  tokens are ``cl100k_base`` tokens of the system and user prompts plus the chat framing;
  output tokens are each call's ``max_tokens``. Without a cache (``no_cache``) the chunker runs
  again for every embedder's cell and nothing is replayed.
- **LLM wrappers** (``contextual(method='llm')``, ``propositions``): the requests they would
  send are known before asking (their ``requests(text)``: one per chunk of the wrapped
  chunker), so ``calls`` is exact for ``contextual`` (an empty answer is not asked again) and
  ``propositions`` at its fewest (each answer usable at once); ``calls_max`` asks every chunk
  of ``propositions`` twice (the correction quotes the request, at most 200 characters of the
  answer and the reason). Cached answers are replayed as for the splitters. Input tokens are
  the ``cl100k_base`` tokens of each request's system and user prompts plus the chat framing;
  output tokens each call's ``max_tokens``. A wrapper around a chunker that itself calls an LLM
  or embeds is *unknown*, and so is any other chunker that calls an LLM.
- **Provider prompt caching** (``contextual`` asks with ``cache_system=True``; the system prompt
  holds the whole document): of each document's requests sent, the first writes the system
  prompt to the provider's cache and every later one reads it, when the provider caches
  prompts that long (:data:`~chunkmark.costs.prompt_cache.PROMPT_CACHES`: OpenAI and Anthropic from 1024 tokens, the fake
  LLM always; OpenAI bills no writes, so none are counted for it; other providers: no caching
  assumed). ``cached_input_tokens`` and ``cache_write_tokens`` (part of ``input_tokens``) are
  priced at the table's cached-input and cache-write prices in ``usd``; ``usd_max`` assumes no
  cache read at all and every request writing (``cache_write_tokens_max``).
- **Dollars**: tokens to embed x the embedding price table (``costs/embedding_prices.yaml``;
  embedders listed as local cost 0), and LLM tokens x the LLM price table
  (``costs/llm_prices.yaml``, with cached-input and cache-write prices), each with the
  experiment file's ``prices:`` overrides (:mod:`chunkmark.costs.overrides`). A model is looked
  up by its exact name, else by the longest name it starts with followed by ``-`` (a dated
  snapshot takes its base model's price). A model with no price makes its cost, and the total,
  unknown (``None``), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.costs.budget import CostLimitError, usd
from chunkmark.costs.llm_prices import price_of
from chunkmark.costs.meter import MESSAGE_TOKENS
from chunkmark.costs.overrides import OVERRIDES, PlanPrices, load_plan_prices
from chunkmark.costs.prices import Price
from chunkmark.costs.prompt_cache import PROMPT_CACHES
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.base import Embedder, FloatArray, Kind, l2_normalise
from chunkmark.embedders.cache import DB_NAME as EMBEDDING_DB
from chunkmark.embedders.cache import EmbeddingCache
from chunkmark.errors import ChunkmarkError, ConfigError
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.specs import Spec
from chunkmark.stats import EmbedderStats
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.chunkers.llm_semantic import LLMSplitter
    from chunkmark.llm.cache import LLMCache

ENCODING = "cl100k_base"
LOOKUP_BATCH = 4096  # texts per embedding-cache lookup (bounds the vectors read at once)
SHOWN_ANSWER_TOKENS = 200  # a correction quotes at most 200 characters of the answer
REASON_TOKENS = 40  # and says why it cannot be used, in fewer tokens than this
WRAPPERS = ("contextual", "propositions")  # chunkers whose requests are known before asking

Source = Literal["chunked", "chunk store", "unknown"]


# --- the plan ---------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetPlan(_Model):
    """One dataset of the grid: its size, and its documents' ``cl100k_base`` tokens."""

    name: str
    fingerprint: str
    documents: int
    questions: int
    document_tokens: int


class CellPlan(_Model):
    """One (dataset, chunker, embedder) cell: its chunks when they are known before the run."""

    dataset: str
    chunker: str
    embedder: str
    chunks: int | None  # None: known only once the chunker runs
    source: Source
    note: str = ""


class EmbedderPlan(_Model):
    """What one embedder would embed, how much of it the cache holds, and what the rest costs.

    ``document_texts``/``query_texts`` are distinct texts (per call with ``no_cache``) and their
    tokens counted as ``token_count`` says; ``cached_*`` is None when the cache was not looked
    up (``no_cache``, or the identity needs the model). ``estimated_tokens`` stands for the
    chunk texts of ``estimated_for`` cells, unknown before their chunkers run.
    ``tokens_to_embed`` = the tokens not cached + ``estimated_tokens``.
    """

    spec: str
    model: str | None
    in_grid: bool
    token_count: str
    document_texts: int
    document_tokens: int
    query_texts: int
    query_tokens: int
    cached_texts: int | None
    cached_tokens: int | None
    cache_note: str = ""
    estimated_tokens: int = 0
    estimated_for: list[str] = Field(default_factory=list)
    tokens_to_embed: int
    usd_per_million: float | None
    price_source: str
    usd: float | None


class LLMChunkerPlan(_Model):
    """One LLM-calling chunker on one dataset: calls, tokens and dollars, fewest and most.

    ``runs`` is how often the chunker runs over the dataset (once with the cache, once per
    embedder without it); ``cached_calls`` are answers the cache replays (free). Of the input
    tokens, ``cached_input_tokens`` are expected to be read from the provider's prompt cache
    and ``cache_write_tokens`` written to it (``usd``); ``usd_max`` prices
    ``cache_write_tokens_max`` writes and no read. Every number is None when ``known`` is
    False (see ``note``).
    """

    dataset: str
    chunker: str
    llm: str | None
    model: str | None
    known: bool
    runs: int
    cached_calls: int = 0
    calls: int | None = None
    calls_max: int | None = None
    input_tokens: int | None = None
    input_tokens_max: int | None = None
    output_tokens: int | None = None
    output_tokens_max: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_tokens_max: int | None = None
    usd_per_million: dict[str, float] | None = None
    usd: float | None = None
    usd_max: float | None = None
    note: str = ""


class Plan(_Model):
    """The whole plan; ``total_usd`` is None when any part's cost is unknown (``unknown``
    says which). ``total_usd`` takes LLM chunkers at their fewest calls, ``total_usd_max`` at
    their most."""

    datasets: list[DatasetPlan]
    chunkers: list[str]
    embedders: list[str]
    retrieval: list[str]
    scoring: list[dict[str, str]]
    cells: list[CellPlan]
    embedding: list[EmbedderPlan]
    llm_chunkers: list[LLMChunkerPlan]
    cache_dir: str | None
    no_cache: bool
    prices: dict[str, Any]
    total_usd: float | None
    total_usd_max: float | None
    unknown: list[str]

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, for the manifest and ``chunkmark plan --json``."""
        return {"n_cells": self.n_cells, **self.model_dump(mode="json")}


# --- embedders: identity and tokens without loading a model -----------------------------------


def identity_without_loading(embedder: Any) -> dict[str, Any] | None:
    """The embedder's identity, or None when getting it would load (or download) a model.

    A sentence-transformers Hub model that is not in the local Hugging Face cache needs its
    files for its identity; every other built-in embedder reads only names and small files.
    """
    from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder, _hub_config

    try:
        if isinstance(embedder, SentenceTransformerEmbedder):
            resolved = embedder.resolved
            if resolved.source == "hub" and _hub_config(resolved) is None:
                return None
        identity: dict[str, Any] = embedder.identity()
    except (ChunkmarkError, OSError, ValueError):
        return None
    return identity


TokenCounter = Callable[[list[str], Kind], list[int]]


def token_counter(embedder: Any) -> tuple[TokenCounter, str]:
    """How to count an embedder's tokens, and what the count is: the model's own input tokens
    through ``prepare()`` where it has one (OpenAI-compatible), else ``cl100k_base``."""
    prepare = getattr(embedder, "prepare", None)
    if callable(prepare):

        def model_tokens(texts: list[str], kind: Kind) -> list[int]:
            return [int(p.tokens) for p in prepare(texts, kind)]

        return model_tokens, "model tokens (prepare(): prompt, cl100k_base, truncation)"

    def cl100k(texts: list[str], kind: Kind) -> list[int]:
        return count_tokens(texts, ENCODING)

    return cl100k, "cl100k_base tokens (an estimate: the model's tokenizer is not loaded)"


class RecordingEmbedder:
    """A stand-in embedder for planning: seeded random vectors (no model), every call's texts
    kept."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @property
    def name(self) -> str:
        return "plan-recorder"

    def identity(self) -> dict[str, Any]:
        return {"embedder": "plan-recorder"}

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        self.calls.append(list(texts))
        rng = np.random.default_rng(len(self.calls))  # any vectors do: only the texts count
        return l2_normalise(rng.standard_normal((len(texts), 16)))

    def stats(self) -> EmbedderStats:
        return EmbedderStats()


@dataclass
class _RecordingContext(ChunkerContext):
    """A chunker context whose every embedder is a :class:`RecordingEmbedder` (keyed by the
    spec the chunker names, None for the cell's embedder), and that builds no LLM."""

    recorders: dict[str | None, RecordingEmbedder] = field(default_factory=dict)

    def resolve_embedder(self, spec: str | None) -> Embedder:
        return self.recorders.setdefault(spec, RecordingEmbedder())

    def llm(self, spec: str) -> Any:
        raise ConfigError(
            f"Planning does not build LLM clients (asked for {spec}).",
            "This is a bug in chunkmark's planner: please report it.",
        )


# --- the embedding buckets ----------------------------------------------------------------------


@dataclass
class _Bucket:
    """Everything one embedder would be asked to embed."""

    spec: Spec
    embedder: Any
    in_grid: bool
    documents: list[list[str]] = field(default_factory=list)  # one list per embedding call
    queries: list[list[str]] = field(default_factory=list)
    estimated_tokens: int = 0
    estimated_for: list[str] = field(default_factory=list)

    def add(self, kind: Kind, texts: Sequence[str]) -> None:
        if texts:
            (self.queries if kind == "query" else self.documents).append(list(texts))


def _distinct(calls: list[list[str]], per_call: bool) -> list[str]:
    """The texts the cache would embed: distinct overall, or distinct within each call."""
    if per_call:
        return [t for call in calls for t in dict.fromkeys(call)]
    return list(dict.fromkeys(t for call in calls for t in call))


# --- LLM chunkers ------------------------------------------------------------------------------


@dataclass
class _Usage:
    cached: int = 0
    calls: int = 0
    calls_max: int = 0
    input_tokens: int = 0
    input_tokens_max: int = 0
    output_tokens: int = 0
    output_tokens_max: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_tokens_max: int = 0

    def add(self, other: _Usage) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class _Replay:
    """Answers an LLM cache already holds for a splitter's requests (read only)."""

    def __init__(self, llm: Any, cache: LLMCache | None) -> None:
        self.llm = llm
        self.cache = cache
        self.identity = llm.identity() if cache is not None else {}

    def answer(
        self,
        system: str,
        user: str,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
    ) -> str | None:
        if self.cache is None:
            return None
        from chunkmark.llm.cache import cache_key

        key = cache_key(
            self.identity,
            system,
            user,
            max_tokens=max_tokens,
            temperature=getattr(self.llm, "temperature", None),
            seed=int(getattr(self.llm, "seed", 0)),
            json_schema=json_schema,
        )
        return self.cache.get(key)


def splitter_usage(text: str, splitter: LLMSplitter, replay: _Replay) -> _Usage:
    """The calls and tokens of :class:`~chunkmark.chunkers.llm_semantic.LLMSplitter` on one
    text: cached answers replayed, then the fewest and the most calls for the rest."""
    from chunkmark.chunkers import llm_semantic as ls
    from chunkmark.chunkers.recursive import recursive

    pieces = recursive(size=splitter.chunk_size, overlap=0, encoding=splitter.encoding)(text)
    texts = [text[p.start : p.end] for p in pieces]
    tokens = count_tokens(texts, splitter.encoding)
    n = len(texts)
    system_tokens = count_tokens([ls.SYSTEM_PROMPT], ENCODING)[0] + MESSAGE_TOKENS
    correction = ls._correction_prompt("", "", "", n, n)  # its own words, besides the prompt
    correction_tokens = count_tokens([correction], ENCODING)[0] + SHOWN_ANSWER_TOKENS
    ends: dict[int, int] = {}

    def window_end(start: int) -> int:
        if start not in ends:
            end, total = start, 0
            while end < n and total <= splitter.window_tokens:
                total += tokens[end]
                end += 1
            ends[start] = end
        return ends[start]

    def prompt_tokens(start: int, end: int) -> int:
        user = ls._window_prompt(texts, start + 1, end)
        return system_tokens + count_tokens([user], ENCODING)[0]

    # For the many windows of the most-calls bound: each tagged piece counted once, plus the
    # prompt's own words (with the widest piece numbers), instead of every window's prompt.
    tagged = [f"<piece {i}>{t}</piece {i}>\n" for i, t in enumerate(texts, start=1)]
    prefix = np.concatenate([[0], np.cumsum(count_tokens(tagged, ENCODING))])
    empty_window, empty_piece = count_tokens(
        [ls._window_prompt([""] * n, n, n), f"<piece {n}></piece {n}>"], ENCODING
    )
    words = system_tokens + empty_window - empty_piece

    def prompt_bound(start: int, end: int) -> int:
        return words + int(prefix[end] - prefix[start])

    usage = _Usage()
    start = 0
    while start < n - ls.UNASKED_TAIL:
        end = window_end(start)
        replayed = _replayed(replay, ls, texts, start, end)
        if replayed is None:
            rest = _Window(n, window_end, prompt_tokens, prompt_bound, correction_tokens)
            _estimate_rest(usage, start, rest)
            return usage
        asks, numbers = replayed
        usage.cached += asks
        if end == n:
            break
        start = end if numbers is None else numbers[-1]
    return usage


def _replayed(
    replay: _Replay, ls: Any, texts: list[str], start: int, end: int
) -> tuple[int, list[int] | None] | None:
    """(asks, cuts) for a window answered in the cache, as the splitter reads it; None when
    an answer it needs is not there."""
    first, last = start + 1, end
    prompt = ls._window_prompt(texts, first, last)
    answer = replay.answer(ls.SYSTEM_PROMPT, prompt, ls.ANSWER_TOKENS)
    if answer is None:
        return None
    numbers, reason = ls.parse_answer(answer, first, last)
    if numbers is not None:
        return 1, numbers
    correction = ls._correction_prompt(prompt, answer, reason, first, last)
    second = replay.answer(ls.SYSTEM_PROMPT, correction, ls.ANSWER_TOKENS)
    if second is None:
        return None
    return 2, ls.parse_answer(second, first, last)[0]


@dataclass(frozen=True)
class _Window:
    """A text's windows: ``end(start)``, a window's exact prompt tokens, a cheaper close bound of
    them, and what a correction adds to a prompt."""

    n: int
    end: Callable[[int], int]
    exact: Callable[[int, int], int]
    bound: Callable[[int, int], int]
    correction_tokens: int


def _estimate_rest(usage: _Usage, start: int, w: _Window) -> None:
    """Fewest calls from ``start``: windows that tile the pieces, each answered right at once.
    Most: a window from every start up to the first that reaches the end, each asked twice
    (the correction repeats the prompt with the answer quoted and the reason). Every call may
    answer up to ``max_tokens``."""
    from chunkmark.chunkers.llm_semantic import ANSWER_TOKENS as answer_tokens
    from chunkmark.chunkers.llm_semantic import UNASKED_TAIL

    s = start
    while s < w.n - UNASKED_TAIL:
        e = w.end(s)
        usage.calls += 1
        usage.input_tokens += w.exact(s, e)
        usage.output_tokens += answer_tokens
        if e == w.n:
            break
        s = e
    for s in range(start, w.n - UNASKED_TAIL):
        e = w.end(s)
        once = w.bound(s, e)
        usage.calls_max += 2
        usage.input_tokens_max += 2 * once + w.correction_tokens + REASON_TOKENS
        usage.output_tokens_max += 2 * answer_tokens
        if e == w.n:
            break


def _llm_usage(
    chunker: Any,
    dataset: Dataset,
    replay_of: Callable[[Any], _Replay],
    prompt_cache: tuple[int, bool] | None = None,
) -> _Usage:
    """The LLM work of a built ``llm_semantic``, ``documentation``, ``contextual`` or
    ``propositions`` chunker on a dataset; ``prompt_cache`` is the provider's (see
    :data:`PROMPT_CACHES`), None when it caches no prompt."""
    from chunkmark.chunkers.contextual import ContextualChunker, LLMContexts
    from chunkmark.chunkers.documentation import DocumentationChunker, section_spans
    from chunkmark.chunkers.llm_semantic import LLMSemanticChunker
    from chunkmark.chunkers.propositions import PropositionsChunker

    usage = _Usage()
    if isinstance(chunker, ContextualChunker) and isinstance(chunker.situate, LLMContexts):
        replay = replay_of(chunker.situate.llm)
        for doc in dataset.documents:
            usage.add(contextual_usage(chunker.requests(doc.text), replay, prompt_cache))
    elif isinstance(chunker, PropositionsChunker):
        replay = replay_of(chunker.llm)
        for doc in dataset.documents:
            usage.add(propositions_usage(chunker, doc.text, replay))
    elif isinstance(chunker, LLMSemanticChunker):
        replay = replay_of(chunker.splitter.llm)
        for doc in dataset.documents:
            usage.add(splitter_usage(doc.text, chunker.splitter, replay))
    elif isinstance(chunker, DocumentationChunker) and chunker.splitter is not None:
        replay = replay_of(chunker.splitter.llm)
        for doc in dataset.documents:
            for section in section_spans(doc.text):
                if section.end - section.start >= chunker.short_section:
                    body = doc.text[section.start : section.end]
                    usage.add(splitter_usage(body, chunker.splitter, replay))
    return usage


Request = tuple[str, str, int]  # (system, user, max_tokens), as a wrapper's requests() lists


def _framed_tokens(system: str, users: Sequence[str]) -> tuple[int, list[int]]:
    """``cl100k_base`` tokens of a system prompt, and of each user prompt plus the system
    prompt and the chat framing (what one request with it sends)."""

    system_tokens, *user_tokens = count_tokens([system, *users], ENCODING)
    return system_tokens, [system_tokens + MESSAGE_TOKENS + n for n in user_tokens]


def _ask(usage: _Usage, tokens: int, max_tokens: int, times: int = 1, extra: int = 0) -> None:
    """One request of ``tokens`` at the fewest; ``times`` of them (plus ``extra`` input
    tokens) at the most."""
    usage.calls += 1
    usage.input_tokens += tokens
    usage.output_tokens += max_tokens
    usage.calls_max += times
    usage.input_tokens_max += times * tokens + extra
    usage.output_tokens_max += times * max_tokens


def contextual_usage(
    requests: Sequence[Request], replay: _Replay, prompt_cache: tuple[int, bool] | None
) -> _Usage:
    """The calls and tokens of one document's ``contextual(method='llm')`` requests (they all
    share the system prompt that holds the document): answers in the cache replayed, every
    other request asked once (an empty answer is not asked again). With ``prompt_cache``
    (the shortest prefix the provider caches, and whether it bills writes), the first request
    sent writes the system prompt to the provider's cache and every later one reads it."""
    usage = _Usage()
    sent = [r for r in requests if replay.answer(*r) is None]
    usage.cached = len(requests) - len(sent)
    if not sent:
        return usage
    system_tokens, totals = _framed_tokens(sent[0][0], [user for _, user, _ in sent])
    cached = prompt_cache is not None and system_tokens >= prompt_cache[0]
    writes = cached and prompt_cache is not None and prompt_cache[1]
    for i, ((_, _, max_tokens), tokens) in enumerate(zip(sent, totals, strict=True)):
        _ask(usage, tokens, max_tokens)
        if cached and i > 0:
            usage.cached_input_tokens += system_tokens
        elif writes:
            usage.cache_write_tokens += system_tokens
        if writes:
            usage.cache_write_tokens_max += system_tokens
    return usage


def propositions_usage(chunker: Any, text: str, replay: _Replay) -> _Usage:
    """The calls and tokens of ``propositions`` on one text: one request per chunk of the
    wrapped chunker, answers in the cache replayed (a cached answer that cannot be read leads
    to the correction the chunker asks next, replayed too when cached). Fewest calls: every
    answer usable; most: every chunk asked twice (the correction quotes the request, at most
    200 characters of the answer and the reason)."""
    from chunkmark.chunkers.contextual import fill, prompt_text
    from chunkmark.chunkers.propositions import SCHEMA, parse_propositions

    usage = _Usage()
    requests = chunker.requests(text)
    if not requests:
        return usage
    template = prompt_text(f"propositions_{chunker.prompt}_correction")
    asks: list[tuple[str, int, int]] = []  # (user prompt, max_tokens, times at the most)
    for system, user, max_tokens in requests:
        answer = replay.answer(system, user, max_tokens, SCHEMA)
        if answer is None:
            asks.append((user, max_tokens, 2))
            continue
        usage.cached += 1
        found, reason = parse_propositions(answer)
        if found is not None:
            continue
        shown = " ".join(answer.split())[:200] or "(nothing)"
        correction = fill(template, request=user, answer=shown, reason=reason)
        if replay.answer(system, correction, max_tokens, SCHEMA) is not None:
            usage.cached += 1
        else:
            asks.append((correction, max_tokens, 1))
    if not asks:
        return usage
    words = fill(template, request="", answer="", reason="")
    system_tokens, totals = _framed_tokens(requests[0][0], [u for u, _, _ in asks] + [words])
    # A correction repeats the request and adds its own words, the answer shown and the reason.
    bare = totals.pop()
    extra = bare - system_tokens + SHOWN_ANSWER_TOKENS + REASON_TOKENS
    for (_, max_tokens, times), tokens in zip(asks, totals, strict=True):
        _ask(usage, tokens, max_tokens, times, extra if times > 1 else 0)
    return usage


# --- planning ------------------------------------------------------------------------------------


@dataclass
class _Planner:
    config: ExperimentConfig
    prices: PlanPrices
    cache_dir: Path | None
    buckets: dict[str, _Bucket] = field(default_factory=dict)
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

    def bucket(self, spec: Spec | str, in_grid: bool) -> _Bucket:
        canonical = EMBEDDERS.resolve(spec)
        key = str(canonical)
        if key not in self.buckets:
            inner, _ = EMBEDDERS.build(canonical)
            self.buckets[key] = _Bucket(canonical, inner, in_grid)
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
                texts, source = self._chunk_texts(dataset, c_spec, traits.reusable)
                note = "" if traits.deterministic else "nondeterministic: a run may differ"
                for b in embedders:
                    b.add("document", texts)
                    self._cell(dataset, c_spec, b, len(texts), source, note)

    def _cell(
        self,
        dataset: Dataset,
        c_spec: Spec,
        b: _Bucket,
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

    def _chunk_texts(
        self, dataset: Dataset, c_spec: Spec, reusable: bool
    ) -> tuple[list[str], Source]:
        """The chunk texts (what is embedded) of a chunker that does not embed: from the chunk
        store when its output is stored there, else by running it (it needs no model)."""
        stored = self._stored(dataset, c_spec, None) if reusable else None
        if stored is not None:
            return stored, "chunk store"
        context = ChunkerContext(embedder=None, cache_dir=None, seed=self.config.seed)
        chunker, _ = CHUNKERS.build(c_spec, context=context)
        chunks: list[Chunk] = []
        for doc in dataset.documents:
            chunks.extend(chunk_document(chunker, doc.id, doc.text))
        return _texts(dataset, chunks), "chunked"

    def _stored(
        self, dataset: Dataset, c_spec: Spec, identity: dict[str, Any] | None
    ) -> list[str] | None:
        if self._store is None:
            return None
        found = self._store.get(chunk_key(str(c_spec), dataset.fingerprint, identity))
        return None if found is None else _texts(dataset, found[0])

    def _semantic_chunker(
        self, dataset: Dataset, c_spec: Spec, embedders: list[_Bucket], doc_tokens: int
    ) -> None:
        """Chunks from the store when there; else the texts it embeds while chunking (recorded)
        and its chunks estimated."""
        recorded: dict[str | None, RecordingEmbedder] | None = None
        for b in embedders:
            identity = self.identities[str(b.spec)]
            if identity is not None:
                stored = self._stored(dataset, c_spec, identity)
                if stored is not None:
                    b.add("document", stored)
                    self._cell(dataset, c_spec, b, len(stored), "chunk store")
                    continue
            if recorded is None:
                recorded = _record_chunking(dataset, c_spec, self.config.seed)
            for named, recorder in recorded.items():
                target = b if named is None else self.bucket(named, in_grid=False)
                for call in recorder.calls:
                    target.add("document", call)
            b.estimated_tokens += doc_tokens
            b.estimated_for.append(f"{CHUNKERS.short(c_spec)} on {dataset.name}")
            self._cell(dataset, c_spec, b, None, "unknown", "embeds: chunks known once it has run")

    def _llm_chunker(
        self, dataset: Dataset, c_spec: Spec, embedders: list[_Bucket], doc_tokens: int
    ) -> None:
        """A chunker that calls an LLM: its calls estimated (or unknown); its chunk texts
        estimated for every embedder, or chunked when it is set to use no LLM."""
        runs = 1 if self.cache_dir is not None else len(embedders)
        llm_spec = c_spec.kwargs.get("llm")
        short = CHUNKERS.short(c_spec)
        if c_spec.name not in ("llm_semantic", "documentation", *WRAPPERS):
            self._unknown_llm(dataset, c_spec, llm_spec, runs)
        elif c_spec.name in WRAPPERS and not _wrapper_is_known(c_spec):
            inner = CHUNKERS.short(str(c_spec.kwargs["chunker"]))
            self._unknown_llm(
                dataset,
                c_spec,
                llm_spec,
                runs,
                f"chunkmark cannot estimate the LLM calls of {c_spec.name!r} without running "
                f"it: the chunker it wraps ({inner}) calls an LLM or embeds, so its chunks are "
                "known only once it has run",
            )
        elif llm_spec is None:  # documentation(llm=None): sections and paragraphs, no LLM
            texts, _ = self._chunk_texts(dataset, c_spec, reusable=False)
            for b in embedders:
                b.add("document", texts)
                self._cell(dataset, c_spec, b, len(texts), "chunked", "no LLM: llm=None")
            return
        else:
            self._known_llm(dataset, c_spec, str(llm_spec), runs)
        for b in embedders:
            b.estimated_tokens += doc_tokens
            b.estimated_for.append(f"{short} on {dataset.name}")
            self._cell(
                dataset, c_spec, b, None, "unknown", "calls an LLM: chunks known once it has run"
            )

    def _unknown_llm(
        self, dataset: Dataset, c_spec: Spec, llm_spec: Any, runs: int, note: str = ""
    ) -> None:
        note = note or (
            f"chunkmark cannot estimate the LLM calls of {c_spec.name!r} without running it "
            "(only llm_semantic, documentation, contextual and propositions are estimated)"
        )
        self.unknown.append(f"LLM calls of {CHUNKERS.short(c_spec)}")
        self.llm_plans.append(
            LLMChunkerPlan(
                dataset=dataset.name,
                chunker=str(c_spec),
                llm=None if llm_spec is None else str(llm_spec),
                model=None,
                known=False,
                runs=runs,
                note=note,
            )
        )

    def _known_llm(self, dataset: Dataset, c_spec: Spec, llm_spec: str, runs: int) -> None:
        from chunkmark.llm import LLMS

        context = _LLMContext(seed=self.config.seed)
        chunker, _ = CHUNKERS.build(c_spec, context=context)
        cache = self._llm_cache if runs == 1 else None
        client, _ = LLMS.build(llm_spec, cache_dir=None, seed=self.config.seed)
        identity = client.identity()
        prompt_cache = PROMPT_CACHES.get(str(identity.get("provider")))
        usage = _llm_usage(chunker, dataset, lambda llm: _Replay(llm, cache), prompt_cache)
        price = price_of(client, self.prices.llm)
        model = str(identity.get("model", client.name))
        if price is None and usage.calls_max == 0:
            price = Price(model, 0.0, 0.0, "no call to make")
        if price is None:
            self.unknown.append(
                f"the price of the LLM {model!r} (used by {CHUNKERS.short(c_spec)})"
            )
        self.llm_plans.append(_llm_plan(dataset, c_spec, llm_spec, model, runs, usage, price))

    def embedder_plans(self) -> list[EmbedderPlan]:
        return [self._embedder_plan(b) for b in self.buckets.values()]

    def _embedder_plan(self, b: _Bucket) -> EmbedderPlan:
        per_call = self.config.no_cache
        count, how = token_counter(b.embedder)
        documents = _distinct(b.documents, per_call)
        queries = _distinct(b.queries, per_call)
        doc_tokens = count(documents, "document") if documents else []
        query_tokens = count(queries, "query") if queries else []
        identity = self.identities[str(b.spec)]
        cached_tokens: int | None = None
        cached_texts: int | None = None
        note = ""
        if self.config.no_cache:
            note = "no_cache: the cache is not read"
        elif identity is None:
            note = "not looked up: the embedder's identity needs its model, which plan never loads"
        elif self.cache_dir is None or not (self.cache_dir / EMBEDDING_DB).is_file():
            cached_texts, cached_tokens = 0, 0
            note = "the cache folder holds no embeddings yet"
        else:
            cache = EmbeddingCache(self.cache_dir)
            hit_docs = _cached_mask(cache, identity, "document", documents)
            hit_queries = _cached_mask(cache, identity, "query", queries)
            cached_texts = int(hit_docs.sum() + hit_queries.sum())
            cached_tokens = int(
                np.dot(hit_docs, np.asarray(doc_tokens, dtype=np.int64))
                + np.dot(hit_queries, np.asarray(query_tokens, dtype=np.int64))
            )
            cache.close()
        total = sum(doc_tokens) + sum(query_tokens)
        to_embed = total - (cached_tokens or 0) + b.estimated_tokens
        price = self.prices.embedding.price_of(str(b.spec), identity)
        model = _embedding_model(b, identity)
        cost = None if price is None else to_embed * price / 1_000_000
        if price is None and to_embed == 0:
            cost = 0.0  # nothing to embed: free whatever the price
        elif price is None:
            self.unknown.append(f"the price of the embedding model {model!r} ({b.spec.name})")
        return EmbedderPlan(
            spec=str(b.spec),
            model=model,
            in_grid=b.in_grid,
            token_count=how,
            document_texts=len(documents),
            document_tokens=sum(doc_tokens),
            query_texts=len(queries),
            query_tokens=sum(query_tokens),
            cached_texts=cached_texts,
            cached_tokens=cached_tokens,
            cache_note=note,
            estimated_tokens=b.estimated_tokens,
            estimated_for=b.estimated_for,
            tokens_to_embed=to_embed,
            usd_per_million=price,
            price_source=self._price_source(b, model, price),
            usd=cost,
        )

    def _price_source(self, b: _Bucket, model: str | None, price: float | None) -> str:
        if price is None:
            return "unknown: not in the price table"
        if b.spec.name in self.prices.embedding.local:
            return "local: free"
        if model is not None and self.prices.embedding.find(model) is not None:
            overridden = any(
                model == name or model.startswith(name + "-")
                for name in self.prices.embedding_overrides
            )
            return OVERRIDES if overridden else "price table"
        return "price table"


@dataclass
class _LLMContext(ChunkerContext):
    """A chunker context that builds LLM clients without a cache (nothing is opened or
    written); the planner reads the cache itself."""

    def llm(self, spec: str) -> Any:
        from chunkmark.llm import build_llm

        return build_llm(spec, cache_dir=None, seed=self.seed)


def _record_chunking(
    dataset: Dataset, c_spec: Spec, seed: int
) -> dict[str | None, RecordingEmbedder]:
    """Run a semantic chunker over the dataset with stand-in embedders; what each was asked
    to embed, call by call (keyed by the embedder spec it names, None for the cell's)."""
    context = _RecordingContext(seed=seed)
    chunker, _ = CHUNKERS.build(c_spec, context=context)
    for doc in dataset.documents:
        chunker(doc.text)
    return context.recorders


def _texts(dataset: Dataset, chunks: Iterable[Chunk]) -> list[str]:
    docs = dataset.by_id
    return [c.text(docs[c.doc_id].text) for c in chunks]


def _cached_mask(
    cache: EmbeddingCache, identity: dict[str, Any], kind: str, texts: list[str]
) -> np.ndarray:
    """Which texts the cache holds under their text key (read only, in batches)."""
    mask = np.zeros(len(texts), dtype=bool)
    for start in range(0, len(texts), LOOKUP_BATCH):
        hits, _ = cache.get_many(identity, kind, texts[start : start + LOOKUP_BATCH])
        mask[start : start + len(hits)] = hits
    return mask


def _embedding_model(b: _Bucket, identity: dict[str, Any] | None) -> str | None:
    model = b.spec.kwargs.get("model") or (identity or {}).get("name")
    return None if model is None else str(model)


def _llm_plan(
    dataset: Dataset,
    c_spec: Spec,
    llm_spec: str,
    model: str,
    runs: int,
    usage: _Usage,
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


def _wrapper_is_known(c_spec: Spec) -> bool:
    """Whether a wrapper's requests can be listed without running anything costly: the chunker
    it wraps neither calls an LLM nor embeds."""
    traits = CHUNKERS.traits(str(c_spec.kwargs["chunker"]))
    return not (traits.calls_llm or traits.embeds)


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


# --- the budget ------------------------------------------------------------------------------------


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
            "Give the missing prices under 'prices:' in the experiment file, e.g. "
            "'prices: {embedding: {MODEL: 0.02}, llm: {MODEL: {input: 0.15, output: 0.60}}}' "
            "(US dollars per million tokens; 0 for a free endpoint), or run without --max-cost.",
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
    return "; ".join(parts) or "nothing is paid"
