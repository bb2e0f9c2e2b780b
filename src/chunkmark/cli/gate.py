"""``chunkmark gate``: fail a build only on a real regression of a run against a baseline."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated

import typer

from chunkmark.cli import options
from chunkmark.errors import ConfigError
from chunkmark.metrics import METRICS

if TYPE_CHECKING:
    from chunkmark.report.gate import Picks, Side

EXIT_HELP = (
    "Exit status: 0 passed (no significant regression; inconclusive cells included); 3 "
    "regression found; 4 the question sets differ; 5 the baseline is of another dataset, "
    "metric, retrieval setting or scoring; 6 a gated cell is missing from the run; 7 the "
    "baseline cannot be read; 8 inconclusive, with --fail-inconclusive only; 2 other usage "
    "errors; 1 an unexpected error."
)


def register(app: typer.Typer) -> None:
    """Add the ``gate`` command to the app."""
    app.command("gate", epilog=EXIT_HELP)(gate)


def gate(
    run: Annotated[Path, typer.Argument(help="Results folder of `chunkmark run` to check.")],
    baseline: Annotated[
        Path,
        typer.Option(
            "--baseline",
            help="The baseline: a results folder of `chunkmark run`, or a baseline file (JSON) "
            "written by --update-baseline.",
            show_default=False,
        ),
    ],
    metric: Annotated[str, typer.Option(help="The metric gated.")] = "recall",
    max_drop: Annotated[
        float,
        typer.Option(
            "--max-drop",
            min=0,
            help="Points (100 x the metric) a cell may drop before the drop can fail the gate.",
        ),
    ] = 1.0,
    alpha: Annotated[
        float, typer.Option(help="Significance level, after Holm's correction across cells.")
    ] = 0.05,
    one_sided: Annotated[
        bool,
        typer.Option(
            "--one-sided",
            help="Test for a drop one-sided at --alpha (more power, twice the false alarms of "
            "the default two-sided test).",
        ),
    ] = False,
    retrieval: options.PickRetrieval = None,
    k: options.PickK = None,
    chunkers: Annotated[
        list[str] | None,
        typer.Option(
            "--pick-chunker",
            help="Gate only the cells of this chunker (repeatable). [default: every cell of "
            "the baseline]",
            show_default=False,
        ),
    ] = None,
    embedders: Annotated[
        list[str] | None,
        typer.Option(
            "--pick-embedder",
            help="Gate only the cells of this embedder (repeatable).",
            show_default=False,
        ),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--pick-dataset", help="The dataset, when the run holds several.", show_default=False
        ),
    ] = None,
    pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            help="Gate a deliberate swap: 'BASELINE_SPEC=RUN_SPEC' pairs the baseline's cells of "
            "that chunker (or embedder) with the run's cells of the other, e.g. "
            "--pair 'fake()=model2vec()' (repeatable).",
            show_default=False,
        ),
    ] = None,
    fail_inconclusive: Annotated[
        bool,
        typer.Option(
            "--fail-inconclusive",
            help="Exit with status 8 when no cell regressed but a cell is inconclusive (it "
            "dropped by more than --max-drop, and its questions are too few to tell).",
        ),
    ] = False,
    update_baseline: Annotated[
        bool,
        typer.Option(
            "--update-baseline",
            help="Write the run's values of the gated cells to the baseline file (created or "
            "replaced) instead of failing; the comparison with the old file is still printed.",
        ),
    ] = False,
    markdown_file: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            help="Also write the markdown table (a pull-request comment) to this file.",
            show_default=False,
        ),
    ] = None,
    permutations: options.Permutations = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the permutation and bootstrap draws.")] = 0,
    as_json: options.Json = False,
) -> None:
    """Does RUN regress against BASELINE? Each gated cell is paired with the baseline's by
    question id; it fails only when its metric drops by more than --max-drop points AND the drop
    is significant (two-sided sign-flip randomisation test, Holm-adjusted across the gated
    cells). Otherwise it passes and prints how much each cell moved, with 95% intervals.

    Prints a markdown table (for a pull-request comment) or, with --json, JSON. The retrieval
    setting is the baseline file's, else the run's primary (top_k(k=5) when present); pick
    another with --pick-retrieval or --pick-k. See docs/gate.md.
    """
    from chunkmark.report import gate as g

    if metric not in METRICS:
        raise ConfigError(
            f"Unknown metric {metric!r}.", f"Use one of: {', '.join(METRICS.names())}."
        )
    picks = g.Picks(retrieval, k, dataset, tuple(chunkers or ()), tuple(embedders or ()))
    if update_baseline and baseline.is_dir():
        raise g.GateError(
            f"--update-baseline writes a baseline file, and {baseline} is a folder.",
            "Pass a file path, e.g. --baseline chunkmark-baseline.json.",
        )
    swaps = [g.parse_pair(text) for text in pairs or ()]
    old = _read_baseline(g, baseline, metric, picks, update_baseline)
    # With --pair the picks choose the baseline's cells; the run's are those they pair with.
    run_picks = g.Picks(retrieval, k, dataset) if swaps else picks
    new = g.read_run(run, metric, run_picks, retrieval=old.retrieval if old else None)
    compared, mapped = new, None
    if old is not None and swaps:
        compared, mapped = g.paired_run(old, new, swaps)
        new = g.replace_cells(new, {c: new.cells[c] for c in dict.fromkeys(mapped.values())})
    elif old is not None and not update_baseline:
        # The gated cells are the baseline's: the run's other cells are not compared.
        new = g.replace_cells(new, {c: v for c, v in new.cells.items() if c in old.cells})
        compared = new
    result: g.GateResult | None = None
    if old is not None:
        try:
            g.check_sides(old, compared)
            result = g.gate(
                old,
                compared,
                max_drop=max_drop,
                alpha=alpha,
                permutations=permutations,
                seed=seed,
                one_sided=one_sided,
            )
            if mapped is not None:
                result = g.with_swaps(result, mapped)
        except g.GateError as exc:
            if not update_baseline:
                raise
            typer.echo(f"note: the old baseline is not comparable: {exc.problem}", err=True)
    if update_baseline:
        g.write_baseline(baseline, new, run=str(run))
        wrote = (
            f"wrote the baseline {baseline} from {run}: {len(new.cells)} cell(s), "
            f"{len(new.question_ids)} questions, {metric} at {new.retrieval}"
        )
        if result is None:
            typer.echo(wrote, err=True)
            return
        result.notes.append(f"{wrote}; it replaces the baseline compared above.")
    assert result is not None and old is not None
    text = g.markdown(result, g.short_labels(old.cells))
    if markdown_file is not None:
        markdown_file.parent.mkdir(parents=True, exist_ok=True)
        markdown_file.write_text(text, encoding="utf-8")
    typer.echo(json.dumps(result.to_dict(), indent=2) if as_json else text.rstrip("\n"))
    if not update_baseline and not result.passed:
        raise typer.Exit(code=result.exit_code)
    if not update_baseline and fail_inconclusive and result.inconclusive:
        raise typer.Exit(code=g.INCONCLUSIVE_EXIT)


def _read_baseline(
    g: ModuleType, path: Path, metric: str, picks: Picks, update: bool
) -> Side | None:
    """The baseline compared: a results folder, or a baseline file with the picked cells; None
    when --update-baseline is to write a file that does not exist or cannot be read."""
    if path.is_dir():
        side: Side = g.read_run(path, metric, picks, exit_code=g.BAD_BASELINE, role="baseline")
        return side
    if update and not path.exists():
        return None
    try:
        picked: Side = g.pick_cells(g.read_baseline(path), picks)
    except g.GateError as exc:
        if not update:
            raise
        typer.echo(f"note: the old baseline is not comparable: {exc.problem}", err=True)
        return None
    return picked
