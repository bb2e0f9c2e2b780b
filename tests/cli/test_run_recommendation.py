"""``chunkmark run`` ends with the answer: the cell the report recommends, the cells tied with
it and where report.html is (with --no-report, and without plotly, no page and no path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chunkmark.cli.recommend import recommendation_lines
from cli.app_runner import invoke

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
    assert expected[0].startswith(
        f"Recommended for demo x fake(dimension=64): {best.chunker_short}: IoU "
        f"{100 * rec.best.mean:.2f}% [{100 * rec.best.ci_low:.2f}, {100 * rec.best.ci_high:.2f}]"
        f" with top_k(k=5), {rec.n_questions} questions."
    )
    tied = [report.data.cells[o[0]].chunker_short for o in rec.best.tied if o != rec.best.option]
    if tied:
        assert expected[1].startswith(
            f"Tied with it (paired tests cannot tell them apart): {', '.join(tied)}"
        )
    else:
        assert expected[1].startswith("No cell ties with it: the runner-up, ")
    assert expected[-1] == f"Report: {out / 'report.html'}"


def test_no_report_ends_with_the_recommendation_and_no_path(tmp_path: Path) -> None:
    lines = run(tmp_path / "out", "--no-report")
    assert not (tmp_path / "out" / "report.html").exists()
    assert lines[-2].startswith("Recommended for demo x fake(dimension=64): ")
    assert lines[-1].startswith(("Tied with it", "No cell ties with it"))
    assert not any(line.startswith("Report:") for line in lines)


def test_without_plotly_the_recommendation_is_still_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly raises ImportError
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    lines = run(tmp_path / "out")
    assert not (tmp_path / "out" / "report.html").exists()
    assert lines[-2].startswith("Recommended for demo x fake(dimension=64): ")
    assert not any(line.startswith("Report:") for line in lines)


def test_a_single_cell_says_so(tmp_path: Path) -> None:
    result = invoke(
        "run", "--dataset", "demo", "--embedder", "fake()", "-c", "words(n=60)",
        "--out", str(tmp_path / "out"), "--no-cache", "--no-report", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip("\n").splitlines()[-1] == "It is the only cell scored."
