"""``chunkmark.Results`` in a notebook: DataFrames, the recommendation as a typed record, the
report's plots as plotly Figures and the HTML shown for the object, each checked against what
the run wrote (read with pyarrow and csv) or what ``chunkmark run`` printed."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import chunkmark
from chunkmark.errors import MissingDependencyError
from chunkmark.report.errors import ReportError
from chunkmark.report.recommendation import RunRecommendation
from cli.app_runner import invoke

# The three chunkers of tests/cli/test_run_recommendation.py: on the demo's 64 questions with
# fake vectors, no single winner (a group tied with the best); two give a clear winner.
TIED = ("fixed_tokens(size=64)", "sentences(n=2)", "words(n=60)")
CLEAR = ("fixed_tokens(size=40)", "fixed_tokens(size=400)")


def cli_run(out: Path, chunkers: tuple[str, ...]) -> list[str]:
    """``chunkmark run`` on the demo with fake vectors; the lines it printed."""
    args = [a for c in chunkers for a in ("-c", c)]
    result = invoke(
        "run", "--dataset", "demo", "--embedder", "fake()", *args, "--k", "1,5",
        "--out", str(out), "--no-cache", "--no-report", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.fixture(scope="module")
def tied_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[chunkmark.Results, list[str]]:
    out = tmp_path_factory.mktemp("tied") / "out"
    lines = cli_run(out, TIED)
    return chunkmark.open_results(out), lines


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def test_to_pandas_rows_are_the_rows_of_results_parquet(tmp_path: Path) -> None:
    results = chunkmark.evaluate(
        datasets=["demo"], chunkers=["fixed_tokens(size=[64, 128])"], embedders=["fake()"],
        retrieval=["top_k(k=[1, 5])"], out=tmp_path / "out", no_cache=True, report=False,
    )  # fmt: skip
    frame = results.to_pandas()
    rows = pq.read_table(tmp_path / "out" / "results.parquet").to_pylist()
    # 2 chunkings x 1 embedder x 2 settings x 64 questions, one scoring
    assert len(frame) == len(rows) == 2 * 2 * 64
    assert list(frame.columns) == list(rows[0])
    records = frame.to_dict("records")
    assert all(
        same(mine[k], theirs[k]) for mine, theirs in zip(records, rows, strict=True) for k in theirs
    )

    summary = results.summary_frame()
    with (tmp_path / "out" / "summary.csv").open(encoding="utf-8", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert len(summary) == len(written) > 0
    for mine, theirs in zip(summary.to_dict("records"), written, strict=True):
        assert mine["chunker"] == theirs["chunker"] and mine["retrieval"] == theirs["retrieval"]
        assert same(float(mine["iou_mean"]), float(theirs["iou_mean"]))
        assert same(float(mine["recall_ci_low"]), float(theirs["recall_ci_low"]))

    # read back from the folder: the same summary rows, values and types
    opened = chunkmark.open_results(tmp_path / "out")
    assert isinstance(results, chunkmark.Results) and isinstance(opened, chunkmark.Results)
    assert opened.config == results.config
    assert len(opened.summary) == len(results.summary)
    for mine, theirs in zip(opened.summary, results.summary, strict=True):
        assert mine.keys() == theirs.keys()
        assert all(same(mine[k], theirs[k]) and type(mine[k]) is type(theirs[k]) for k in mine)


def test_recommendation_fields_are_what_chunkmark_run_prints(
    tied_run: tuple[chunkmark.Results, list[str]],
) -> None:
    results, lines = tied_run
    printed = "\n".join(lines)
    rec = results.recommendation()
    assert isinstance(rec, RunRecommendation)
    assert rec.best is not None and rec.mean is not None
    assert rec.ci_low is not None and rec.ci_high is not None
    assert (rec.dataset, rec.n_questions, rec.embedder) == ("demo", 64, "fake(dimension=64)")
    measured = (
        f"{rec.best.name}: {rec.metric_label} {100 * rec.mean:.2f}% [{100 * rec.ci_low:.2f}, "
        f"{100 * rec.ci_high:.2f}] with {rec.retrieval_short}, {rec.n_questions} questions."
    )
    assert f"demo x {rec.embedder}" in printed and measured in printed
    assert f"P(best) = {rec.best.p_best:.2f}" in printed
    # No single winner here: the tied group, its cheapest cell and the questions needed.
    assert not rec.single_winner and rec.tied
    for cell in rec.tied:
        assert f"{cell.name} (P(best) = {cell.p_best:.2f})" in printed
    assert rec.cheapest is not None
    assert f"the cheapest to index is {rec.cheapest.name}" in printed
    assert f"{rec.cheapest.tokens_embedded:,} tokens embedded" in printed
    assert rec.separating is not None and rec.questions_needed is not None
    assert f"Separating {rec.separating[0]} and {rec.separating[1]}" in printed
    assert f"about {rec.questions_needed:,} questions" in printed
    # The interval is the one summary.csv holds for the best cell at that setting.
    row = next(
        r
        for r in results.summary
        if r["scope"] == "all"
        and r["retrieval"] == rec.retrieval
        and r["chunker"] == rec.best.chunker
        and r["embedder"] == rec.best.embedder
    )
    key = rec.metric
    assert (row[f"{key}_mean"], row[f"{key}_ci_low"], row[f"{key}_ci_high"]) == pytest.approx(
        (rec.mean, rec.ci_low, rec.ci_high), abs=1e-12
    )


def test_a_single_winner_and_its_runner_up_as_printed(tmp_path: Path) -> None:
    lines = cli_run(tmp_path / "out", CLEAR)
    printed = "\n".join(lines)
    rec = chunkmark.open_results(tmp_path / "out").recommendation()
    assert rec.single_winner and not rec.tied and rec.cheapest is None
    assert rec.best is not None and rec.runner_up is not None and rec.difference is not None
    assert rec.best.name == "fixed_tokens(size=40)"
    assert f"Recommended for demo x fake(dimension=64): {rec.best.name}: " in printed
    assert f"the runner-up, {rec.runner_up.name}, is {100 * abs(rec.difference):.2f} points" in (
        printed
    )
    assert rec.p_adjusted is not None and f"p = {rec.p_adjusted:.2g}" in printed
    with pytest.raises(ReportError, match="none is 'other'"):
        chunkmark.open_results(tmp_path / "out").recommendation("other")


def test_figures_plot_the_summary_rows_and_their_pareto_fronts(
    tied_run: tuple[chunkmark.Results, list[str]],
) -> None:
    pytest.importorskip("plotly")
    import plotly.graph_objects as go

    results, _ = tied_run
    figures = results.figures(metric="recall", retrieval="top_k(k=5)")
    assert set(figures) == {
        "size: fixed_tokens", "size: sentences", "size: words", "recall_precision", "cost",
    }  # fmt: skip
    assert all(isinstance(f, go.Figure) for f in figures.values())
    at5 = [r for r in results.summary if r["scope"] == "all" and r["retrieval"] == "top_k(k=5)"]
    cells, front = figures["recall_precision"].data
    points = sorted(zip(cells.x, cells.y, strict=True))
    # The same floats: both come from summary.csv's text, times 100.
    assert points == sorted((100 * r["recall_mean"], 100 * r["precision_mean"]) for r in at5)
    # The front: exactly the points no other point beats on both recall and precision.
    undominated = sorted(
        p for p in points if not any(q[0] >= p[0] and q[1] >= p[1] and q != p for q in points)
    )
    assert sorted(zip(front.x, front.y, strict=True)) == undominated
    # One size plot per family, one line per retrieval setting: recall at each setting.
    words = figures["size: words"].data
    by_name = {t.name: t.y[0] for t in words}
    assert by_name == (
        {
            r["retrieval"]: 100 * r["recall_mean"]
            for r in results.summary
            if r["scope"] == "all" and r["chunker"].startswith("words(")
        }
    )
    # Cost: the tokens each cell's chunks hold, as the manifest records them.
    cost_cells, _ = figures["cost"].data
    assert sorted(cost_cells.x) == sorted(
        float(c["chunk_tokens"]) for c in results.manifest["cells"]
    )


def test_repr_html_shows_the_recommendation_and_the_best_rows(
    tied_run: tuple[chunkmark.Results, list[str]],
) -> None:
    results, _ = tied_run
    shown = results._repr_html_()
    rec = results.recommendation()
    assert rec.best is not None and rec.mean is not None
    assert f"demo: {rec.best.name}, {rec.metric_label} {100 * rec.mean:.2f}%" in shown
    tied = f"{len(rec.tied)} cell{'s' if len(rec.tied) > 1 else ''} tied with it"
    assert f"no single winner ({tied})" in shown
    assert "<table>" in shown and shown.count("<tr>") == 1 + 3  # header and three cells
    first = shown.index("<tbody><tr><td>demo</td><td>") + len("<tbody><tr><td>demo</td><td>")
    assert shown[first:].startswith(rec.best.name)  # the best row first


def test_without_pandas_the_dataframes_say_which_extra(
    tied_run: tuple[chunkmark.Results, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    results, _ = tied_run
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(MissingDependencyError) as raised:
        results.to_pandas()
    assert str(raised.value) == (
        "A DataFrame of the results needs the 'pandas' package, which is not installed. "
        "Fix: pip install 'chunkmark[notebook]'"
    )
    with pytest.raises(MissingDependencyError):
        results.summary_frame()
    assert results.recommendation().best is not None  # the rest works without it
