from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from chunkmark.cli.datasets import register
from chunkmark.errors import DatasetError
from chunkmark.paths import CACHE_DIR_ENV

WIDE = {"COLUMNS": "200"}


def run(*args: str) -> Result:
    app = typer.Typer()
    register(app)
    return CliRunner().invoke(app, ["datasets", *args], env=WIDE)


@pytest.fixture(autouse=True)
def _empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))


def bad_dataset(folder: Path) -> Path:
    folder.mkdir()
    (folder / "documents.jsonl").write_text(
        json.dumps({"id": "d", "text": "Some text here."}) + "\n", encoding="utf-8"
    )
    rows = [
        {"id": "q1", "question": "Q?", "doc_id": "d", "excerpts": [{"start": 0, "end": 99}]},
        {"id": "q2", "question": "", "doc_id": "x", "excerpts": [{"start": 0, "end": 4}]},
    ]
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    return folder


def test_validate_ok() -> None:
    result = run("validate", "demo")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok: 4 documents, 64 questions, fingerprint ")


def test_validate_lists_problems_and_exits_1(tmp_path: Path) -> None:
    result = run("validate", str(bad_dataset(tmp_path / "bad")))
    assert result.exit_code == 1
    assert "questions.jsonl" in result.output
    assert "fall outside the document" in result.output
    assert "has an empty question text" in result.output
    assert "doc_id 'x' is not a document" in result.output
    assert "3 problems in" in result.output


def test_validate_missing_folder(tmp_path: Path) -> None:
    result = run("validate", str(tmp_path / "absent"))
    assert result.exit_code == 1
    assert "does not exist" in result.output


def test_validate_chroma_general_before_download() -> None:
    result = run("validate", "chroma-general")
    assert isinstance(result.exception, DatasetError)
    assert "chunkmark datasets download chroma-general" in str(result.exception)


def test_show_demo() -> None:
    result = run("show", "demo")
    assert result.exit_code == 0, result.output
    assert "demo: 4 documents, 64 questions" in result.output
    assert "tidewell-manual" in result.output
    assert "excerpt characters" in result.output


def test_show_bad_dataset_raises_the_one_line_error(tmp_path: Path) -> None:
    result = run("show", str(bad_dataset(tmp_path / "bad")))
    assert isinstance(result.exception, DatasetError)
    assert "questions.jsonl, line 1" in str(result.exception)


def test_list() -> None:
    result = run("list")
    assert result.exit_code == 0, result.output
    assert "demo" in result.output
    assert "chroma-general" in result.output
    assert "not downloaded" in result.output


def test_download_unknown_name() -> None:
    result = run("download", "nope")
    assert isinstance(result.exception, DatasetError)
