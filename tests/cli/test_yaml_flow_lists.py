"""Spec lists written as YAML flow lists (``chunkers: [a(x=1, y=2), b()]``): YAML splits them at
every comma, parentheses or not; the pieces are rejoined when they make whole specs, and
otherwise the error names the file, the key and how to write the list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkmark.experiments.config import load_config, split_groups
from cli.app_runner import error_line, invoke

FIX = (
    'Fix: Quote each spec, e.g. chunkers: ["fixed_tokens(size=400, overlap=0)", '
    '"recursive(size=200)"], or write one `- spec` per line under `chunkers:`.'
)


def write(tmp_path: Path, chunkers: str, embedders: str = "[fake()]") -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"dataset: demo\nembedders: {embedders}\nchunkers: {chunkers}\n", encoding="utf-8"
    )
    return path


def test_a_flow_list_split_inside_parentheses_is_rejoined(tmp_path: Path) -> None:
    path = write(tmp_path, "[fixed_tokens(size=400, overlap=0), recursive(size=200)]")
    result = invoke("plan", str(path), "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["chunkers"] == [
        "fixed_tokens(size=400, overlap=0, encoding='cl100k_base')",
        "recursive(size=200, overlap=0, separators=['\\n\\n', '\\n', '.', '?', '!', ' ', ''], "
        "length='tokens', encoding='cl100k_base')",
    ]


def test_rejoined_specs_keep_their_text_and_quoted_items_stay_whole(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '["words(n=50)", fixed_tokens(size=400,overlap=0)]',
        embedders="[fake(dimension=8, seed=3)]",
    )
    config = load_config(path)
    assert config.chunkers == (
        "words(n=50, overlap=0)",
        "fixed_tokens(size=400, overlap=0, encoding='cl100k_base')",
    )
    assert config.embedders == ("fake(dimension=8, seed=3, max_words=None)",)


def test_pieces_that_do_not_rejoin_are_one_line_naming_file_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[fixed_tokens(size=400, overlap=0]")
    assert error_line(invoke("plan", str(path))) == (
        f"error: Cannot read `chunkers` in {path}, line 3: YAML splits a [...] list at every "
        "comma, also inside a spec's parentheses, and these pieces do not rejoin into whole "
        f"specs. {FIX}"
    )


def test_a_grid_list_inside_a_flow_list_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[fixed_tokens(size=[200, 400]), recursive(size=200)]")
    assert error_line(invoke("plan", str(path))) == (
        f"error: Cannot read `chunkers` in {path}, line 3: YAML cannot read a spec holding [ or "
        f"{{ inside an unquoted [...] list. {FIX}"
    )


@pytest.mark.parametrize(
    ("pieces", "groups"),
    [
        (["a(x=1", "y=2)", "b()"], [[0, 1], [2]]),
        (["a(x='p", "q')"], [[0, 1]]),  # a comma inside quotes inside a spec
        (["demo", None, "c(n=1", "m=2", "k=3)"], [[0], [1], [2, 3, 4]]),
        (["a(x=1"], None),
        (["a)"], None),
        (["a(x=1", None, "y=2)"], None),
    ],
)
def test_split_groups(pieces: list[str | None], groups: list[list[int]] | None) -> None:
    assert split_groups(pieces) == groups
