"""The HTML report: one self-contained page (leaderboard, plots, comparisons, a recommendation,
an inspector, and the relation metrics of folders that hold a ``relations.csv``) built from one
or more results folders.

    from chunkmark.report import ReportOptions, build_report

    report = build_report(
        ["results/demo"], "report.html", ReportOptions(metric="iou", retrieval="top_k(k=5)")
    )

Building needs ``plotly`` (the ``report`` extra), whose plotly.js is inlined into the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from chunkmark.datasets import Dataset
from chunkmark.errors import ChunkmarkError
from chunkmark.report.errors import ReportError
from chunkmark.report.html import Report, ReportOptions, build_report

__all__ = ["Report", "ReportError", "ReportOptions", "build_report", "write_run_report"]

REPORT_NAME = "report.html"


def write_run_report(
    out: Path,
    datasets: Sequence[Dataset] = (),
    progress: Callable[[str], None] | None = None,
) -> Path | None:
    """Write ``out/report.html`` for a finished run of ``datasets`` (already in memory: the
    inspector need not load them again). Without plotly, or when the report cannot be built
    from the run, skip it with a note to ``progress`` and return None: the run's own files are
    already written."""
    say = progress or (lambda _msg: None)
    known = {d.fingerprint: d for d in datasets}
    try:
        report = build_report([out], out / REPORT_NAME, datasets=known)
    except ChunkmarkError as exc:  # MissingDependencyError when plotly is not installed
        say(f"report skipped: {exc}")
        return None
    say(f"report   {report.path} ({report.bytes / 1e6:.1f} MB)")
    return report.path
