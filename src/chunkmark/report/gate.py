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

Reading a side (a results folder, a baseline file) and its records live in
:mod:`chunkmark.report.gate_sides`; what ``chunkmark gate`` uses is importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.experiments.config import Nesting
from chunkmark.metrics import METRICS
from chunkmark.metrics.paired import DECIMALS, holm, paired_bootstrap_ci, permutation_test
from chunkmark.metrics.selection import POWER, min_detectable_difference, questions_for
from chunkmark.report.compare import p_text
from chunkmark.report.gate_sides import (
    BAD_BASELINE,
    EXIT_CODES,
    INCOMPATIBLE,
    INCONCLUSIVE_EXIT,
    MISSING_CELL,
    PASSED,
    QUESTIONS_DIFFER,
    REGRESSION,
    USAGE,
    Cell,
    FloatArray,
    GateError,
    Picks,
    Side,
    pick_cells,
    question_hash,
    read_baseline,
    read_run,
    replace_cells,
    side_with,
    with_hash,
    write_baseline,
)
from chunkmark.report.settings import Scoring
from chunkmark.specs import canonical_spec  # the form the runs' cells hold

INCONCLUSIVE = "inconclusive"

DEFAULT_MAX_DROP = 1.0  # points
LEVEL = 0.95


@dataclass(frozen=True)
class CellCheck:
    """One gated cell: the means, the change (run - baseline, metric units) with its interval,
    the p-value (two-sided, or one-sided for a drop), Holm-adjusted across the gated cells, and
    the verdict."""

    chunker: str
    embedder: str
    n: int
    baseline: float
    run: float
    change: float
    ci_low: float
    ci_high: float
    p_value: float | None  # None: a NaN among the values, nothing tested
    p_holm: float
    drop: float  # points, positive when the run is worse (for the metric's direction)
    status: str  # regression, within margin, inconclusive, not significant, improved, unchanged
    # The smallest drop (points) these questions detect with 80% power, from this cell's paired
    # sd (None: the values never differ, or a NaN), and the questions its observed drop needs.
    detectable: float | None = None
    needed: int | None = None
    run_chunker: str | None = None  # the run's cell when --pair swaps a part (else the same)
    run_embedder: str | None = None

    @property
    def regression(self) -> bool:
        return self.status == "regression"

    @property
    def inconclusive(self) -> bool:
        return self.status == INCONCLUSIVE


@dataclass(frozen=True)
class GateResult:
    dataset: str
    metric: str
    retrieval: str
    scoring: Scoring
    n_questions: int
    max_drop: float
    alpha: float
    permutations: int
    seed: int
    cells: list[CellCheck]
    one_sided: bool = False
    baseline: str = ""
    run: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(c.regression for c in self.cells)

    @property
    def inconclusive(self) -> list[CellCheck]:
        """The cells that dropped by more than --max-drop without a significant drop, with too
        few questions to rule one out (the gate passes them: no significant regression)."""
        return [c for c in self.cells if c.inconclusive]

    @property
    def verdict(self) -> str:
        """passed, inconclusive (passed, with cells the questions cannot settle), regression."""
        if not self.passed:
            return "regression"
        return INCONCLUSIVE if self.inconclusive else "passed"

    @property
    def power_alpha(self) -> float:
        """The two-sided level the power statements use: alpha over the gated cells (Holm's
        first step, the one a single regressed cell meets), doubled for --one-sided."""
        return (2.0 if self.one_sided else 1.0) * self.alpha / max(1, len(self.cells))

    @property
    def exit_code(self) -> int:
        return PASSED if self.passed else REGRESSION

    @property
    def test(self) -> str:
        """The test named in the output."""
        return f"{'one' if self.one_sided else 'two'}-sided sign-flip randomisation test"

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "dataset": self.dataset,
            "metric": self.metric,
            "retrieval": self.retrieval,
            "scoring": self.scoring.columns(),
            "questions": self.n_questions,
            "max_drop": self.max_drop,
            "alpha": self.alpha,
            "test": f"{self.test}, Holm across cells",
            "permutations": self.permutations,
            "seed": self.seed,
            "power": {"power": POWER, "alpha": self.power_alpha, "test": "paired t-test"},
            "baseline": self.baseline,
            "run": self.run,
            "cells": [
                {
                    "chunker": c.chunker,
                    "embedder": c.embedder,
                    "n": c.n,
                    "baseline": c.baseline,
                    "run": c.run,
                    "change": c.change,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "drop_points": c.drop,
                    "p_value": c.p_value,
                    "p_holm": c.p_holm,
                    "status": c.status,
                    "detectable_drop_points": c.detectable,
                    "questions_needed": c.needed,
                    "run_chunker": c.run_chunker or c.chunker,
                    "run_embedder": c.run_embedder or c.embedder,
                }
                for c in self.cells
            ],
            "notes": self.notes,
        }


