"""The report's data layer, statistics and page, on real runs of the demo dataset and on small
synthetic tables whose answers are known."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import typer
from scipy.stats import kendalltau
from typer.testing import CliRunner

import chunkmark
from chunkmark.costs.embedding_prices import EmbeddingPrices as PriceTable
from chunkmark.datasets import load_demo, write_jsonl
from chunkmark.errors import ChunkmarkError, MissingDependencyError
from chunkmark.metrics import METRICS
from chunkmark.metrics.paired import compare_paired
from chunkmark.metrics.selection import p_best, questions_needed
from chunkmark.report import ReportError, ReportOptions, build_report
from chunkmark.report import html as report_html
from chunkmark.report.comparisons import StatsOptions, analyse, pareto_front
from chunkmark.report.data import (
    CellInfo,
    LeaderRow,
    ReportData,
    Scores,
    chunker_size,
    load_prices,
    load_runs,
    paired_values,
)
from chunkmark.report.html import embed_json
from chunkmark.report.inspector import build_inspector, load_report_dataset
from chunkmark.report.payload import num
from chunkmark.report.settings import DEFAULT_SCORING, Scoring, retrieval_of, top_k

CHUNKERS = ["fixed_tokens(size=100, overlap=0)", "recursive(size=200, overlap=0)", "sentences(n=3)"]
FAST = StatsOptions(permutations=2_000, bootstrap=2_000)
D = DEFAULT_SCORING.key
K5 = "top_k(k=5)"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("report") / "run"
    return chunkmark.evaluate(
        dataset="demo", chunkers=CHUNKERS, embedders=["fake()"], k=[1, 5], out=out, no_cache=True
    )


@pytest.fixture(scope="module")
def data(run: Any) -> ReportData:
    return load_runs([run.out])


def mean_at(data: ReportData, cell: int, k: str, metric: str) -> float | None:
    row = data.row(cell, top_k(k), D)
    return None if row is None else row.mean[metric]


def dense_ranking(path: Path) -> dict[str, list[Any]]:
    """A ranking file's dense rows (every row of a file written before rankers had names)."""
    table = pq.read_table(path).to_pydict()
    if "ranker" not in table:
        return table
    keep = [i for i, r in enumerate(table["ranker"]) if r.startswith("exact(")]
    return {name: [values[i] for i in keep] for name, values in table.items()}


def summary_rows(path: Path) -> list[dict[str, str]]:
    with (path / "summary.csv").open(newline="") as handle:
        return [r for r in csv.DictReader(handle) if r["scope"] == "all"]


def page_data(page: str) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    payload: dict[str, Any] = json.loads(found.group(1))
    return payload


# --- the data layer -------------------------------------------------------------------------


def test_the_run_writes_its_report(run: Any) -> None:
    assert run.files["report"] == run.out / "report.html"
    assert run.files["report"].is_file()


def test_leaderboard_rows_equal_summary_csv(run: Any, data: ReportData) -> None:
    rows = summary_rows(run.out)
    assert len(data.rows) == len(rows) == len(CHUNKERS) * 2
    for expected in rows:
        cell = next(
            c
            for c in data.cells
            if c.chunker == expected["chunker"] and c.embedder == expected["embedder"]
        )
        row = data.row(cell.index, retrieval_of(expected), Scoring.from_row(expected).key)
        assert row is not None
        assert row.n_questions == int(expected["n_questions"])
        for m in METRICS.names():
            assert row.mean[m] == float(expected[f"{m}_mean"])
            assert row.std[m] == float(expected[f"{m}_std"])
        for m in METRICS.with_interval():
            assert row.ci[m] == (float(expected[f"{m}_ci_low"]), float(expected[f"{m}_ci_high"]))
        assert cell.n_chunks == int(expected["n_chunks"])
        assert cell.mean_chunk_tokens == pytest.approx(float(expected["mean_chunk_tokens"]))


