"""OpenAI Chat Completions, and any endpoint that speaks it (vLLM, Ollama, LM Studio, ...).

Requests go through the official ``openai`` SDK (``pip install 'chunkmark[openai]'``) to
``{base_url}/chat/completions`` with the system prompt as a ``system`` message, ``max_tokens``,
``temperature`` (omitted when None) and ``seed``; a JSON schema, when the caller gives one, goes
as ``response_format={"type": "json_schema", ...}`` (structured outputs). ``base_url`` defaults
to ``$OPENAI_BASE_URL``, else OpenAI. The key comes from ``$OPENAI_API_KEY`` (or the variable
``api_key_env`` names); an endpoint other than api.openai.com may need none.

Prompt caching is automatic at OpenAI for prompts of 1024 tokens or more (the longest cached
prefix is reused), so ``complete(..., cache_system=True)`` changes nothing in the request: the
system prompt already comes first. ``usage.prompt_tokens`` (all prompt tokens) is counted as
``input_tokens``, and ``usage.prompt_tokens_details.cached_tokens`` (absent or null on many
compatible servers: 0) as ``cached_input_tokens``; OpenAI bills no cache writes.

A server on this machine (llama.cpp's ``llama-server``, as ``python -m chunkmark.llm.local
serve`` starts it) is also sent ``cache_prompt: true``: it keeps the last prompt's state and
reads the prefix a new prompt shares with it from there, so a request that repeats a long
prefix (the same document window) only processes what follows. ``cache_prompt=False`` in the
spec sends ``false`` instead (to measure the difference); ``True`` sends it to any endpoint.
Other local servers ignore the key.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chunkmark.llm.base import Answer, Prompt
from chunkmark.llm.remote import RemoteLLM, register_provider


class OpenAIChatLLM(RemoteLLM):
    """OpenAI chat models, or any OpenAI-compatible endpoint given by base_url.

    The key is read from the environment variable ``api_key_env``; ``base_url`` defaults to
    ``$OPENAI_BASE_URL``, else OpenAI. The run's seed is sent with every request;
    ``temperature=None`` leaves it to the endpoint. Retries with backoff on 429/5xx.
    ``concurrency`` is how many requests may be in flight at once (default: 1 for an endpoint
    on this machine, 4 otherwise); it, ``timeout`` and ``max_retries`` change how answers are
    fetched, not what they are, so they are no part of any result's identity; nor is
    ``cache_prompt`` (sent to llama.cpp's server: reuse the shared prefix of the last prompt;
    None sends true to a server on this machine only).
    """

    provider: ClassVar[str] = "openai"
    api: ClassVar[str] = "chat.completions"
    sdk: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    base_url_hint: ClassVar[str] = "for OpenAI-compatible servers it usually ends in /v1"
    client_class: ClassVar[str] = "OpenAI"
    prompt_cache: ClassVar[bool] = True

    def prompt_cache_flag(self) -> bool | None:
        """The ``cache_prompt`` value sent with each request (None: the key is not sent): as
        given, else true for a server on this machine (llama.cpp's server reuses the prompt's
        shared prefix), else not sent."""
        if self.cache_prompt is None:
            return True if self.is_local else None
        return self.cache_prompt

    def _send(self, client: Any, prompt: Prompt) -> Answer:
        messages = [{"role": "system", "content": prompt.system}] if prompt.system else []
        messages.append({"role": "user", "content": prompt.user})
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        if prompt.json_schema is not None:
            extra["response_format"] = response_format(prompt.json_schema)
        flag = self.prompt_cache_flag()
        if flag is not None:
            extra["extra_body"] = {"cache_prompt": flag}
        response = client.chat.completions.create(
            model=self.model,
            messages=messages,
            max_tokens=prompt.max_tokens,
            seed=self.seed,
            **extra,
        )
        choices = list(getattr(response, "choices", None) or [])
        text, reason = "", None
        if choices:
            message = getattr(choices[0], "message", None)
            text = str(getattr(message, "content", None) or "")
            reason = getattr(choices[0], "finish_reason", None)
        usage = getattr(response, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        return Answer(
            text,
            reason,
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            cached_input_tokens=int(getattr(details, "cached_tokens", 0) or 0),
        )


def response_format(json_schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` asking for one JSON object matching ``json_schema`` (strict
    structured outputs: the schema should forbid extra keys and require every key)."""
    name = str(json_schema.get("title") or "answer")
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": json_schema, "strict": True},
    }


register_provider("openai", OpenAIChatLLM, "gpt-4o-mini", "OPENAI_API_KEY")
