"""``chunkmark gate``: fail a build only on a real regression of a run against a baseline."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from chunkmark.cli import options

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


BaselineOption = Annotated[
    Path,
    typer.Option(
        "--baseline",
        help="The baseline: a results folder of `chunkmark run`, or a baseline file (JSON) "
        "written by --update-baseline.",
        show_default=False,
    ),
]
MaxDropOption = Annotated[
    float,
    typer.Option(
        "--max-drop",
        min=0,
        help="Points (100 x the metric) a cell may drop before the drop can fail the gate.",
    ),
]
AlphaOption = Annotated[
    float, typer.Option(help="Significance level, after Holm's correction across cells.")
]
OneSidedOption = Annotated[
    bool,
    typer.Option(
        "--one-sided",
        help="Test for a drop one-sided at --alpha (more power, twice the false alarms of "
        "the default two-sided test).",
    ),
]
ChunkersOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pick-chunker",
        help="Gate only the cells of this chunker (repeatable). [default: every cell of "
        "the baseline]",
        show_default=False,
    ),
]
EmbeddersOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pick-embedder",
        help="Gate only the cells of this embedder (repeatable).",
        show_default=False,
    ),
]
PairsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pair",
        help="Gate a deliberate swap: 'BASELINE_SPEC=RUN_SPEC' pairs the baseline's cells of "
        "that chunker (or embedder) with the run's cells of the other, e.g. "
        "--pair 'fake()=model2vec()' (repeatable).",
        show_default=False,
    ),
]
FailInconclusiveOption = Annotated[
    bool,
    typer.Option(
        "--fail-inconclusive",
        help="Exit with status 8 when no cell regressed but a cell is inconclusive (it "
        "dropped by more than --max-drop, and its questions are too few to tell).",
    ),
]
UpdateBaselineOption = Annotated[
    bool,
    typer.Option(
        "--update-baseline",
        help="Write the run's values of the gated cells to the baseline file (created or "
        "replaced) instead of failing; the comparison with the old file is still printed.",
    ),
]
MarkdownFileOption = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        help="Also write the markdown table (a pull-request comment) to this file.",
        show_default=False,
    ),
]


def gate(
    run: Annotated[Path, typer.Argument(help="Results folder of `chunkmark run` to check.")],
    baseline: BaselineOption,
    metric: Annotated[str, typer.Option(help="The metric gated.")] = "recall",
    max_drop: MaxDropOption = 1.0,
    alpha: AlphaOption = 0.05,
    one_sided: OneSidedOption = False,
    retrieval: options.PickRetrieval = None,
    k: options.PickK = None,
    chunkers: ChunkersOption = None,
    embedders: EmbeddersOption = None,
    dataset: options.PickDataset = None,
    pairs: PairsOption = None,
    fail_inconclusive: FailInconclusiveOption = False,
    update_baseline: UpdateBaselineOption = False,
    markdown_file: MarkdownFileOption = None,
    permutations: options.Permutations = 10_000,
    seed: options.DrawSeed = 0,
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
    from chunkmark.service.gate import GateSettings, check

    settings = GateSettings(metric, max_drop, alpha, one_sided, permutations, seed)
    picks = g.Picks(retrieval, k, dataset, tuple(chunkers or ()), tuple(embedders or ()))
    note = partial(typer.echo, err=True)
    old, result = check(
        run, baseline, settings, picks, pairs or (), update=update_baseline, note=note
    )
    if result is None or old is None:  # a baseline written, nothing compared
        return
    text = g.markdown(result, g.short_labels(old.cells))
    if markdown_file is not None:
        markdown_file.parent.mkdir(parents=True, exist_ok=True)
        markdown_file.write_text(text, encoding="utf-8")
    typer.echo(json.dumps(result.to_dict(), indent=2) if as_json else text.rstrip("\n"))
    if not update_baseline and not result.passed:
        raise typer.Exit(code=result.exit_code)
    if not update_baseline and fail_inconclusive and result.inconclusive:
        raise typer.Exit(code=g.INCONCLUSIVE_EXIT)
