"""The report on synthetic results folders of both schemas: several datasets in one run,
retrieval settings and scoring options as columns, rankings of several rankers, failed cells;
and folders written before any of that (one dataset, ``k`` only, one ranking per question)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import typer
from scipy.stats import kendalltau
from typer.testing import CliRunner

from chunkmark.errors import ChunkmarkError
from chunkmark.metrics import METRICS
from chunkmark.report import ReportError, ReportOptions, build_report, write_run_report
from chunkmark.report.comparisons import StatsOptions, analyse
from chunkmark.report.data import LeaderRow, ReportData, load_runs, read_ranking
from chunkmark.report.exports import export_table, mlflow_metric_name
from chunkmark.report.inspector import build_inspector
from chunkmark.report.settings import (
    DEFAULT_SCORING,
    Scoring,
    choose_retrieval,
    choose_scoring,
    match_retrieval,
    ordered,
    settings_registry,
    short_forms,
)

BUDGET = "token_budget(tokens=200)"
BM25 = "bm25(k=5, method='lucene', k1=1.5, b=0.75)"
SETTINGS = ["top_k(k=1)", "top_k(k=5)", BUDGET, BM25]
TOKENS = Scoring("position", "tokens", "sum")
FAST = StatsOptions(permutations=500, bootstrap=500)
Make = Callable[..., Any]


@pytest.fixture(scope="module")
def new(make_run: Make) -> Any:
    return make_run("new")


@pytest.fixture(scope="module")
def old(make_run: Make) -> Any:
    return make_run("old", old=True)


@pytest.fixture(scope="module")
def new_data(new: Any) -> ReportData:
    return load_runs([new.path])


def page_data(path: Path) -> dict[str, Any]:
    page = path.read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    payload: dict[str, Any] = json.loads(found.group(1))
    return payload


def row_of(data: ReportData, expected: dict[str, str]) -> LeaderRow:
    """The report's row for one summary.csv row."""
    cell = next(
        c
        for c in data.cells
        if c.dataset == expected.get("dataset", c.dataset)
        and (c.chunker, c.embedder) == (expected["chunker"], expected["embedder"])
    )
    retrieval = expected.get("retrieval") or f"top_k(k={expected['k']})".replace("k=min", "k='min'")
    row = data.row(cell.index, retrieval, Scoring.from_row(expected).key)
    assert row is not None, expected
    return row


def best_cell(data: ReportData, dataset: str, retrieval: str, scoring: str, metric: str) -> int:
    rows = [
        r
        for r in data.rows
        if (r.retrieval, r.scoring) == (retrieval, scoring)
        and data.cells[r.cell].dataset == dataset
    ]
    return max(rows, key=lambda r: r.mean[metric]).cell


# --- reading --------------------------------------------------------------------------------


def test_new_schema_rows_equal_the_summary(new: Any, new_data: ReportData) -> None:
    summary = new.summary()
    # 2 datasets x 2 chunkers x (4 settings + a second scoring of top_k(k=5))
    assert len(new_data.rows) == len(summary) == 2 * 2 * 5
    for expected in summary:
        row = row_of(new_data, expected)
        assert row.k == expected["k"]
        assert row.n_questions == int(expected["n_questions"])
        assert row.retrieved_tokens == float(expected["mean_retrieved_tokens"])
        assert row.k_used == float(expected["mean_k_used"])
        for m in METRICS.names():
            assert row.mean[m] == float(expected[f"{m}_mean"])
            assert row.std[m] == float(expected[f"{m}_std"])
        for m in METRICS.with_interval():
            assert row.ci[m] == (float(expected[f"{m}_ci_low"]), float(expected[f"{m}_ci_high"]))
    assert new_data.retrievals == SETTINGS
    assert new_data.scorings == [DEFAULT_SCORING, TOKENS]
    assert new_data.ks == ["1", "5"]