def test_cells_carry_the_manifest_facts_and_costs(run: Any, data: ReportData) -> None:
    facts = {c["id"]: c for c in run.manifest["cells"]}
    for cell in data.cells:
        f = facts[cell.id]
        assert cell.tokens_embedded == f["chunk_tokens"]
        assert cell.index_seconds == pytest.approx(
            f["timings"]["embed_documents"] + f["timings"]["chunk"]
        )
        assert cell.price_per_million == 0.0 and cell.cost == 0.0  # the fake embedder is local
    assert chunker_size(data.cells[0].chunker)[:2] == ("fixed_tokens", "size")
    assert chunker_size("sentences(n=3, overlap=0)") == ("sentences", "n", 3.0)
    assert chunker_size("headings(max_level=3)") == ("headings", None, None)


def test_retrieved_tokens_sum_the_retrieved_chunks(run: Any, data: ReportData) -> None:
    cell = data.cells[0]
    chunks = pq.read_table(cell.chunks_path()).to_pydict()
    ranking = dense_ranking(cell.ranking_path())
    for k in ("1", "5"):
        row = data.row(cell.index, top_k(k), D)
        assert row is not None
        per_question = [
            sum(chunks["tokens"][i] for i in ids[: int(k)]) for ids in ranking["chunks"]
        ]
        assert row.retrieved_tokens == pytest.approx(np.mean(per_question))


def test_a_folder_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"holds no manifest\.json"):
        load_runs([tmp_path])


# --- statistics -----------------------------------------------------------------------------


def test_pareto_front_on_a_hand_checked_table() -> None:
    cost = [1.0, 2.0, 3.0, 2.0, 4.0, 4.0, math.nan]
    quality = [0.5, 0.7, 0.6, 0.4, 0.9, 0.9, 1.0]
    # C (3, 0.6) and D (2, 0.4) are beaten by B (2, 0.7); E and F are identical: both stay;
    # G has no cost and is left out.
    assert pareto_front(cost, quality, x="lower", y="higher") == [0, 1, 4, 5]
    recall = [0.8, 0.6, 0.7, 0.8]
    precision = [0.1, 0.3, 0.05, 0.09]
    assert pareto_front(recall, precision, x="higher", y="higher") == [0, 1]
    assert pareto_front([1.0, 2.0], [0.1, 0.2], x="lower", y="lower") == [0]
    assert pareto_front([1.0, 2.0], [0.2, 0.1], x="lower", y="lower") == [0, 1]
    assert pareto_front([], []) == []


def synthetic(
    values: dict[int, dict[str, np.ndarray]],
    tokens: dict[int, int],
    retrieved: dict[int, float],
    k: str = "5",
) -> ReportData:
    """A report table of cells at one retrieval setting (top_k(k=<k>)) and the default scoring,
    from per-question values."""
    n = len(next(iter(values[0].values())))
    qids = tuple(f"q{i}" for i in range(n))
    cells, rows, scores = [], [], {}
    for i, metrics in values.items():
        full = {m: metrics.get(m, np.zeros(n)) for m in METRICS.names()}
        cells.append(
            CellInfo(
                index=i,
                id=f"c{i}",
                run=0,
                dataset="synthetic",
                chunker=f"fixed_tokens(size={tokens[i]})",
                embedder="fake()",
                chunker_short=f"fixed_tokens(size={tokens[i]})",
                embedder_short="fake()",
                family="fixed_tokens",
                size_param="size",
                size=float(tokens[i]),
                n_chunks=tokens[i] // 10,
                mean_chunk_tokens=10.0,
                tokens_embedded=tokens[i],
                index_seconds=0.0,
                price_per_million=0.0,
                cost=0.0,
                cell_dir=Path("missing"),
            )
        )
        rows.append(
            LeaderRow(
                i,
                top_k(k),
                D,
                k,
                n,
                {m: float(v.mean()) for m, v in full.items()},
                {m: float(v.std()) for m, v in full.items()},
                {m: (float(v.mean()) - 0.01, float(v.mean()) + 0.01) for m, v in full.items()},
                retrieved[i],
            )
        )
        scores[(i, top_k(k), D)] = Scores(qids, ("d",) * n, np.full(n, int(k)), full)
    from chunkmark.report.data import DatasetInfo

    info = DatasetInfo("synthetic", "synthetic", "", "fp", 1, n)
    return ReportData([], [info], cells, rows, scores, PriceTable({}, frozenset(), None, ()))


