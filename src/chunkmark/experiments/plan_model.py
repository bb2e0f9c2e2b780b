"""The plan's records: datasets, cells, embedders, LLM-calling chunkers, answering and the whole plan
(pydantic, ``extra="forbid"``; what ``chunkmark plan --json`` prints and the manifest records)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Source = Literal["chunked", "chunk store", "unknown"]


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


class AnswerPlan(_Model):
    """Answering (``role="answer"``) or judging (``role="judge"``) one dataset's questions
    (``answers:``): one request per question and cell, plus the whole-document baseline's for
    the questions whose document fits the context window (``baseline_calls``; of those,
    ``cached_calls`` are answers the LLM cache holds, free). ``input_tokens`` is an estimate
    (``cl100k_base``): the prompt with the question and, per cell, the retrieval setting's
    token budget of context; None when the setting has no token budget (its context is known
    only once retrieval ran), and then so is ``usd``."""

    dataset: str
    role: Literal["answer", "judge"]
    llm: str
    model: str | None
    setting: str
    questions: int
    cells: int
    calls: int
    baseline_calls: int
    not_fitting: int
    cached_calls: int
    input_tokens: int | None
    output_tokens: int
    usd_per_million: dict[str, float] | None = None
    usd: float | None = None
    note: str = ""


class SetupStep(_Model):
    """A component that must be built or downloaded before a run can use it (``needed``: what,
    and about how long), which the plan did not do."""

    component: str
    needed: str


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
    answers: list[AnswerPlan] = Field(default_factory=list)
    setup: list[SetupStep] = Field(default_factory=list)
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
