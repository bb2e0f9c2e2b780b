"""The ``--max-cost`` guard: a plan's estimate against a budget, refused in one line."""

from __future__ import annotations

from chunkmark.chunkers import CHUNKERS
from chunkmark.costs.budget import CostLimitError, usd
from chunkmark.experiments.plan.model import Plan


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