def test_per_question_scores_are_grouped_by_setting_and_scoring(
    new: Any, new_data: ReportData
) -> None:
    table = pq.read_table(new.path / "results.parquet").to_pydict()
    cell = new_data.cells[0]
    for retrieval, scoring in [(BUDGET, DEFAULT_SCORING), ("top_k(k=5)", TOKENS)]:
        scores = new_data.scores[(cell.index, retrieval, scoring.key)]
        rows = [
            i
            for i in range(len(table["question_id"]))
            if (table["dataset"][i], table["chunker"][i], table["retrieval"][i])
            == (cell.dataset, cell.chunker, retrieval)
            and Scoring.from_row({c: table[c][i] for c in ("excerpts", "unit", "denominator")})
            == scoring
        ]
        assert scores.question_ids == tuple(table["question_id"][i] for i in rows)
        assert scores.k_used.tolist() == [table["k_used"][i] for i in rows]
        assert scores.values["iou"].tolist() == [table["iou"][i] for i in rows]
        assert scores.retrieved_tokens is not None
        assert scores.retrieved_tokens.tolist() == [table["retrieved_tokens"][i] for i in rows]


def test_one_run_with_two_datasets(new: Any, new_data: ReportData) -> None:
    assert [d.key for d in new_data.datasets] == ["alpha", "beta"]
    assert [d.fingerprint for d in new_data.datasets] == [d.fingerprint for d in new.datasets]
    (run,) = new_data.runs
    assert run.datasets == ("alpha", "beta") and run.cells == 4
    assert [len(new_data.cells_of(d)) for d in ("alpha", "beta")] == [2, 2]
    # Left to its defaults, a grid with a token budget is read by recall at that budget (the
    # fair comparison); asked for, IoU at top_k(k=5).
    for rec in analyse(new_data, FAST)[0]:
        assert (rec.metric, rec.retrieval) == ("recall", BUDGET)
        assert rec.best is not None
        assert rec.best.cell == best_cell(new_data, rec.dataset, BUDGET, rec.scoring, "recall")
    recs, comparisons = analyse(new_data, replace(FAST, metric="iou", retrieval="top_k(k=5)"))
    assert [r.dataset for r in recs] == ["alpha", "beta"]
    for rec in recs:
        assert (rec.retrieval, rec.scoring) == ("top_k(k=5)", DEFAULT_SCORING.key)
        assert rec.best is not None
        assert rec.best.cell == best_cell(new_data, rec.dataset, "top_k(k=5)", rec.scoring, "iou")
        row = new_data.row(rec.best.cell, "top_k(k=5)", rec.scoring)
        assert row is not None and rec.best.mean == row.mean["iou"]
        assert rec.n_questions == len(new.datasets[["alpha", "beta"].index(rec.dataset)].questions)
    (agreement,) = comparisons.agreements
    means = {
        (new_data.cells[r.cell].dataset, new_data.cells[r.cell].chunker): r.mean["iou"]
        for r in new_data.rows
        if (r.retrieval, r.scoring) == ("top_k(k=5)", DEFAULT_SCORING.key)
    }
    a = [means[("alpha", c)] for c in new.chunkers]
    b = [means[("beta", c)] for c in new.chunkers]
    assert agreement.n_cells == 2
    assert agreement.tau == pytest.approx(kendalltau(a, b).statistic)


def test_failed_cells_are_read(new: Any, new_data: ReportData) -> None:
    (failure,) = new_data.failures
    (written,) = new.failures
    assert (failure.dataset, failure.chunker, failure.embedder, failure.error) == (
        "alpha",
        written["chunker"],
        written["embedder"],
        written["error"],
    )
    assert all(c.chunker != written["chunker"] for c in new_data.cells)


