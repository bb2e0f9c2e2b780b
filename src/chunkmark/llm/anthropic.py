"""Anthropic's Messages API, through the official ``anthropic`` SDK.

``pip install 'chunkmark[anthropic]'``. Requests go to ``{base_url}/v1/messages`` with the
system prompt as the ``system`` parameter, one user message, ``max_tokens`` and ``temperature``
(omitted when None). The API takes no seed; the run's seed still keys the answer cache. A JSON
schema a caller asks for is not sent (the prompt asks for the JSON), but keys the cache.
``base_url`` defaults to ``$ANTHROPIC_BASE_URL``, else Anthropic. The key comes from
``$ANTHROPIC_API_KEY`` (or the variable ``api_key_env`` names).

Prompt caching: with ``complete(..., cache_system=True)`` the system prompt goes as one text
block marked ``cache_control: {"type": "ephemeral"}`` (the default five-minute cache), so later
requests sharing it read it from Anthropic's prompt cache; without it the system prompt is a
plain string, as before. A prompt shorter than the model's minimum cacheable length is simply
not cached. The usage's ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are
counted as ``cached_input_tokens`` and ``cache_write_tokens``; ``input_tokens`` is their sum
with the usage's ``input_tokens`` (which counts only the tokens after the cached prefix), so it
means every prompt token, as for OpenAI.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chunkmark.llm.base import Answer, Prompt
from chunkmark.llm.remote import RemoteLLM, register_provider


class AnthropicLLM(RemoteLLM):
    """Anthropic Claude models through the Messages API.

    The key is read from the environment variable ``api_key_env``; ``base_url`` defaults to
    ``$ANTHROPIC_BASE_URL``, else Anthropic. The API has no seed parameter: the seed only keys
    the cache. Retries with backoff on 429/5xx/529.
    ``concurrency`` is how many requests may be in flight at once (default: 1 for an endpoint
    on this machine, 4 otherwise); it, ``timeout`` and ``max_retries`` change how answers are
    fetched, not what they are, so they are no part of any result's identity.
    """

    provider: ClassVar[str] = "anthropic"
    api: ClassVar[str] = "messages"
    sdk: ClassVar[str] = "anthropic"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"
    base_url_hint: ClassVar[str] = "for Anthropic it is the host, without /v1"
    client_class: ClassVar[str] = "Anthropic"

    def _send(self, client: Any, prompt: Prompt) -> Answer:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": prompt.max_tokens,
            "messages": [{"role": "user", "content": prompt.user}],
        }
        if prompt.system:
            system = prompt.system
            kwargs["system"] = system_blocks(system) if prompt.cache_system else system
        if self.temperature is not None:
            # As a body field: every SDK version sends it, whether or not create() names it.
            kwargs["extra_body"] = {"temperature": self.temperature}
        response = client.messages.create(**kwargs)
        blocks = getattr(response, "content", None) or []
        text = "".join(
            str(getattr(block, "text", "") or "")
            for block in blocks
            if getattr(block, "type", None) == "text"
        )
        usage = getattr(response, "usage", None)
        read = _count(usage, "cache_read_input_tokens")
        written = _count(usage, "cache_creation_input_tokens")
        return Answer(
            text,
            getattr(response, "stop_reason", None),
            _count(usage, "input_tokens") + read + written,
            _count(usage, "output_tokens"),
            cached_input_tokens=read,
            cache_write_tokens=written,
        )


def system_blocks(system: str) -> list[dict[str, Any]]:
    """The system prompt as one text block marked for Anthropic's (five-minute) prompt cache."""
    return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]


def _count(usage: Any, name: str) -> int:
    """A usage field as an int (0 when absent or null, as in older SDKs and servers)."""
    return int(getattr(usage, name, 0) or 0)


register_provider("anthropic", AnthropicLLM, "claude-haiku-4-5", "ANTHROPIC_API_KEY")
