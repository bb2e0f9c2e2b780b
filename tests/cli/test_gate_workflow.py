"""The GitHub Action and the workflow that uses it: valid YAML, every chunkmark command and
option they run exists (as ``--help`` lists it), the files they name are in the repository, and
the grid they gate passes against the committed baseline on this checkout."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from chunkmark.cli.app import _register_commands, app

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "chunkmark-gate.yml"


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def chunkmark_calls(script: str) -> list[list[str]]:
    """Each ``chunkmark ...`` command line of a step's shell script, split into words
    (``${{ ... }}`` expressions count as one word)."""
    calls = []
    for line in script.splitlines():
        line = re.sub(r"\$\{\{[^}]*\}\}", "EXPR", line).strip()
        if line.startswith("chunkmark "):
            calls.append(shlex.split(line)[1:])
    return calls


def options_of(command: str) -> set[str]:
    _register_commands()
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {o for p in click_command.params for o in getattr(p, "opts", ())}


def test_the_action_runs_the_grid_warm_gates_and_posts_the_table() -> None:
    action = load(ACTION)
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    scripts = "\n".join(s.get("run", "") for s in steps)
    calls = chunkmark_calls(scripts)
    assert [c[0] for c in calls] == ["run", "gate"]
    for words in calls:
        known = options_of(words[0])
        used = {w for w in words if w.startswith("--")}
        assert used <= known, f"chunkmark {words[0]}: {used - known} not in its options"
        help_text = subprocess.run(
            [sys.executable, "-m", "chunkmark", words[0], "--help"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "300"},
        ).stdout
        for option in used:
            assert option in help_text, f"{option} not in chunkmark {words[0]} --help"
    # The embedding cache: the folder chunkmark reads (CHUNKMARK_CACHE_DIR) is the one cached.
    cache = next(s for s in steps if str(s.get("uses", "")).startswith("actions/cache@"))
    exported = re.search(r'CHUNKMARK_CACHE_DIR=([^"]+)" >> "\$GITHUB_ENV"', scripts)
    assert exported and cache["with"]["path"] == exported.group(1)
    assert steps.index(cache) < next(
        i for i, s in enumerate(steps) if "chunkmark run" in s.get("run", "")
    )
    # The gate's status is kept, the table posted, then the job fails on a non-zero status.
    gate = next(s for s in steps if s.get("id") == "gate")
    assert "set +e" in gate["run"] and "--markdown" in gate["run"]
    post = next(s for s in steps if str(s.get("uses", "")).startswith("actions/github-script@"))
    assert "createComment" in post["with"]["script"] and "pull_request" in post["if"]
    last = steps[-1]
    assert "exit ${{ steps.gate.outputs.status }}" in last["run"]


def test_the_workflow_uses_the_action_with_files_that_exist() -> None:
    workflow = load(WORKFLOW)
    inputs = load(ACTION)["inputs"]
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "pull_request" in triggers
    assert workflow["permissions"]["pull-requests"] == "write"
    (job,) = workflow["jobs"].values()
    step = next(s for s in job["steps"] if s.get("uses") == "./")
    given = step["with"]
    assert set(given) <= set(inputs)
    assert {k for k, v in inputs.items() if v.get("required")} <= set(given)
    assert (ROOT / given["experiment"]).is_file() and (ROOT / given["baseline"]).is_file()


@pytest.mark.integration
def test_the_gated_grid_passes_against_the_committed_baseline(tmp_path: Path) -> None:
    given = next(s for s in load(WORKFLOW)["jobs"]["gate"]["steps"] if s.get("uses") == "./")
    given = given["with"]
    out = tmp_path / "run"
    command = [sys.executable, "-m", "chunkmark"]
    quiet = ["--quiet", "--no-report", "--cache-dir", str(tmp_path / "cache")]
    subprocess.run(
        [*command, "run", str(ROOT / given["experiment"]), "--out", str(out), *quiet],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [*command, "gate", str(out), "--baseline", str(ROOT / given["baseline"]), "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["passed"] and len(result["cells"]) == 4
    assert all(c["status"] == "unchanged" for c in result["cells"])