def test_old_schema_folder(old: Any) -> None:
    data = load_runs([old.path])
    summary = old.summary()
    assert len(data.rows) == len(summary) == 2 * 3
    assert data.retrievals == ["top_k(k=1)", "top_k(k=5)", "top_k(k='min')"]
    assert data.scorings == [DEFAULT_SCORING] and data.failures == []
    assert [d.key for d in data.datasets] == ["alpha"]
    table = pq.read_table(old.path / "results.parquet").to_pydict()
    for expected in summary:
        row = row_of(data, expected)
        assert row.mean["recall"] == float(expected["recall_mean"])
        # No retrieved_tokens recorded: summed over the dense ranking's top k_used chunks.
        cell = data.cells[row.cell]
        chunks = pq.read_table(cell.chunks_path()).to_pydict()
        ranking = pq.read_table(cell.ranking_path()).to_pydict()
        position = {q: i for i, q in enumerate(ranking["question_id"])}
        used = [
            (q, u)
            for q, u, c, k in zip(
                table["question_id"], table["k_used"], table["chunker"], table["k"], strict=True
            )
            if (c, k) == (cell.chunker, expected["k"])
        ]
        tokens = [
            sum(chunks["tokens"][i] for i in ranking["chunks"][position[q]][:u]) for q, u in used
        ]
        assert row.retrieved_tokens == pytest.approx(np.mean(tokens))
        assert row.k_used == pytest.approx(np.mean([u for _, u in used]))
    recs, _ = analyse(data, FAST)
    assert recs[0].retrieval == "top_k(k=5)"
    recs, _ = analyse(data, StatsOptions(k="min", permutations=200, bootstrap=200))
    assert recs[0].retrieval == "top_k(k='min')"
    assert recs[0].best is not None
    assert recs[0].best.cell == best_cell(data, "alpha", "top_k(k='min')", recs[0].scoring, "iou")


def test_old_and_new_folders_pool_by_fingerprint(old: Any, new: Any) -> None:
    data = load_runs([old.path, new.path])
    assert [d.key for d in data.datasets] == ["alpha", "beta"]
    assert len(data.cells) == 4  # alpha's two cells are in both folders: kept once
    # The new folder adds what the old one lacks for alpha: top_k(k=5) in tokens, the budget
    # and bm25 (3 rows per cell), and beta's 10 rows.
    assert len(data.rows) == 6 + 2 * 3 + 10
    assert len(data.notes) == 2 and all("3 row(s)" in n for n in data.notes)
    alpha = data.cells_of("alpha")[0]
    assert alpha.cell_dir == old.path / "cells"
    assert data.row(alpha.index, BUDGET, DEFAULT_SCORING.key) is not None
    assert data.row(alpha.index, "top_k(k='min')", DEFAULT_SCORING.key) is not None


def test_a_manifest_without_a_dataset_is_refused(new: Any, tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"cells": [], "datasets": [{}]}))
    with pytest.raises(ReportError, match="names no dataset"):
        load_runs([tmp_path])


# --- the dense ranking ----------------------------------------------------------------------


def test_the_inspector_reads_the_dense_ranking(new: Any, new_data: ReportData) -> None:
    cell = new_data.cells_of("alpha")[0]
    table = pq.read_table(cell.ranking_path()).to_pydict()
    dense = [
        c for r, c in zip(table["ranker"], table["chunks"], strict=True) if r.startswith("exact(")
    ]
    ranking = read_ranking(cell.ranking_path())
    assert ranking is not None and ranking.chunks == dense
    dataset = new.datasets[0]
    payload = build_inspector(new_data, new_data.datasets[0], dataset)
    assert payload["available"] is True
    deepest = max(
        int(s.k_used.max()) for (c, r, _), s in new_data.scores.items() if r != BM25 and c < 2
    )
    assert payload["depth"] == deepest == 10  # the budget's deepest question
    carried = payload["cells"][str(cell.index)]
    first = np.cumsum(carried["rank"][0]).tolist()
    assert first == dense[0][:10]
    budget = new_data.scores[(cell.index, BUDGET, DEFAULT_SCORING.key)]
    assert set(carried["kUsed"]) == {BUDGET}  # top_k settings have a fixed depth
    assert carried["kUsed"][BUDGET] == budget.k_used.tolist()


