"""Questions with exact excerpts, written by an LLM about windows of your documents.

The method of Chroma's report (an LLM reads part of a document, writes a question and gives the
passages that answer it; the passages become character spans), done so that it can be trusted
and repeated:

1. **A plan, up front.** Every question is a *slot*: a document, a window of it (``window_chars``
   characters, snapped to word boundaries) and a style. Documents get slots in proportion to
   their length (largest remainders; each within one of its exact share); a document's windows
   are spread over it (stratified picks among evenly spaced tiles) and none is used twice until
   all of that document's tiles are used. Styles are dealt out evenly and shuffled. Everything
   is drawn from the seed, so the plan is the same on every run and is recorded in the manifest.
2. **One request per question** (:func:`~chunkmark.synth.prompt.build_prompt`): the window, the style's instructions,
   optional example questions, and the questions already accepted for earlier slots of the same
   document, so they are not asked again. The answer is JSON, validated with pydantic, and
   requested as structured output where the provider has it.
3. **Exact excerpts** (:mod:`chunkmark.synth.excerpts`): in the ``exact`` mode passages are
   located in the text (exactly, else whitespace- and quote-normalised and mapped back); in the
   ``approximate`` mode the LLM cites ranges of numbered pieces. Multi-passage answers that
   collapse into one span, paraphrased questions that copy four words in a row of their passage
   and repeated questions are rejected. Every excerpt written satisfies
   ``document[start:end] == text``.
4. **Bounded work.** An unusable answer is asked again with the slot's rejected answers so far
   and what was wrong with each, at most :data:`~chunkmark.synth.options.MAX_ATTEMPTS` times per slot; then the window is skipped and counted.
   An :class:`~chunkmark.errors.LLMError` from the client (rejected key, exhausted quota or
   retries) stops the run at once, after everything accepted so far is written. ``max_cost``
   stops cleanly before the first request whose estimated cost would cross it.
5. **Item by item, resumable.** Documents are written first, then each accepted question is
   appended, flushed and synced, so a killed run loses at most the question in flight. Running
   the same command again reads what is written, skips those slots and asks only the rest;
   answers already received come from the LLM cache, so nothing is paid twice. Slots run
   concurrently across documents (a document's slots run in order, each seeing the questions of
   the ones before), and questions are written in plan order: any concurrency gives the same
   bytes.

``manifest.json`` in the output folder records the LLM identity, prompt version, seed, options,
plan and the counts of every stage (see ``docs/synth.md``).

The parts, in the order above: :mod:`~chunkmark.synth.plan`, :mod:`~chunkmark.synth.prompt`,
:mod:`~chunkmark.synth.answers` (with :mod:`~chunkmark.synth.excerpts`),
:mod:`~chunkmark.synth.options` (options, limits, prices), :mod:`~chunkmark.synth.output` and
:mod:`~chunkmark.synth.run`; :mod:`~chunkmark.synth.corpus` reads the documents. This module
holds the two entry points, :func:`generate` and :func:`estimate`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkmark.costs.llm_prices import price_of
from chunkmark.costs.meter import CostMeter
from chunkmark.llm import LLM
from chunkmark.synth.answers import DUPLICATE_STAGES, REJECTIONS, SlotOutcome
from chunkmark.synth.corpus import load_corpus
from chunkmark.synth.docfilter import filter_documents
from chunkmark.synth.examples import (
    Example,
    evidence_lengths,
    evidence_span,
    read_examples,
    styles_of,
)
from chunkmark.synth.options import (
    MAX_ATTEMPTS,
    GenerationOptions,
    SynthError,
    load_prices,
    parse_styles,
    unknown_price,
)
from chunkmark.synth.output import MANIFEST, Written
from chunkmark.synth.prompt import (
    ANSWER_TOKENS,
    ASKED_LIMIT,
    PROMPT_VERSION,
    is_cached,
    request_tokens,
)
from chunkmark.synth.run import Generation, GenerationReport, Progress

# The command line (cli/synth_generate.py) reads these from here, and docs/synth.md names
# PROMPT_VERSION here.
__all__ = [
    "DUPLICATE_STAGES",
    "MAX_ATTEMPTS",
    "PROMPT_VERSION",
    "REJECTIONS",
    "Estimate",
    "Example",
    "GenerationOptions",
    "GenerationReport",
    "SlotOutcome",
    "estimate",
    "evidence_lengths",
    "evidence_span",
    "generate",
    "load_prices",
    "parse_styles",
    "price_of",
    "read_examples",
    "styles_of",
    "unknown_price",
]

QUESTION_TOKENS = 20  # a listed earlier question, in a dry run's estimate


@dataclass(frozen=True)
class Estimate:
    """A dry run: requests, tokens and cost of the slots still to do."""

    slots: int
    cached: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    worst_cost_usd: float | None


def generate(
    corpus: str | Path,
    llm: LLM,
    out: str | Path,
    options: GenerationOptions | None = None,
    *,
    progress: Progress | None = None,
    **settings: Any,
) -> GenerationReport:
    """Generate ``options.questions`` questions with exact excerpts about the documents of
    ``corpus`` into the dataset folder ``out`` (see the module docs), continuing a run of the
    same settings that was stopped.

    ``options`` are a :class:`GenerationOptions`; its fields may also be given as keywords
    (``questions=100, seed=0``), which replace those of ``options``. ``llm`` should be built
    with the same ``seed`` (its answers are cached per seed). With ``max_cost`` (US dollars)
    the run stops cleanly before the first request whose estimate would cross it; ``prices``
    defaults to the shipped table. ``progress`` is called with each slot's outcome. Returns the
    report; an :class:`~chunkmark.errors.LLMError` of the client is raised after everything
    accepted so far is written and the manifest says where the run stopped.
    """
    o = GenerationOptions.given(options, settings)
    o.check()
    documents, sources = load_corpus(corpus)
    _check_out(Path(out), Path(corpus))
    price = None
    if o.max_cost is not None:
        table = o.prices if o.prices is not None else load_prices()
        price = price_of(llm, table)
        if price is None:
            raise unknown_price(llm, table)
    meter = CostMeter(llm, price, o.max_cost)
    judged = None
    if o.filter_documents:
        documents, judged = filter_documents(documents, llm, o.examples)
        if not documents:
            raise SynthError(
                f"The document filter judged all {judged['judged']} documents irrelevant or "
                "incomplete; nothing was written.",
                "Run without --filter-documents, or check the corpus and the examples.",
            )
    run = Generation(
        documents,
        sources,
        llm,
        Path(out),
        o,
        meter=meter,
        progress=progress,
        document_filter=judged,
    )
    run.open()
    resumed = len(run.written)
    try:
        run.run()
    finally:
        run.finish()
    if run.error is not None:
        raise run.error
    return run.report(resumed)


def _check_out(out: Path, corpus: Path) -> None:
    if out.resolve() == corpus.resolve():
        raise SynthError(
            f"The output folder {out} is the corpus folder.",
            "Pass another folder to --out; the corpus is only read.",
        )


def estimate(
    corpus: str | Path,
    llm: LLM,
    out: str | Path,
    options: GenerationOptions | None = None,
    **settings: Any,
) -> Estimate:
    """What generating would ask, without asking: one request per slot not yet written in
    ``out``, its prompt tokens (earlier questions of a document that are not written yet
    counted as :data:`QUESTION_TOKENS` each, except with given passages, which list none) and at most
    :data:`~chunkmark.synth.prompt.ANSWER_TOKENS` answer tokens; requests answered in the cache
    cost nothing. The cost is None when the model has no price. Nothing is written.

    ``options`` and keywords as for :func:`generate` (``concurrency`` and ``max_cost`` change
    nothing here).
    """
    o = GenerationOptions.given(options, settings)
    o.check()
    documents, sources = load_corpus(corpus)
    run = Generation(documents, sources, llm, Path(out), o, meter=CostMeter(llm, None, None))
    written = _peek_written(run)
    run.written = written
    table = o.prices if o.prices is not None else load_prices()
    price = price_of(llm, table)
    calls = cached = input_tokens = 0
    for slot in run.plan:
        if slot.index in written:
            continue
        asked = run.asked_before(slot)
        unknown = sum(
            1 for s in run.plan[: slot.index] if s.doc_id == slot.doc_id and s.index not in written
        )
        prompt, _ = run.prompt_for(slot, asked)
        schema = prompt.schema if o.json_schema else None
        if not unknown and is_cached(llm, prompt.system, prompt.user, schema):
            cached += 1
            continue
        calls += 1
        listed = 0 if o.mode == "given" else min(unknown, ASKED_LIMIT)  # given lists none
        input_tokens += request_tokens(prompt) + QUESTION_TOKENS * listed
    if o.filter_documents:  # one judgement a document (planned as if all were kept)
        calls += len(documents)
    output_tokens = calls * ANSWER_TOKENS
    cost = None if price is None else price.cost(input_tokens, output_tokens)
    worst = None if cost is None else cost * MAX_ATTEMPTS
    return Estimate(
        slots=len(run.plan) - len(written),
        cached=cached,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        worst_cost_usd=worst,
    )


def _peek_written(run: Generation) -> dict[int, Written]:
    """The questions already in the output folder, if it continues this same run (read only)."""
    path = run.out / MANIFEST
    if not path.is_file() or not run.output.questions.is_file():
        return {}
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(old, dict) or old.get("settings") != json.loads(json.dumps(run.settings())):
        return {}
    return run.output.read()
