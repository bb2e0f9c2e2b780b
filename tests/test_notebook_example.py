"""examples/demo.ipynb executed as a reader would run it (nbclient, a Jupyter kernel of this
environment's Python), its outputs checked against the run it wrote: the recommendation the
notebook shows against what ``chunkmark run`` prints for that folder, its row count against
results.parquet, its figure's points against summary.csv."""

from __future__ import annotations

import csv
import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "demo.ipynb"
OUT = "results/notebook-demo"  # the notebook's own --out, relative to where it runs
KERNEL = "chunkmark-tests"


def texts(cell: Any, kind: str) -> str:
    """Every output of ``kind`` (``stdout``, or a MIME type such as ``text/html``) of a cell."""
    found = []
    for output in cell.get("outputs", []):
        if kind == "stdout" and output.get("name") == "stdout":
            found.append(output["text"])
        elif kind in output.get("data", {}):
            value = output["data"][kind]
            found.append(value if isinstance(value, str) else json.dumps(value))
    return "".join(found)


def code_cell(notebook: Any, starts: str) -> Any:
    (cell,) = [c for c in notebook.cells if c.cell_type == "code" and c.source.startswith(starts)]
    return cell


@pytest.mark.integration
def test_the_example_notebook_runs_and_shows_the_runs_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from nbclient import NotebookClient

    from chunkmark.report.recommendation_text import recommendation_lines

    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(tmp_path / "cache"))  # the kernel inherits it
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))  # this checkout's chunkmark
    # The kernel is this environment's Python: a kernel spec of our own, found first on
    # JUPYTER_PATH, so no python3 spec installed for the user or the system is picked instead.
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "chunkmark tests", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    probe = nbformat.v4.new_code_cell(
        "import sys, chunkmark\nprint(sys.executable)\nprint(chunkmark.__file__)"
    )
    notebook.cells.insert(0, probe)
    NotebookClient(
        notebook,
        timeout=900,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()

    executable, package = texts(notebook.cells[0], "stdout").split()
    assert Path(executable).resolve() == Path(sys.executable).resolve()
    assert Path(package).resolve() == (ROOT / "src" / "chunkmark" / "__init__.py").resolve()
    out = tmp_path / OUT

    # The recommendation shown is what `chunkmark run` prints for this folder.
    printed = recommendation_lines(out)
    found = re.search(
        r"(\S+): (\S+) ([\d.]+)% \[([\d.]+), ([\d.]+)\] with (\S+), (\d+) questions",
        "\n".join(printed),
    )
    assert found is not None, printed
    name, metric, mean, low, high, setting, n = found.groups()
    shown = texts(code_cell(notebook, "rec = results.recommendation()"), "stdout")
    assert shown.startswith(f"best: {name}, {metric} {mean}% [{low}, {high}] with {setting}\n")
    single = printed[0].startswith("Recommended for ")
    assert f"single winner: {single};" in shown
    repr_html = texts(code_cell(notebook, "results"), "text/html")
    assert f"demo: {name}, {metric} {mean}% [{low}, {high}] with {setting}, {n} questions" in (
        repr_html
    )

    # The per-question rows are results.parquet's: 5 chunkings x 3 settings x 64 questions.
    written = pq.read_table(out / "results.parquet")
    assert written.num_rows == 5 * 3 * 64
    cell = code_cell(notebook, "df = results.to_pandas()")
    assert texts(cell, "stdout") == f"{written.num_rows} rows\n"
    table = texts(cell, "text/html")  # mean recall, a row per chunking, a column per setting
    for column in ("chunker", "retrieval"):
        assert all(
            html.escape(v, quote=False) in table for v in set(written.column(column).to_pylist())
        )

    # The figure plots summary.csv's recall and precision at the 1,024-token budget.
    figure = json.loads(texts(code_cell(notebook, "figures = "), "application/vnd.plotly.v1+json"))
    cells = next(t for t in figure["data"] if t["name"] == "cells")
    with (out / "summary.csv").open(encoding="utf-8", newline="") as handle:
        summary = [
            r
            for r in csv.DictReader(handle)
            if r["scope"] == "all" and r["retrieval"] == "token_budget(tokens=1024)"
        ]
    # JSON carries a float's shortest repr, which reads back as the same float.
    assert sorted(zip(cells["x"], cells["y"], strict=True)) == sorted(
        (100 * float(r["recall_mean"]), 100 * float(r["precision_mean"])) for r in summary
    )
    assert texts(code_cell(notebook, "again = "), "text/plain") == "True"
