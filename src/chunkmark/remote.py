"""The one base of every client of a remote API: endpoint, API key, SDK, and the retry loop.

:class:`RemoteClient` holds what the embedding and LLM clients share:

- ``base_url``: the one given, else ``$<base_url_env>``, else ``default_base_url``; ``host`` is
  its host and port, which identities and messages show.
- The API key, read from the environment variable ``api_key_env`` when the first request is
  sent (a fully cached run needs none). On the default host a missing key is an error naming
  the variable; a custom endpoint gets :data:`~chunkmark.retry.NO_KEY_PLACEHOLDER`. The key
  never appears in messages, identities or stats.
- The vendor SDK, imported on first use (:class:`~chunkmark.errors.MissingDependencyError`
  names the extra that installs it), with its own retries switched off.
- The one retry layer, :meth:`RemoteClient._call`, over the policy of :mod:`chunkmark.retry`:
  retryable status errors wait what ``retry-after-ms`` / ``retry-after`` asks (capped at
  ``backoff_max``), connection errors and timeouts an exponential, jittered backoff; requests
  and retries are counted. A final failure becomes the subclass's :attr:`error_type` with a
  message built from its :class:`Wording`. A connection refused by a server on this machine
  (:attr:`RemoteClient.is_local`) is not retried: nothing listens on that port, and waiting
  will not start it; the error names the URL and the fix at once.

A client may be shared by threads: the SDK client is made once (under a lock), and requests
and retries are counted under a lock (:meth:`RemoteClient._counted`).
"""

from __future__ import annotations

