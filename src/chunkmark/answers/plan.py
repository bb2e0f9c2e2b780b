"""What answer scoring would ask and cost, found without asking (``chunkmark plan``,
``--max-cost``).

Per dataset: the questions answered (:func:`~chunkmark.answers.scoring.select_questions`), one
request per question and cell (datasets x chunkers x embedders), plus the whole-document
baseline's for each question whose prompt fits the context window; the judge, when set, one
request per answer. A cell's request is counted at the prompt with the question plus the
retrieval setting's token budget of context (``token_budget(tokens=T)``: at most ``T`` tokens
of passages; the passages' numbering adds a few tokens each), every answer at its
``max_tokens``. A setting with no token budget leaves the tokens, and the cost, unknown.
Baseline answers the LLM cache already holds are replayed (free), exactly as a run reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chunkmark.answers.prompt import answer_request, judge_request
from chunkmark.answers.scoring import (
    allowed_labels,
    dataset_labels,
    label_of,
    references_of,
    select_questions,
)
from chunkmark.costs.llm_prices import LLMPrices, price_of
from chunkmark.experiments.config import AnswerOptions
from chunkmark.experiments.plan_model import AnswerPlan
from chunkmark.llm.estimate import Replay, framed_tokens

if TYPE_CHECKING:
    from chunkmark.datasets.model import Dataset, Question
    from chunkmark.llm.cache import LLMCache


@dataclass
class _Asked:
    """What the plans of one dataset share: its questions, the cells, the setting's context
    budget, the prices, and what is unknown so far."""

    dataset: Dataset
    options: AnswerOptions
    questions: list[Question]
    cells: int
    budget: int | None
    prices: LLMPrices
    unknown: list[str] = field(default_factory=list)


@dataclass
class _Counts:
    calls: int = 0
    baseline: int = 0
    not_fitting: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    fitting: frozenset[str] = frozenset()  # questions whose whole document fits

    def ask(self, times: int, input_tokens: int, output_tokens: int) -> None:
        """``times`` requests of ``input_tokens`` each, each answering ``output_tokens``."""
        self.calls += times
        self.input_tokens += times * input_tokens
        self.output_tokens += times * output_tokens


def context_budget(setting: str) -> int | None:
    """The most context tokens a retrieval setting hands over, or None when it has no cap."""
    from chunkmark.retrieval import RETRIEVAL
    from chunkmark.retrieval.settings import TokenBudget

    built, _ = RETRIEVAL.build(setting)
    return built.tokens if isinstance(built, TokenBudget) else None


def plan_answers(
    dataset: Dataset,
    options: AnswerOptions,
    cells: int,
    prices: LLMPrices,
    answers: LLMCache | None,
    seed: int,
) -> tuple[list[AnswerPlan], list[str]]:
    """The answer (and judge) plans of ``dataset`` over ``cells`` cells, and what is unknown."""
    from chunkmark.llm import build_llm

    assert options.setting is not None  # the config fills it in
    questions = select_questions(dataset, options.questions, seed)
    labels = dataset_labels(dataset)
    budget = context_budget(options.setting)
    llm = build_llm(options.llm, cache_dir=None, seed=seed)
    replay = Replay(llm, answers)
    counts = _Counts()
    docs = dataset.by_id
    for q in questions:
        allowed = allowed_labels(q.metadata, labels) if label_of(q.metadata) else ()
        request = answer_request(q.text, [""], allowed, options.max_tokens)
        _, (tokens,) = framed_tokens(request.system, [request.user])
        counts.ask(cells, tokens + (budget or 0), request.max_tokens)
        if not options.baseline:
            continue
        whole = answer_request(q.text, [docs[q.doc_id].text], allowed, options.max_tokens)
        _, (whole_tokens,) = framed_tokens(whole.system, [whole.user])
        if whole_tokens + whole.max_tokens > options.context_window:
            counts.not_fitting += 1
            continue
        counts.baseline += 1
        counts.fitting |= {q.id}
        if replay.answer(whole.system, whole.user, whole.max_tokens) is not None:
            counts.cached += 1
            continue
        counts.ask(1, whole_tokens, whole.max_tokens)
    asked = _Asked(dataset, options, questions, cells, budget, prices)
    plans = [_plan(asked, "answer", options.llm, llm, counts)]
    if options.judge is not None:
        plans.append(_judge_plan(asked, counts, seed))
    return plans, asked.unknown


def _judge_plan(asked: _Asked, answered: _Counts, seed: int) -> AnswerPlan:
    """One judge request per answer: the judge's prompt with the question, its references, the
    context and an answer of ``max_tokens`` tokens."""
    from chunkmark.llm import build_llm

    options, cells, budget = asked.options, asked.cells, asked.budget
    assert options.judge is not None
    judge = build_llm(options.judge, cache_dir=None, seed=seed)
    counts = _Counts()
    docs = asked.dataset.by_id
    for q in asked.questions:
        label = label_of(q.metadata)
        refs = references_of(q.metadata) or ((label,) if label else ())
        request = judge_request(q.text, refs, [""], "")
        _, (tokens,) = framed_tokens(request.system, [request.user])
        per = tokens + options.max_tokens
        counts.ask(cells, per + (budget or 0), request.max_tokens)
        if q.id in answered.fitting:
            whole = judge_request(q.text, refs, [docs[q.doc_id].text], "")
            _, (whole_tokens,) = framed_tokens(whole.system, [whole.user])
            counts.ask(1, whole_tokens + options.max_tokens, whole.max_tokens)
    counts.baseline = answered.baseline
    counts.not_fitting = answered.not_fitting
    return _plan(asked, "judge", options.judge, judge, counts)


def _plan(asked: _Asked, role: Any, spec: str, llm: Any, counts: _Counts) -> AnswerPlan:
    options, budget, unknown = asked.options, asked.budget, asked.unknown
    assert options.setting is not None
    identity = llm.identity()
    model = str(identity.get("model", llm.name))
    price = price_of(llm, asked.prices)
    notes = []
    if budget is None:
        notes.append(
            f"the context of {options.setting} is known only once retrieval ran (give "
            "answers.setting a token_budget(...) to price it)"
        )
        unknown.append(f"the context tokens of the {role} requests at {options.setting}")
    if price is None:
        notes.append(f"no price for {model!r}")
        unknown.append(f"the price of the LLM {model!r} (used by answers)")
    tokens = counts.input_tokens if budget is not None else None
    usd = None
    if price is not None and tokens is not None:
        usd = price.cost(tokens, counts.output_tokens, 0, 0)
    return AnswerPlan(
        dataset=asked.dataset.name,
        role=role,
        llm=spec,
        model=model,
        setting=options.setting,
        questions=len(asked.questions),
        cells=asked.cells,
        calls=counts.calls,
        baseline_calls=counts.baseline,
        not_fitting=counts.not_fitting,
        cached_calls=counts.cached,
        input_tokens=tokens,
        output_tokens=counts.output_tokens,
        usd_per_million=None if price is None else price.per_million(),
        usd=usd,
        note="; ".join(notes),
    )
