"""The committed leaderboard (leaderboard/): the page and table are what `chunkmark suite
leaderboard` makes from the committed results alone, the results are a complete run of the
default grid, and the page renders offline in Chromium with an interval in every metric cell and
its figures drawn."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from chunkmark.retrieval import RETRIEVAL
from chunkmark.suite.run import GRIDS

ROOT = Path(__file__).resolve().parents[2]
BOARD = ROOT / "leaderboard"
RESULTS = BOARD / "default-suite"
COUNT = r"-?[\d,]+(\.\d+)?%?( of \d+)?"


def _suite() -> dict[str, Any]:
    suite: dict[str, Any] = json.loads((RESULTS / "suite.json").read_text(encoding="utf-8"))
    return suite


def test_the_committed_results_are_a_complete_run_of_the_default_grid() -> None:
    suite = _suite()
    grid = GRIDS["default"]
    assert suite["grid"] == "default"
    assert [s["label"] for s in suite["settings"]] == [s.label for s in grid.settings]
    assert len(suite["sets"]) == 7
    for each in suite["sets"]:
        folder = RESULTS / each["folder"]
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["failures"] == [], each["name"]
        # every chunker x embedder of the grid is a cell, read at every setting of its scope;
        # cells of embedders added to the board (scripts/add_to_board.py) come on top, each
        # embedder with every chunker of the grid
        cells = {(c["chunker"], c["embedder"]) for c in manifest["cells"]}
        assert len(cells) == len(manifest["cells"])
        embedders = {e for _, e in cells}
        assert len(embedders) >= len(grid.embedders)
        assert len(cells) == len(grid.chunkers) * len(embedders), each["name"]
        assert embedders <= set(suite["embedders"])
        wanted = {str(RETRIEVAL.resolve(s.spec(each["scope"]))) for s in grid.settings}
        table = pq.read_table(folder / "results.parquet", columns=["retrieval", "question_id"])
        found = {str(RETRIEVAL.resolve(r)) for r in set(table.column("retrieval").to_pylist())}
        assert wanted <= found, each["name"]
        assert len(set(table.column("question_id").to_pylist())) == each["questions"]


@pytest.mark.integration
def test_the_page_and_table_regenerate_byte_for_byte_from_the_results(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chunkmark", "suite", "leaderboard", "leaderboard/default-suite",
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("leaderboard.md", "leaderboard.html"):
        made = (tmp_path / name).read_text(encoding="utf-8")
        assert made == (BOARD / name).read_text(encoding="utf-8"), (
            f"leaderboard/{name} is stale: run `make leaderboard`"
        )


browser_test = pytest.importorskip("report.test_browser")
browser = browser_test.browser  # the report's fixture: headless Chromium through Playwright


@pytest.mark.integration
@pytest.mark.skipif(not browser_test.CHROMIUM.exists(), reason="no Chromium")
def test_the_committed_page_renders_offline_with_intervals(browser: Any, tmp_path: Path) -> None:
    page_file = BOARD / "leaderboard.html"
    opened = browser_test.open_report(browser, page_file)
    page = opened.page
    try:
        assert opened.errors == []
        assert opened.requests == [page_file.resolve().as_uri()]
        # plotly.js and the figures' data are in the page: no link, image, frame or script src
        assert page.locator("link, img, iframe, script[src]").count() == 0
        assert page.locator("section h3").count() == 7  # one section per set
        # recall against budget for each set and the rank heatmap, drawn by plotly.js
        figures = page.locator(".figure.js-plotly-plot:has(.main-svg)")
        assert figures.count() == 7 + 1
        # the heatmap: a row per cell of the ranking table (the last table.rank), a column per set
        ranked = page.locator("table.rank").last.locator("tbody tr").count()
        heat = page.evaluate("() => document.getElementById('figure-ranks').data[0]")
        assert len(heat["z"]) == ranked and {len(row) for row in heat["z"]} == {7}
        assert page.locator("table.winners tbody tr").count() == 7
        with_interval = page.locator("table:not(.matrix) td.num:has(.ci)")
        assert with_interval.count() > 1000
        # a number without an interval is a count, a measured time, a share or a correlation
        plain = page.eval_on_selector_all(
            "table:not(.matrix) td.num:not(:has(.ci))", "cells => cells.map(c => c.innerText)"
        )
        for text in plain:
            assert re.fullmatch(COUNT, text.strip()), text
        shown = page.locator("main").inner_text()
        assert not re.search(r"\b(nan|None|null|undefined)\b", shown)
        browser_test.save_screenshot(page, tmp_path / "leaderboard.png")
    finally:
        page.close()
