"""``--k`` sets the depths of the default top_k retrieval, ``--retrieval`` replaces that default:
together they are one line saying which --retrieval to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkmark.service.runs import top_k_spec
from cli.app_runner import error_line, invoke


@pytest.mark.parametrize("command", ["run", "plan"])
def test_k_with_retrieval_names_both_flags_and_the_retrieval_to_write(command: str) -> None:
    result = invoke(command, "--k", "5", "--retrieval", "token_budget(tokens=1024)")
    assert error_line(result) == (
        "error: --k cannot be combined with --retrieval: --k sets the depths of the default "
        "top_k retrieval, and --retrieval replaces that default. Fix: Give the depths as one "
        "more --retrieval: --retrieval 'top_k(k=5)'."
    )


def test_several_depths_become_one_top_k_list() -> None:
    result = invoke("run", "--k", "1,3,min", "-r", "bm25(k=5)")
    assert error_line(result).endswith("--retrieval 'top_k(k=[1, 3, \"min\"])'.")


@pytest.mark.parametrize(
    ("k", "settings"),
    [
        ("5", ["top_k(k=5)"]),
        ("min", ["top_k(k='min')"]),
        ("1,3,min", ["top_k(k=1)", "top_k(k=3)", "top_k(k='min')"]),
    ],
)
def test_the_suggested_spec_gives_the_settings_of_those_depths(k: str, settings: list[str]) -> None:
    from chunkmark.experiments.grid import expand_specs
    from chunkmark.retrieval import RETRIEVAL

    assert list(expand_specs([top_k_spec(k)], RETRIEVAL)) == settings


def test_an_experiment_file_with_both_keys_names_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("dataset: demo\nembedders: [fake()]\nk: [5]\nretrieval: [bm25(k=5)]\n")
    assert error_line(invoke("plan", str(path))) == (
        f"error: {path} gives both `k` (line 3) and `retrieval` (line 4): `k` sets the depths "
        "of the default top_k retrieval, and `retrieval` replaces that default. Fix: Put the "
        "depths in the retrieval list, e.g. top_k(k=[1, 5, 10]), and drop `k`."
    )