def test_paired_values_hold_the_questions_every_option_scored_in_one_order() -> None:
    def scores(ids: str, iou: list[float]) -> Scores:
        return Scores(
            tuple(ids), ("d",) * len(ids), np.ones(len(ids), dtype=np.int64), {"iou": np.array(iou)}
        )

    data = synthetic({0: {"iou": np.zeros(3)}}, tokens={0: 10}, retrieved={0: 1})
    data.scores = {
        (0, K5, D): scores("dbca", [4.0, 2.0, 3.0, 1.0]),
        (1, K5, D): scores("dcax", [40.0, 30.0, 10.0, 99.0]),  # no b; x only here
        (2, K5, D): scores("cad", [300.0, 100.0, 400.0]),
    }
    # d, c and a are the ones all three scored, in the first one's order.
    assert data.shared_questions(list(data.scores)) == ["d", "c", "a"]
    got = paired_values(data, [(0, K5, D), (9, K5, D), (1, K5, D), (2, K5, D)], "iou")
    assert list(got) == [(0, K5, D), (1, K5, D), (2, K5, D)]  # the unscored 9 is left out
    assert [v.tolist() for v in got.values()] == [[4, 3, 1], [40, 30, 10], [400, 300, 100]]
    assert paired_values(data, [(9, K5, D)], "iou") == {}


def test_report_options_hand_the_tests_every_setting_they_share() -> None:
    asked = ReportOptions(metric="recall", k="3", alpha=0.1, seed=4, min_p_best=0.8, title="t")
    assert asked.stats() == StatsOptions(metric="recall", k="3", alpha=0.1, seed=4, min_p_best=0.8)


def test_recommendation_finds_the_best_and_the_cheapest_tied_cell() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, 200)
    noise = rng.normal(0, 0.01, 200)
    noise += 0.0005 - noise.mean()  # cell 1 is lower by 0.0005 on average: within the noise
    values = {
        0: {"iou": base + 0.02, "recall": base},  # the best
        1: {"iou": base + 0.02 - noise, "recall": base + 0.2},  # tied with it, cheaper
        2: {"iou": base - 0.3, "recall": base + 0.1},  # clearly worse
    }
    data = synthetic(values, tokens={0: 5000, 1: 1000, 2: 800}, retrieved={0: 2000, 1: 900, 2: 300})
    (rec,), comparisons = analyse(data, FAST)
    assert rec.best is not None and rec.best.cell == 0
    assert set(rec.best.tied) == {(0, K5, D), (1, K5, D)}
    assert rec.cheapest_tied is not None and rec.cheapest_tied.cell == 1
    # The cheapest is tested against the best: the same comparison compare_paired gives.
    assert rec.cheapest_tied.versus == (0, K5, D)
    expected = compare_paired(
        values[0]["iou"], values[1]["iou"], permutations=2_000, bootstrap=2_000
    )
    assert rec.cheapest_tied.comparison == expected
    assert rec.cheapest_tied.p_adjusted is not None and rec.cheapest_tied.p_adjusted >= 0.05
    # Within 1000 retrieved tokens only cells 1 and 2 fit; 1 has the higher recall, clearly.
    assert rec.budget is not None and rec.budget.cell == 1 and rec.budget.metric == "recall"
    assert rec.budget.versus == (2, K5, D) and rec.budget.tied == ((1, K5, D),)
    assert rec.budget.p_adjusted is not None and rec.budget.p_adjusted < 0.05
    assert comparisons.embedder_pairs == {"synthetic": []}


