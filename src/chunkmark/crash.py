"""Crash logs: when something unexpected breaks, the traceback goes to a new file in the user's
log folder (``$CHUNKMARK_LOG_DIR``, else the platform's), with the versions and the command line,
and with keys, tokens and passwords hidden, so it can be attached to a bug report as it is."""

from __future__ import annotations

import os
import platform
import re
import traceback
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from chunkmark.retry import SECRET_PATTERNS

LOG_DIR_ENV = "CHUNKMARK_LOG_DIR"
_SECRET_WORD = r"(?:api[-_]?key|key|secret|password|passwd|token)(?![a-z])"
_SECRET_OPTION = re.compile(rf"(?i)^--?[\w-]*{_SECRET_WORD}")
_SECRET_ASSIGNMENT = re.compile(
    rf"(?i)(\b[\w-]*{_SECRET_WORD}[\w-]*\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,)]+)"
)
_KEY_LIKE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_\-]{32,}$")


def log_dir() -> Path:
    """Where crash logs go: ``$CHUNKMARK_LOG_DIR``, else the user log folder."""
    env = os.environ.get(LOG_DIR_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_log_dir("chunkmark"))


def crash_report(exc: BaseException, argv: Sequence[str]) -> str:
    """The log text for ``exc``: versions, the command line and the traceback, secrets hidden.

    No environment variables: only what is needed to reproduce the failure.
    """
    from chunkmark.version import __version__

    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return (
        f"chunkmark {__version__}, Python {platform.python_version()} on {platform.platform()}\n"
        f"time: {datetime.now().astimezone().isoformat(timespec='seconds')}\n"
        f"command: {' '.join(scrub_args(argv))}\n\n"
        f"{scrub_secrets(trace)}"
    )


def write_log(report: str) -> Path:
    """Write ``report`` to a new file in :func:`log_dir` (readable by the user only)."""
    folder = log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = (folder / f"chunkmark-{stamp}-{os.getpid()}.log").absolute()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(report)
    return path


def scrub_args(argv: Sequence[str]) -> list[str]:
    """The command line with every argument that looks like a key replaced by ``***``."""
    shown: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            shown.append("***")
            hide_next = False
        elif _SECRET_OPTION.match(arg):
            option, has_value, _ = arg.partition("=")
            shown.append(f"{option}=***" if has_value else option)
            hide_next = not has_value
        elif _KEY_LIKE.match(arg):
            shown.append("***")
        else:
            shown.append(scrub_secrets(arg))
    return shown


def scrub_secrets(text: str) -> str:
    """``text`` (lines kept) with keys, bearer tokens and ``key=...`` values replaced."""
    for pattern in SECRET_PATTERNS:
        text = pattern.sub("***", text)
    return _SECRET_ASSIGNMENT.sub(lambda m: f"{m.group(1)}***", text)
