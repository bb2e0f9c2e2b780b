"""LLM clients over a vendor SDK: the API key, the one retry layer, and errors that say the fix.

The SDK's own retries are switched off; this layer retries 429, 408, 409, 5xx, connection
errors and timeouts with exponential backoff and jitter, waiting at least what a
``retry-after-ms`` / ``retry-after`` header asks (capped at ``backoff_max``). 400, 401, 403,
404 and 422 fail at once (see :mod:`chunkmark.retry`). The key is read from the environment
variable ``api_key_env`` when the first request is sent (a fully cached run needs none) and
never appears in messages, identities or stats.
"""

from __future__ import annotations

import os
import random
import time
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from chunkmark.errors import LLMError, MissingDependencyError
from chunkmark.llm.base import Answer, BaseLLM
from chunkmark.retry import (
    NO_KEY_PLACEHOLDER,
    backoff_delay,
    error_detail,
    is_retryable,
    retry_after,
    status_problem,
)


class RemoteLLM(BaseLLM):
    """An LLM behind an HTTP API reached through its official SDK (imported lazily)."""

    api: ClassVar[str] = ""  # the endpoint kind, e.g. "chat.completions"
    sdk: ClassVar[str] = ""  # the SDK's import name and the chunkmark extra that installs it
    default_base_url: ClassVar[str] = ""
    base_url_env: ClassVar[str] = ""
    base_url_hint: ClassVar[str] = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str,
        temperature: float | None = 0.0,
        max_retries: int = 5,
        timeout: float = 60.0,
        seed: int = 0,
        cache_dir: Path | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_retries < 0 or timeout <= 0 or backoff_base < 0 or backoff_max < 0:
            raise ValueError("timeout must be positive; max_retries and backoff_* non-negative")
        if not api_key_env:
            raise ValueError("api_key_env must name an environment variable")
        super().__init__(model, temperature=temperature, seed=seed, cache_dir=cache_dir)
        url = base_url or os.environ.get(self.base_url_env) or self.default_base_url
        self.base_url = url.rstrip("/")
        self.api_key_env = api_key_env
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._sleep = sleep
        self._random = random.Random()
        self._client: Any = None
        self._api_key = ""

    @property
    def host(self) -> str:
        """The endpoint's host (and port), without credentials, path or query."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or parts.path.split("/")[0]
        return f"{host}:{parts.port}" if parts.port else host

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "api": self.api, "host": self.host}

    @abstractmethod
    def _make_client(self, sdk: Any, api_key: str) -> Any:
        """The SDK client for ``base_url`` with the SDK's retries off and ``timeout`` set."""

    @abstractmethod
    def _send(self, client: Any, system: str, user: str, max_tokens: int) -> Answer:
        """One request, no retries; SDK exceptions propagate."""

    def _import_sdk(self) -> Any:
        import importlib

        try:
            return importlib.import_module(self.sdk)
        except ImportError:
            raise MissingDependencyError(
                self.sdk, self.sdk, f"The {self.provider} LLM client"
            ) from None

    def _get_client(self, sdk: Any) -> Any:
        if self._client is not None:
            return self._client
        key = os.environ.get(self.api_key_env, "")
        if not key:
            if self.host == urlsplit(self.default_base_url).hostname:
                raise LLMError(
                    f"The environment variable {self.api_key_env} is not set, so the "
                    f"{self.provider} LLM client has no API key.",
                    f"Set {self.api_key_env} to your API key, or pass api_key_env='...' "
                    "naming the variable that holds it.",
                )
            key = NO_KEY_PLACEHOLDER
        self._api_key = key
        self._client = self._make_client(sdk, key)
        return self._client

    def _answer(self, system: str, user: str, max_tokens: int) -> Answer:
        sdk = self._import_sdk()
        client = self._get_client(sdk)
        attempt = 0
        while True:
            self._requests += 1
            try:
                return self._send(client, system, user, max_tokens)
            except sdk.APIStatusError as exc:
                if not is_retryable(exc) or attempt >= self.max_retries:
                    raise self._status_error(exc, attempt) from None
                delay = retry_after(exc.response.headers)
                wait = self._backoff(attempt) if delay is None else min(delay, self.backoff_max)
            except sdk.APIConnectionError as exc:
                if attempt >= self.max_retries:
                    what = "timed out" if isinstance(exc, sdk.APITimeoutError) else "failed"
                    raise LLMError(
                        f"The request to the {self.provider} endpoint {self.host} {what} "
                        f"after {attempt + 1} attempts.",
                        f"Check base_url (or {self.base_url_env}) and the network; "
                        "raise timeout or max_retries for a slow endpoint.",
                    ) from None
                wait = self._backoff(attempt)
            attempt += 1
            self._retries += 1
            self._sleep(wait)

    def _backoff(self, attempt: int) -> float:
        return backoff_delay(attempt, self.backoff_base, self.backoff_max, self._random)

    def _status_error(self, exc: Any, attempt: int) -> LLMError:
        problem, fix = status_problem(
            exc,
            attempt,
            where=f"the {self.provider} endpoint {self.host} (model {self.model!r})",
            key_env=self.api_key_env,
            host=self.host,
            detail=error_detail(exc, self._api_key),
            not_found_fix=f"Check the model name and base_url ({self.base_url_hint}).",
            retry_fix="Rerun later (answers received so far are cached), lower the request "
            "rate, or raise max_retries.",
            rejected_fix="Check the model name, temperature and max_tokens for this endpoint.",
        )
        return LLMError(problem, fix)
