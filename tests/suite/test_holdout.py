"""Leave-one-set-out (chunkmark.suite.holdout): picks, ranks and regrets against a reference
written with plain Python loops, exact intervals where the answer is known, and the committed
board's held-out figures recomputed from its summary.csv files (the means the runs wrote, not
the per-question rows the module reads)."""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkmark.report.data import short_name
from chunkmark.suite.folder import LeaderboardError
from chunkmark.suite.holdout import leave_one_set_out, mean_rank_pick, minimax_regret_pick
from chunkmark.suite.leaderboard import leave_one_set_out_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "leaderboard" / "default-suite"


def _ranks(values: list[float]) -> list[float]:
    """Rank 1 for the largest value; tied values share the mean of their positions."""
    out = [0.0] * len(values)
    for i, v in enumerate(values):
        above = sum(1 for w in values if w > v)
        equal = sum(1 for w in values if w == v)
        out[i] = above + (equal + 1) / 2
    return out


def _reference_picks(means: list[list[float]]) -> tuple[int, int]:
    """means[cell][set] -> (mean-rank pick, minimax-regret pick), by loops."""
    cells, sets = len(means), len(means[0])
    by_set = [_ranks([means[c][s] for c in range(cells)]) for s in range(sets)]
    mean_rank = [sum(by_set[s][c] for s in range(sets)) / sets for c in range(cells)]
    mean_value = [sum(means[c]) / sets for c in range(cells)]
    rank_pick = min(range(cells), key=lambda c: (mean_rank[c], -mean_value[c], c))
    best = [max(means[c][s] for c in range(cells)) for s in range(sets)]
    regret = [[best[s] - means[c][s] for s in range(sets)] for c in range(cells)]
    minimax = min(range(cells), key=lambda c: (max(regret[c]), sum(regret[c]) / sets, c))
    return rank_pick, minimax


@pytest.mark.parametrize("seed", range(6))
def test_picks_ranks_and_regrets_equal_a_loop_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cells = 7
    sizes = {"a": 30, "b": 11, "c": 45, "d": 8}
    # eighths make exact ties between cells likely, which the tie rules must settle; they are
    # exact in binary, so any order of summation gives the same mean
    values = {s: np.round(rng.random((cells, n)) * 8) / 8 for s, n in sizes.items()}
    keys = [(f"chunker{i}", "embedder", "setting") for i in range(cells)]
    result = leave_one_set_out(values, keys, baseline=keys[3], resamples=200, seed=seed)
    names = list(sizes)
    means = [[sum(values[s][c].tolist()) / sizes[s] for s in names] for c in range(cells)]
    for j, held in enumerate(result.sets):
        assert held.set == names[j]
        others = [[row[s] for s in range(len(names)) if s != j] for row in means]
        rank_pick, minimax = _reference_picks(others)
        column = [row[j] for row in means]
        ranks = _ranks(column)
        best = max(column)
        assert held.best_mean == pytest.approx(best, abs=1e-12)
        for rule, row in (("mean rank", rank_pick), ("minimax regret", minimax), ("baseline", 3)):
            pick = held.pick(rule)
            assert pick.cell == keys[row], (seed, held.set, rule)
            assert pick.rank == ranks[row]
            assert pick.regret.value == pytest.approx(best - column[row], abs=1e-12)
            assert pick.regret.low <= pick.regret.high
    assert result.full_pick == keys[_reference_picks(means)[0]]
    for rule in ("mean rank", "minimax regret", "baseline"):
        regrets = [h.pick(rule).regret.value for h in result.sets]
        assert result.worst(rule) == pytest.approx(max(regrets))
        assert result.mean(rule) == pytest.approx(sum(regrets) / len(regrets))


def test_a_pick_that_is_best_on_every_question_has_no_regret_in_any_resample() -> None:
    rng = np.random.default_rng(1)
    # cell 0 is best on every set's every question: every resample's best is cell 0 as well
    base = rng.random((4, 25)) * 0.5
    base[0] = 0.9
    values = {"x": base, "y": base[:, ::-1].copy(), "z": base[:, :10].copy()}
    result = leave_one_set_out(values, [(str(i), "e", "s") for i in range(4)], resamples=300)
    for held in result.sets:
        regret = held.pick("mean rank").regret
        assert (regret.value, regret.low, regret.high) == (0.0, 0.0, 0.0)


