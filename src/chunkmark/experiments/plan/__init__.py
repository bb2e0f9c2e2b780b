"""The plan of an experiment grid: what a run would chunk, embed and ask, and what it would cost.

:func:`plan_grid` reads a config and answers before anything is spent: no request is sent, no
model is loaded, nothing is written (the chunk store, the embedding cache and the LLM answer
cache are only read, and only when their files exist). :func:`check_budget` turns the plan into
the ``--max-cost`` guard the runner applies before its first request. See ``docs/plan.md``.

The modules: ``model`` (the records), ``planner`` (:func:`plan_grid`), ``chunks``
(:func:`estimate_chunks`), ``embedding`` (what each embedder would embed and pay), ``llm`` (each
LLM chunker asked what it would ask), ``budget`` (:func:`check_budget`).

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
- **LLM chunkers**: the planner names none. A chunker registered with ``calls_llm=True`` that
  is a :class:`~chunkmark.chunkers.estimate.RequestEstimator` says, document by document and
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
- **Dollars**: tokens to embed x the embedding price table (``costs/embedding_prices.yaml``;
  embedders listed as local cost 0), and LLM tokens x the LLM price table
  (``costs/llm_prices.yaml``, with cached-input and cache-write prices), each with the
  experiment file's ``prices:`` overrides (:mod:`chunkmark.costs.overrides`). A model is looked
  up by its exact name, else by the longest name it starts with followed by ``-`` (a dated
  snapshot takes its base model's price). A model with no price makes its cost, and the total,
  unknown (``None``), never 0.
"""

from chunkmark.chunkers.estimate import ENCODING
from chunkmark.experiments.plan.budget import check_budget
from chunkmark.experiments.plan.chunks import ChunkEstimate, estimate_chunks
from chunkmark.experiments.plan.embedding import (
    RecordingEmbedder,
    TokenCounter,
    identity_without_loading,
    token_counter,
)
from chunkmark.experiments.plan.model import (
    CellPlan,
    DatasetPlan,
    EmbedderPlan,
    LLMChunkerPlan,
    Plan,
    Source,
)
from chunkmark.experiments.plan.planner import plan_grid

__all__ = [
    "ENCODING",
    "CellPlan",
    "ChunkEstimate",
    "DatasetPlan",
    "EmbedderPlan",
    "LLMChunkerPlan",
    "Plan",
    "RecordingEmbedder",
    "Source",
    "TokenCounter",
    "check_budget",
    "estimate_chunks",
    "identity_without_loading",
    "plan_grid",
    "token_counter",
]
