"""The gate's output: the markdown table, the power line, short cell labels and the exit
statuses described; see :mod:`chunkmark.report.gate`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from chunkmark.metrics import METRICS
from chunkmark.metrics.selection import POWER, min_detectable_difference, questions_for
from chunkmark.report.gate.check import (
    LEVEL,
    Cell,
    CellCheck,
    GateResult,
)

# --- output -----------------------------------------------------------------------------------


def markdown(result: GateResult, labels: Mapping[Cell, str] | None = None) -> str:
    """The result as a pull-request comment: a headline, what was tested, what these questions
    can detect, one row per cell."""
    label = METRICS[result.metric].label
    failed = [c for c in result.cells if c.regression]
    unsure = result.inconclusive
    if failed:
        head = f"### chunkmark gate: regression in {len(failed)} of {len(result.cells)} cell(s)"
    elif unsure:
        head = (
            f"### chunkmark gate: inconclusive in {len(unsure)} of {len(result.cells)} cell(s) "
            "(no significant regression; too few questions to rule one out)"
        )
    else:
        head = f"### chunkmark gate: passed ({len(result.cells)} cell(s))"
    lines = [
        head,
        "",
        f"{label} with {result.retrieval} on {result.dataset}, {result.n_questions} paired "
        f"questions. A cell fails when it drops by more than {result.max_drop:g} "
        f"point{'' if result.max_drop == 1 else 's'} and the "
        f"drop is significant ({result.test}, Holm across {_cells(len(result.cells))}, "
        f"alpha {result.alpha:g}).",
        "",
        power_line(result),
        "",
        f"| cell | baseline | run | change (points) | {100 * LEVEL:.0f}% interval | p | "
        "p (Holm) | detectable drop | verdict |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for c in result.cells:
        name = (labels or {}).get((c.chunker, c.embedder), f"{c.chunker} × {c.embedder}")
        if (c.run_chunker, c.run_embedder) != (None, None):
            name = _swap_label(c)
        verdict = f"**{c.status}**" if c.regression or c.inconclusive else c.status
        if c.inconclusive and c.needed is not None:
            verdict += f" (about {c.needed:,} questions needed)"
        lines.append(
            f"| {name} | {100 * c.baseline:.2f} | {100 * c.run:.2f} | {100 * c.change:+.2f} | "
            f"[{100 * c.ci_low:+.2f}, {100 * c.ci_high:+.2f}] | {_p(c.p_value)} | "
            f"{_p(c.p_holm)} | {_points(c.detectable)} | {verdict} |"
        )
    lines += [""] + [f"- {note}" for note in result.notes]
    return "\n".join(lines).rstrip() + "\n"


def power_line(result: GateResult) -> str:
    """What the gate's questions can detect: the smallest drop (80% power) over the cells whose
    values moved, and the questions a drop of --max-drop would need in that cell."""
    n = result.n_questions
    test = (
        f"{100 * POWER:.0f}% power, paired t-test at alpha {result.power_alpha:.3g} "
        f"(alpha / {_cells(len(result.cells))}{', one-sided' if result.one_sided else ''})"
    )
    moved = [c for c in result.cells if c.detectable is not None]
    if not moved:
        return (
            f"What {n} questions can detect: not measurable here, since no gated cell's value "
            "changed on any question (the noise of a change is measured from the change)."
        )
    best = min(moved, key=lambda c: c.detectable or math.inf)
    assert best.detectable is not None
    widest = max(c.detectable or 0.0 for c in moved)
    spread = (
        f"{best.detectable:.2f} points"
        if len(moved) == 1 or math.isclose(widest, best.detectable, rel_tol=0.005)
        else f"{best.detectable:.2f} to {widest:.2f} points across the {len(moved)} cells that moved"
    )
    line = f"Smallest drop these {n} questions can detect ({test}, from each cell's paired sd): {spread}."
    if best.detectable > result.max_drop:
        sd = _sd_of_detectable(best.detectable / 100.0, n, result.power_alpha)
        need = questions_for(-result.max_drop / 100.0, sd, alpha=min(result.power_alpha, 0.5)).n
        line += (
            f" A drop of --max-drop ({result.max_drop:g} point"
            f"{'' if result.max_drop == 1 else 's'}) cannot be shown with {n} questions"
            + (
                f": it would take about {need:,}."
                if need is not None
                else ": no realistic number of questions would show it."
            )
        )
    return line


def _sd_of_detectable(detectable: float, n: int, alpha: float) -> float:
    """The paired sd behind a detectable difference (it is proportional to the sd)."""
    unit = min_detectable_difference(n, 1.0, alpha=min(alpha, 0.5))
    assert unit is not None
    return detectable / unit


def _cells(n: int) -> str:
    return f"{n} cell{'' if n == 1 else 's'}"


def _points(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _swap_label(c: CellCheck) -> str:
    """A paired cell: each swapped part as ``baseline's → run's``."""
    from chunkmark.report.data import short_name

    parts = []
    for kind, old, new in (
        ("chunker", c.chunker, c.run_chunker or c.chunker),
        ("embedder", c.embedder, c.run_embedder or c.embedder),
    ):
        label = short_name(kind, old)
        parts.append(label if new == old else f"{label} → {short_name(kind, new)}")
    return " × ".join(parts)


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def short_labels(cells: Iterable[Cell]) -> dict[Cell, str]:
    """Each cell's short name (``Registry.short``), the embedder left out when all share it."""
    from chunkmark.report.data import short_name

    cells = list(cells)
    one_embedder = len({e for _, e in cells}) == 1
    return {
        (c, e): short_name("chunker", c)
        + ("" if one_embedder else f" × {short_name('embedder', e)}")
        for c, e in cells
    }
