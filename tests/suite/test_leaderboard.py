"""The suite's leaderboard: its statistics against hand-computed cases, and the whole board read
from a real suite folder (three sets run with ``chunkmark.evaluate``), its command and its page
in headless Chromium."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import typer
from scipy.stats import spearmanr
from typer.testing import CliRunner

from chunkmark.chunkers.diagnostics import diagnose
from chunkmark.cli.suite_leaderboard import leaderboard_command
from chunkmark.datasets import load_demo
from chunkmark.metrics import bootstrap_ci
from chunkmark.suite.analysis import (
    Leaderboard,
    budget_curve,
    kendall_matrix,
    mean_ranks,
    ranks_per_set,
    spearman,
    variance_split,
    widest_curve,
    winners,
)
from chunkmark.suite.estimates import Estimate
from chunkmark.suite.folder import (
    METRICS_SHOWN,
    NO_EMBEDDER,
    LeaderboardError,
    SetBoard,
    SetCell,
    diagnostic_values,
    read_suite,
)
from chunkmark.suite.leaderboard import build_leaderboard, write_leaderboard
from chunkmark.suite.render import to_markdown
from conftest import shared_dir
from metrics.test_agreement import tau_b_by_pairs
from suite.leaderboard_suite import SETTINGS, write_suite

RESAMPLES = 200
PERMUTATIONS = 1000
BUDGET = 256

# --- the statistics, by hand -------------------------------------------------------------------


def test_variance_split_of_a_balanced_two_factor_example() -> None:
    # y[a][b] = [[1, 3], [5, 9]]: grand mean 4.5; A means 2 and 7, B means 3 and 6.
    # SS_A = 2 * (2.5^2 + 2.5^2) = 25, SS_B = 2 * (1.5^2 + 1.5^2) = 9,
    # SS_total = 3.5^2 + 1.5^2 + 0.5^2 + 4.5^2 = 35, interaction 35 - 25 - 9 = 1.
    split = variance_split(
        {"A": ["a1", "a1", "a2", "a2"], "B": ["b1", "b2", "b1", "b2"]}, [1, 3, 5, 9], "recall"
    )
    assert split.total == pytest.approx(35.0)
    assert split.shares == pytest.approx({"A": 25 / 35, "B": 9 / 35})
    assert split.rest == pytest.approx(1 / 35)
    assert split.balanced and split.n == 4


def test_variance_split_says_when_the_design_is_unbalanced() -> None:
    split = variance_split({"A": ["a1", "a1", "a2"], "B": ["b1", "b2", "b1"]}, [1.0, 2.0, 4.0])
    assert not split.balanced
    # one factor alone: its main effect is all of the variance with a single value per level
    alone = variance_split({"A": ["x", "y", "z"]}, [1.0, 2.0, 4.0])
    assert alone.shares["A"] == pytest.approx(1.0) and alone.rest == pytest.approx(0.0)


def test_kendall_tau_of_a_small_case() -> None:
    # x = 1, 2, 3, 4 and y = 1, 3, 2, 4: of the 6 pairs only (2, 3) is discordant:
    # tau = (5 - 1) / 6.
    means = {
        "a": {"p": 1.0, "q": 2.0, "r": 3.0, "s": 4.0},
        "b": {"p": 1.0, "q": 3.0, "r": 2.0, "s": 4.0},
        "c": {"p": 4.0, "q": 3.0, "r": 2.0, "s": 1.0},
        "d": {"p": 1.0, "z": 2.0},
    }
    tau = kendall_matrix(means)
    assert tau[("a", "b")].tau == pytest.approx(4 / 6)
    assert tau[("b", "a")].tau == pytest.approx(4 / 6)
    assert tau[("a", "c")].tau == pytest.approx(-1.0)
    assert tau[("a", "a")].tau == pytest.approx(1.0)
    assert tau[("a", "b")].n == 4
    assert math.isnan(tau[("a", "d")].tau) and tau[("a", "d")].n == 1  # one cell in common


def test_spearman_of_a_small_case() -> None:
    # ranks differ by -1, 1, -1, 1, 0: rho = 1 - 6 * 4 / (5 * (25 - 1)) = 0.8
    rho, _, n = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert rho == pytest.approx(0.8) and n == 5
    assert math.isnan(spearman([1, 1, 1, 1], [1, 2, 3, 4])[0])  # a constant side
    assert spearman([1, 2, float("nan"), 4], [1, 2, 3, 4])[2] == 3  # pairs with a NaN dropped


def test_mean_ranks_without_noise_are_the_hand_ranks() -> None:
    # set 1 means 0.9, 0.5, 0.1 -> ranks 1, 2, 3; set 2 means 0.8, 0.1, 0.5 -> ranks 1, 3, 2
    first = np.repeat([[0.9], [0.5], [0.1]], 7, axis=1)
    second = np.repeat([[0.8], [0.1], [0.5]], 5, axis=1)
    estimates = mean_ranks([first, second], resamples=100)
    assert [e.value for e in estimates] == [1.0, 2.5, 2.5]
    assert all(e.low == e.value == e.high for e in estimates)


def test_mean_rank_resamples_questions_paired_within_a_set() -> None:
    rng = np.random.default_rng(1)
    noisy = rng.random(40)
    # cell 0 is far above the rest; cell 2 beats cell 1 by 0.01 on every question; cell 3 has
    # cell 1's values in another order (the same mean, unpaired with it)
    matrix = np.stack([noisy + 0.5, noisy, noisy + 0.01, rng.permutation(noisy)])
    estimates = mean_ranks([matrix], resamples=500, seed=3)
    assert (estimates[0].value, estimates[2].value) == (1.0, 2.0)
    assert (estimates[0].low, estimates[0].high) == (1.0, 1.0)
    # drawn with the same questions, cell 2 is above cell 1 in every resample ...
    assert estimates[1].low >= 3.0 and estimates[2].high <= 3.0
    # ... while cell 3, whose values are not paired with theirs, moves across both
    assert estimates[3].low == 2.0 and estimates[3].high == 4.0
    again = mean_ranks([matrix], resamples=500, seed=3)
    assert again == estimates  # same seed, same intervals


def test_diagnostic_values_read_what_diagnose_records() -> None:
    demo = load_demo()
    chunks = [
        (d.id, s, min(s + 200, len(d.text)))
        for d in demo.documents
        for s in range(0, len(d.text), 200)
    ]
    recorded = diagnose(
        demo, chunks, encoding=None, tokens=[40] * (len(chunks) - 1) + [10]
    ).to_dict()
    values = diagnostic_values(recorded)
    cut = recorded["excerpts"]["cut"] / recorded["excerpts"]["excerpts"]
    assert values["excerpts cut"] == pytest.approx(cut)
    assert values["fragments per excerpt"] == pytest.approx(
        recorded["excerpts"]["fragments"]["mean"]
    )
    tokens = recorded["tokens"]
    assert values["mean chunk tokens"] == pytest.approx(tokens["mean"])
    assert values["length spread"] == pytest.approx((tokens["p95"] - tokens["p5"]) / tokens["mean"])
    assert diagnostic_values(None) == {}


def test_a_bad_suite_file_is_one_line_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(LeaderboardError, match=r"holds no suite\.json"):
        read_suite(tmp_path)
    suite = {
        "format": 1,
        "sets": [{"name": "cuad", "folder": "cuad", "scope": "contract"}],
        "settings": [{"label": "top_k(5)", "corpus": "top_k(k=5)", "tokens": None}],
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    with pytest.raises(LeaderboardError) as raised:
        read_suite(tmp_path)
    assert "sets[0] (cuad) has scope 'contract'" in str(raised.value)
    assert "\n" not in str(raised.value)
    suite["sets"][0]["scope"] = "document"  # type: ignore[index]
    suite["settings"][0]["corpus"] = "top_k(depth=5)"  # type: ignore[index]
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    with pytest.raises(LeaderboardError, match=r"settings\[0\] \(top_k\(5\)\) 'corpus'"):
        read_suite(tmp_path)


# --- a real suite folder -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = shared_dir() / "datasets" / "suite"
    if not (raw / "fairytaleqa" / "SOURCE.txt").is_file():
        pytest.skip(f"the suite's raw files are not at {raw} (set CHUNKMARK_SHARED_DIR)")
    root = tmp_path_factory.mktemp("leaderboard")
    return write_suite(root, raw, root / "cache")


@pytest.fixture(scope="module")
def board(suite_dir: Path) -> Leaderboard:
    return build_leaderboard(
        suite_dir, budget=BUDGET, resamples=RESAMPLES, permutations=PERMUTATIONS
    )


def results_rows(folder: Path, retrieval: str) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """(chunker, embedder) -> metric -> per-question values sorted by question id, read from
    results.parquet directly."""
    table = pq.read_table(folder / "results.parquet").to_pylist()
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in table:
        if (
            row["retrieval"] == retrieval
            and row["excerpts"] == "position"
            and row["unit"] == "chars"
        ):
            out.setdefault((row["chunker"], row["embedder"]), []).append(row)
    return {
        key: {
            m: np.asarray([r[m] for r in sorted(rows, key=lambda r: r["question_id"])])
            for m in METRICS_SHOWN
        }
        for key, rows in out.items()
    }


@pytest.mark.integration
def test_every_cell_has_an_interval(board: Leaderboard) -> None:
    assert [b.name for b in board.sets] == ["demo", "fairytaleqa", "stitched"]
    for set_board in board.sets:
        # 3 chunkers x (2 embedders x 3 dense settings + BM25 once: it reads no vectors)
        assert len(set_board.cells) == 21
        assert {c.embedder for c in set_board.cells if c.setting == "bm25 @256"} == {NO_EMBEDDER}
        for cell in set_board.cells:
            for metric in METRICS_SHOWN:
                e = cell.metrics[metric]
                assert math.isfinite(e.low) and math.isfinite(e.high), (cell.key, metric)
                assert e.low <= e.value <= e.high, (cell.key, metric)
    assert len(board.ranking) == 9  # 3 chunkers x (2 embedders dense + BM25 once) at 256 tokens
    for row in board.ranking:
        assert row.mean_rank.low <= row.mean_rank.value <= row.mean_rank.high
        assert row.mean_rank.low >= 1 and row.mean_rank.high <= 9
    # in the markdown, every metric and mean-rank column of every table holds an interval
    interval = re.compile(r"^\d+\.\d{2,3} \[\d+\.\d{2,3}, \d+\.\d{2,3}\]$")
    checked = 0
    for header, rows in markdown_tables(to_markdown(board)):
        columns = [
            i
            for i, h in enumerate(header)
            if h == "mean rank" or h in METRIC_COLUMNS or h.endswith((" recall", " IoU"))
        ]
        for row in rows:
            for i in columns:
                assert interval.match(row[i]), (header[i], row[i])
                checked += 1
    # the per-set tables (3 sets x 21 cells x 3 metrics), the top 5 and the ranking (14 rows x
    # a mean rank and a metric per set), the embedders (3 sets x 2 embedders x mean and best),
    # the winners (3 sets x the best's and the pick's)
    assert checked == 3 * 21 * 3 + (5 + 9) * 4 + 3 * 2 * 2 + 3 * 2


METRIC_COLUMNS = ("recall", "IoU", "containment recall")


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of a markdown text: its header and rows, cells stripped."""
    tables: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---") and i > 0:
            header = [c.strip() for c in lines[i - 1].strip("|").split(" | ")]
            rows = []
            for row in lines[i + 1 :]:
                if not row.startswith("| "):
                    break
                rows.append([c.strip() for c in row.strip("|").split(" | ")])
            tables.append((header, rows))
    return tables


