"""A new chunker, a new embedder and a new metric, each added in this module and nowhere else:
they are listed by the CLI, run in a grid, and the metric reaches ``summary.csv``."""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import chunkmark
from chunkmark.chunkers import CHUNKERS, ChunkerFn
from chunkmark.counters import EmbedderStats
from chunkmark.datasets import load_dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.base import FloatArray, Kind, l2_normalise
from chunkmark.metrics import METRICS, ScoreInputs
from chunkmark.spans import Span

METRIC = "retrieved_chars"


class LetterEmbedder:
    """Letter frequencies: a crude but real embedding."""

    name = "letters"

    def __init__(self) -> None:
        self.inputs = 0

    def identity(self) -> dict[str, str]:
        return {"embedder": "letters"}

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        self.inputs += len(texts)
        out = np.zeros((len(texts), 27), np.float32)
        for row, text in enumerate(texts):
            for ch in text.lower():
                out[row, ord(ch) - 97 if "a" <= ch <= "z" else 26] += 1
        return l2_normalise(out)

    def stats(self) -> EmbedderStats:
        return EmbedderStats(inputs=self.inputs)


@pytest.fixture
def plugins() -> Iterator[None]:
    @CHUNKERS.register("halves")
    def halves(parts: int = 2) -> ChunkerFn:
        """Cut every document into ``parts`` pieces of equal length."""

        def chunk(text: str) -> list[Span]:
            bounds = np.linspace(0, len(text), parts + 1).astype(int)
            return [Span(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]

        return chunk

    @EMBEDDERS.register("letters")
    def letters() -> LetterEmbedder:
        """Letter frequencies (an example)."""
        return LetterEmbedder()

    @METRICS.register(METRIC, label="chars", direction="lower", on_screen=True)
    def retrieved_chars(s: ScoreInputs) -> np.ndarray:
        """Characters retrieved per question: what the context costs."""
        lengths = s.chunks.length[s.ranking]
        counted = np.arange(s.ranking.shape[1])[None, :] < s.depth[:, None]
        return np.asarray((lengths * counted).sum(axis=1), dtype=np.float64)

    try:
        yield
    finally:
        CHUNKERS.unregister("halves")
        EMBEDDERS.unregister("letters")
        METRICS.unregister(METRIC)


def test_new_components_are_listed_by_the_cli(plugins: None) -> None:
    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    runner = CliRunner()
    for command, name in (("chunkers", "halves"), ("embedders", "letters"), ("metrics", METRIC)):
        result = runner.invoke(app, [command], terminal_width=200)
        assert result.exit_code == 0, result.output
        assert name in result.output, f"`chunkmark {command}` does not list {name}"


def test_new_components_run_in_a_grid_and_the_metric_reaches_the_summary(
    plugins: None, tmp_path: Path
) -> None:
    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=["halves(parts=6)"],
        embedders=["letters()"],
        k=[1, 3],
        out=tmp_path,
        no_cache=True,
    )
    with (tmp_path / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {f"{METRIC}_mean", f"{METRIC}_std"} <= set(rows[0])
    assert f"{METRIC}_ci_low" not in rows[0]  # registered without an interval
    assert {r["chunker"] for r in rows} == {"halves(parts=6)"}

    # Cross-check the new metric against the built-in ones: retrieved characters are
    # overlap / precision, and overlap is recall x the excerpts' total length.
    cols = {
        k: np.asarray(v) for k, v in pq.read_table(tmp_path / "results.parquet").to_pydict().items()
    }
    dataset = load_dataset("demo")
    total = {q.id: sum(s.end - s.start for s in q.excerpts) for q in dataset.questions}
    excerpt_total = np.array([total[q] for q in cols["question_id"]], dtype=np.float64)
    scored = cols["precision"] > 0
    assert scored.sum() > 0
    expected = cols["recall"][scored] * excerpt_total[scored] / cols["precision"][scored]
    np.testing.assert_allclose(cols[METRIC][scored], expected, rtol=1e-9)
    at = {k: cols[METRIC][cols["k"] == k] for k in ("1", "3")}
    assert (at["3"] >= at["1"]).all() and (at["3"] > at["1"]).any()
    assert results.overall()[0][f"{METRIC}_mean"] == pytest.approx(at["1"].mean())


def test_the_run_table_shows_an_on_screen_metric(plugins: None, tmp_path: Path) -> None:
    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    args = ["run", "--dataset", "demo", "--chunker", "halves(parts=3)", "--embedder", "letters()"]
    args += ["--k", "1", "--no-cache", "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "recall" in line)
    assert "chars" in header
