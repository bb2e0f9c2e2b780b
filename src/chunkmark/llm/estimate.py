"""What LLM requests would ask and cost, found without asking: the counting that chunkers
which call an LLM, answer scoring and the planner share.

A chunker registered with ``calls_llm=True`` that satisfies
:class:`~chunkmark.chunkers.base.RequestEstimator` is
planned by ``chunkmark plan`` (and checked by ``run --max-cost``): the planner builds it with
LLM clients that have no cache, then asks it, document by document, for the calls and tokens
chunking would take. One that does not is reported as a chunker whose cost cannot be estimated.
Each chunker knows its own prompts, so the counting lives beside them:

- :meth:`~chunkmark.chunkers.base.RequestEstimator.estimate_llm`: the LLM client it would ask (its identity names the
  model and provider, which the planner prices), or None when, as configured, it asks none
  (``documentation(llm=None)``): it is then chunked like a chunker that needs no model.
- :meth:`~chunkmark.chunkers.base.RequestEstimator.estimate_wraps`: the spec of the chunker whose chunks it sends to
  the LLM (a wrapper such as ``contextual`` or ``propositions``), or None when it reads the
  text itself. The planner finds those chunks the one way estimates chunk (the chunk store, or
  running a chunker that needs no model) and passes them; when they are known only once the
  wrapped chunker runs, the wrapper's calls are unknown too.
- :meth:`~chunkmark.chunkers.base.RequestEstimator.estimate_requests`: the :class:`LLMUsage` of chunking one text.
  Answers the LLM cache already holds are replayed through :attr:`Asking.replay` exactly as a
  run reads them back (free, counted as ``cached``); the rest are counted at the fewest calls
  (every answer usable at once) and at the most (corrections, more windows).

The helpers below count what most chunkers send: :func:`count_requests` for requests known in
full before asking (one per chunk, per section, ...), :func:`framed_tokens` for a prompt's
``cl100k_base`` tokens with the chat framing, :meth:`LLMUsage.ask` for one request at the
fewest and the most. Input tokens are ``cl100k_base`` tokens of the system and user prompts plus
:data:`~chunkmark.costs.meter.MESSAGE_TOKENS` per request; output tokens are each request's
``max_tokens``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple

from chunkmark.costs.meter import MESSAGE_TOKENS
from chunkmark.llm.base import LLM, BaseLLM
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.llm.cache import LLMCache

ENCODING = "cl100k_base"  # what an estimate counts prompts in, whatever the model's tokenizer
SHOWN_ANSWER_TOKENS = 200  # a correction quotes at most 200 characters of the answer
REASON_TOKENS = 40  # and says why it cannot be used, in fewer tokens than this


@dataclass
class LLMUsage:
    """The LLM work of chunking: ``cached`` answers replayed from the cache (free); ``calls``
    and tokens at the fewest, ``*_max`` at the most. Of the input tokens,
    ``cached_input_tokens`` are expected to be read from the provider's prompt cache and
    ``cache_write_tokens`` written to it; ``cache_write_tokens_max`` is every request writing."""

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

    def add(self, other: LLMUsage) -> None:
        """Add ``other``'s counts to these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def ask(self, tokens: int, max_tokens: int, times: int = 1, extra: int = 0) -> None:
        """One request of ``tokens`` input tokens at the fewest; ``times`` of them (plus
        ``extra`` input tokens) at the most; each may answer ``max_tokens``."""
        self.calls += 1
        self.input_tokens += tokens
        self.output_tokens += max_tokens
        self.calls_max += times
        self.input_tokens_max += times * tokens + extra
        self.output_tokens_max += times * max_tokens


class Replay:
    """The answers an LLM cache already holds for a client's requests (read only): what a run
    would read back instead of asking. Without a cache, nothing is held."""

    def __init__(self, llm: LLM, cache: LLMCache | None = None) -> None:
        self.llm = llm
        self.cache = cache

    def answer(
        self,
        system: str,
        user: str,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
    ) -> str | None:
        """The cached answer to this exact request, or None (also for a client that keeps no
        answer cache of its own: nothing would be replayed at run time either)."""
        if self.cache is None or not isinstance(self.llm, BaseLLM):
            return None
        return self.llm.cached_answer(
            system, user, max_tokens=max_tokens, json_schema=json_schema, cache=self.cache
        )


@dataclass(frozen=True)
class Asking:
    """What an estimate reads besides the text: the answers already cached, and the provider's
    prompt cache (the shortest system prompt it caches, whether it bills writes; None when it
    caches none, see :data:`chunkmark.costs.prompt_cache.PROMPT_CACHES`)."""

    replay: Replay
    prompt_cache: tuple[int, bool] | None = None


class Request(NamedTuple):
    """One request a chunker would send."""

    system: str
    user: str
    max_tokens: int
    json_schema: dict[str, Any] | None = None


def framed_tokens(system: str, users: Sequence[str]) -> tuple[int, list[int]]:
    """``cl100k_base`` tokens of a system prompt, and of each user prompt plus the system
    prompt and the chat framing (what one request with it sends)."""
    system_tokens, *user_tokens = count_tokens([system, *users], ENCODING)
    return system_tokens, [system_tokens + MESSAGE_TOKENS + n for n in user_tokens]


def count_requests(
    requests: Sequence[Request], asking: Asking, *, cache_system: bool = False
) -> LLMUsage:
    """The calls and tokens of requests known in full before asking: answers in the cache
    replayed, every other request asked once (fewest and most alike).

    With ``cache_system`` (the requests are sent with ``cache_system=True``) and a provider
    that caches system prompts that long (``asking.prompt_cache``), the first request sent with
    a system prompt writes it to the provider's cache and every later one reads it; writes are
    counted where the provider bills them, and at the most every request writes.
    """
    usage = LLMUsage()
    sent = [r for r in requests if asking.replay.answer(*r) is None]
    usage.cached = len(requests) - len(sent)
    if not sent:
        return usage
    systems = list(dict.fromkeys(r.system for r in sent))
    system_tokens = dict(zip(systems, count_tokens(systems, ENCODING), strict=True))
    user_tokens = count_tokens([r.user for r in sent], ENCODING)
    rule = asking.prompt_cache if cache_system else None
    seen: set[str] = set()
    for r, n in zip(sent, user_tokens, strict=True):
        prefix = system_tokens[r.system]
        usage.ask(prefix + MESSAGE_TOKENS + n, r.max_tokens)
        cached = rule is not None and prefix >= rule[0]
        writes = cached and rule is not None and rule[1]
        if cached and r.system in seen:
            usage.cached_input_tokens += prefix
        elif writes:
            usage.cache_write_tokens += prefix
        if writes:
            usage.cache_write_tokens_max += prefix
        seen.add(r.system)
    return usage