def test_a_tied_group_is_no_single_winner_and_says_what_would_separate_it() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, 200)
    noise = rng.normal(0, 0.01, 200)
    noise += 0.0005 - noise.mean()
    values = {
        0: {"iou": base + 0.02},
        1: {"iou": base + 0.02 - noise},  # tied with 0, 0.0005 lower: below the 0.005 floor
        2: {"iou": base - 0.3},
    }
    data = synthetic(values, tokens={0: 5000, 1: 1000, 2: 800}, retrieved={0: 1, 1: 1, 2: 1})
    (rec,), _ = analyse(data, FAST)
    assert rec.winner is None and len(rec.best.tied if rec.best else ()) == 2
    shares = p_best({str(i): values[i]["iou"] for i in values}, resamples=2_000)
    assert rec.p_best == tuple(((i, K5, D), shares[str(i)]) for i in (0, 1, 2))
    assert rec.p_best_of((2, K5, D)) == 0.0 and 0.1 < rec.p_best_of((0, K5, D)) < 0.9
    assert rec.top_two is not None and rec.top_two.b == (1, K5, D)
    assert rec.top_two.needed == questions_needed(values[0]["iou"], values[1]["iou"])
    assert rec.top_two.needed.n is None  # no realistic number: decide on cost
    assert rec.cheapest is not None and rec.cheapest.b == (1, K5, D)


def test_a_single_winner_needs_p_best_and_the_tests_to_agree() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.8, 200)
    z = rng.normal(size=200)
    gap = 0.1 * (z - z.mean()) / z.std(ddof=1) + 2.5 * 0.1 / np.sqrt(200)  # t = 2.5
    values = {0: {"iou": base + gap}, 1: {"iou": base}, 2: {"iou": base - 0.2}}
    data = synthetic(values, tokens={0: 10, 1: 10, 2: 10}, retrieved={0: 1, 1: 1, 2: 1})
    (rec,), _ = analyse(data, FAST)
    assert rec.best is not None and rec.best.tied == ((0, K5, D),)  # the tests separate them
    share = rec.p_best_of((0, K5, D))
    assert 0.97 < share < 1.0  # about Phi(2.5) = 0.994
    assert rec.winner == (0, K5, D)
    # The same data with a threshold above its P(best): no single winner, though nothing ties.
    (strict,), _ = analyse(data, dataclasses.replace(FAST, min_p_best=0.9999))
    assert strict.winner is None and strict.p_best == rec.p_best
    assert strict.top_two is not None and strict.top_two.needed.n is not None
    # 80% power needs t about 1.96 + 0.84 = 2.80 on average: 200 * (2.80 / 2.5)^2 = 251.
    assert 245 <= strict.top_two.needed.n <= 260


def test_recommendation_when_nothing_fits_the_budget() -> None:
    values = {0: {"iou": np.linspace(0, 1, 50)}, 1: {"iou": np.linspace(0, 0.5, 50)}}
    data = synthetic(values, tokens={0: 10, 1: 20}, retrieved={0: 5000, 1: 3000})
    (rec,), _ = analyse(data, FAST)
    assert rec.budget is None and rec.smallest_retrieval == (1, K5, D)
    assert rec.best is not None and rec.best.cell == 0 and rec.best.tied == ((0, K5, D),)
    assert rec.cheapest_tied is not None and rec.cheapest_tied.cell == 0


def test_lower_is_better_metrics_pick_the_lowest(monkeypatch: pytest.MonkeyPatch) -> None:
    @METRICS.register("chars_test", direction="lower")
    def _chars(s: Any) -> Any:  # pragma: no cover - never scored here
        return s.retrieval.recall

    try:
        values = {0: {"chars_test": np.full(40, 5.0)}, 1: {"chars_test": np.full(40, 1.0)}}
        data = synthetic(values, tokens={0: 10, 1: 20}, retrieved={0: 1, 1: 1})
        (rec,), _ = analyse(
            data, StatsOptions(metric="chars_test", permutations=500, bootstrap=500)
        )
        assert rec.best is not None and rec.best.cell == 1
    finally:
        METRICS.unregister("chars_test")


