"""The providers' prompt-cache rules: what cached input costs, and which prompts are cached.

An LLM price entry without cache prices takes the provider's usual ratio to the input price
(:data:`CACHE_MULTIPLIERS`, applied by :meth:`chunkmark.costs.prices.Price.for_provider`):
Anthropic reads at 0.1x and writes (five-minute cache) at 1.25x; OpenAI reads at 0.5x (the
highest of its published ratios: newer models charge 0.25x or 0.1x) and bills no writes (1x).
Any other provider: no discount, writes at the input price.

A plan counts a request's system prompt as read from (or written to) the provider's cache when
the provider caches prompts that long (:data:`PROMPT_CACHES`).
"""

from __future__ import annotations

# (cached input, cache write) as multiples of the input price, for entries that do not give them.
CACHE_MULTIPLIERS: dict[str, tuple[float, float]] = {
    "anthropic": (0.1, 1.25),  # cache hits 0.1x, five-minute cache writes 1.25x
    "openai": (0.5, 1.0),  # cached input at most 0.5x; no charge for writing
}
NO_CACHE_DISCOUNT = (1.0, 1.0)  # other providers: priced as plain input

# Provider prompt caches: (the shortest prompt prefix cached, whether writes are counted).
# OpenAI caches prompts from 1024 tokens and bills no writes; Anthropic's models cache from
# 1024 tokens (some from 2048 or 4096: the estimate may count a read that does not happen);
# the fake LLM caches any prompt (see chunkmark.llm.fake). Other providers: no caching assumed.
PROMPT_CACHES: dict[str, tuple[int, bool]] = {
    "openai": (1024, False),
    "anthropic": (1024, True),
    "fake": (0, True),
}
