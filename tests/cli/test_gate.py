"""``chunkmark gate`` on hand-made results folders whose verdicts are computed by hand.

The folders hold a manifest and a results.parquet with chosen per-question values; the exact
one-sided sign-flip p-values follow from counting sign vectors (``2^-k`` when ``k`` questions
all drop by the same amount and the rest are tied), and Holm's adjustment from its definition.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.cli.app import main
from chunkmark.datasets import Dataset, Document, Question
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.embedders import EMBEDDERS
from chunkmark.report import gate as g
from chunkmark.spans import Span

EMBEDDER = str(EMBEDDERS.resolve("fake()"))
A, B, C = (str(CHUNKERS.resolve(f"fixed_tokens(size={s}, overlap=0)")) for s in (100, 200, 300))
QIDS = [f"q{i}" for i in range(8)]
BASE = {A: [0.5] * 8, B: [0.5] * 8, C: [0.5] * 8}
# A: six questions drop by 0.5 -> drop 37.5 points, exact one-sided p = 2^-6 = 1/64.
# B: five drop by 0.1 -> 6.25 points, p = 2^-5 = 1/32 (< 0.05, but Holm doubles it).
# C: three gain 0.2 -> no drop, p = 1 (every flipped mean is at most the observed one).
WORSE = {A: [0.0] * 6 + [0.5] * 2, B: [0.4] * 5 + [0.5] * 3, C: [0.7] * 3 + [0.5] * 5}


def write_dataset(folder: Path, excerpt_end: int = 10, text: str = "x") -> Path:
    docs = (Document("d", "abcdefghijklmnopqrstuvwxyz" * 4 + text),)
    questions = tuple(Question(q, f"question {q}?", "d", (Span(0, excerpt_end),)) for q in QIDS)
    write_jsonl(Dataset(folder.name, docs, questions), folder)
    return folder


def write_run(
    folder: Path,
    cells: Mapping[str, Sequence[float]],
    *,
    dataset: str = "set",
    fingerprint: str = "f" * 16,
    source: str = "",
    qids: Sequence[str] = QIDS,
    settings: Sequence[str] = ("top_k(k=5)", "top_k(k=1)"),
    embedder: str = EMBEDDER,
) -> Path:
    """A results folder: ``cells`` maps a chunker to its recall per question (every setting)."""
    folder.mkdir(parents=True)
    manifest = {
        "datasets": [
            {"name": dataset, "fingerprint": fingerprint, "source": source, "questions": len(qids)}
        ],
        "cells": [
            {"id": str(i), "dataset": dataset, "chunker": c, "embedder": embedder}
            for i, c in enumerate(cells)
        ],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    rows: dict[str, list[Any]] = {
        k: []
        for k in (
            "dataset",
            "chunker",
            "embedder",
            "retrieval",
            "k",
            "excerpts",
            "unit",
            "denominator",
            "question_id",
            "recall",
            "iou",
        )
    }
    for chunker, values in cells.items():
        for setting in settings:
            for q, v in zip(qids, values, strict=True):
                for key, value in (
                    ("dataset", dataset),
                    ("chunker", chunker),
                    ("embedder", embedder),
                    ("retrieval", setting),
                    ("k", setting.split("=")[1].rstrip(")")),
                    ("excerpts", "position"),
                    ("unit", "chars"),
                    ("denominator", "sum"),
                    ("question_id", q),
                    ("recall", v),
                    ("iou", v / 2),
                ):
                    rows[key].append(value)
    pq.write_table(pa.table(rows), folder / "results.parquet")
    return folder


def gate(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """``chunkmark gate ARGS`` through the real entry point: exit status, stdout, stderr."""
    old = sys.argv
    sys.argv = ["chunkmark", "gate", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_the_verdicts_and_holm_adjustment_match_hand_computation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_run(tmp_path / "base", BASE)
    run = write_run(tmp_path / "run", WORSE)
    flips = ("--permutations", "200000")
    code, out, err = gate(capsys, run, "--baseline", base, "--json", "--one-sided", *flips)
    assert code == g.REGRESSION == 3, err
    got = {(c["chunker"]): c for c in json.loads(out)["cells"]}
    assert got[A]["drop_points"] == pytest.approx(37.5) and got[B]["drop_points"] == pytest.approx(
        6.25
    )
    assert got[A]["p_value"] == pytest.approx(1 / 64, abs=0.002)
    assert got[B]["p_value"] == pytest.approx(1 / 32, abs=0.002)
    assert got[C]["p_value"] == 1.0
    # Holm over 3 cells: sorted p 1/64, 1/32, 1 -> 3/64, max(3/64, 2/32), max(.., 1).
    assert got[A]["p_holm"] == pytest.approx(3 / 64, abs=0.005)
    assert got[B]["p_holm"] == pytest.approx(2 / 32, abs=0.005)
    assert got[C]["p_holm"] == 1.0
    assert [got[x]["status"] for x in (A, B, C)] == [
        "regression",
        # raw p < 0.05, but not after Holm; every question that moved dropped, so the interval
        # lies below zero: too few questions to tell, not a pass
        "inconclusive",
        "no drop",
    ]
    assert got[B]["ci_high"] < 0
    assert got[C]["change"] == pytest.approx(0.075) and got[C]["ci_low"] >= 0
    # Two-sided (the default): p = 2/64, 2/32 and 2/8; Holm: 3/32, max(3/32, 2/16), 1/4 -> no
    # cell is significant at 0.05, so the same run passes.
    code, out, err = gate(capsys, run, "--baseline", base, "--json", *flips)
    assert code == 0, err
    two = {(c["chunker"]): c for c in json.loads(out)["cells"]}
    for cell, p, p_holm in ((A, 2 / 64, 3 / 32), (B, 2 / 32, 2 / 16), (C, 2 / 8, 2 / 8)):
        assert two[cell]["p_value"] == pytest.approx(p, abs=0.003)
        assert two[cell]["p_holm"] == pytest.approx(p_holm, abs=0.006)
    assert two[A]["status"] == "inconclusive" and json.loads(out)["verdict"] == "inconclusive"
    assert json.loads(out)["passed"] is True  # exit 0 keeps its meaning: no significant drop
    assert json.loads(out)["test"].startswith("two-sided")
    # The margin: a 37.5-point drop passes a 40-point --max-drop.
    code, out, _ = gate(
        capsys, run, "--baseline", base, "--max-drop", "40", "--json", "--one-sided"
    )
    assert code == 0 and json.loads(out)["passed"] is True
    statuses = [c["status"] for c in json.loads(out)["cells"]]
    assert statuses[0] == "drop within --max-drop"


def test_identical_runs_pass_and_print_a_markdown_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_run(tmp_path / "base", WORSE)
    table = tmp_path / "comment" / "gate.md"
    code, out, err = gate(capsys, base, "--baseline", base, "--markdown", table)
    assert code == 0, err
    assert out.startswith("### chunkmark gate: passed (3 cell(s))")
    assert out.count("| unchanged |") == 3 and "[+0.00, +0.00]" in out
    assert table.read_text() == out


def test_a_baseline_file_round_trips_and_gates_like_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_dataset(tmp_path / "set")
    fingerprint = g.question_hash(str(data))  # any fixed string works as a fingerprint
    base = write_run(tmp_path / "base", BASE, source=str(data), fingerprint=fingerprint[:16])
    run = write_run(tmp_path / "run", WORSE, source=str(data), fingerprint=fingerprint[:16])
    file = tmp_path / "baseline.json"
    code, _, err = gate(capsys, base, "--baseline", file, "--update-baseline")
    assert code == 0 and "wrote the baseline" in err
    side = g.read_baseline(file)
    assert side.question_ids == tuple(QIDS) and side.retrieval == "top_k(k=5)"
    assert {c: list(v) for c, v in side.cells.items()} == {
        (c, EMBEDDER): v for c, v in BASE.items()
    }
    assert side.question_hash == fingerprint and side.metric == "recall"
    from_file = gate(capsys, run, "--baseline", file, "--json", "--one-sided")
    from_folder = gate(capsys, run, "--baseline", base, "--json", "--one-sided")
    assert from_file[0] == from_folder[0] == 3
    cells = [json.loads(r[1])["cells"] for r in (from_file, from_folder)]
    assert cells[0] == cells[1]
    # Ratchet: the worse run becomes the baseline deliberately; gating it again passes.
    code, out, _ = gate(capsys, run, "--baseline", file, "--update-baseline", "--one-sided")
    assert code == 0 and "regression" in out and "replaces the baseline" in out
    assert gate(capsys, run, "--baseline", file, "--one-sided")[0] == 0


def test_other_questions_are_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_run(tmp_path / "base", BASE)
    fewer = write_run(tmp_path / "fewer", {c: v[:6] for c, v in BASE.items()}, qids=QIDS[:6])
    code, _, err = gate(capsys, fewer, "--baseline", base)
    assert code == g.QUESTIONS_DIFFER == 4
    assert "has 6 of the baseline's 8 questions" in err and "--update-baseline" in err
    # Same ids, other excerpts: the fingerprints differ and the question hashes tell why.
    one, two = write_dataset(tmp_path / "one", 10), write_dataset(tmp_path / "two", 12)
    a = write_run(tmp_path / "a", BASE, source=str(one), fingerprint="1" * 16)
    b = write_run(tmp_path / "b", BASE, source=str(two), fingerprint="2" * 16)
    file = tmp_path / "a.json"
    assert gate(capsys, a, "--baseline", file, "--update-baseline")[0] == 0
    code, _, err = gate(capsys, b, "--baseline", file)
    assert code == 4 and "same ids, other excerpts" in err
    assert err.count("\n") == 1 and "Fix:" in err
    # Same questions over other documents (text after the excerpts changed): another dataset.
    three = write_dataset(tmp_path / "three", 10, text="changed")
    c = write_run(tmp_path / "c", BASE, source=str(three), fingerprint="3" * 16)
    code, _, err = gate(capsys, c, "--baseline", file)
    assert code == g.INCOMPATIBLE and "other documents" in err


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--metric", "iou"], 5, "holds 'recall' and the gate reads 'iou'"),
        (["--pick-k", "1"], 5, "is at top_k(k=5)"),
        (["--pick-chunker", "fixed_tokens(size=999, overlap=0)"], 2, "picks name none"),
    ],
)
def test_a_baseline_of_another_metric_or_setting_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, words: str
) -> None:
    base = write_run(tmp_path / "base", BASE)
    file = tmp_path / "b.json"
    data = write_dataset(tmp_path / "set")
    base = write_run(tmp_path / "base2", BASE, source=str(data))
    assert gate(capsys, base, "--baseline", file, "--update-baseline")[0] == 0
    got, out, err = gate(capsys, base, "--baseline", file, *args)
    assert got == code and words in err and out == "", err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_another_dataset_and_a_missing_cell_have_their_own_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_run(tmp_path / "base", BASE)
    other = write_run(tmp_path / "other", BASE, dataset="other", fingerprint="9" * 16)
    code, _, err = gate(capsys, other, "--baseline", base)
    assert code == g.INCOMPATIBLE and "is of dataset 'set'" in err
    partial = write_run(tmp_path / "partial", {A: BASE[A], B: BASE[B]})
    code, _, err = gate(capsys, partial, "--baseline", base)
    assert code == g.MISSING_CELL == 6 and "lacks 1 gated cell(s)" in err and C in err
    # Gating fewer cells with the picking options is the fix.
    code, out, _ = gate(capsys, partial, "--baseline", base, "--pick-chunker", A)
    assert code == 0 and "passed (1 cell(s))" in out


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "is not JSON (line 1, column 2"),
        ('{"format": "something else"}', "format is not 'chunkmark-gate-baseline'"),
        (None, "cells[1].values must be 8 numbers"),
        (None, "questions.hash is missing"),
    ],
)
def test_a_corrupt_baseline_file_is_one_line_and_update_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, words: str
) -> None:
    data = write_dataset(tmp_path / "set")
    run = write_run(tmp_path / "run", BASE, source=str(data))
    file = tmp_path / "b.json"
    assert gate(capsys, run, "--baseline", file, "--update-baseline")[0] == 0
    if content is None:
        parsed = json.loads(file.read_text())
        if "values" in words:
            parsed["cells"][1]["values"] = parsed["cells"][1]["values"][:-1]
        else:
            del parsed["questions"]["hash"]
        content = json.dumps(parsed)
    file.write_text(content)
    code, out, err = gate(capsys, run, "--baseline", file)
    assert code == g.BAD_BASELINE == 7 and words in err and out == ""
    assert err.count("\n") == 1 and "--update-baseline" in err
    code, _, err = gate(capsys, run, "--baseline", file, "--update-baseline")
    assert code == 0 and "not comparable" in err
    assert gate(capsys, run, "--baseline", file)[0] == 0


def test_a_missing_baseline_file_says_how_to_write_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", BASE)
    code, _, err = gate(capsys, run, "--baseline", tmp_path / "none.json")
    assert code == 7 and "does not exist" in err and "--update-baseline" in err


def test_the_help_lists_the_exit_codes_of_the_module() -> None:
    from chunkmark.cli.gate import EXIT_HELP

    for code in g.EXIT_CODES:
        assert f"{code} " in EXIT_HELP


# --- power: what the questions can detect, and inconclusive cells ----------------------------

Q15 = [f"q{i}" for i in range(15)]
D = str(CHUNKERS.resolve("fixed_tokens(size=400, overlap=0)"))
FOUR = {A: [1.0] * 15, B: [1.0] * 15, C: [1.0] * 15, D: [1.0] * 15}
# Every cell loses 5 of 15 questions: -33.33 points; exact two-sided p = 2/32 per cell.
DROPPED = {cell: [0.0] * 5 + [1.0] * 10 for cell in FOUR}


def nct_power(n: int, mean: float, sd: float, alpha: float) -> float:
    """Two-sided one-sample t-test power, written out: noncentral t with ncp mean/(sd/sqrt n)."""
    from scipy import stats

    crit = stats.t.ppf(1 - alpha / 2, n - 1)
    ncp = mean / (sd / n**0.5)
    return float(stats.nct.sf(crit, n - 1, ncp) + stats.nct.cdf(-crit, n - 1, ncp))


def test_a_33_point_drop_on_15_questions_is_inconclusive_with_what_they_can_detect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fault: "passed" for a -33-point recall drop on all four cells, with no word that 15
    questions cannot show a drop of 1 point."""
    import statistics

    base = write_run(tmp_path / "base", FOUR, qids=Q15)
    run = write_run(tmp_path / "run", DROPPED, qids=Q15)
    code, out, err = gate(capsys, run, "--baseline", base)
    assert code == 0, err  # exit 0 keeps its meaning: no significant regression
    assert out.startswith("### chunkmark gate: inconclusive in 4 of 4 cell(s)")
    assert "passed" not in out.splitlines()[0]
    assert out.count("| -33.33 |") == 4 and out.count("**inconclusive**") == 4
    # The smallest drop 15 questions detect, by hand from the paired sd: a two-sided t-test at
    # alpha / 4 cells has 80% power there.
    sd = statistics.stdev([-1.0] * 5 + [0.0] * 10)
    code, out_json, _ = gate(capsys, run, "--baseline", base, "--json")
    got = json.loads(out_json)
    assert got["verdict"] == "inconclusive" and got["passed"] is True
    assert got["power"]["alpha"] == pytest.approx(0.05 / 4)
    cell = got["cells"][0]
    detectable = cell["detectable_drop_points"] / 100
    assert nct_power(15, detectable, sd, 0.0125) == pytest.approx(0.8, abs=1e-4)
    assert nct_power(15, detectable - 0.01, sd, 0.0125) < 0.8 - 0.005
    assert (
        f"can detect (80% power, paired t-test at alpha 0.0125 (alpha / 4 cells), from each "
        f"cell's paired sd): {100 * detectable:.2f} points." in " ".join(out.split())
    )
    # The questions the observed 33-point drop would need: more than the 15 there are.
    n = cell["questions_needed"]
    assert nct_power(n, 1 / 3, sd, 0.0125) >= 0.8 > nct_power(n - 1, 1 / 3, sd, 0.0125)
    assert n > 15 and f"(about {n} questions needed)" in out
    # A drop of --max-drop (1 point) at that sd: how many questions it would take.
    text = " ".join(out.split())
    assert "A drop of --max-drop (1 point) cannot be shown with 15 questions: it would take" in text
    need = int(text.split("it would take about ")[1].split(".")[0].replace(",", ""))
    assert nct_power(need, 0.01, sd, 0.0125) >= 0.8 > nct_power(need - 1, 0.01, sd, 0.0125)
    # CI may ask for a failure on an inconclusive gate: its own status, 8.
    code, _, _ = gate(capsys, run, "--baseline", base, "--fail-inconclusive")
    assert code == g.INCONCLUSIVE_EXIT == 8
    # Identical runs: nothing to measure, passed, and it says so.
    code, out, _ = gate(capsys, base, "--baseline", base, "--fail-inconclusive")
    assert code == 0 and out.startswith("### chunkmark gate: passed (4 cell(s))")
    assert "not measurable here" in out


