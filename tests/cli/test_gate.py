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
) -> Path:
    """A results folder: ``cells`` maps a chunker to its recall per question (every setting)."""
    folder.mkdir(parents=True)
    manifest = {
        "datasets": [
            {"name": dataset, "fingerprint": fingerprint, "source": source, "questions": len(qids)}
        ],
        "cells": [
            {"id": str(i), "dataset": dataset, "chunker": c, "embedder": EMBEDDER}
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
                    ("embedder", EMBEDDER),
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
        "drop not significant",  # raw p < 0.05, but not after Holm
        "no drop",
    ]
    assert got[C]["change"] == pytest.approx(0.075) and got[C]["ci_low"] >= 0
    # Two-sided (the default): p = 2/64, 2/32 and 2/8; Holm: 3/32, max(3/32, 2/16), 1/4 -> no
    # cell is significant at 0.05, so the same run passes.
    code, out, err = gate(capsys, run, "--baseline", base, "--json", *flips)
    assert code == 0, err
    two = {(c["chunker"]): c for c in json.loads(out)["cells"]}
    for cell, p, p_holm in ((A, 2 / 64, 3 / 32), (B, 2 / 32, 2 / 16), (C, 2 / 8, 2 / 8)):
        assert two[cell]["p_value"] == pytest.approx(p, abs=0.003)
        assert two[cell]["p_holm"] == pytest.approx(p_holm, abs=0.006)
    assert two[A]["status"] == "drop not significant"
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