import os
import random
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from chunkmark.errors import ChunkmarkError
from chunkmark.optional import import_optional
from chunkmark.retry import (
    NO_KEY_PLACEHOLDER,
    backoff_delay,
    error_detail,
    is_retryable,
    retry_after,
    status_problem,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Wording:
    """What a client's errors call it and advise; the rest of every message is shared."""

    purpose: str  # what needs the SDK, e.g. "The openai embedder"
    endpoint: str  # what the endpoint is called, e.g. "embedding endpoint"
    missing_key: tuple[str, str]  # (problem, fix) when the key is unset on the default host
    not_found_fix: str  # for HTTP 404
    retry_fix: str  # for a retryable status that persisted through every retry
    rejected_fix: str  # for any other rejected request


class RemoteClient(ABC):
    """A client of an HTTP API reached through its official SDK (imported lazily).

    Subclasses set the class attributes, set ``model``, and implement :meth:`_make_client`
    and :meth:`_wording`; they send every request through :meth:`_call`.
    """

    sdk: ClassVar[str] = ""  # the SDK's import name and the chunkmark extra that installs it
    default_base_url: ClassVar[str] = ""
    base_url_env: ClassVar[str] = ""  # the environment variable that may hold base_url
    error_type: ClassVar[type[ChunkmarkError]] = ChunkmarkError  # what failures raise

    model: str  # named in status errors

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key_env: str,
        max_retries: int,
        timeout: float,
        backoff_base: float,
        backoff_max: float,
        sleep: Callable[[float], None],
    ) -> None:
        if max_retries < 0 or timeout <= 0 or backoff_base < 0 or backoff_max < 0:
            raise ValueError("timeout must be positive; max_retries and backoff_* non-negative")
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
        self._client_lock = threading.Lock()
        self._api_key = ""
        self._requests = 0
        self._retries = 0
        self._count_lock = threading.Lock()

    @property
    def host(self) -> str:
        """The endpoint's host (and port), without credentials, path or query."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or parts.path.split("/")[0]
        return f"{host}:{parts.port}" if parts.port else host

    @abstractmethod
    def _make_client(self, sdk: Any, api_key: str) -> Any:
        """The SDK client for ``base_url`` with the SDK's retries off and ``timeout`` set."""

    @abstractmethod
    def _wording(self) -> Wording:
        """What this client's errors call it and advise."""

    def _call(self, request: Callable[[Any], T]) -> T:
        """``request(client)``, retried as the module docstring says; SDK errors that outlast
        the retries (or are not worth retrying) become an :attr:`error_type`."""
        sdk = import_optional(self.sdk, self.sdk, self.sdk, self._wording().purpose)
        client = self._get_client(sdk)
        attempt = 0
        while True:
            self._counted("requests")
            try:
                return request(client)
            except sdk.APIStatusError as exc:
                if not is_retryable(exc) or attempt >= self.max_retries:
                    raise self._status_error(exc, attempt) from None
                delay = retry_after(exc.response.headers)
                wait = self._backoff(attempt) if delay is None else min(delay, self.backoff_max)
            except sdk.APIConnectionError as exc:
                if self.is_local and refused(exc):
                    raise self._refused_error() from None
                if attempt >= self.max_retries:
                    timed_out = isinstance(exc, sdk.APITimeoutError)
                    raise self._connection_error(timed_out, attempt) from None
                wait = self._backoff(attempt)
            attempt += 1
            self._counted("retries")
            self._sleep(wait)

    def _counted(self, name: str) -> None:
        """Count one ``requests`` or ``retries`` (``_requests``, ``_retries``; thread-safe)."""
        with self._count_lock:
            setattr(self, f"_{name}", getattr(self, f"_{name}") + 1)

    def _get_client(self, sdk: Any) -> Any:
        """The SDK client, made on first use with the key from ``api_key_env`` (once, when
        threads ask for it at the same time)."""
        if self._client is not None:
            return self._client
        with self._client_lock:
            if self._client is not None:
                return self._client
            key = os.environ.get(self.api_key_env, "")
            if not key:
                if self.host == urlsplit(self.default_base_url).hostname:
                    raise self.error_type(*self._wording().missing_key)
                key = NO_KEY_PLACEHOLDER
            self._api_key = key
            self._client = self._make_client(sdk, key)
        return self._client

    def _backoff(self, attempt: int) -> float:
        return backoff_delay(attempt, self.backoff_base, self.backoff_max, self._random)

    def _connection_error(self, timed_out: bool, attempt: int) -> ChunkmarkError:
        what = "timed out" if timed_out else "failed"
        fix = (
            f"Check base_url (or {self.base_url_env}) and the network; "
            "raise timeout or max_retries for a slow endpoint."
        )
        if timed_out and self.is_local:
            # a server on this machine cancels a request its client gave up on, so a retry
            # starts again from nothing: only a longer timeout helps
            fix = (
                f"A model served from this machine can take minutes per answer: raise timeout "
                f"(it is {self.timeout:g} s; e.g. timeout=600.0)."
            )
        return self.error_type(
            f"The request to the {self._wording().endpoint} {self.host} {what} "
            f"after {attempt + 1} attempts.",
            fix,
        )

    def _refused_error(self) -> ChunkmarkError:
        parts = urlsplit(self.base_url)
        url = f"{parts.scheme}://{self.host}{parts.path}" if parts.scheme else self.base_url
        return self.error_type(
            f"Nothing is listening at {url}: the connection was refused, so no "
            f"{self._wording().endpoint} runs on this machine at that port.",
            f"Start the server on this machine (e.g. `ollama serve`), or check the port in "
            f"base_url (or {self.base_url_env}).",
        )

    @property
    def is_local(self) -> bool:
        """Whether the endpoint is on this machine (a loopback address or localhost)."""
        return is_loopback(self.base_url)

    def _status_error(self, exc: Any, attempt: int) -> ChunkmarkError:
        wording = self._wording()
        problem, fix = status_problem(
            exc,
            attempt,
            where=f"the {wording.endpoint} {self.host} (model {self.model!r})",
            key_env=self.api_key_env,
            host=self.host,
            detail=error_detail(exc, self._api_key),
            not_found_fix=wording.not_found_fix,
            retry_fix=wording.retry_fix,
            rejected_fix=wording.rejected_fix,
        )
        return self.error_type(problem, fix)


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` (an SDK's connection error) was caused by a refused connection: its
    chain of causes holds a :class:`ConnectionRefusedError`."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionRefusedError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def is_loopback(url: str) -> bool:
    """Whether ``url`` (or a bare ``host[:port]``) names this machine: localhost or a loopback
    address (127.0.0.0/8, ::1)."""
    if "//" not in url and url.count(":") >= 2:  # a bare IPv6 address (``host`` writes ::1:80)
        return url == "::1" or url.startswith(("::1:", "[::1]"))
    try:
        host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    except ValueError:
        return False
    return host in ("localhost", "::1") or host.endswith(".localhost") or host.startswith("127.")
