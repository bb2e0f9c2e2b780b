"""`chunkmark datasets stitch` and `chunkmark chunkers diagnose` through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from chunkmark.chunkers import CHUNKERS, chunk_document
from chunkmark.chunkers.diagnostics import diagnose
from chunkmark.cli import chunkers, datasets
from chunkmark.datasets import load_dataset
from chunkmark.errors import DatasetError
from chunkmark.paths import CACHE_DIR_ENV

STITCH = ["--files", "3", "--docs-per-file", "3", "--segment-chars", "150,500", "--seed", "2"]
FIXED = "fixed_tokens(size=40, overlap=0)"


def run(*args: str) -> Result:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test app."""

    chunkers.register(app)
    datasets.register(app)
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))


@pytest.fixture
def stitched(tmp_path: Path) -> Path:
    out = tmp_path / "stitched"
    result = run("datasets", "stitch", "demo", "--out", str(out), *STITCH)
    assert result.exit_code == 0, result.output
    return out


def test_stitch_writes_a_valid_dataset_the_same_way_twice(stitched: Path, tmp_path: Path) -> None:
    again = tmp_path / "second" / "stitched"
    result = run("datasets", "stitch", "demo", "--out", str(again), *STITCH)
    assert result.exit_code == 0, result.output
    assert "ok: 3 documents, 6 topic boundaries" in result.output
    files = sorted(p.relative_to(stitched) for p in stitched.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert len(files) == 5  # three corpus files, the questions, the boundaries
    for name in files:
        assert (stitched / name).read_bytes() == (again / name).read_bytes()
    assert run("datasets", "validate", str(stitched)).exit_code == 0


def test_stitch_refuses_a_non_empty_folder_and_bad_lengths(stitched: Path) -> None:
    result = run("datasets", "stitch", "demo", "--out", str(stitched))
    assert isinstance(result.exception, DatasetError)
    assert "add --force" in str(result.exception)
    result = run(
        "datasets", "stitch", "demo", "--out", str(stitched), "--force", "--segment-chars", "9"
    )
    assert isinstance(result.exception, DatasetError)
    assert "MIN,MAX" in str(result.exception)


def test_diagnose_json_equals_the_library(stitched: Path) -> None:
    result = run("chunkers", "diagnose", "--dataset", "demo", "--chunker", FIXED, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 1 and rows[0]["boundaries"] is None
    data = load_dataset("demo")
    fn, _ = CHUNKERS.build(FIXED)
    chunks = [c for d in data.documents for c in chunk_document(fn, d.id, d.text)]
    expected = diagnose(data, chunks).to_dict()
    assert {k: rows[0][k] for k in expected} == expected
    assert rows[0]["dataset"] == "demo" and rows[0]["label"] == "fixed_tokens(size=40)"


def test_diagnose_boundaries_on_a_stitched_corpus(stitched: Path) -> None:
    result = run(
        "chunkers", "diagnose", "--boundaries", str(stitched), "-c", FIXED, "-c", "paragraphs"
    )
    assert result.exit_code == 0, result.output
    assert "Agreement with true topic boundaries" in result.output
    assert "WindowDiff" in result.output and "fixed_tokens(size=40)" in result.output
    result = run(
        "chunkers", "diagnose", "--boundaries", str(stitched), "-c", FIXED, "--json",
        "--tolerance", "0", "-d", "demo",
    )  # fmt: skip
    rows = json.loads(result.stdout)
    assert [r["dataset"] for r in rows] == ["demo", "stitched"]
    agreement = rows[1]["boundaries"]
    assert agreement["true_boundaries"] == 6 and agreement["tolerance"] == 0
    assert 0 <= agreement["pk"] <= 1 and 0 <= agreement["f1"] <= 1


def test_diagnose_a_semantic_chunker_with_the_given_embedder(stitched: Path) -> None:
    spec = "kamradt_modified(avg_size=60, min_size=20)"
    result = run(
        "chunkers", "diagnose", "--boundaries", str(stitched), "-c", spec,
        "--embedder", "fake()", "--no-cache", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["boundaries"]["predicted_boundaries"] > 0


def test_diagnose_reads_an_experiment_file(tmp_path: Path) -> None:
    config = tmp_path / "exp.yaml"
    config.write_text(
        "datasets: [demo]\nchunkers: ['fixed_tokens(size=[40, 80])']\nembedders: ['fake()']\n",
        encoding="utf-8",
    )
    result = run("chunkers", "diagnose", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert [r["label"] for r in json.loads(result.stdout)] == [
        "fixed_tokens(size=40)",
        "fixed_tokens(size=80)",
    ]


def test_diagnose_without_boundaries_file(tmp_path: Path) -> None:
    result = run("chunkers", "diagnose", "--boundaries", str(tmp_path), "-c", FIXED)
    assert result.exception is not None


def test_chunkers_alone_still_lists() -> None:
    result = run("chunkers")
    assert result.exit_code == 0, result.output
    assert "fixed_tokens" in result.output and "size: int = 400" in result.output
