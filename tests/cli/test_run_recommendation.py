"""``chunkmark run`` ends with the answer: the cell the report recommends, the cells tied with
it and where report.html is (with --no-report, and without plotly, no page and no path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chunkmark.report.recommendation_text import recommendation_lines
from cli.app_runner import error_line, invoke

CHUNKERS = ("-c", "fixed_tokens(size=64)", "-c", "sentences(n=2)", "-c", "words(n=60)")


def run(out: Path, *extra: str) -> list[str]:
    result = invoke(
        "run", "--dataset", "demo", "--embedder", "fake()", *CHUNKERS, "--k", "1,5",
        "--out", str(out), "--no-cache", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout.rstrip("\n").splitlines()


def test_the_last_lines_are_the_report_recommendation_and_its_path(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    from chunkmark.report import build_report

    out = tmp_path / "out"
    lines = run(out)
    report = build_report([out], tmp_path / "again.html")  # the page's own analysis
    (rec,) = report.recommendations
    assert rec.best is not None
    best = report.data.cells[rec.best.cell]
    expected = recommendation_lines(out, out / "report.html")
    assert lines[-len(expected) :] == expected
    measured = (
        f"{best.chunker_short}: IoU "
        f"{100 * rec.best.mean:.2f}% [{100 * rec.best.ci_low:.2f}, {100 * rec.best.ci_high:.2f}]"
        f" with top_k(k=5), {rec.n_questions} questions. P(best) = "
        f"{rec.p_best_of(rec.best.option):.2f}"
    )
    # On these 64 questions sentences(n=2) is best by mean and in 98% of resamples, but the
    # paired tests tie fixed_tokens(size=64) with it: no single winner, the group and its cost.
    # The reason given is the tie (not "P(best) = 0.98; a winner needs P(best) >= 0.9", which
    # reads as a contradiction), and 64 questions are fewer than the top two need: inconclusive.
    assert rec.winner is None and rec.p_best_of(rec.best.option) >= rec.min_p_best
    assert rec.top_two is not None and rec.top_two.needed.n is not None
    assert rec.top_two.needed.n > rec.n_questions and rec.verdict == "inconclusive"
    assert expected[0] == (
        "No single winner for demo x fake(dimension=64) (inconclusive): 1 other cell is tied "
        "with it (the paired tests cannot tell them apart); inconclusive, not a tie: about "
        f"{rec.top_two.needed.n:,} questions would separate the top two, and this run has 64."
    )
    assert expected[1] == f"The best by mean is {measured}."
    assert not any("a winner needs" in line for line in expected)
    tied = [o for o in rec.best.tied if o != rec.best.option]
    assert len(tied) == 1
    names = [
        f"{report.data.cells[o[0]].chunker_short} (P(best) = {rec.p_best_of(o):.2f})" for o in tied
    ]
    assert expected[2] == f"Tied with it (paired tests cannot tell them apart): {', '.join(names)}."
    assert rec.cheapest_tied is not None
    cheapest = report.data.cells[rec.cheapest_tied.cell].chunker_short
    assert expected[3].startswith(
        f"Choose on cost within the group: the cheapest to index is {cheapest}"
    )
    assert expected[4].startswith(
        f"Separating {best.chunker_short} and {report.data.cells[rec.top_two.b[0]].chunker_short} "
    )
    assert f"would take about {rec.top_two.needed.n:,} questions for 80% power" in expected[4]
    assert expected[-1] == f"Report: {out / 'report.html'}"
    # The P(best) shown is the share of resamples the library computes for these values.
    from chunkmark.metrics.selection import p_best
    from chunkmark.report.comparisons import paired_values

    values = paired_values(report.data, [o for o, _ in rec.p_best], "iou")
    shares = p_best({str(o): v for o, v in values.items()}, resamples=10_000)
    assert [shares[str(o)] for o, _ in rec.p_best] == [p for _, p in rec.p_best]


def test_a_clear_winner_is_named_with_its_p_best(tmp_path: Path) -> None:
    """Chunks of 40 tokens beat chunks of 400 on IoU on every resample (compare's tests: p <
    0.01): a single winner, and the runner-up's gap and p-value."""
    result = invoke(
        "run", "--dataset", "demo", "--embedder", "fake()", "-c", "fixed_tokens(size=40)",
        "-c", "fixed_tokens(size=400)", "--out", str(tmp_path / "out"), "--no-cache",
        "--no-report", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    first, second = result.stdout.rstrip("\n").splitlines()[-2:]
    assert first.startswith("Recommended for demo x fake(dimension=64): fixed_tokens(size=40)")
    assert first.endswith(
        "P(best) = 1.00 (the share of bootstrap resamples of the questions in which it is best)."
    )
    assert second.startswith("No cell ties with it: the runner-up, fixed_tokens(size=400), is ")
    # The threshold is a share.
    bad = invoke(
        "run", "--dataset", "demo", "--embedder", "fake()", "-c", "fixed_tokens(size=40)",
        "--out", str(tmp_path / "bad"), "--no-cache", "--min-p-best", "1.5",
    )  # fmt: skip
    assert bad.exit_code == 2 and "1.5 is not a share" in bad.output


def test_no_report_ends_with_the_recommendation_and_no_path(tmp_path: Path) -> None:
    lines = run(tmp_path / "out", "--no-report")
    assert not (tmp_path / "out" / "report.html").exists()
    assert lines[-5].startswith("No single winner for demo x fake(dimension=64) (inconclusive): ")
    assert lines[-4].startswith("The best by mean is ")
    assert lines[-3].startswith("Tied with it")
    assert lines[-2].startswith("Choose on cost within the group: ")
    assert lines[-1].startswith("Separating ")
    assert not any(line.startswith("Report:") for line in lines)


def test_without_plotly_the_recommendation_is_still_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly raises ImportError
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    lines = run(tmp_path / "out")
    assert not (tmp_path / "out" / "report.html").exists()
    assert lines[-5].startswith("No single winner for demo x fake(dimension=64) (inconclusive): ")
    assert not any(line.startswith("Report:") for line in lines)


def test_a_single_cell_says_so(tmp_path: Path) -> None:
    result = invoke(
        "run", "--dataset", "demo", "--embedder", "fake()", "-c", "words(n=60)",
        "--out", str(tmp_path / "out"), "--no-cache", "--no-report", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip("\n").splitlines()[-1] == "It is the only cell scored."


# --- the verdict asked for: metric and retrieval setting ----------------------------------------

GRID = (
    "--dataset", "demo", "--embedder", "fake()", "-c", "fixed_tokens(size=40)",
    "-c", "fixed_tokens(size=400)", "--retrieval", "top_k(k=5)",
    "--retrieval", "token_budget(tokens=[512, 1024])", "--retrieval", "bm25(k=5)",
    "--no-cache", "--no-report", "--quiet",
)  # fmt: skip


def best_by_hand(out: Path, metric: str, retrieval: str) -> tuple[str, float]:
    """The chunker with the highest mean of ``metric`` at ``retrieval`` (default scoring), read
    straight from results.parquet."""
    import pyarrow.parquet as pq

    from chunkmark.chunkers import CHUNKERS

    cols = pq.read_table(out / "results.parquet").to_pydict()
    values: dict[str, list[float]] = {}
    for i, setting in enumerate(cols["retrieval"]):
        if setting == retrieval and cols["unit"][i] == "chars":
            values.setdefault(cols["chunker"][i], []).append(cols[metric][i])
    means = {c: sum(v) / len(v) for c, v in values.items()}
    best = max(means, key=lambda c: means[c])
    return CHUNKERS.short(best), means[best]


def summary_line(lines: list[str]) -> str:
    """The line naming the best cell and its mean."""
    return next(
        line for line in lines if line.startswith(("Recommended for", "The best by mean is"))
    )


def test_a_grid_with_token_budgets_is_recommended_by_recall_at_the_first_budget(
    tmp_path: Path,
) -> None:
    """Fault: the recommendation was IoU at top_k(k=5) even when the grid asked for token
    budgets (the fair comparison), BM25 and hybrid."""
    out = tmp_path / "out"
    result = invoke("run", *GRID, "--out", str(out))
    assert result.exit_code == 0, result.output
    line = summary_line(result.stdout.splitlines())
    chunker, mean = best_by_hand(out, "recall", "token_budget(tokens=512)")
    assert f"{chunker}: recall {100 * mean:.2f}% [" in line
    assert "with token_budget(tokens=512), 64 questions" in line


def test_run_metric_and_pick_retrieval_and_the_file_choose_the_verdict(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("run", *GRID, "--out", str(out), "--metric", "mrr", "--pick-retrieval", "bm25")
    assert result.exit_code == 0, result.output
    chunker, mean = best_by_hand(out, "mrr", "bm25(k=5, method='lucene', k1=1.5, b=0.75)")
    line = summary_line(result.stdout.splitlines())
    # The summary holds no interval for MRR: none is printed (not "[nan, nan]").
    assert f"{chunker}: MRR {100 * mean:.2f}% with bm25(k=5), 64 questions" in line
    # recommend: in the experiment file; the flags override it.
    config = tmp_path / "experiment.yaml"
    config.write_text(
        "datasets: [demo]\nembedders: ['fake()']\n"
        "chunkers: ['fixed_tokens(size=40)', 'fixed_tokens(size=400)']\n"
        "retrieval: ['top_k(k=5)', 'token_budget(tokens=[512, 1024])', 'bm25(k=5)']\n"
        "recommend: {metric: precision, retrieval: 'top_k(k=5)'}\n"
    )
    again = ("--out", str(out), "--no-cache", "--no-report", "--quiet")
    result = invoke("run", str(config), *again)
    assert result.exit_code == 0, result.output
    chunker, mean = best_by_hand(out, "precision", "top_k(k=5)")
    line = summary_line(result.stdout.splitlines())
    assert f"{chunker}: precision {100 * mean:.2f}% [" in line and "with top_k(k=5), 64" in line
    result = invoke("run", str(config), *again, "--pick-retrieval", "token_budget(tokens=1024)")
    chunker, mean = best_by_hand(out, "precision", "token_budget(tokens=1024)")
    line = summary_line(result.stdout.splitlines())
    assert f"{chunker}: precision {100 * mean:.2f}% [" in line
    assert "with token_budget(tokens=1024), 64" in line
    # What the grid does not hold is refused before anything runs, naming the settings.
    bad = invoke("run", *GRID, "--out", str(tmp_path / "bad"), "--pick-retrieval", "hybrid")
    assert "is not one of the grid's retrieval settings" in error_line(bad)
    assert not (tmp_path / "bad").exists()
    bad = invoke("run", *GRID, "--out", str(tmp_path / "bad"), "--metric", "nope")
    assert "--metric 'nope' is not a metric" in error_line(bad)
    config.write_text(config.read_text().replace("'top_k(k=5)'}", "'top_k(k=3)'}"))
    bad = invoke("run", str(config), "--out", str(tmp_path / "bad"))
    assert "recommend.retrieval 'top_k(k=3)'" in error_line(bad)
    assert not (tmp_path / "bad").exists()


def test_the_report_budget_pick_is_not_named_like_the_token_budget_setting() -> None:
    """Fault: report's --token-budget (a filter on cells) shared its name with the
    token_budget(...) retrieval setting."""
    result = invoke("report", "--help")
    text = " ".join(result.output.split())
    assert "--max-context-tokens" in text and "--token-budget" not in text
    assert invoke("report", ".", "--token-budget", "500").exit_code == 2