@pytest.mark.integration
def test_each_set_reads_its_own_scope_and_the_package_intervals(
    board: Leaderboard, suite_dir: Path
) -> None:
    for set_board in board.sets:
        scope = set_board.suite_set.scope
        for setting in SETTINGS:
            spec = next(c.retrieval for c in set_board.cells if c.setting == setting["label"])
            if scope == "document":
                assert "in_document" in spec
            else:
                assert "in_document" not in spec
        reference = results_rows(
            suite_dir / set_board.name,
            next(c.retrieval for c in set_board.cells if c.setting == "dense @256"),
        )
        for (chunker, embedder), values in reference.items():
            cell = set_board.cell((chunker, embedder, "dense @256"))
            assert cell is not None
            intervals = bootstrap_ci(values, n_resamples=RESAMPLES, seed=0)
            for metric in METRICS_SHOWN:
                assert cell.metrics[metric].value == pytest.approx(float(values[metric].mean()))
                assert (cell.metrics[metric].low, cell.metrics[metric].high) == pytest.approx(
                    intervals[metric]
                )


def summary_means(folder: Path, retrieval: str) -> dict[tuple[str, str], float]:
    with (folder / "summary.csv").open(newline="", encoding="utf-8") as handle:
        return {
            (r["chunker"], r["embedder"]): float(r["recall_mean"])
            for r in csv.DictReader(handle)
            if r["scope"] == "all" and r["retrieval"] == retrieval
        }