OTHER = str(EMBEDDERS.resolve("fake(seed=1)"))


def test_picks_naming_no_baseline_cell_are_a_usage_error_not_a_corrupt_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fault: --pick-embedder against a baseline of another embedder said "holds no rows" and
    exited 7, which means a corrupt baseline."""
    data = write_dataset(tmp_path / "set")
    where = {"source": str(data), "fingerprint": g.question_hash(str(data))[:16]}
    base = write_run(tmp_path / "base", BASE, **where)
    run = write_run(tmp_path / "run", BASE, embedder=OTHER, **where)
    code, _, err = gate(capsys, run, "--baseline", base, "--pick-embedder", "fake(seed=1)")
    assert code == g.USAGE == 2, err
    assert "has no cell of the picked chunker/embedder" in err and "--pair" in err
    assert "holds no rows" not in err
    # A baseline file: the same.
    file = tmp_path / "baseline.json"
    assert gate(capsys, base, "--baseline", file, "--update-baseline")[0] == 0
    code, _, err = gate(capsys, run, "--baseline", file, "--pick-embedder", "fake(seed=1)")
    assert code == 2 and "--pair" in err


def test_a_swap_of_embedder_or_chunker_is_gated_with_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_run(tmp_path / "base", BASE)
    run = write_run(tmp_path / "run", WORSE, embedder=OTHER)
    code, out, err = gate(
        capsys, run, "--baseline", base, "--pair", "fake()=fake(seed=1)", "--json", "--one-sided"
    )
    assert code == g.REGRESSION, err
    got = {c["chunker"]: c for c in json.loads(out)["cells"]}
    assert got[A]["status"] == "regression" and got[A]["run_embedder"] == OTHER
    assert got[A]["embedder"] == EMBEDDER and got[A]["drop_points"] == pytest.approx(37.5)
    assert got[C]["status"] == "no drop"
    code, out, _ = gate(capsys, run, "--baseline", base, "--pair", "fake()=fake(seed=1)")
    assert "| fixed_tokens(size=100) × fake(dimension=64) → fake(dimension=64, seed=1) |" in out
    # A chunker swap: specs hold '=' inside their parentheses; one cell of the baseline gated
    # against another chunker of the run (here: A's values against the run's B).
    code, out, err = gate(
        capsys,
        write_run(tmp_path / "same", WORSE),
        "--baseline",
        base,
        "--pick-chunker",
        "fixed_tokens(size=100, overlap=0)",
        "--pair",
        "fixed_tokens(size=100, overlap=0)=fixed_tokens(size=200, overlap=0)",
        "--json",
        "--one-sided",
    )
    cells = json.loads(out)["cells"]
    assert [(c["chunker"], c["run_chunker"]) for c in cells] == [(A, B)], err
    assert cells[0]["drop_points"] == pytest.approx(6.25)
    # Bad pairs: one line each, usage errors; a paired cell the run lacks is exit 6.
    for bad, words in (
        ("fake()", "is not BASELINE_SPEC=RUN_SPEC"),
        ("fake()=fixed_tokens(size=100)", "Pair embedder with embedder"),
        ("nope()=fake()", "neither a chunker nor an embedder"),
        ("fake(seed=3)=fake()", "has no cell with the embedder"),
    ):
        code, _, err = gate(capsys, run, "--baseline", base, "--pair", bad)
        assert code == 2 and words in err, (bad, err)
    code, _, err = gate(capsys, run, "--baseline", base, "--pair", "fake()=fake(seed=2)")
    assert code == g.MISSING_CELL and "lacks 3 paired cell(s)" in err
    # The swap accepted: --update-baseline writes the run's cells under their own names.
    data = write_dataset(tmp_path / "set")
    where = {"source": str(data), "fingerprint": g.question_hash(str(data))[:16]}
    file = tmp_path / "baseline.json"
    assert gate(capsys, write_run(tmp_path / "b2", BASE, **where), "--baseline", file,
                "--update-baseline")[0] == 0  # fmt: skip
    swapped = write_run(tmp_path / "r2", WORSE, embedder=OTHER, **where)
    code, out, err = gate(
        capsys, swapped, "--baseline", file, "--pair", "fake()=fake(seed=1)", "--update-baseline"
    )
    assert code == 0, err
    assert "→ fake(dimension=64, seed=1)" in out and "wrote the baseline" in out
    side = g.read_baseline(file)
    assert {c: list(v) for c, v in side.cells.items()} == {(c, OTHER): v for c, v in WORSE.items()}