# --- statistics and the page ----------------------------------------------------------------


def test_the_retrieval_option_picks_one_setting(new_data: ReportData) -> None:
    available = new_data.retrievals
    assert choose_retrieval(available, None, None) == "top_k(k=5)"
    assert choose_retrieval(available, None, "1") == "top_k(k=1)"
    assert choose_retrieval(available, "bm25(k=5)", None) == BM25
    assert choose_retrieval(available, "top_k(5)", "1") == "top_k(k=5)"  # --retrieval wins
    assert choose_retrieval(available, " token_budget(tokens=200.0)", None) == BUDGET
    with pytest.raises(ReportError, match="not in the runs"):
        choose_retrieval(available, "top_k(k=7)", None)
    if settings_registry() is not None:  # parameters left out take their defaults
        assert choose_retrieval(available, "top_k", None) == "top_k(k=5)"
    else:  # they match any value
        with pytest.raises(ReportError, match="matches 2 settings"):
            choose_retrieval(available, "top_k", None)
    custom = ["custom(k=5, x=1)", "custom(k=5, x=2)"]  # settings this version cannot resolve
    assert choose_retrieval(custom, "custom(x=2)", None) == custom[1]
    with pytest.raises(ReportError, match="matches 2 settings"):
        choose_retrieval(custom, "custom(k=5)", None)
    with pytest.raises(ReportError, match=r"k=3 \(top_k\(k=3\)\) is not in the runs"):
        choose_retrieval(available, None, "3")
    assert choose_retrieval([BUDGET, "top_k(k=2)"], None, None) == "top_k(k=2)"
    assert choose_retrieval([BM25, BUDGET], None, None) == BUDGET
    recs, _ = analyse(new_data, StatsOptions(retrieval=BUDGET, permutations=200, bootstrap=200))
    for rec in recs:
        assert rec.retrieval == BUDGET and rec.best is not None
        assert rec.best.cell == best_cell(new_data, rec.dataset, BUDGET, rec.scoring, "iou")


def test_scoring_defaults_else_the_first() -> None:
    union = Scoring("text", "tokens", "union")
    assert choose_scoring([TOKENS, DEFAULT_SCORING]) == DEFAULT_SCORING
    assert choose_scoring([union, TOKENS]) == TOKENS
    assert Scoring.from_row({"k": "5"}) == DEFAULT_SCORING
    assert Scoring.from_key(union.key) == union


def test_a_named_scoring_is_analysed(new_data: ReportData) -> None:
    options = StatsOptions(metric="recall", scoring=TOKENS.key, permutations=200, bootstrap=200)
    recs, _ = analyse(new_data, options)
    for rec in recs:
        assert rec.scoring == TOKENS.key and rec.best is not None
        row = new_data.row(rec.best.cell, "top_k(k=5)", TOKENS.key)
        assert row is not None and rec.best.mean == row.mean["recall"]
        assert rec.best.cell == best_cell(new_data, rec.dataset, "top_k(k=5)", TOKENS.key, "recall")
    with pytest.raises(ReportError, match="scoring text/chars/sum is not in the runs"):
        analyse(new_data, StatsOptions(scoring="text/chars/sum"))


def test_the_budget_recommendation_uses_the_recorded_tokens(new_data: ReportData) -> None:
    rows = [
        r
        for r in new_data.rows
        if (r.retrieval, r.scoring) == ("top_k(k=5)", DEFAULT_SCORING.key)
        and new_data.cells[r.cell].dataset == "alpha"
    ]
    small, large = sorted(rows, key=lambda r: r.retrieved_tokens)
    assert small.retrieved_tokens < large.retrieved_tokens
    budget = (small.retrieved_tokens + large.retrieved_tokens) / 2
    options = StatsOptions(
        retrieval="top_k(k=5)", max_context_tokens=budget, permutations=200, bootstrap=200
    )
    rec = analyse(new_data, options)[0][0]
    assert rec.budget is not None and rec.budget.cell == small.cell
    assert rec.budget.retrieved_tokens == small.retrieved_tokens


