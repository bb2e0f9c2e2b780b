"""The regression gate: a run against a baseline on the same questions, failing only on a drop
that is both larger than a margin and significant after Holm's correction (docs/gate.md).

A *side* is what the gate compares: per-question values of one metric at one retrieval setting
and scoring, for some (chunker, embedder) cells of one dataset, in one question order. A side is
read from a results folder (:func:`read_run`) or from a baseline file (:func:`read_baseline`,
written by :func:`write_baseline`: small JSON a repository commits).

For each gated cell, ``d = run - baseline`` per question (signed so that negative is worse for
the metric's direction). The cell is a **regression** when

- its drop, ``-mean(d)`` in points, exceeds ``max_drop``, and
- the two-sided sign-flip randomisation test of mean(d) = 0 is significant at ``alpha`` after
  Holm's correction across the gated cells.

Two-sided by default: a drop is significant where the usual test at ``alpha`` finds the run
differs from the baseline, and the run is worse. That is the one-sided test at ``alpha / 2``, so
on pure noise a check fails at most ``alpha / 2`` of the time (2.5%), while a paired regression
of a few points is still caught (docs/gate.md measures both). ``one_sided=True`` tests mean(d) <
0 at the full ``alpha``: more power, twice the false alarms. Every cell is also reported with the
95% paired-bootstrap interval of its change, whatever its verdict.

Bad input raises :class:`GateError` with an exit status of its own (:data:`EXIT_CODES`).

The parts: ``check`` (the records, the exit statuses and the test), ``sides`` (reading a side
from a results folder or a baseline file, and writing the baseline) and ``output`` (the
markdown table and the lines ``chunkmark gate`` prints); what ``chunkmark gate`` uses is
importable from here.
"""

from __future__ import annotations

from chunkmark.report.gate.check import (
    BAD_BASELINE,
    EXIT_CODES,
    INCOMPATIBLE,
    INCONCLUSIVE_EXIT,
    MISSING_CELL,
    QUESTIONS_DIFFER,
    REGRESSION,
    USAGE,
    Cell,
    GateError,
    GateResult,
    Side,
    check_cells,
    check_sides,
    gate,
    paired_run,
    parse_pair,
    question_hash,
    replace_cells,
    with_swaps,
)
from chunkmark.report.gate.output import (
    markdown,
    short_labels,
)
from chunkmark.report.gate.sides import (
    Picks,
    pick_cells,
    read_baseline,
    read_run,
    write_baseline,
)

__all__ = [
    "BAD_BASELINE",
    "EXIT_CODES",
    "INCOMPATIBLE",
    "INCONCLUSIVE_EXIT",
    "MISSING_CELL",
    "QUESTIONS_DIFFER",
    "REGRESSION",
    "USAGE",
    "Cell",
    "GateError",
    "GateResult",
    "Picks",
    "Side",
    "check_cells",
    "check_sides",
    "gate",
    "markdown",
    "paired_run",
    "parse_pair",
    "pick_cells",
    "question_hash",
    "read_baseline",
    "read_run",
    "replace_cells",
    "short_labels",
    "with_swaps",
    "write_baseline",
]
