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
from dataclasses import dataclass
from pathlib import Path

from chunkmark.datasets import Dataset
from chunkmark.errors import ChunkmarkError
from chunkmark.report.errors import ReportError
from chunkmark.report.html import Report, ReportOptions, build_report

__all__ = [
    "Report",
    "ReportError",
    "ReportOptions",
    "RunReport",
    "build_report",
    "write_run_report",
]

REPORT_NAME = "report.html"


@dataclass(frozen=True)
class RunReport:
    """What :func:`write_run_report` did: the page it wrote, or why it wrote none."""

    path: Path | None
    error: str | None = None


def write_run_report(
    out: Path,
    datasets: Sequence[Dataset] = (),
    progress: Callable[[str], None] | None = None,
    options: ReportOptions | None = None,
) -> RunReport:
    """Write ``out/report.html`` for a finished run of ``datasets`` (already in memory: the
    inspector need not load them again). The run's own files are already written, so a report
    that cannot be built (plotly missing, a run it cannot read, or a fault in the report itself)
    loses nothing: it is returned as ``error`` (and said to ``progress``), never raised.
    ``options``: how the page is built (the defaults without it)."""
    say = progress or (lambda _msg: None)
    known = {d.fingerprint: d for d in datasets}
    try:
        report = build_report([out], out / REPORT_NAME, options, datasets=known)
    except ChunkmarkError as exc:  # MissingDependencyError when plotly is not installed
        error = str(exc)
    except Exception as exc:  # a fault in the report must not cost the run its results
        error = f"{type(exc).__name__}: {exc} (a fault in chunkmark's report: please report it)"
    else:
        say(f"report   {report.path} ({report.bytes / 1e6:.1f} MB)")
        return RunReport(report.path)
    say(f"report skipped: {error}")
    return RunReport(None, error)