def test_the_page_of_a_new_schema_run(new: Any, new_data: ReportData, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    report = build_report([new.path], out, ReportOptions(permutations=300, bootstrap=300))
    payload = page_data(out)
    options = payload["meta"]["options"]
    # The grid has a token budget: the page reads recall there by default.
    assert options["retrieval"] == BUDGET and options["scoring"] == DEFAULT_SCORING.key
    assert options["metric"] == "recall"
    assert options["scoringLabel"] == "excerpts=position, unit=chars, denominator=sum"
    assert len(payload["rows"]) == 20
    assert [r["spec"] for r in payload["retrievals"]] == SETTINGS
    shorts = {r["spec"]: r["short"] for r in payload["retrievals"]}
    assert shorts[BM25] == "bm25(k=5)" and shorts[BUDGET] == BUDGET
    (budget,) = [r for r in payload["retrievals"] if r["name"] == "token_budget"]
    assert budget["budget"] == 200 and budget["dense"] is True and budget["depth"] is None
    budget_rows = [r for r in payload["rows"] if r["retrieval"] == BUDGET]
    assert len(budget_rows) == 4  # their own leaderboard rows, one per cell
    (failure,) = payload["failures"]
    assert failure["dataset"] == "alpha" and "EmbeddingError" in failure["error"]
    assert [r["dataset"] for r in payload["recommendations"]] == ["alpha", "beta"]
    # The page's verdict and its reason are the analysis's: a tie (or too few questions) is
    # named as the reason, never "a winner needs P(best) >= ..." beside a P(best) above it.
    for shown, rec in zip(payload["recommendations"], report.recommendations, strict=True):
        assert (shown["verdict"], shown["reason"]) == (rec.verdict, rec.reason)
        assert shown["verdict"] in {"winner", "tied", "inconclusive", "single"}
        tied = rec.best is not None and len(rec.best.tied) > 1
        assert ("tied with it" in rec.reason) == (rec.winner is None and tied)
    assert set(payload["fronts"]) == {"alpha", "beta"}
    assert set(payload["fronts"]["alpha"]) == set(SETTINGS)  # at the chosen scoring
    # The similarity shares read the dense ranking: rows of bm25 have none; the plots show the
    # analysed scoring only.
    shares = payload["similarity"]["share"]
    heat = payload["perDocument"]["values"]
    for i, row in enumerate(payload["rows"]):
        analysed = row["scoring"] == DEFAULT_SCORING.key
        assert (str(i) in shares) == (row["retrieval"] != BM25 and analysed)
        assert (str(i) in heat) == analysed
    assert [i["available"] for i in payload["inspector"]] == [True, True]
    assert len(report.data.rows) == 20
    page = out.read_text(encoding="utf-8")
    assert 'id="failures"' in page and 'id="budget-note"' in page


def test_write_run_report_takes_the_runs_datasets(new: Any) -> None:
    heard: list[str] = []
    written = write_run_report(new.path, new.datasets, heard.append)
    path = written.path
    assert written.error is None and path == new.path / "report.html" and path.is_file()
    assert any(m.startswith("report") for m in heard)
    payload = page_data(path)
    assert [i["available"] for i in payload["inspector"]] == [True, True]


# --- exports --------------------------------------------------------------------------------


def test_exports_carry_the_retrieval_setting(new: Any, new_data: ReportData) -> None:
    rows = list(csv.DictReader(io.StringIO(export_table(new_data, "csv"))))
    summary = {
        (r["dataset"], r["chunker"], r["retrieval"], Scoring.from_row(r).key): r
        for r in new.summary()
    }
    assert len(rows) == len(summary) == 20
    assert ordered(r["retrieval"] for r in rows) == SETTINGS
    for row in rows:
        want = summary[
            (row["dataset"], row["chunker"], row["retrieval"], Scoring.from_row(row).key)
        ]
        assert float(row["iou_mean"]) == float(want["iou_mean"])
        assert float(row["mean_retrieved_tokens"]) == float(want["mean_retrieved_tokens"])
        assert row["k"] == want["k"]
    md = export_table(new_data, "markdown").splitlines()
    assert md[0].startswith("| dataset | chunker | embedder | retrieval | scoring | recall |")
    assert md[1].startswith("|---|---|---|---|---|---:|")
    assert sum("| bm25(k=5) |" in line for line in md) == 4
    budget = export_table(new_data, "markdown", BUDGET).splitlines()
    assert len(budget) == 2 + 4 and all(f"| {BUDGET} |" in line for line in budget[2:])
    tex = export_table(new_data, "latex", BM25)
    assert tex.startswith("\\begin{tabular}{lllll") and "bm25(k=5)" in tex


def test_mlflow_metric_names(new_data: ReportData) -> None:
    names = {(r.retrieval, r.scoring): mlflow_metric_name("iou", r) for r in new_data.rows}
    assert names[("top_k(k=5)", DEFAULT_SCORING.key)] == "iou_at_5"
    assert names[("top_k(k=5)", TOKENS.key)] == "iou_at_top_k_k_5_position_tokens_sum"
    assert names[(BUDGET, DEFAULT_SCORING.key)] == "iou_at_token_budget_tokens_200"
    assert len(set(names.values())) == len(names)


# --- settings -------------------------------------------------------------------------------


def test_short_forms_keep_what_tells_settings_apart() -> None:
    other = "bm25(k=5, method='lucene', k1=1.2, b=0.75)"
    threshold = "threshold(min_similarity=0.5, max_k=20)"
    short = short_forms([BM25, other, "top_k(k='min')", threshold])
    assert short[BM25] == "bm25(k=5, k1=1.5)" and short[other] == "bm25(k=5, k1=1.2)"
    assert short["top_k(k='min')"] == "top_k(k='min')"
    assert short[threshold] == "threshold(min_similarity=0.5)"
    assert ordered([BM25, threshold, "top_k(k='min')", "top_k(k=10)", "top_k(k=2)", BUDGET]) == [
        "top_k(k=2)",
        "top_k(k=10)",
        "top_k(k='min')",
        BUDGET,
        threshold,
        BM25,
    ]
    assert match_retrieval("bm25(k=5, k1=1.2)", [BM25, other]) == other


# --- the commands ---------------------------------------------------------------------------


def test_the_report_command_with_a_retrieval_setting(new: Any, tmp_path: Path) -> None:
    from chunkmark.cli.report import register

    app = typer.Typer()
    register(app)
    app.command("other")(lambda: None)
    out = tmp_path / "pages"
    args = ["report", str(new.path), "--out", str(out), "--permutations", "1000"]
    result = CliRunner().invoke(app, [*args, "--pick-retrieval", "token_budget(tokens=200)"])
    # A token budget picked without --metric is read by recall (a fixed context: what it holds).
    assert result.exit_code == 0, result.output
    assert "alpha: best recall with token_budget(tokens=200)" in result.output
    assert "beta: best recall with token_budget(tokens=200)" in result.output
    assert "failed: alpha:" in result.output and "EmbeddingError" in result.output
    assert page_data(out / "report.html")["meta"]["options"]["retrieval"] == BUDGET
    listing = CliRunner().invoke(
        app, ["report", str(new.path), "--format", "csv", "--pick-retrieval", "bm25(k=5)"]
    )
    assert listing.exit_code == 0, listing.output
    rows = list(csv.DictReader(io.StringIO(listing.stdout)))
    assert len(rows) == 4 and {r["retrieval"] for r in rows} == {BM25}
    bad = CliRunner().invoke(app, ["report", str(new.path), "--format", "csv", "--pick-k", "7"])
    assert isinstance(bad.exception, ChunkmarkError) and "k=7" in str(bad.exception)