def test_a_constant_gap_gives_an_interval_of_exactly_that_gap() -> None:
    # On the held-out set the best cell is 0.25 above the pick on every question, and no other
    # cell comes near: every resample's regret is 0.25, so the interval is [0.25, 0.25].
    rng = np.random.default_rng(2)
    pick_row = rng.random(40) * 0.5
    held = np.stack([pick_row, pick_row + 0.25, pick_row - 0.1])
    train = np.stack([pick_row + 0.3, pick_row, pick_row - 0.1])  # the pick wins elsewhere
    values = {"train": train, "also": train.copy(), "held": held}
    result = leave_one_set_out(values, [("a", "e", "s"), ("b", "e", "s"), ("c", "e", "s")])
    regret = result.sets[2].pick("mean rank").regret
    assert result.sets[2].pick("mean rank").cell == ("a", "e", "s")
    assert regret.value == pytest.approx(0.25, abs=1e-12)
    assert regret.low == pytest.approx(0.25, abs=1e-12)
    assert regret.high == pytest.approx(0.25, abs=1e-12)


def test_pick_rules_on_a_small_table() -> None:
    # cells x sets: cell 1 has the best mean rank (1, 2, 1); cell 2 never loses more than 0.1
    means = np.array([[0.5, 0.9, 0.2], [0.9, 0.5, 0.9], [0.8, 0.8, 0.8]])
    assert mean_rank_pick(means) == 1
    assert minimax_regret_pick(means) == 2


def test_one_set_is_refused() -> None:
    with pytest.raises(ValueError, match="at least two sets"):
        leave_one_set_out({"a": np.ones((2, 3))}, [("a", "e", "s"), ("b", "e", "s")])


