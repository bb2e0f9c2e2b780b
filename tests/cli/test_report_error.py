"""A report that cannot be built costs the run nothing, and the user hears why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.app_runner import invoke


def test_run_prints_why_the_report_was_not_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("the leaderboard broke")

    monkeypatch.setattr("chunkmark.report.build_report", broken)
    out = tmp_path / "run"
    args = ("run", "-d", "demo", "-e", "fake()", "-c", "recursive(size=200)", "--k", "1")
    done = invoke(*args, "--out", str(out), "--no-cache")
    assert done.exit_code == 0, done.output  # the run itself succeeded
    text = " ".join(done.output.split())
    assert "report.html not written: RuntimeError: the leaderboard broke" in text
    assert f"chunkmark report {out}" in text
    assert not (out / "report.html").exists()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["report_error"].startswith("RuntimeError: the leaderboard broke")
    assert (out / "results.parquet").is_file() and (out / "summary.csv").is_file()
