"""A run checked against a baseline, as ``chunkmark gate`` does it: the baseline read (a results
folder or a baseline file), the run's cells chosen (the baseline's, or those ``--pair`` swaps
in), the paired test of each, and with ``update`` the baseline file written from the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from chunkmark.errors import ConfigError
from chunkmark.metrics import METRICS
from chunkmark.report import gate as g


@dataclass(frozen=True)
class GateSettings:
    """What the gate tests: the metric, the drop it tolerates and the test's settings."""

    metric: str = "recall"
    max_drop: float = 1.0
    alpha: float = 0.05
    one_sided: bool = False
    permutations: int = 10_000
    seed: int = 0


def check(
    run: Path,
    baseline: Path,
    settings: GateSettings,
    picks: g.Picks,
    pairs: Sequence[str] = (),
    *,
    update: bool = False,
    note: Callable[[str], None] = print,
) -> tuple[g.Side | None, g.GateResult | None]:
    """The baseline compared and the gate's result (None when ``update`` writes a baseline
    with nothing comparable to check against). ``note`` hears what ``update`` did and why an
    old baseline is not compared."""
    metric = settings.metric
    if metric not in METRICS:
        raise ConfigError(
            f"Unknown metric {metric!r}.", f"Use one of: {', '.join(METRICS.names())}."
        )
    if update and baseline.is_dir():
        raise g.GateError(
            f"--update-baseline writes a baseline file, and {baseline} is a folder.",
            "Pass a file path, e.g. --baseline chunkmark-baseline.json.",
        )
    swaps = [g.parse_pair(text) for text in pairs]
    old = _read_baseline(baseline, metric, picks, update, note)
    # With --pair the picks choose the baseline's cells; the run's are those they pair with.
    run_picks = g.Picks(picks.retrieval, picks.k, picks.dataset) if swaps else picks
    new = g.read_run(run, metric, run_picks, retrieval=old.retrieval if old else None)
    compared, mapped = new, None
    if old is not None and swaps:
        compared, mapped = g.paired_run(old, new, swaps)
        new = g.replace_cells(new, {c: new.cells[c] for c in dict.fromkeys(mapped.values())})
    elif old is not None and not update:
        # The gated cells are the baseline's: the run's other cells are not compared.
        new = g.replace_cells(new, {c: v for c, v in new.cells.items() if c in old.cells})
        compared = new
    result = None if old is None else _tested(old, compared, mapped, settings, update, note)
    if update:
        g.write_baseline(baseline, new, run=str(run))
        wrote = (
            f"wrote the baseline {baseline} from {run}: {len(new.cells)} cell(s), "
            f"{len(new.question_ids)} questions, {metric} at {new.retrieval}"
        )
        if result is None:
            note(wrote)
            return old, None
        result.notes.append(f"{wrote}; it replaces the baseline compared above.")
    return old, result


def _tested(
    old: g.Side,
    compared: g.Side,
    mapped: dict[g.Cell, g.Cell] | None,
    settings: GateSettings,
    update: bool,
    note: Callable[[str], None],
) -> g.GateResult | None:
    """The gate of ``compared`` against ``old``; None when ``update`` replaces a baseline
    that cannot be compared."""
    try:
        g.check_sides(old, compared)
        result = g.gate(
            old,
            compared,
            max_drop=settings.max_drop,
            alpha=settings.alpha,
            permutations=settings.permutations,
            seed=settings.seed,
            one_sided=settings.one_sided,
        )
    except g.GateError as exc:
        if not update:
            raise
        note(f"note: the old baseline is not comparable: {exc.problem}")
        return None
    return result if mapped is None else g.with_swaps(result, mapped)


def _read_baseline(
    path: Path, metric: str, picks: g.Picks, update: bool, note: Callable[[str], None]
) -> g.Side | None:
    """The baseline compared: a results folder, or a baseline file with the picked cells; None
    when --update-baseline is to write a file that does not exist or cannot be read."""
    if path.is_dir():
        return g.read_run(path, metric, picks, exit_code=g.BAD_BASELINE, role="baseline")
    if update and not path.exists():
        return None
    try:
        return g.pick_cells(g.read_baseline(path), picks)
    except g.GateError as exc:
        if not update:
            raise
        note(f"note: the old baseline is not comparable: {exc.problem}")
        return None
