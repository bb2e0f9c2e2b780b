"""``chunkmark tune`` on the command line: the best setting and the trial table, ``--json``,
and bad settings as one clear error (fake embedder, demo data)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from chunkmark.cli import tune as tune_cli
from chunkmark.errors import ConfigError


def tune_app() -> typer.Typer:
    """An app with the ``tune`` command registered, as ``cli/app.py`` registers it."""
    app = typer.Typer(add_completion=False)

    @app.callback()
    def _root() -> None:
        """chunkmark"""

    tune_cli.register(app)
    return app


def write_experiment(tmp_path: Path) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        "dataset: demo\n"
        "chunkers:\n  - fixed_tokens(size=range(30, 150, 40), overlap=[0, 0.25])\n"
        "embedders: [fake()]\n",
        encoding="utf-8",
    )
    return path


def invoke(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    args = [
        "tune",
        str(write_experiment(tmp_path)),
        "--trials",
        "5",
        "--out",
        str(tmp_path / "out"),
        "--no-cache",
        "--no-report",
        *extra,
    ]
    result = CliRunner().invoke(tune_app(), args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_tune_prints_the_best_spec_and_every_trial(tmp_path: Path) -> None:
    code, stdout, stderr = invoke(tmp_path, "--recall-floor", "0.3")
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "tune.json").read_text(encoding="utf-8"))
    best = data["best"]
    assert best is not None
    flat = " ".join(stdout.split())  # the table may fold long specs
    assert f"best: {best['chunker']}" in flat
    assert "5 trials: iou and recall at top_k(k=5)" in flat
    for t in data["trials"]:
        assert f"{100 * t['value']:.2f}" in stdout
    assert "cells computed" in stderr


def test_tune_json_parses_and_matches_tune_json(tmp_path: Path) -> None:
    code, stdout, _ = invoke(tmp_path, "--json", "--seed", "7", "--metric", "recall")
    assert code == 0
    printed = json.loads(stdout)
    assert printed == json.loads((tmp_path / "out" / "tune.json").read_text(encoding="utf-8"))
    assert printed["settings"]["seed"] == 7
    assert printed["objective"]["metric"] == "recall"
    assert len(printed["trials"]) == 5


def test_a_retrieval_setting_not_in_the_grid_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not one of the experiment's: top_k\(k=1\)"):
        invoke(tmp_path, "--pick-retrieval", "top_k(k=7)")
    assert not (tmp_path / "out" / "cells").exists()


def test_the_chunkmark_app_reports_a_bad_setting_in_one_line(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "chunkmark", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)

    exp = write_experiment(tmp_path)
    done = cli("tune", str(exp), "--trials", "2", "--pick-retrieval", "top_k(k=7)", "--no-cache")
    assert done.returncode == 2
    assert done.stderr.startswith("error: The retrieval setting 'top_k(k=7)' is not one of")
    assert "Traceback" not in done.stderr