def test_embedder_pairs_and_dataset_agreement(tmp_path: Path, run: Any) -> None:
    other = tmp_path / "seed1"
    chunkmark.evaluate(
        dataset="demo",
        chunkers=CHUNKERS[:2],
        embedders=["fake(seed=1)"],
        k=[1, 5],
        out=other,
        no_cache=True,
    )
    half = tmp_path / "demo_half"
    demo = load_demo()
    write_jsonl(demo.subset(q.id for q in demo.questions[::2]), half)
    third = tmp_path / "half"
    chunkmark.evaluate(
        dataset=str(half),
        chunkers=CHUNKERS,
        embedders=["fake()"],
        k=[1, 5],
        out=third,
        no_cache=True,
    )
    data = load_runs([run.out, other, third])
    assert [d.key for d in data.datasets] == ["demo", "demo_half"]
    recs, comparisons = analyse(data, FAST)
    assert [r.dataset for r in recs] == ["demo", "demo_half"]
    pairs = comparisons.embedder_pairs["demo"]
    assert [p.chunker for p in pairs] == [data.cells[0].chunker, data.cells[1].chunker]
    for p in pairs:
        a, b = data.scores[(p.a, K5, D)], data.scores[(p.b, K5, D)]
        assert a.question_ids == b.question_ids
        expected = compare_paired(
            a.values["iou"], b.values["iou"], permutations=2_000, bootstrap=2_000
        )
        assert p.comparison == expected
    (agreement,) = comparisons.agreements
    means = {
        (c.dataset, c.chunker, c.embedder): iou
        for c in data.cells
        if (iou := mean_at(data, c.index, "5", "iou")) is not None
    }
    shared = [(ch, e) for d, ch, e in means if d == "demo_half"]
    demo_means = [means[("demo", ch, e)] for ch, e in shared]
    half_means = [means[("demo_half", ch, e)] for ch, e in shared]
    assert agreement.n_cells == 3
    assert agreement.tau == pytest.approx(kendalltau(demo_means, half_means).statistic)


def test_a_cell_found_twice_is_kept_once(run: Any, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run.out, copy)
    data = load_runs([run.out, copy])
    assert len(data.cells) == len(CHUNKERS)
    assert len(data.notes) == len(CHUNKERS) and "earlier folder" in data.notes[0]


# --- prices ---------------------------------------------------------------------------------


def test_prices(tmp_path: Path) -> None:
    table = load_prices()
    assert table.date and table.price_of('openai(model="text-embedding-3-small")') == 0.02
    assert table.price_of('openai(model="text-embedding-3-large")') == 0.13
    assert table.price_of("openai(model='text-embedding-3-small-2025')") == 0.02
    assert table.price_of("openai(model='my-own')") is None
    assert table.price_of("fake(dimension=64)") == 0.0
    assert table.price_of('sentence_transformers(model="all-MiniLM-L6-v2")') == 0.0
    mine = tmp_path / "prices.yaml"
    mine.write_text("per: 1000\nmodels: {my-own: 0.001, text-embedding-3-small: 0.00003}\n")
    custom = load_prices(mine)
    assert custom.price_of("openai(model='my-own')") == pytest.approx(1.0)
    assert custom.price_of("openai(model='text-embedding-3-small')") == pytest.approx(0.03)
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [1, 2]\n")
    with pytest.raises(ReportError, match="is not a price table"):
        load_prices(bad)


# --- the page -------------------------------------------------------------------------------


def test_the_page_is_one_self_contained_file(run: Any, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    report = build_report([run.out], out, ReportOptions(permutations=1_000, bootstrap=1_000))
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    page = out.read_text(encoding="utf-8")
    assert report.bytes == len(page.encode("utf-8"))
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert not re.search(r"<link\b", page, re.I)
    assert 'src="http' not in page and "src='http" not in page
    # plotly.js itself holds link templates (its logo, map attributions) as JavaScript strings;
    # everything else on the page holds no URL at all.
    without_plotly = re.sub(r'<script [^>]*id="plotly-js">.*?</script>', "", page, flags=re.S)
    assert 'href="http' not in without_plotly and "href='http" not in without_plotly
    templates = Path(report_html.__file__).parent / "templates"
    for template in templates.iterdir():  # the page's own code and style name no URL
        assert "http" not in template.read_text(encoding="utf-8"), template.name
    assert page.count("</script>") == 3
    payload = page_data(page)
    assert len(payload["rows"]) == len(CHUNKERS) * 2
    assert payload["meta"]["options"]["retrieval"] == K5
    assert payload["meta"]["options"]["scoring"] == D
    assert payload["inspector"][0]["available"] is True


def test_the_page_carries_plotly_compressed_at_half_the_size(run: Any, tmp_path: Path) -> None:
    """plotly.js is most of the page: carried gzip-compressed (the page inflates it with the
    browser's DecompressionStream; tests/report/test_browser.py draws every plot), the page is
    at most half of what inlining plotly.js as text made it, and the data are unchanged."""
    import base64
    import gzip

    out = tmp_path / "report.html"
    report = build_report([run.out], out, ReportOptions(permutations=1_000, bootstrap=1_000))
    page = out.read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/octet-stream" id="plotly-js" data-encoding="gzip\+base64">'
        r"(.*?)</script>",
        page,
        re.S,
    )
    assert found is not None
    plotly = report_html.plotly_js().encode("utf-8")
    assert gzip.decompress(base64.b64decode(found.group(1))) == plotly
    inlined = len(page.encode("utf-8")) - len(found.group(1)) + len(plotly)  # as text
    assert report.bytes <= inlined / 2, (report.bytes, inlined)
    again = report_html.render(page_data(page), report_html.plotly_js())
    assert page_data(again) == page_data(page)