# --- the test ---------------------------------------------------------------------------------


def check_cells(
    baseline: Mapping[Cell, npt.ArrayLike],
    run: Mapping[Cell, npt.ArrayLike],
    *,
    metric: str = "recall",
    max_drop: float = DEFAULT_MAX_DROP,
    alpha: float = 0.05,
    permutations: int = 10_000,
    bootstrap: int = 10_000,
    seed: int = 0,
    one_sided: bool = False,
) -> list[CellCheck]:
    """Each cell of ``baseline`` against the same cell of ``run`` (paired values, same order).

    ``max_drop`` is in points (100 x the metric's unit). A cell is a regression when its drop
    exceeds ``max_drop`` and its p-value (two-sided, or one-sided for a drop), Holm-adjusted
    across the cells, is below ``alpha``."""
    sign = 1.0 if METRICS[metric].direction == "higher" else -1.0
    cells = list(baseline)
    diffs: list[FloatArray] = []
    for cell in cells:
        b = np.asarray(baseline[cell], dtype=np.float64)
        r = np.asarray(run[cell], dtype=np.float64)
        if b.shape != r.shape or b.ndim != 1 or len(b) == 0:
            raise ValueError(f"cell {cell}: values of shapes {b.shape} and {r.shape} do not pair")
        diffs.append(sign * (r - b))  # negative: worse
    pvalues: list[float | None] = []
    for d in diffs:
        p = permutation_test(
            d,
            permutations=permutations,
            seed=seed,
            alternative="less" if one_sided else "two-sided",
        )
        pvalues.append(None if math.isnan(p) else p)
    adjusted = holm(pvalues)
    out = []
    for cell, d, p_value, p_adj in zip(cells, diffs, pvalues, adjusted, strict=True):
        b = np.asarray(baseline[cell], dtype=np.float64)
        r = np.asarray(run[cell], dtype=np.float64)
        change = float(np.mean(r - b))
        if np.isnan(d).any():
            low = high = math.nan
        else:
            low, high = paired_bootstrap_ci(r - b, resamples=bootstrap, level=LEVEL, seed=seed)
        drop = -100.0 * sign * change
        detectable, needed = _power(d, len(cells), alpha, one_sided)
        out.append(
            CellCheck(
                chunker=cell[0],
                embedder=cell[1],
                n=len(d),
                baseline=float(np.mean(b)),
                run=float(np.mean(r)),
                change=change,
                ci_low=low,
                ci_high=high,
                p_value=p_value,
                p_holm=p_adj,
                drop=drop + 0.0,
                status=_status(drop, p_adj, alpha, max_drop, sign * low, sign * high, d, needed),
                detectable=detectable,
                needed=needed,
            )
        )
    return out


def _power(
    d: FloatArray, cells: int, alpha: float, one_sided: bool
) -> tuple[float | None, int | None]:
    """The smallest drop (points) ``len(d)`` questions detect with 80% power, from the sd of
    ``d``, and the questions the observed drop would need; a two-sided paired t-test at alpha
    over the cells (Holm's first step), doubled for a one-sided test. None where it cannot be
    said (a NaN, fewer than two questions, differences that never vary; no drop)."""
    level = (2.0 if one_sided else 1.0) * alpha / max(1, cells)
    if len(d) < 2 or np.isnan(d).any():
        return None, None
    rounded = np.round(d, DECIMALS) + 0.0
    sd = float(rounded.std(ddof=1))
    found = min_detectable_difference(len(d), sd, alpha=min(level, 0.5))
    detectable = None if found is None else 100.0 * found
    mean = float(rounded.mean())
    needed = None
    if mean < 0:
        needed = questions_for(mean, sd, alpha=min(level, 0.5)).n
    return detectable, needed


def _status(
    drop: float,
    p_holm: float,
    alpha: float,
    max_drop: float,
    low: float,
    high: float,
    d: FloatArray,
    needed: int | None = None,
) -> str:
    if math.isnan(drop):
        return "not tested (NaN values)"
    significant = p_holm < alpha
    if drop > max_drop and significant:
        return "regression"
    if drop > 0 and significant:
        return "drop within --max-drop"
    # A drop beyond the margin that the test cannot confirm: the interval lies below zero, or
    # it would take more questions than there are to detect it. Too few questions, not a pass.
    if drop > max_drop and (max(low, high) < 0 or (needed is not None and needed > len(d))):
        return INCONCLUSIVE
    if drop > 0:
        return "drop not significant"
    if not np.any(d):
        return "unchanged"
    # sign-adjusted interval: its lower end above zero is an improvement no resample undoes
    return "improved" if min(low, high) > 0 else "no drop"