def set_means(
    board: Leaderboard, suite_dir: Path, labels: tuple[str, ...] = ("dense @256", "bm25 @256")
) -> dict[str, dict[tuple[str, str, str], float]]:
    """Each set's cell means at ``labels``, read from its summary.csv (not from the board)."""
    means: dict[str, dict[tuple[str, str, str], float]] = {}
    for set_board in board.sets:
        means[set_board.name] = {}
        for label in labels:
            spec = next(c.retrieval for c in set_board.cells if c.setting == label)
            for (chunker, embedder), mean in summary_means(
                suite_dir / set_board.name, spec
            ).items():
                if label.startswith("bm25"):  # the same keyword ranking under every embedder
                    key = (chunker, NO_EMBEDDER, label)
                    assert means[set_board.name].get(key, mean) == mean
                    means[set_board.name][key] = mean
                else:
                    means[set_board.name][(chunker, embedder, label)] = mean
    return means


def hand_ranks(means: dict[tuple[str, str, str], float]) -> dict[tuple[str, str, str], float]:
    """1 for the highest mean; cells with equal means share the mean of their ranks."""
    return {
        k: 1 + sum(v > m for v in means.values()) + (sum(v == m for v in means.values()) - 1) / 2
        for k, m in means.items()
    }


@pytest.mark.integration
def test_tau_and_ranks_agree_with_the_summaries(board: Leaderboard, suite_dir: Path) -> None:
    means = set_means(board, suite_dir)
    keys = sorted(means["demo"])
    for a in means:
        for b in means:
            expected = tau_b_by_pairs([means[a][k] for k in keys], [means[b][k] for k in keys])
            assert board.tau[(a, b)].tau == pytest.approx(expected, abs=1e-12)
            assert board.tau[(a, b)].n == 9
    for row in board.ranking:
        assert row.means == pytest.approx({s: means[s][row.key] for s in means})
    # the best cell of each set is tied with itself
    for set_board in board.sets:
        best = max(means[set_board.name], key=lambda k: means[set_board.name][k])
        assert any(means[set_board.name][k] == means[set_board.name][best] for k in set_board.tied)
    assert sum(r.tied_sets for r in board.ranking) == sum(len(b.tied) for b in board.sets)


