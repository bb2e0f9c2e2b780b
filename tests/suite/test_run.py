"""``chunkmark suite run``: one grid over several sets, one results folder per set, resumable."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from chunkmark.cli.app import _register_commands, app
from chunkmark.datasets import load_dataset
from chunkmark.retrieval import RETRIEVAL
from chunkmark.suite.run import DEFAULT_SETTINGS, scope_of
from conftest import shared_dir

CHUNKERS = ["fixed_tokens(size=[128, 256])"]


def suite(*args: str) -> Any:
    _register_commands()
    return CliRunner().invoke(app, ["suite", *args])


@pytest.fixture
def suite_root() -> Path:
    path = shared_dir() / "datasets" / "suite"
    if not path.is_dir():
        pytest.skip(f"the suite's raw files are not at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.integration
def test_two_sets_run_resume_and_a_bad_set_fails_alone(
    suite_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "suite"
    args = [
        "run", "fairytaleqa", "covid_qa", "no_such_set", "--grid", "fast", "--docs", "2",
        "--from", str(suite_root), "--out", str(out), "--embedder", "fake()", "--quiet", "--json",
        *(a for c in CHUNKERS for a in ("--chunker", c)),
    ]  # fmt: skip
    first = suite(*args)
    assert first.exit_code == 1, first.output
    assert "failed: no_such_set: no downloadable dataset named 'no_such_set'" in first.output
    summary = json.loads(first.stdout)
    assert summary["failed"] == ["no_such_set"]
    assert summary["cells_computed"] == 4 and summary["cells_resumed"] == 0

    described = json.loads((out / "suite.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in described["sets"]] == ["fairytaleqa", "covid_qa"]
    for entry in described["sets"]:
        dataset = load_dataset(entry["dataset"])
        assert entry["documents"] == len(dataset.documents) == 2
        assert entry["questions"] == len(dataset.questions)
        # both sets ask each question of one document: they search only that document
        assert entry["scope"] == "document"
        assert all(q.metadata["scope"] == "document" for q in dataset.questions)
    assert [s["label"] for s in described["settings"]] == [s.label for s in DEFAULT_SETTINGS]

    combined = read_csv(out / "combined.csv")
    for entry in described["sets"]:
        own = [r for r in read_csv(out / entry["folder"] / "summary.csv")]
        mine = [r for r in combined if r["set"] == entry["name"]]
        assert len(mine) == len(own) > 0
        for row, theirs in zip(mine, own, strict=True):
            assert row["recall_mean"] == theirs["recall_mean"]
            assert row["retrieval"] == theirs["retrieval"]
            document_spec = next(
                s["document"] for s in described["settings"] if s["label"] == row["setting"]
            )
            assert str(RETRIEVAL.resolve(document_spec)) == row["retrieval"]
        rows = pq.read_table(out / entry["folder"] / "results.parquet").column("retrieval")
        assert {str(v) for v in rows.to_pylist()} == {
            str(RETRIEVAL.resolve(s["document"])) for s in described["settings"]
        }

    second = suite(*args[:3], *args[4:])  # without the bad set: every cell resumes
    assert second.exit_code == 0, second.output
    again = json.loads(second.stdout)
    assert again["cells_computed"] == 0 and again["cells_resumed"] == 4


def test_scope_needs_every_question_to_be_per_document() -> None:
    demo = load_dataset("demo")
    assert scope_of(demo) == "corpus"


def test_bad_grid_is_a_usage_error(tmp_path: Path) -> None:
    result = suite("run", "covid_qa", "--grid", "huge", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "'huge' is not a suite grid: use one of default, fast" in result.output


def test_progress_renders_the_runners_markup_and_keeps_brackets_of_specs() -> None:
    # The runner's warning carries rich markup, as `chunkmark run` prints it; a spec's list
    # (a tag must start with a letter) and an escaped error stay as written.
    from rich.markup import escape

    from chunkmark.cli.suite import progress_console

    console = progress_console()
    with console.capture() as captured:
        console.print("cuad: [yellow]warning:[/] cuad: x: questions are no closer")
        console.print("cuad: cell recursive(separators=['\\n\\n', ' '], sizes=[128, 256])")
        console.print(f"failed: qmsum: {escape('bad key [default: x] in grid')}")
    shown = captured.get()
    assert "cuad: warning: cuad: x: questions are no closer" in shown
    assert "[yellow]" not in shown and "[/]" not in shown
    assert "separators=['\\n\\n', ' '], sizes=[128, 256])" in shown
    assert "bad key [default: x] in grid" in shown


def copy_demo(folder: Path) -> Path:
    """The demo dataset as a user's own folder (JSONL layout)."""
    import shutil

    from chunkmark.datasets import demo

    shutil.copytree(Path(demo.__file__).parent / "demo_data", folder)
    return folder