def test_embedded_json_escapes_script_ends(run: Any, tmp_path: Path) -> None:
    nasty = "</script><script>alert(1)</script> & <!-- \u2028"
    text = embed_json({"x": nasty})
    assert "</" not in text and "<" not in text and json.loads(text) == {"x": nasty}
    out = tmp_path / "report.html"
    build_report([run.out], out, ReportOptions(title=nasty, permutations=500, bootstrap=500))
    page = out.read_text(encoding="utf-8")
    assert page.count("</script>") == 3 and "alert(1)" in page
    assert page_data(page)["meta"]["title"] == nasty


def test_the_recommendation_on_the_page_matches_the_analysis(run: Any, tmp_path: Path) -> None:
    options = ReportOptions(metric="recall", k="1", max_context_tokens=500, permutations=1_000)
    report = build_report([run.out], tmp_path / "r.html", options)
    payload = page_data((tmp_path / "r.html").read_text(encoding="utf-8"))
    (rec,) = payload["recommendations"]
    (expected,) = report.recommendations
    assert rec["metric"] == "recall" and rec["retrieval"] == "top_k(k=1)" and rec["scoring"] == D
    assert rec["maxContextTokens"] == 500
    assert expected.best is not None and rec["best"]["cell"] == expected.best.cell
    best_row = max(
        (r for r in report.data.rows if (r.retrieval, r.scoring) == ("top_k(k=1)", D)),
        key=lambda r: (r.mean["recall"], str(r.cell)),
    )
    assert expected.best.mean == best_row.mean["recall"]
    # P(best), the verdict and the questions to separate the top two travel to the page.
    assert [(e["cell"], e["p"]) for e in rec["pBest"]] == [
        (o[0], num(p, 4)) for o, p in expected.p_best
    ]
    assert rec["minPBest"] == 0.9 and expected.top_two is not None
    assert rec["winner"] == (
        None
        if expected.winner is None
        else {
            "cell": expected.winner[0],
            "retrieval": expected.winner[1],
            "scoring": expected.winner[2],
        }
    )
    assert rec["topTwo"]["n"] == expected.top_two.needed.n
    assert rec["topTwo"]["b"]["cell"] == expected.top_two.b[0]


def test_unknown_metric_or_k_are_refused(run: Any, tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="Unknown metric"):
        build_report([run.out], tmp_path / "r.html", ReportOptions(metric="nope"))
    with pytest.raises(ReportError, match=r"k=7 \(top_k\(k=7\)\) is not in the runs"):
        build_report([run.out], tmp_path / "r.html", ReportOptions(k="7"))


def test_without_plotly_the_run_still_succeeds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = importlib.import_module

    def no_plotly(name: str, *args: Any) -> Any:
        if name.startswith("plotly"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_plotly)  # what report.html calls
    with pytest.raises(MissingDependencyError, match=r"chunkmark\[report\]"):
        build_report([tmp_path], tmp_path / "r.html")
    heard: list[str] = []
    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=CHUNKERS[:1],
        embedders=["fake()"],
        k=[1],
        out=tmp_path / "run",
        no_cache=True,
        progress=heard.append,
    )
    assert "report" not in results.files and not (tmp_path / "run" / "report.html").exists()
    assert any(m.startswith("report skipped:") and "chunkmark[report]" in m for m in heard)
    assert results.report_error is not None and "chunkmark[report]" in results.report_error
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["report_error"] == results.report_error


