"""What every remote API client shares: which failures to retry, how long to wait, and how to
keep secrets out of error messages.

The rule (docs/design.md, reliability): exponential backoff with jitter on 429, 408, 409, 5xx,
connection errors and timeouts, waiting at least what a ``retry-after-ms`` / ``retry-after``
header asks; 400, 401, 403, 404 and 422 fail at once, and so does a 429 whose code says the
quota is exhausted (waiting does not help).

The loop that applies the rule is :meth:`chunkmark.remote.RemoteClient._call`.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from typing import Any

RETRY_STATUSES = frozenset({408, 409, 429})
NO_KEY_PLACEHOLDER = "no-key"  # custom endpoints that need no key still get a non-empty header
SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-\*\.]{3,}"),
    re.compile(r"(?i)bearer\s+\S+"),
)


def is_retryable(exc: Any) -> bool:
    """Whether an SDK status error (``status_code``, ``code``) is worth retrying."""
    status = int(exc.status_code)
    if status == 429 and getattr(exc, "code", None) == "insufficient_quota":
        return False
    return status in RETRY_STATUSES or status >= 500


def retry_after(headers: Any) -> float | None:
    """Seconds a ``retry-after-ms`` or ``retry-after`` header asks to wait, if any."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, base: float, ceiling: float, rng: random.Random) -> float:
    """Wait before retry ``attempt`` (0-based): ``base * 2**attempt`` capped at ``ceiling``,
    jittered down to between half and all of it."""
    top = min(ceiling, base * 2.0**attempt)
    return top * (0.5 + 0.5 * rng.random())


def scrub(text: str, secret: str = "", limit: int = 300) -> str:
    """``text`` without the secret or anything that looks like a key, on one line, shortened."""
    if secret and secret != NO_KEY_PLACEHOLDER:
        text = text.replace(secret, "***")
    for pattern in SECRET_PATTERNS:
        text = pattern.sub("***", text)
    text = " ".join(text.split())
    return text[:limit] + ("..." if len(text) > limit else "")


def error_detail(exc: Any, secret: str = "") -> str:
    """An SDK status error's own message (``body.error.message`` or ``body.message``), scrubbed."""
    body = getattr(exc, "body", None)
    message: Any = None
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            message = inner.get("message")
        message = message or body.get("message")
    return scrub(str(message or getattr(exc, "message", "") or ""), secret)


def status_problem(
    exc: Any,
    attempt: int,
    *,
    where: str,
    key_env: str,
    host: str,
    detail: str,
    not_found_fix: str,
    retry_fix: str,
    rejected_fix: str,
) -> tuple[str, str]:
    """The (problem, fix) of an HTTP status error from ``where`` after ``attempt + 1`` tries.

    401/403 name the key's environment variable; 404, an exhausted quota, a failure that
    persisted through the retries and any other rejection each get their own sentence.
    """
    status = int(exc.status_code)
    if status == 401:
        return (
            f"HTTP 401 from {where}: the API key was rejected.",
            f"Set {key_env} to a valid API key for {host}.",
        )
    if status == 403:
        return (
            f"HTTP 403 from {where}: access denied. {detail}",
            f"Check that the key in {key_env} may use this model (and region).",
        )
    if status == 404:
        return f"HTTP 404 from {where}: model or endpoint not found. {detail}", not_found_fix
    retryable = is_retryable(exc)
    if status == 429 and not retryable:
        return (
            f"HTTP 429 from {where}: quota exhausted. {detail}",
            "Check the plan and billing of the account behind the API key.",
        )
    if retryable:
        what = "still rate limited" if status == 429 else "still failing"
        return (
            f"HTTP {status} from {where}: {what} after {attempt + 1} attempts. {detail}",
            retry_fix,
        )
    return f"HTTP {status} from {where}: the request was rejected. {detail}", rejected_fix