def test_own_dataset_runs_instead_of_the_suite_and_the_leaderboard_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before --dataset, `suite run myset` said "no downloadable dataset named 'myset'" and
    # printed its JSON summary on stdout without being asked to.
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(tmp_path / "cache"))
    myset = copy_demo(tmp_path / "data" / "myset")
    out = tmp_path / "suite"
    args = [
        "run", "--dataset", str(myset), "--grid", "fast", "--out", str(out),
        "--embedder", "fake()", "--quiet", *(a for c in CHUNKERS for a in ("--chunker", c)),
    ]  # fmt: skip
    ran = suite(*args)
    assert ran.exit_code == 0, ran.output
    assert "{" not in ran.stdout  # lines for people; JSON only with --json
    assert f"myset: {out / 'myset'} (corpus scope)" in ran.stdout
    assert f"Leaderboard: chunkmark suite leaderboard {out}" in ran.stdout
    assert "1 set run with the fast grid" in ran.stdout and "2 cells computed" in ran.stdout

    described = json.loads((out / "suite.json").read_text(encoding="utf-8"))
    assert [(s["name"], s["scope"], s["questions"]) for s in described["sets"]] == [
        ("myset", "corpus", 64)
    ]
    # The set's results are those of an ordinary run of the same grid on the same folder.
    direct = chunkmark_run(myset, tmp_path / "direct")
    own = read_csv(out / "myset" / "summary.csv")
    assert len(own) == len(direct) > 0
    key = ("chunker", "embedder", "retrieval", "scope", "unit")
    assert sorted((*(r[k] for k in key), r["recall_mean"], r["iou_mean"]) for r in own) == sorted(
        (*(r[k] for k in key), r["recall_mean"], r["iou_mean"]) for r in direct
    )

    board = suite("leaderboard", str(out), "--budget", "1024")
    assert board.exit_code == 0, board.output
    assert "over 1 sets" in board.stdout
    assert "myset" in (out / "leaderboard.md").read_text(encoding="utf-8")

    again = suite(*args, "--json")  # every cell resumes; stdout is one JSON document
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["sets"] == {"myset": str(out / "myset")}
    assert summary["cells_computed"] == 0 and summary["cells_resumed"] == 2


def chunkmark_run(dataset: Path, out: Path) -> list[dict[str, str]]:
    """``chunkmark run`` of the fast grid's settings with the test's chunkers, over ``dataset``."""
    from chunkmark.experiments.runner import evaluate

    evaluate(
        datasets=[str(dataset)],
        chunkers=CHUNKERS,
        embedders=["fake()"],
        retrieval=[s.corpus for s in DEFAULT_SETTINGS],
        out=out,
        report=False,
    )
    return read_csv(out / "summary.csv")


@pytest.mark.integration
def test_own_dataset_beside_a_suite_set_in_one_leaderboard(
    suite_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(tmp_path / "cache"))
    myset = copy_demo(tmp_path / "myset")
    out = tmp_path / "suite"
    ran = suite(
        "run", "fairytaleqa", "--dataset", str(myset), "--grid", "fast", "--docs", "2",
        "--from", str(suite_root), "--out", str(out), "--embedder", "fake()", "--quiet", "--json",
        *(a for c in CHUNKERS for a in ("--chunker", c)),
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.stdout)
    assert summary["scopes"] == {"fairytaleqa": "document", "myset": "corpus"}
    assert summary["cells_computed"] == 4
    combined = read_csv(out / "combined.csv")
    assert {r["set"] for r in combined} == {"fairytaleqa", "myset"}
    board = suite("leaderboard", str(out), "--budget", "1024", "--json")
    assert board.exit_code == 0, board.output
    ranked = json.loads(board.stdout)
    assert [(s["name"], s["scope"]) for s in ranked["sets"]] == [
        ("fairytaleqa", "document"),
        ("myset", "corpus"),
    ]


def test_own_dataset_names_must_differ_and_folders_exist(tmp_path: Path) -> None:
    from chunkmark.errors import ConfigError
    from cli.app_runner import error_line

    a = copy_demo(tmp_path / "a" / "cuad")
    clash = suite("run", "cuad", "--dataset", str(a), "--out", str(tmp_path / "s"))
    assert isinstance(clash.exception, ConfigError)  # `chunkmark` prints it as one line, exit 2
    assert error_line(clash) == (
        f"error: --dataset {a}: a set named 'cuad' is already in this suite run, and each "
        "set's results go to OUT/<set name>. Fix: Give each dataset folder its own name "
        "(rename or link the folder)."
    )
    b = copy_demo(tmp_path / "b" / "cuad")
    twice = suite("run", "--dataset", str(a), "--dataset", str(b), "--out", str(tmp_path / "s"))
    assert f"--dataset {b}: a set named 'cuad' is already" in error_line(twice)
    missing = suite("run", "--dataset", str(tmp_path / "nope"), "--out", str(tmp_path / "s"))
    assert f"error: --dataset {tmp_path / 'nope'}: no such folder. Fix: Give the folder" in (
        error_line(missing)
    )
    assert not (tmp_path / "s").exists()  # nothing ran, nothing was written
