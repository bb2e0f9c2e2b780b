"""`chunkmark chunkers` and `chunkmark chunk`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from chunkmark.cli import chunkers
from chunkmark.errors import DatasetError, SpecError

TEXT = "Hello world. This is é text.\n\nSecond 😀 paragraph, with more words.\n"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test app."""

    chunkers.register(app)
    return app


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "doc.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    return path


def test_chunkers_lists_every_chunker(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["chunkers"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in ("fixed_tokens", "recursive", "sentences", "words"):
        assert name in result.output
    assert "size: int = 400" in result.output


@pytest.mark.parametrize(
    "spec", ["fixed_tokens(size=5, overlap=2)", "recursive(size=6)", "sentences(n=1)", "words(n=3)"]
)
def test_chunk_json_is_a_list_of_spans(app: typer.Typer, text_file: Path, spec: str) -> None:
    result = CliRunner().invoke(app, ["chunk", "--chunker", spec, str(text_file), "--json"])
    assert result.exit_code == 0, result.output
    spans = json.loads(result.stdout)
    assert spans and all(set(s) == {"start", "end"} for s in spans)
    assert all(0 <= s["start"] < s["end"] <= len(TEXT) for s in spans)
    covered = set().union(*(range(s["start"], s["end"]) for s in spans))
    assert all(i in covered for i, ch in enumerate(TEXT) if not ch.isspace())


def test_chunk_table(app: typer.Typer, text_file: Path) -> None:
    result = CliRunner().invoke(
        app, ["chunk", "-c", "sentences(n=1)", str(text_file)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "3 chunks" in result.output and "tokens" in result.output
    assert "Hello world." in result.output


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (["-c", "no_such_chunker"], SpecError, "Unknown chunker 'no_such_chunker'"),
        (["-c", "fixed_tokens(size=0)"], SpecError, "size must be a positive number"),
        (["-c", "fixed_tokens(size="], SpecError, "Cannot parse spec"),
        (["-c", "words(n=2)", "--", "missing.txt"], DatasetError, "Cannot read"),
    ],
)
def test_bad_input_raises_chunkmark_errors(
    app: typer.Typer, text_file: Path, args: list[str], error: type, message: str
) -> None:
    argv = ["chunk", *args] if "missing.txt" in args else ["chunk", *args, str(text_file)]
    result = CliRunner().invoke(app, argv)
    assert isinstance(result.exception, error)
    assert message in str(result.exception)
    assert "\n" not in str(result.exception)


def test_non_utf8_file_is_a_dataset_error(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café".encode("latin-1"))
    result = CliRunner().invoke(app, ["chunk", "-c", "words", str(path)])
    assert isinstance(result.exception, DatasetError)
    assert "not UTF-8" in str(result.exception)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("no_such_chunker", "Unknown chunker"), ("recursive(size=-3)", "size must be a positive")],
)
def test_console_script_prints_one_line_and_exits_2(
    text_file: Path, spec: str, message: str
) -> None:
    script = Path(sys.executable).parent / "chunkmark"
    assert script.exists(), f"the chunkmark console script is not installed beside {sys.executable}"
    proc = subprocess.run(
        [str(script), "chunk", "--chunker", spec, str(text_file)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert "Traceback" not in proc.stderr