@pytest.mark.integration
def test_winners_and_ranks_per_set_are_the_summaries(board: Leaderboard, suite_dir: Path) -> None:
    means = set_means(board, suite_dir)
    per_set = ranks_per_set(board)
    pick = board.ranking[0].key
    found = winners(board)
    assert [w.set for w in found] == ["demo", "fairytaleqa", "stitched"]
    for w, set_board in zip(found, board.sets, strict=True):
        ranks = hand_ranks(means[w.set])
        assert {k: per_set[k][w.set] for k in ranks} == ranks
        assert means[w.set][w.best] == max(means[w.set].values())
        assert w.value.value == pytest.approx(max(means[w.set].values()))
        assert w.value.low <= w.value.value <= w.value.high
        assert w.pick == pick and w.pick_rank == ranks[pick]
        assert w.pick_value.value == pytest.approx(means[w.set][pick])
        assert (w.tied, w.cells) == (len(set_board.tied), 9)
    # the markdown's winners table: one row per set, the best cell's recall with its interval
    (header, rows), *_ = [
        t for t in markdown_tables(to_markdown(board)) if "the pick's rank" in t[0]
    ]
    assert [r[0] for r in rows] == ["demo", "fairytaleqa", "stitched"]
    for row, w in zip(rows, found, strict=True):
        assert row[header.index("recall")].startswith(f"{max(means[w.set].values()):.3f} [")
        assert row[header.index("the pick's rank")] == f"{hand_ranks(means[w.set])[pick]:g} of 9"


