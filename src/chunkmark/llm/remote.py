"""LLM clients over a vendor SDK: a :class:`~chunkmark.remote.RemoteClient` that is an LLM.

The endpoint, the API key and the one retry layer are :mod:`chunkmark.remote`'s: the SDK's own
retries are switched off; 429, 408, 409, 5xx, connection errors and timeouts are retried with
exponential backoff and jitter, waiting at least what a ``retry-after-ms`` / ``retry-after``
header asks (capped at ``backoff_max``). 400, 401, 403, 404 and 422 fail at once (see
:mod:`chunkmark.retry`) with an :class:`~chunkmark.errors.LLMError`. The key is read from the
environment variable ``api_key_env`` when the first request is sent (a fully cached run needs
none) and never appears in messages, identities or stats.

``concurrency`` bounds the requests in flight at once (threads of one process); None means
:data:`~chunkmark.llm.base.LOCAL_CONCURRENCY` for an endpoint on this machine and
:data:`~chunkmark.llm.base.REMOTE_CONCURRENCY` for any other. Like ``timeout`` and
``max_retries`` it is not part of :meth:`RemoteLLM.identity`.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from chunkmark.errors import LLMError
from chunkmark.llm.base import (
    LLMS,
    LOCAL_CONCURRENCY,
    REMOTE_CONCURRENCY,
    Answer,
    BaseLLM,
    Prompt,
)
from chunkmark.remote import RemoteClient, Wording
from chunkmark.specs import class_factory


class RemoteLLM(BaseLLM, RemoteClient):
    """An LLM behind an HTTP API reached through its official SDK (imported lazily).

    A provider sets the class attributes (``client_class``: the SDK's client class, built with
    ``api_key``, ``base_url``, ``max_retries=0`` and ``timeout``) and implements :meth:`_send`.
    It registers with :func:`register_provider`; the class's docstring is its help."""

    api: ClassVar[str] = ""  # the endpoint kind, e.g. "chat.completions"
    base_url_hint: ClassVar[str] = ""  # what base_url looks like, for the 404 fix
    client_class: ClassVar[str] = ""  # the SDK's client class, e.g. "OpenAI"
    prompt_cache: ClassVar[bool] = False  # whether its wire takes llama.cpp's ``cache_prompt``
    error_type = LLMError

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "",
        temperature: float | None = 0.0,
        max_retries: int = 5,
        timeout: float = 60.0,
        cache_prompt: bool | None = None,
        concurrency: int | None = None,
        *,
        seed: int = 0,
        cache_dir: Path | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        RemoteClient.__init__(
            self,
            base_url=base_url,
            api_key_env=api_key_env,
            max_retries=max_retries,
            timeout=timeout,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            sleep=sleep,
        )
        if not api_key_env:
            raise ValueError("api_key_env must name an environment variable")
        if concurrency is None:
            concurrency = LOCAL_CONCURRENCY if self.is_local else REMOTE_CONCURRENCY
        self.cache_prompt = cache_prompt
        BaseLLM.__init__(
            self,
            model,
            temperature=temperature,
            seed=seed,
            cache_dir=cache_dir,
            concurrency=concurrency,
        )

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "api": self.api, "host": self.host}

    def _make_client(self, sdk: Any, api_key: str) -> Any:
        make = getattr(sdk, self.client_class)
        return make(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout)

    @abstractmethod
    def _send(self, client: Any, prompt: Prompt) -> Answer:
        """One request, no retries; SDK exceptions propagate."""

    def _answer(self, prompt: Prompt) -> Answer:
        return self._call(lambda client: self._send(client, prompt))

    def _wording(self) -> Wording:
        return Wording(
            purpose=f"The {self.provider} LLM client",
            endpoint=f"{self.provider} endpoint",
            missing_key=(
                f"The environment variable {self.api_key_env} is not set, so the "
                f"{self.provider} LLM client has no API key.",
                f"Set {self.api_key_env} to your API key, or pass api_key_env='...' "
                "naming the variable that holds it.",
            ),
            not_found_fix=f"Check the model name and base_url ({self.base_url_hint}).",
            retry_fix="Rerun later (answers received so far are cached), lower the request "
            "rate, or raise max_retries.",
            rejected_fix="Check the model name, temperature and max_tokens for this endpoint.",
        )


def register_provider(name: str, cls: type[RemoteLLM], model: str, api_key_env: str) -> None:
    """Register ``cls`` in :data:`~chunkmark.llm.base.LLMS` as ``name``: the parameters of
    :meth:`RemoteLLM.__init__` with the provider's default ``model`` and ``api_key_env``, less
    the retry loop's test hooks; the cache folder and seed are the run's."""
    needs = ("cache_dir", "seed")
    unused = () if cls.prompt_cache else ("cache_prompt",)
    factory = class_factory(
        cls,
        exclude=("backoff_base", "backoff_max", "sleep", *unused),
        needs=needs,
        defaults={"model": model, "api_key_env": api_key_env},
    )
    LLMS.register(name, needs=needs)(factory)
