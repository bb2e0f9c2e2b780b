"""The report's error type."""

from __future__ import annotations

from chunkmark.errors import ChunkmarkError


class ReportError(ChunkmarkError):
    """A report cannot be built from what it was given (runs, prices, options)."""