@pytest.mark.integration
def test_the_budget_curves_read_each_budget_of_the_cells_ranker(
    board: Leaderboard, suite_dir: Path
) -> None:
    both = set_means(board, suite_dir, ("dense @256", "dense @512", "bm25 @256"))
    for set_board in board.sets:
        for row in board.top:
            curve = budget_curve(set_board, row.key)
            chunker, embedder, label = row.key
            if label == "bm25 @256":  # read at one budget; a keyword cell has no dense curve
                assert [c.tokens for c in curve] == [256]
                assert widest_curve(set_board, row.key) == []
                continue
            assert [c.tokens for c in curve] == [256, 512]
            for cell, setting in zip(curve, ("dense @256", "dense @512"), strict=True):
                expected = both[set_board.name][(chunker, embedder, setting)]
                assert cell.metrics["recall"].value == pytest.approx(expected)


def test_a_ranker_read_at_one_budget_is_drawn_beside_the_widest_one() -> None:
    from chunkmark.suite.folder import SuiteSet

    def cell(setting: str, tokens: int, retrieval: str, value: float) -> SetCell:
        e = Estimate(value, value, value)
        return SetCell(
            "s", "c", "e", setting, tokens, retrieval, 1, dict.fromkeys(METRICS_SHOWN, e),
            0.0, 1, 1, 0.0, {},
        )  # fmt: skip

    dense = [
        cell("dense @256", 256, "token_budget(tokens=256)", 0.4),
        cell("dense @1024", 1024, "token_budget(tokens=1024)", 0.6),
        cell("dense @512", 512, "token_budget(tokens=512)", 0.5),
    ]
    hybrid = cell("hybrid @512", 512, "token_budget(tokens=512, ranker='hybrid()')", 0.7)
    board = SetBoard(SuiteSet("s", "s", "corpus", "", 1, 1), [*dense, hybrid], ("q",), {})
    assert budget_curve(board, hybrid.key) == [hybrid]
    assert widest_curve(board, hybrid.key) == [dense[0], dense[2], dense[1]]  # by budget
    assert budget_curve(board, dense[1].key) == [dense[0], dense[2], dense[1]]
    assert widest_curve(board, dense[1].key) == []  # its own ranker is the widest
    assert budget_curve(board, ("c", "e", "no such setting")) == []


@pytest.mark.integration
def test_embedders_per_set_average_their_chunkers_and_sum_their_cost(
    board: Leaderboard, suite_dir: Path
) -> None:
    # Reference: results.parquet and manifest.json read directly.
    rows = {(r.set, r.embedder): r for r in board.embedders}
    assert len(rows) == len(board.embedders) == 3 * 2  # BM25 reads no vectors: not a row
    for set_board in board.sets:
        folder = suite_dir / set_board.name
        spec = next(c.retrieval for c in set_board.cells if c.setting == "dense @256")
        per_cell = results_rows(folder, spec)
        cells = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["cells"]
        embedders = sorted({e for _, e in per_cell})
        assert len(embedders) == 2
        for full in embedders:
            row = rows[(set_board.name, full)]
            recalls = [per_cell[(c, e)]["recall"] for c, e in per_cell if e == full]
            assert row.setting == "dense @256" and row.chunkers == len(recalls) == 3
            assert row.mean.value == pytest.approx(float(np.mean(np.mean(recalls, axis=0))))
            assert row.mean.low <= row.mean.value <= row.mean.high
            assert row.best.value == pytest.approx(max(float(np.mean(r)) for r in recalls))
            mine = [c for c in cells if c["embedder"] == full]
            assert row.tokens_embedded == sum(c["chunk_tokens"] for c in mine)
            assert row.index_seconds == pytest.approx(
                sum(c["timings"]["embed_documents"] + c["timings"]["chunk"] for c in mine)
            )


