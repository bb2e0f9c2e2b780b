"""The grid flags and the experiment file: each flag given replaces that key of the file, and
leaves the others (the file's embedders stay unless -e is given); --help says so for each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkmark.service.runs import Grid
from cli.app_runner import invoke

FILE = """datasets: [demo]
chunkers: ["words(n=50)"]
embedders: ["fake(dimension=32)"]
k: [2]
"""
FLAGS: dict[str, tuple[str, Any, tuple[Any, ...]]] = {  # flag -> (keyword, value, result)
    "--dataset": ("datasets", ["demo_copy"], ("demo_copy",)),
    "--chunker": ("chunkers", ["sentences(n=2)"], ("sentences(n=2, overlap=0)",)),
    "--embedder": ("embedders", ["fake(seed=1)"], ("fake(dimension=64, seed=1, max_words=None)",)),
    "--k": ("k", "1,min", (1, "min")),
}
BEFORE = {
    "datasets": ("demo",),
    "chunkers": ("words(n=50, overlap=0)",),
    "embedders": ("fake(dimension=32, seed=0, max_words=None)",),
    "k": (2,),
}


@pytest.mark.parametrize("flag", list(FLAGS))
def test_a_grid_flag_replaces_its_key_of_the_experiment_file(tmp_path: Path, flag: str) -> None:
    config_file = tmp_path / "exp.yaml"
    config_file.write_text(FILE)
    (tmp_path / "demo_copy").mkdir()
    keyword, value, expected = FLAGS[flag]
    config = Grid(experiment=config_file, **{keyword: value}).config()
    seen = {key: tuple(getattr(config, key)) for key in BEFORE}
    if keyword == "datasets":
        seen["datasets"] = tuple(Path(d).name for d in config.datasets)
    assert seen == {**BEFORE, keyword: expected}


def test_the_retrieval_flag_replaces_the_files_settings(tmp_path: Path) -> None:
    config_file = tmp_path / "exp.yaml"
    config_file.write_text(FILE.replace("k: [2]\n", "retrieval: ['bm25(k=3)']\n"))
    config = Grid(retrieval=["top_k(k=min)"], experiment=config_file).config()
    assert config.retrieval == ("top_k(k='min')",)
    assert config.embedders == BEFORE["embedders"]


@pytest.mark.parametrize("command", ["run", "plan"])
def test_help_says_each_grid_flag_replaces_the_files_key(command: str) -> None:
    text = " ".join(invoke(command, "--help", columns=400).stdout.split())
    for flag in ("--dataset", "--chunker", "--embedder", "--k", "--retrieval"):
        after = text.split(f"{flag} ", 1)[1].split(" │ ")[0]
        assert "replaces the experiment file's" in after, (flag, after)