def gate(
    baseline: Side,
    run: Side,
    *,
    max_drop: float = DEFAULT_MAX_DROP,
    alpha: float = 0.05,
    permutations: int = 10_000,
    seed: int = 0,
    one_sided: bool = False,
) -> GateResult:
    """The run against the baseline over the baseline's cells (see :func:`check_sides` first)."""
    order = {q: i for i, q in enumerate(run.question_ids)}
    idx = np.asarray([order[q] for q in baseline.question_ids], dtype=np.int64)
    checks = check_cells(
        baseline.cells,
        {cell: run.cells[cell][idx] for cell in baseline.cells},
        metric=baseline.metric,
        max_drop=max_drop,
        alpha=alpha,
        permutations=permutations,
        seed=seed,
        one_sided=one_sided,
    )
    return GateResult(
        dataset=run.dataset,
        metric=baseline.metric,
        retrieval=baseline.retrieval,
        scoring=baseline.scoring,
        n_questions=len(baseline.question_ids),
        max_drop=max_drop,
        alpha=alpha,
        permutations=permutations,
        seed=seed,
        cells=checks,
        one_sided=one_sided,
        baseline=baseline.origin,
        run=run.origin,
    )


def check_sides(baseline: Side, run: Side) -> None:
    """Refuse a pair the gate cannot compare: another dataset, metric, setting or scoring, a
    missing cell, other questions (a :class:`GateError` with its exit status)."""
    if baseline.metric != run.metric:
        raise GateError(
            f"The baseline {baseline.origin} holds {baseline.metric!r} and the gate reads "
            f"{run.metric!r}.",
            f"Pass --metric {baseline.metric}, or rebuild the baseline with --update-baseline.",
            exit_code=INCOMPATIBLE,
        )
    if baseline.retrieval != run.retrieval or baseline.scoring != run.scoring:
        raise GateError(
            f"The baseline {baseline.origin} is at {baseline.retrieval} ({baseline.scoring.label})"
            f" and the run at {run.retrieval} ({run.scoring.label}).",
            f"Pass --pick-retrieval '{baseline.retrieval}', or rebuild the baseline with "
            "--update-baseline.",
            exit_code=INCOMPATIBLE,
        )
    if baseline.fingerprint != run.fingerprint and baseline.dataset != run.dataset:
        raise GateError(
            f"The baseline {baseline.origin} is of dataset {baseline.dataset!r} "
            f"({baseline.fingerprint}) and the run of {run.dataset!r} ({run.fingerprint}).",
            "Gate a run of the baseline's dataset, or rebuild the baseline with --update-baseline.",
            exit_code=INCOMPATIBLE,
        )
    missing = [cell for cell in baseline.cells if cell not in run.cells]
    if missing:
        listing = "; ".join(f"{c} x {e}" for c, e in missing[:4])
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        raise GateError(
            f"The run {run.origin} lacks {len(missing)} gated cell(s): {listing}{more}.",
            "Run those cells too, or gate fewer with --pick-chunker/--pick-embedder.",
            exit_code=MISSING_CELL,
        )
    mine, theirs = set(run.question_ids), set(baseline.question_ids)
    if mine != theirs:
        raise GateError(
            f"The run {run.origin} has {len(mine & theirs)} of the baseline's {len(theirs)} "
            f"questions and {len(mine - theirs)} others: the question sets differ.",
            "Run the baseline's questions, or rebuild the baseline with --update-baseline.",
            exit_code=QUESTIONS_DIFFER,
        )
    if baseline.fingerprint == run.fingerprint:
        return  # the fingerprint covers every question id, text and excerpt
    # Other fingerprints with the same ids: the question hashes (which read the datasets) tell
    # other excerpts from other documents.
    mine_hash, their_hash = with_hash(run).question_hash, with_hash(baseline).question_hash
    if their_hash != mine_hash:
        raise GateError(
            f"The run's questions differ from the baseline's: same ids, other excerpts (question "
            f"hash {str(mine_hash)[:12]} against {str(their_hash)[:12]}).",
            "Gate against a baseline of these questions: rebuild it with --update-baseline.",
            exit_code=QUESTIONS_DIFFER,
        )
    raise GateError(
        f"The baseline {baseline.origin} has the run's questions over other documents "
        f"(dataset fingerprint {baseline.fingerprint} against {run.fingerprint}).",
        "Gate a run of the baseline's documents, or rebuild the baseline with --update-baseline.",
        exit_code=INCOMPATIBLE,
    )