@pytest.mark.integration
def test_variance_and_rho_cover_every_set(board: Leaderboard) -> None:
    for split in board.variance:
        # BM25 is counted once, not under each embedder: the grid is no longer fully crossed
        assert split.n == 3 * 21 and not split.balanced
        assert sum(split.shares.values()) + split.rest == pytest.approx(1.0)
        assert all(0.0 <= s <= 1.0 for s in split.shares.values())
    names = {r.diagnostic for r in board.rho}
    assert {"excerpts cut", "fragments per excerpt", "length spread", "mean chunk tokens"} <= names
    # the stitched corpus records its topic boundaries: its cells carry boundary scores
    assert {"boundary F1", "Pk", "WindowDiff"} <= names
    stitched = next(b for b in board.sets if b.name == "stitched")
    assert all(0.0 <= c.diagnostics["boundary F1"] <= 1.0 for c in stitched.cells)
    cut = next(r for r in board.rho if r.diagnostic == "excerpts cut" and r.metric == "recall")
    assert cut.n == 3 * 9 and cut.within_sets == 3 and -1.0 <= cut.rho <= 1.0
    # within each set and setting: the mean of scipy's rho over each group's cells, by hand
    groups: dict[tuple[str, str], list[SetCell]] = {}
    for set_board in board.sets:
        for c in set_board.cells:
            if c.tokens == board.budget:
                groups.setdefault((c.set, c.setting), []).append(c)
    rhos = [
        spearmanr(
            [c.diagnostics["excerpts cut"] for c in group],
            [c.metrics["recall"].value for c in group],
        ).statistic
        for group in groups.values()
    ]
    finite = [r for r in rhos if np.isfinite(r)]
    assert cut.within_settings == len(finite) >= 3
    assert cut.within_setting == pytest.approx(np.mean(finite))


@pytest.mark.integration
def test_a_missing_budget_names_the_budgets(suite_dir: Path) -> None:
    with pytest.raises(LeaderboardError, match=r"budget of 1024 tokens \(budgets: 256, 512\)"):
        build_leaderboard(suite_dir)


