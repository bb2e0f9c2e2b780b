"""Analyses a run carries: each hears every finished cell (computed or resumed) with the same
in-memory tables, and the runner writes its files and its manifest section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from chunkmark.experiments.analysis import AnalysisOutput, FinishedCell, FinishedRun
from chunkmark.experiments.runner import evaluate

GRID: dict[str, Any] = {
    "dataset": "demo",
    "chunkers": ["fixed_tokens(size=[100, 200], overlap=0)"],
    "embedders": ["fake()"],
    "k": [1, 3],
    "no_cache": True,
}


class Counting:
    """Records what it hears: per cell, its resumed flag, spans and rankings."""

    name = "counting"

    def __init__(self) -> None:
        self.cells: dict[str, dict[str, Any]] = {}
        self.computed: list[bool] = []

    def cell(self, cell: FinishedCell) -> None:
        self.computed.append(cell.result is not None)
        self.cells[cell.id] = {
            "resumed": cell.outcome.resumed,
            "rows": cell.table.num_rows,
            "spans": cell.chunks.select(["doc_id", "start", "end", "tokens"]).to_pydict(),
            "rankings": cell.rankings.select(["ranker", "question_id", "chunks"]).to_pydict(),
        }

    def finish(self, run: FinishedRun) -> AnalysisOutput:
        order = [o.id for o in run.outcomes]
        lines = "".join(f"{i},{self.cells[i]['rows']}\n" for i in order)
        return AnalysisOutput(
            section={"cells": order, "out": str(run.out)},
            files={"counting.csv": f"id,rows\n{lines}".encode()},
        )


def test_an_analysis_hears_every_cell_and_its_section_is_in_the_one_manifest(
    tmp_path: Path,
) -> None:
    first = Counting()
    results = evaluate(out=tmp_path, analyses=[first], **GRID)
    ids = [c["id"] for c in results.manifest["cells"]]
    assert list(first.cells) == ids and first.computed == [True, True]
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counting"] == {"cells": ids, "out": str(tmp_path)}
    assert results.analyses["counting"].section == manifest["counting"]
    assert results.files["counting"] == tmp_path / "counting.csv"
    csv = (tmp_path / "counting.csv").read_text(encoding="utf-8").splitlines()
    assert csv[0] == "id,rows" and [line.split(",")[0] for line in csv[1:]] == ids
    # The tables it heard are the cell files the runner wrote.
    for cell_id, heard in first.cells.items():
        base = tmp_path / "cells" / cell_id
        on_disk = pq.read_table(f"{base}.chunks.parquet").to_pydict()
        assert heard["spans"] == {k: on_disk[k] for k in heard["spans"]}
    # No report writer, no report.
    assert "report" not in results.files and not (tmp_path / "report.html").exists()

    again = Counting()
    rerun = evaluate(out=tmp_path, analyses=[again], **GRID)
    assert rerun.cells_resumed == 2 and again.computed == [False, False]
    assert {i: {**c, "resumed": False} for i, c in again.cells.items()} == first.cells
    assert all(c["resumed"] for c in again.cells.values())
    assert (tmp_path / "counting.csv").read_text(encoding="utf-8") == "\n".join(csv) + "\n"


def test_a_resumed_cell_without_its_chunk_file_is_computed_again(tmp_path: Path) -> None:
    evaluate(out=tmp_path, **GRID)
    (tmp_path / "cells").joinpath(
        next(p.name for p in (tmp_path / "cells").glob("*.chunks.parquet"))
    ).unlink()
    heard = Counting()
    rerun = evaluate(out=tmp_path, analyses=[heard], **GRID)
    assert (rerun.cells_resumed, rerun.cells_computed) == (1, 1)
    assert sorted(heard.computed) == [False, True]


class Failing(Counting):
    name = "failing"

    def finish(self, run: FinishedRun) -> AnalysisOutput:
        raise RuntimeError("the analysis broke")


def test_a_failing_analysis_leaves_the_grids_files(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="the analysis broke"):
        evaluate(out=tmp_path, analyses=[Failing()], **GRID)
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["cells"]) == 2 and "failing" not in manifest
    assert (tmp_path / "summary.csv").is_file() and (tmp_path / "results.parquet").is_file()


def test_the_report_writer_is_called_when_the_config_asks(tmp_path: Path) -> None:
    calls: list[tuple[Path, list[str]]] = []

    class Written:
        path: Path | None = None
        error: str | None = "no page today"

    def writer(out: Path, datasets: Any, progress: Any = None) -> Written:
        calls.append((out, [d.name for d in datasets]))
        return Written()

    results = evaluate(out=tmp_path / "a", report_writer=writer, **GRID)
    assert calls == [(tmp_path / "a", ["demo"])]
    assert results.report_error == "no page today"
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["report_error"] == "no page today"
    evaluate(out=tmp_path / "b", report_writer=writer, report=False, **GRID)
    assert len(calls) == 1