# --- pairing a swap: --pair BASELINE_SPEC=RUN_SPEC --------------------------------------------


@dataclass(frozen=True)
class Pair:
    """A deliberate swap: the baseline's ``old`` chunker or embedder is gated against the run's
    ``new`` one (canonical specs; ``part`` is 0 for a chunker, 1 for an embedder)."""

    part: int
    old: str
    new: str


def split_pair(text: str) -> tuple[str, str]:
    """``OLD=NEW`` split at its one ``=`` outside parentheses, brackets and quotes (specs hold
    ``=`` inside their parentheses: ``fixed_tokens(size=200)=recursive(size=200)``)."""
    nesting = Nesting()
    cuts = [i for i, ch in enumerate(text) if nesting.read(ch) and ch == "="]
    if len(cuts) != 1 or not text[: cuts[0]].strip() or not text[cuts[0] + 1 :].strip():
        raise GateError(
            f"--pair {text!r} is not BASELINE_SPEC=RUN_SPEC.",
            "Write the baseline's chunker (or embedder) spec, '=', then the run's, e.g. "
            "--pair 'fake()=model2vec()' or --pair 'fixed_tokens(size=200)=recursive(size=200)'.",
        )
    return text[: cuts[0]].strip(), text[cuts[0] + 1 :].strip()


def parse_pair(text: str) -> Pair:
    """A ``--pair`` value as canonical specs of one kind (chunker or embedder)."""
    from chunkmark.errors import SpecError

    old, new = split_pair(text)
    for part, kind in enumerate(("chunker", "embedder")):
        try:
            old_spec = canonical_spec(kind, old)
        except SpecError:
            continue
        try:
            return Pair(part, old_spec, canonical_spec(kind, new))
        except SpecError as exc:
            raise GateError(
                f"--pair {text!r}: {old!r} is a {kind}, and {new!r} is not one: {exc.problem}",
                f"Pair {kind} with {kind}: both specs of the same kind.",
            ) from None
    raise GateError(
        f"--pair {text!r}: {old!r} is neither a chunker nor an embedder spec.",
        "See `chunkmark chunkers` and `chunkmark embedders` for the specs.",
    )


def paired_run(baseline: Side, run: Side, pairs: Sequence[Pair]) -> tuple[Side, dict[Cell, Cell]]:
    """The run's values under the baseline's cell names, each baseline cell paired with the
    run's cell that has the swapped parts (the same cell where no pair applies); and which run
    cell each baseline cell reads. A pair whose ``old`` is in no baseline cell, or a paired run
    cell that is missing, is a :class:`GateError`."""
    for pair in pairs:
        if not any(cell[pair.part] == pair.old for cell in baseline.cells):
            kind = ("chunker", "embedder")[pair.part]
            listing = "; ".join(sorted({c[pair.part] for c in baseline.cells})[:4])
            raise GateError(
                f"--pair: the baseline {baseline.origin} has no cell with the {kind} {pair.old}.",
                f"Its {kind}s: {listing}.",
            )
    swap = {(p.part, p.old): p.new for p in pairs}
    mapped: dict[Cell, Cell] = {}
    for cell in baseline.cells:
        mapped[cell] = (swap.get((0, cell[0]), cell[0]), swap.get((1, cell[1]), cell[1]))
    missing = [new for new in mapped.values() if new not in run.cells]
    if missing:
        listing = "; ".join(f"{c} x {e}" for c, e in missing[:4])
        raise GateError(
            f"The run {run.origin} lacks {len(missing)} paired cell(s): {listing}.",
            "Run those cells, or pair the baseline's cells with cells the run holds.",
            exit_code=MISSING_CELL,
        )
    cells = {old: run.cells[new] for old, new in mapped.items()}
    return side_with(run, cells=cells), mapped


def with_swaps(result: GateResult, mapped: Mapping[Cell, Cell]) -> GateResult:
    """``result`` with each check naming the run's cell it read (the baseline's is its key)."""
    from dataclasses import replace

    checks = [
        replace(c, run_chunker=new[0], run_embedder=new[1])
        if (new := mapped[(c.chunker, c.embedder)]) != (c.chunker, c.embedder)
        else c
        for c in result.cells
    ]
    return replace(result, cells=checks)


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
            f"[{100 * c.ci_low:+.2f}, {100 * c.ci_high:+.2f}] | {p_text(c.p_value)} | "
            f"{p_text(c.p_holm)} | {_points(c.detectable)} | {verdict} |"
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


__all__ = [  # what chunkmark gate reads from here, defined in gate_sides
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
    "Picks",
    "Side",
    "pick_cells",
    "question_hash",
    "read_baseline",
    "read_run",
    "replace_cells",
    "write_baseline",
]
