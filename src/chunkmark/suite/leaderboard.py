"""The suite's leaderboard: a static HTML page and a markdown table read from one suite folder.

Three parts, each its own module: reading the suite folder and each set's results
(:mod:`chunkmark.suite.folder`); the statistics across sets (:mod:`chunkmark.suite.analysis`:
mean ranks, ties with the best, Kendall's tau, the variance split, the diagnostics' rho,
embedders per set) with the leave-one-set-out test (:mod:`chunkmark.suite.holdout`); and the
rendering as markdown and one offline HTML page (:mod:`chunkmark.suite.render`). This module
builds the board from a folder (:func:`build_leaderboard`), writes it
(:func:`write_leaderboard`) and leaves each set of a folder out
(:func:`leave_one_set_out_suite`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from chunkmark.files import write_bytes_atomic
from chunkmark.metrics.paired import PERMUTATIONS
from chunkmark.suite.analysis import (
    DEFAULT_BUDGET,
    DEFAULT_METRIC,
    RANK_METRICS,
    RHO_METRICS,
    Leaderboard,
    diagnostic_rho,
    embedder_rows,
    kendall_matrix,
    provenance,
    rank_cells,
    variance_of,
)
from chunkmark.suite.estimates import CellKey
from chunkmark.suite.folder import (
    DEFAULT_RESAMPLES,
    SUITE_FILE,
    LeaderboardError,
    Suite,
    read_added,
    read_set,
    read_suite,
)
from chunkmark.suite.holdout import HoldOut, leave_one_set_out
from chunkmark.suite.render import to_html, to_markdown

MARKDOWN_FILE = "leaderboard.md"
HTML_FILE = "leaderboard.html"


# --- the leaderboard ---------------------------------------------------------------------------


def build_leaderboard(
    suite_dir: str | Path,
    *,
    budget: int = DEFAULT_BUDGET,
    metric: str = DEFAULT_METRIC,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = PERMUTATIONS,
    alpha: float = 0.05,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    add: Sequence[str | Path] = (),
) -> Leaderboard:
    """Read a suite folder, with the cells of the suite folders ``add`` merged in
    (:func:`chunkmark.suite.folder.read_added`), and compute the leaderboard (nothing is
    written)."""
    say = progress or (lambda _msg: None)
    suite = _checked_suite(suite_dir, budget, metric)
    added = read_added(suite, add)
    notes: list[str] = []
    boards = []
    for suite_set in suite.sets:
        say(f"reading {suite_set.name}")
        boards.append(
            read_set(
                suite,
                suite_set,
                level=level,
                resamples=resamples,
                seed=seed,
                notes=notes,
                added=added,
            )
        )
    labels = [s.label for s in suite.settings if s.tokens == budget]
    at_budget = [[c for c in b.cells if c.setting in labels] for b in boards]
    common = sorted(set.intersection(*({c.key for c in cells} for cells in at_budget)))
    everywhere = set().union(*({c.key for c in cells} for cells in at_budget))
    if len(everywhere) > len(common):
        notes.append(
            f"{len(everywhere) - len(common)} cell(s) at {budget} tokens are missing from some "
            "set and are not ranked across sets."
        )
    say(f"ranking {len(common)} cells over {len(boards)} sets")
    ranking = rank_cells(boards, common, metric, level, resamples, permutations, alpha, seed)
    means = {
        b.name: {c.key: c.metrics[metric].value for c in cells}
        for b, cells in zip(boards, at_budget, strict=True)
    }
    holdout = None
    if len(boards) > 1 and common:
        say(f"leaving each of the {len(boards)} sets out")
        holdout = leave_one_set_out(
            {b.name: np.stack([b.values[k][metric] for k in common]) for b in boards},
            common,
            metric=metric,
            budget=budget,
            resamples=resamples,
            level=level,
            seed=seed,
        )
    every_cell = [c for b in boards for c in b.cells]
    variance = [variance_of(every_cell, m) for m in RHO_METRICS]
    rho = diagnostic_rho([c for cells in at_budget for c in cells])
    embedders = embedder_rows(boards, labels, metric, level, resamples, seed)
    if not any("boundary F1" in c.diagnostics for c in every_cell):
        notes.append(
            "Boundary scores (Pk, WindowDiff, boundary F1) need a set whose dataset records its "
            "topic boundaries (a corpus of `chunkmark datasets stitch`); no set here does."
        )
    return Leaderboard(
        suite=suite,
        budget=budget,
        metric=metric,
        level=level,
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        sets=boards,
        ranking=ranking,
        tau=kendall_matrix(means),
        variance=variance,
        rho=rho,
        embedders=embedders,
        notes=notes,
        holdout=holdout,
        added=provenance(boards, added),
    )


def _checked_suite(
    suite_dir: str | Path,
    budget: int,
    metric: str,
    ranking: str = "The leaderboard",
    name_budgets: bool = True,
) -> Suite:
    """The suite folder's suite.json, with ``budget`` among its budgets and ``metric`` one the
    board ranks by (else one LeaderboardError line: ``ranking`` ranks by ..., and the budgets it
    has when ``name_budgets``)."""
    if metric not in RANK_METRICS:
        raise LeaderboardError(
            f"{ranking} ranks by one of {', '.join(RANK_METRICS)}, not {metric!r}.",
            f"Pass --metric {DEFAULT_METRIC}.",
        )
    suite = read_suite(suite_dir)
    if budget not in suite.budgets:
        have = ", ".join(str(b) for b in suite.budgets) or "none"
        raise LeaderboardError(
            f"{suite.path / SUITE_FILE} has no setting with a budget of {budget} tokens"
            + (f" (budgets: {have})." if name_budgets else "."),
            "Pass --budget with one of its budgets.",
        )
    return suite


def write_leaderboard(board: Leaderboard, out: str | Path) -> dict[str, Path]:
    """Write ``leaderboard.md`` and ``leaderboard.html`` into ``out`` (created if missing)."""
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LeaderboardError(
            f"Cannot create the folder {folder}: {exc.strerror or exc}.", "Pass another --out."
        ) from None
    files = {"markdown": folder / MARKDOWN_FILE, "html": folder / HTML_FILE}
    write_bytes_atomic(files["markdown"], to_markdown(board).encode("utf-8"))
    write_bytes_atomic(files["html"], to_html(board).encode("utf-8"))
    return files


def leave_one_set_out_suite(
    suite_dir: str | Path,
    *,
    budget: int = DEFAULT_BUDGET,
    metric: str = DEFAULT_METRIC,
    baseline: tuple[str, str, str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> HoldOut:
    """:func:`chunkmark.suite.holdout.leave_one_set_out` over a suite folder's cells at ``budget`` tokens (the board's
    cells). ``baseline`` names a cell by substrings of its chunker, embedder and setting label
    (say ``("fixed_tokens(size=512", "all-MiniLM-L6-v2', ", "dense @1024")``); exactly one cell
    must match."""
    suite = _checked_suite(suite_dir, budget, metric, "Leaving a set out", name_budgets=False)
    labels = {s.label for s in suite.settings if s.tokens == budget}
    if len(suite.sets) < 2:
        raise LeaderboardError(
            f"{suite.path / SUITE_FILE} holds {len(suite.sets)} set(s); leaving one out needs two.",
            "Run the suite on more sets (`chunkmark suite run`).",
        )
    boards = [read_set(suite, s, resamples=1, seed=seed) for s in suite.sets]
    common = sorted(set.intersection(*({k for k in b.values if k[2] in labels} for b in boards)))
    if not common:
        raise LeaderboardError(
            f"No cell at {budget} tokens is in every set of {suite.path}.",
            "Rerun the sets with one grid (`chunkmark suite run`).",
        )
    base: CellKey | None = None
    if baseline is not None:
        found = [k for k in common if all(part in k[i] for i, part in enumerate(baseline))]
        if len(found) != 1:
            raise LeaderboardError(
                f"The baseline {baseline} matches {len(found)} cells at {budget} tokens.",
                "Name it by substrings of its chunker, embedder and setting that match one cell.",
            )
        base = found[0]
    values = {b.name: np.stack([b.values[k][metric] for k in common]) for b in boards}
    return leave_one_set_out(
        values,
        common,
        baseline=base,
        metric=metric,
        budget=budget,
        resamples=resamples,
        level=level,
        seed=seed,
    )