def test_a_report_fault_is_carried_by_the_results_without_progress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("the leaderboard broke")

    monkeypatch.setattr("chunkmark.report.build_report", broken)
    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=CHUNKERS[:1],
        embedders=["fake()"],
        k=[1],
        out=tmp_path / "run",
        no_cache=True,
    )
    assert results.report_error is not None
    assert results.report_error.startswith("RuntimeError: the leaderboard broke")
    assert "report" not in results.files
    for name in ("results.parquet", "summary.csv", "manifest.json"):
        assert (tmp_path / "run" / name).is_file()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["report_error"] == results.report_error


def test_inspector_without_the_dataset(run: Any, tmp_path: Path) -> None:
    copy = tmp_path / "moved"
    shutil.copytree(run.out, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    for dataset in manifest.get("datasets") or [manifest["dataset"]]:
        dataset["source"] = str(tmp_path / "gone")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    build_report([copy], tmp_path / "r.html", ReportOptions(permutations=500, bootstrap=500))
    (inspector,) = page_data((tmp_path / "r.html").read_text(encoding="utf-8"))["inspector"]
    assert inspector["available"] is False and "could not be loaded" in inspector["message"]


def test_inspector_trims_long_documents(monkeypatch: pytest.MonkeyPatch, data: ReportData) -> None:
    for name, value in (("FULL_TEXT_LIMIT", 1_000), ("MAX_DEPTH", 1), ("EXCERPT_MARGIN", 0)):
        monkeypatch.setattr(f"chunkmark.report.inspector.{name}", value)
    one = dataclasses.replace(
        data, cells=data.cells[:1], scores={o: s for o, s in data.scores.items() if o[0] == 0}
    )
    info = data.datasets[0]
    dataset, message = load_report_dataset(info)
    assert dataset is not None and message == ""
    payload = build_inspector(one, info, dataset)
    assert payload["trimmed"] is True and payload["depth"] == 1
    docs = payload["docs"]
    texts = {d.id: d.text for d in dataset.documents}
    for doc in docs:
        assert doc["trimmed"] is True
        for start, piece in doc["pieces"]:
            assert texts[doc["id"]][start : start + len(piece)] == piece
    carried = sum(len(p) for d in docs for _, p in d["pieces"])
    assert carried < sum(len(t) for t in texts.values())

    def inside(doc: int, s: int, e: int) -> bool:
        return any(a <= s and e <= a + len(p) for a, p in docs[doc]["pieces"])

    for q in payload["questions"]:  # every excerpt is carried in full
        assert all(inside(q["doc"], s, e) for s, e in q["excerpts"])
    chunks = one.chunks(0)
    assert chunks is not None
    index = {d["id"]: i for i, d in enumerate(docs)}
    for deltas in payload["cells"]["0"]["rank"]:  # and so is every retrieved chunk
        (top,) = deltas
        assert inside(index[chunks.doc_ids[top]], int(chunks.start[top]), int(chunks.end[top]))


# --- the command ----------------------------------------------------------------------------


def test_the_command_writes_the_report_and_prints_the_recommendation(
    run: Any, tmp_path: Path
) -> None:
    from chunkmark.cli.report import register

    app = typer.Typer()
    register(app)
    app.command("other")(lambda: None)  # two commands: typer keeps "report" as a subcommand
    out = tmp_path / "pages"
    result = CliRunner().invoke(
        app, ["report", str(run.out), "--out", str(out), "--permutations", "1000", "--pick-k", "1"]
    )
    assert result.exit_code == 0, result.output
    assert (out / "report.html").is_file()
    assert "best iou with top_k(k=1)" in result.output and "report written to" in result.output
    assert "retrieval top_k(k=1); scoring excerpts=position" in result.output
    bad = CliRunner().invoke(app, ["report", str(run.out), "--metric", "nope"])
    assert isinstance(bad.exception, ChunkmarkError)