@pytest.mark.integration
def test_the_command_writes_both_files_and_prints_json(
    board: Leaderboard, suite_dir: Path, tmp_path: Path
) -> None:
    app = typer.Typer()
    app.command()(leaderboard_command)
    args = [str(suite_dir), "--out", str(tmp_path), "--budget", str(BUDGET)]
    args += ["--resamples", str(RESAMPLES), "--permutations", str(PERMUTATIONS), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert [s["scope"] for s in summary["sets"]] == ["corpus", "document", "corpus"]
    assert len(summary["top"]) == 5
    for row in summary["top"]:
        rank = row["mean_rank"]
        assert rank["low"] <= rank["value"] <= rank["high"]
    assert Path(summary["files"]["html"]) == tmp_path / "leaderboard.html"
    markdown = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    # regenerated from the same folder with the same seed: the same table
    assert markdown == to_markdown(board)
    for heading in (
        "## Top 5 at 256 tokens",
        "Kendall's tau",
        "What explains the variance",
        "Do chunk diagnostics predict retrieval?",
        "## Per-set winners",
        "## Recall against budget, and ranks across sets",
        "### Set: fairytaleqa",
    ):
        assert heading in markdown


# --- the page in Chromium ----------------------------------------------------------------------

browser_test = pytest.importorskip("report.test_browser")
browser = browser_test.browser  # the report's fixture: headless Chromium through Playwright


@pytest.mark.integration
@pytest.mark.skipif(not browser_test.CHROMIUM.exists(), reason="no Chromium")
def test_the_page_renders_offline_with_an_interval_in_every_metric_cell(
    browser: Any, board: Leaderboard, suite_dir: Path, tmp_path: Path
) -> None:
    files = write_leaderboard(board, tmp_path)
    opened = browser_test.open_report(browser, files["html"])
    page = opened.page
    try:
        assert opened.errors == []
        assert opened.requests == [files["html"].resolve().as_uri()]
        # plotly.js and the figures' data are in the page: no link, image, frame or script src
        assert page.locator("link, img, iframe, script[src]").count() == 0
        rank_rows = page.locator("table.rank tbody tr")
        assert rank_rows.count() == 5 + 9  # the top 5, then every ranked cell
        # mean rank and one metric per set: each with its interval
        ranked = page.locator("table.rank tbody td.num")
        assert ranked.count() == (5 + 9) * (1 + 3)
        assert page.locator("table.rank tbody td.num .ci").count() == ranked.count()
        per_set = page.locator("section h3")
        assert per_set.count() == 3
        metric_cells = page.locator("table:not(.matrix) td.num:has(.ci)")
        # each set left out: one row, the two picks' regrets with their intervals
        assert page.locator("table.holdout tbody tr").count() == 3
        assert page.locator("table.holdout tbody td.num:has(.ci)").count() == 3 * 2
        assert page.locator("table.winners tbody tr").count() == 3
        # the budget curves' numbers: a dense top cell at 256 and 512 tokens, a BM25 one at 256
        dense = sum(r.setting == "dense @256" for r in board.top)
        curves = 3 * (2 * dense + (len(board.top) - dense))
        # every cell of every set: its three metrics; the ranking tables; the held-out table;
        # the winners (the best's and the pick's); the curves' numbers
        assert metric_cells.count() == (
            3 * 21 * 3 + (5 + 9) * 4 + 3 * 2 * 2 + 3 * 2 + 3 * 2 + curves
        )
        shown = page.locator("main").inner_text()
        assert not re.search(r"\b(nan|None|null|undefined)\b", shown)
        _check_figures(page, board, suite_dir)
        browser_test.save_screenshot(page, tmp_path / "leaderboard.png")
    finally:
        page.close()


def _check_figures(page: Any, board: Leaderboard, suite_dir: Path) -> None:
    """Every figure is drawn by plotly.js, and what it draws is the summaries' numbers."""
    figures = page.locator(".figure")
    assert figures.count() == 3 + 1  # recall against budget per set, the rank heatmap
    for i in range(figures.count()):
        figure = figures.nth(i)
        assert "js-plotly-plot" in (figure.get_attribute("class") or "")
        assert figure.locator(".main-svg").count() >= 1
    means = set_means(board, suite_dir)
    heat = page.evaluate("() => document.getElementById('figure-ranks').data[0]")
    assert heat["x"] == ["demo", "fairytaleqa", "stitched"]
    assert len(heat["y"]) == 9 and len(heat["z"]) == 9
    for row, z in zip(board.ranking, heat["z"], strict=True):
        assert z == [hand_ranks(means[s])[row.key] for s in heat["x"]]
    assert page.locator("#figure-ranks .hm, #figure-ranks .heatmaplayer image").count() >= 1
    both = set_means(board, suite_dir, ("dense @256", "dense @512"))
    for index, set_board in enumerate(board.sets):
        traces = page.evaluate(f"() => document.getElementById('figure-budget-{index}').data")
        assert len(traces) == len(board.top)  # no top cell here has a wider ranker
        for trace, row in zip(traces, board.top, strict=True):
            chunker, embedder, label = row.key
            if label == "bm25 @256":
                assert trace["x"] == [256]
                continue
            assert trace["x"] == [256, 512]
            expected = [
                both[set_board.name][(chunker, embedder, f"dense @{t}")] for t in (256, 512)
            ]
            assert trace["y"] == pytest.approx(expected)