def _summary_means(folder: Path) -> dict[tuple[str, str, str], float]:
    """The set's cells at 1,024 tokens from summary.csv: a keyword ranking once when it is the
    same under every embedder, else once per embedder (a chunker that embeds while chunking)."""
    out: dict[tuple[str, str, str], float] = {}
    keyword: dict[str, dict[str, float]] = {}
    with (folder / "summary.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["scope"] != "all" or "tokens=1024" not in row["retrieval"]:
                continue
            if row["excerpts"] != "position":
                continue
            retrieval = row["retrieval"]
            if "hybrid(" in retrieval:
                setting, embedder = "hybrid", row["embedder"]
            elif "bm25(" in retrieval:
                keyword.setdefault(row["chunker"], {})[row["embedder"]] = float(row["recall_mean"])
                continue
            else:
                setting, embedder = "dense", row["embedder"]
            out[(row["chunker"], embedder, setting)] = float(row["recall_mean"])
    for chunker, by_embedder in keyword.items():
        first: dict[float, str] = {}  # each distinct mean, under the first embedder giving it
        for embedder, mean in by_embedder.items():
            first.setdefault(mean, embedder)
        if len(first) == 1:
            out[(chunker, "none", "bm25")] = next(iter(first))
        else:
            for mean, embedder in first.items():
                out[(chunker, short_name("embedder", embedder), "bm25")] = mean
    return out


def test_the_committed_boards_held_out_figures_match_its_summary_files() -> None:
    result = leave_one_set_out_suite(SUITE, resamples=20)
    sets = [h.set for h in result.sets]
    folders = {h.set: SUITE / h.set for h in result.sets}
    summaries = {name: _summary_means(folders[name]) for name in sets}
    keys = sorted(set.intersection(*(set(summaries[s]) for s in sets)))
    assert len(keys) == len(result.keys)
    means = [[summaries[s][k] for s in sets] for k in keys]

    def label(key: tuple[str, str, str]) -> tuple[str, str, str]:
        setting = key[2].split(" ")[0]
        embedder = key[1]
        if embedder.startswith("none"):
            embedder = (
                embedder.split("; chunked with ")[1][:-1] if "; chunked" in embedder else "none"
            )
        return (key[0], embedder, setting)

    for j, held in enumerate(result.sets):
        others = [[row[s] for s in range(len(sets)) if s != j] for row in means]
        rank_pick, minimax = _reference_picks(others)
        column = [row[j] for row in means]
        for rule, row in (("mean rank", rank_pick), ("minimax regret", minimax)):
            pick = held.pick(rule)
            assert label(pick.cell) == keys[row], (held.set, rule)
            assert pick.regret.value == pytest.approx(max(column) - column[row], abs=1e-9)
            assert pick.rank == _ranks(column)[row]
    # over every set, the pick is the board's headline cell (leaderboard.md's first row)
    top = (ROOT / "leaderboard" / "leaderboard.md").read_text(encoding="utf-8")
    first = next(line for line in top.splitlines() if line.startswith("| 1 |"))
    chunker, embedder, setting = (part.strip() for part in first.split("|")[2:5])
    assert result.full_pick[0].startswith(chunker.rstrip(")"))
    assert result.full_pick[2] == setting
    assert "late_chunking=False" in result.full_pick[1] and "all-MiniLM-L6-v2" in embedder


def test_the_benchmark_script_prints_its_tables(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location(
        "leave_one_set_out_bench", ROOT / "benchmarks" / "leave_one_set_out.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "| held-out set | questions | best cell | rule | pick | rank | regret (points) |" in out
    assert "| rule | worst regret (points) | mean regret (points) |" in out
    # seven sets, three rules each
    assert sum(1 for line in out.splitlines() if re.search(r" of \d+ \| ", line)) == 21


def test_a_baseline_matching_two_cells_is_refused() -> None:
    with pytest.raises(LeaderboardError, match="matches 2 cells"):
        leave_one_set_out_suite(
            SUITE, baseline=("fixed_tokens(size=512", "all-MiniLM", "dense @1024"), resamples=5
        )


def test_a_keyword_cell_is_one_per_chunking_not_one_per_embedder() -> None:
    # cluster_semantic chunks with the cell's embedder, so its BM25 ranking differs by embedder
    # (evidence_inference: 0.642 chunked with MiniLM, 0.585 with model2vec in summary.csv);
    # fixed_tokens chunks alike under every embedder and is one keyword cell.
    from chunkmark.suite.folder import NO_EMBEDDER, read_set, read_suite

    suite = read_suite(SUITE)
    board = read_set(suite, next(s for s in suite.sets if s.name == "evidence_inference"))
    summary: dict[str, dict[str, float]] = {}
    with (SUITE / "evidence_inference" / "summary.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            retrieval = row["retrieval"]
            keyword = "bm25(" in retrieval and "hybrid(" not in retrieval
            if row["scope"] == "all" and "tokens=1024" in retrieval and keyword:
                summary.setdefault(row["chunker"], {})[row["embedder"]] = float(row["recall_mean"])
    for chunker, by_embedder in summary.items():
        cells = {
            c.embedder: c.metrics["recall"].value
            for c in board.cells
            if c.chunker == chunker and c.setting == "bm25 @1024"
        }
        distinct = set(by_embedder.values())
        assert len(cells) == len(distinct), chunker
        if len(distinct) == 1:
            assert list(cells) == [NO_EMBEDDER]
        else:
            short = {short_name("embedder", e): mean for e, mean in by_embedder.items()}
            for label, recall in cells.items():
                embedder = label.split("; chunked with ")[1][:-1]
                assert recall == pytest.approx(short[embedder], abs=1e-9)
    assert any(len(set(v.values())) > 1 for v in summary.values())


def test_the_committed_boards_held_out_table_matches_the_summary_files() -> None:
    # The board's "Does the pick hold" table, as committed, against the picks and regrets
    # recomputed here from the sets' summary.csv files.
    text = (ROOT / "leaderboard" / "leaderboard.md").read_text(encoding="utf-8")
    section = text.split("## Does the pick hold on a set it was not fitted on?", 1)[1]
    rows = [line for line in section.split("\n## ", 1)[0].splitlines() if line.startswith("| ")]
    body = [[c.strip() for c in r.strip("|").split("|")] for r in rows[1:]]  # after the header
    sets = [r[0] for r in body]
    assert len(sets) == 7
    summaries = {name: _summary_means(SUITE / name) for name in sets}
    keys = sorted(set.intersection(*(set(summaries[s]) for s in sets)))
    means = [[summaries[s][k] for s in sets] for k in keys]
    for j, row in enumerate(body):
        others = [[m[s] for s in range(len(sets)) if s != j] for m in means]
        rank_pick, minimax = _reference_picks(others)
        column = [m[j] for m in means]
        ranks = _ranks(column)
        for pick, at in ((rank_pick, 5), (minimax, 10)):
            assert row[at + 3] == f"{ranks[pick]:g} of {len(keys)}", (row[0], at)
            regret = float(row[at + 4].split(" ")[0])
            assert regret == pytest.approx(max(column) - column[pick], abs=5e-4), (row[0], at)
            assert row[at].rstrip(")").split("(")[0] == keys[pick][0].split("(")[0]
