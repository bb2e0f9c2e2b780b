"""The leaderboard exported as markdown, LaTeX and CSV, and logged to an MLflow file store."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

import chunkmark
from chunkmark.report.data import load_runs
from chunkmark.report.exports import export_table, latex_escape, log_to_mlflow, table_metrics

CHUNKERS = ["fixed_tokens(size=100, overlap=0)", "recursive(size=300, overlap=0)"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exports") / "run"
    chunkmark.evaluate(
        dataset="demo", chunkers=CHUNKERS, embedders=["fake()"], k=[1, 5], out=out, no_cache=True
    )
    return out


def _summary(run_dir: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (run_dir / "summary.csv").open() as f:
        return {(r["chunker"], r["k"]): r for r in csv.DictReader(f) if r["scope"] == "all"}


def test_csv_equals_the_summary(run_dir: Path) -> None:
    data = load_runs([run_dir])
    rows = list(csv.DictReader(io.StringIO(export_table(data, "csv"))))
    summary = _summary(run_dir)
    assert len(rows) == len(summary) == 4
    for row in rows:
        want = summary[(row["chunker"], row["k"])]
        assert row["retrieval"] == f"top_k(k={row['k']})"
        for m in table_metrics():
            assert float(row[f"{m.name}_mean"]) == pytest.approx(float(want[f"{m.name}_mean"]))
        assert float(row["recall_ci_low"]) == pytest.approx(float(want["recall_ci_low"]))
        assert int(row["n_chunks"]) == int(want["n_chunks"])
    # Best first within each k (by the first table metric, recall).
    at_5 = [float(r["recall_mean"]) for r in rows if r["k"] == "5"]
    assert at_5 == sorted(at_5, reverse=True)


def test_markdown_and_latex_tables(run_dir: Path) -> None:
    data = load_runs([run_dir])
    md = export_table(data, "markdown", "top_k(k=5)").splitlines()
    assert md[0].startswith("| dataset | chunker | embedder | retrieval | recall |")
    assert md[1].startswith("|---|---|---|---|---:|")
    assert len(md) == 2 + 2  # header, rule, one row per cell at k=5
    assert all("| top_k(k=5) |" in line for line in md[2:])
    summary = _summary(run_dir)
    recall = 100 * float(
        summary[(chunkmark.CHUNKERS.resolve(CHUNKERS[0]).__str__(), "5")]["recall_mean"]
    )
    assert any(f"| {recall:.1f} [" in line for line in md[2:])
    tex = export_table(data, "latex", "top_k(k=5)")
    assert tex.startswith("\\begin{tabular}{llllr") and tex.rstrip().endswith("\\end{tabular}")
    assert "prec. $\\Omega$" in tex and "fixed\\_tokens(size=100)" in tex
    assert latex_escape("a_b & 50% #1 {x}") == "a\\_b \\& 50\\% \\#1 \\{x\\}"


def test_mlflow_logs_one_run_per_cell(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a local file store, as in tests
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    data = load_runs([run_dir])
    ids = log_to_mlflow(data, None, uri, experiment="test")
    assert len(ids) == len(data.cells) == 2
    client = MlflowClient(tracking_uri=uri)
    summary = _summary(run_dir)
    for run_id in ids:
        run = client.get_run(run_id)
        chunker = run.data.params["chunker"]
        want = float(summary[(chunker, "5")]["iou_mean"])
        assert run.data.metrics["iou_at_5"] == pytest.approx(want)
        assert run.data.metrics["n_chunks"] == float(summary[(chunker, "5")]["n_chunks"])
        artifacts = [a.path for a in client.list_artifacts(run_id)]
        assert "leaderboard.csv" in artifacts
