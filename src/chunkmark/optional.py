"""Importing an optional dependency: the module, or one line naming the extra that installs it."""

from __future__ import annotations

import importlib
from typing import Any

from chunkmark.errors import MissingDependencyError


def import_optional(module: str, package: str, extra: str, purpose: str) -> Any:
    """``module``, imported; without it, a :class:`MissingDependencyError` saying that
    ``purpose`` needs ``package`` (installed by chunkmark's ``extra``)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(package, extra, purpose) from None
