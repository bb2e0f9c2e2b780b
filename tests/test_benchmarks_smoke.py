"""The benchmark scripts whose numbers the docs quote, run on tiny input: each must still run and
print the tables the docs copy, with the same columns and rows.

Each script runs as the docs run it, ``python benchmarks/SCRIPT.py``, in a new process, with
``--smoke`` (the demo dataset or a few texts, one pass, a few trials: seconds) or, for the
scripts that read a finished run, on one tiny run of the demo dataset made here with the fake
embedder. The scripts that time a real model, a reference checkout, an LLM server, the peers'
packages from PyPI or a Ray cluster are left to their own tests or to the machines that run
them (tests/test_benchmarks_vs_baseline.py, tests/test_benchmarks_llm_concurrency.py,
tests/experiments/test_scale_benchmark.py and tests/experiments/test_ray_nodes.py run the ones
that can run here).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench(*args: str | Path, ok: tuple[int, ...] = (0,), timeout: float = 300) -> str:
    """``python benchmarks/ARGS`` from the repository root: its stdout (stderr on failure)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    done = subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode in ok, f"{args[0]} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def table(out: str, header: str) -> list[list[str]]:
    """The body rows of the markdown table printed under ``header``, cells stripped."""
    lines = out.splitlines()
    start = lines.index(header)
    assert re.fullmatch(r"\|(?:-+:?\|)+", lines[start + 1].replace("---:", "---")), lines[start + 1]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    width = len(cells(header))
    assert rows and all(len(r) == width for r in rows), (header, rows)
    return rows


def cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip()[1:-1].split("|")]


def fraction(cell: str) -> tuple[float, float]:
    a, b = cell.split(" / ")
    return float(a), float(b)


# --- scripts with a --smoke mode ------------------------------------------------------------


def test_gate_calibration() -> None:
    out = bench("benchmarks/gate_calibration.py", "--smoke")
    assert re.search(r"run .*: 8 cells, 64 questions, recall at top_k\(k=5\)", out)
    alarms = table(out, "| test | --max-drop | checks failed | cells flagged |")
    assert [r[:2] for r in alarms] == [
        ["two-sided (default)", "0"],
        ["two-sided (default)", "1"],
        ["one-sided (--one-sided)", "0"],
        ["one-sided (--one-sided)", "1"],
    ]
    assert all(fraction(r[2])[1] == 3 and fraction(r[3])[1] == 24 for r in alarms)
    assert "vs the run's: max |diff| 0.00e+00" in out
    header = (
        "| cell | q | mean drop (points) | questions worse / better (of 64) "
        "| caught, two-sided | caught, one-sided |"
    )
    one_way, both_ways = out.split("power, both ways:")
    for part in (one_way, both_ways):
        rows = table(part[part.index(header) :], header)
        assert len(rows) == 8
        assert all(0 <= float(r[1]) <= 1 and fraction(r[4])[1] == 3 for r in rows)
        scenarios = table(
            part, "| scenario | mean drop (points) | failed, two-sided | failed, one-sided |"
        )
        assert [r[0] for r in scenarios] == [
            "regression in all 8 cells",
            "regression in one cell (each in turn), 7 unchanged",
        ]
    # the one-way regression only removes correct chunks: no question ever improves;
    # the two-way one moves questions both ways
    one = table(one_way[one_way.index(header) :], header)
    both = table(both_ways[both_ways.index(header) :], header)
    assert all(fraction(r[3])[1] == 0 for r in one)
    worse, better = (sum(fraction(r[3])[i] for r in both) for i in (0, 1))
    assert worse > better > 0
    swaps = table(
        out,
        "| cell | swapped in | mean drop (points) | questions worse / better (of 64) "
        "| caught, two-sided | caught, one-sided |",
    )
    assert len(swaps) == 6
    assert {r[1].rsplit(" (", 1)[1] for r in swaps} == {"size halved)", "overlap removed)"}
    speed = table(out, "| command | wall s | CPU s |")
    assert [r[0] for r in speed] == [
        "chunkmark gate RUN --update-baseline (writes the file)",
        "chunkmark gate RUN --baseline FILE",
        "chunkmark gate RUN --baseline FOLDER (the run itself)",
    ]
    assert all(float(r[1]) > 0 and float(r[2]) > 0 for r in speed)
    assert re.search(r"baseline file: [\d,]+ bytes", out)


def test_verdict_calibration() -> None:
    out = bench("benchmarks/verdict_calibration.py", "--smoke")
    assert re.search(r"dataset demo; .*; 64 questions; 5 cells", out)
    for section in ("(a) questions needed", "(b) null data", "(c) the full set's winner"):
        assert section in out
    assert len(table(out, "| pilot n | median factor | within 2x | predictions |")) == 4
    null = table(
        out,
        "| null data | trials | P(best) >= 0.9 | nothing tied (Holm) | winner named (both) |",
    )
    assert len(null) == 3 and all(r[1] == "5" for r in null)
    assert "the recommendation `chunkmark run` prints for the full run:" in out


def test_tune_vs_grid() -> None:
    # exit status 1 means the tune's best is not within --tolerance of the grid's: still a result
    out = bench("benchmarks/tune_vs_grid.py", "--smoke", ok=(0, 1))
    assert re.search(r"^grid: \d+ cells in [\d.]+s, \d+ feasible; best ", out, re.M)
    assert re.search(r"^tune: 3 trials \(\d distinct cells\) in [\d.]+s; best ", out, re.M)
    assert re.search(r"^gap: -?[\d.]+ \(-?[\d.]+ points\), (?:within|NOT within) 0.02$", out, re.M)


def test_report() -> None:
    out = bench("benchmarks/report.py", "--smoke")
    assert "cells: 40" in out
    assert re.search(r"^report size MB: [\d.]+$", out, re.M)
    assert re.search(r"^report build seconds: [\d.]+$", out, re.M)
    assert re.search(r"^  by phase \(s\): plotly [\d.]+, read [\d.]+, tests [\d.]+", out, re.M)
    assert re.search(r"^PASS: 40 cells, [\d.]+ MB \(< 10 MB\), [\d.]+ s \(< 10 s\)$", out, re.M)


def test_chunkers() -> None:
    out = bench("benchmarks/chunkers.py", "--smoke")
    assert re.search(r"^4 corpora, [\d.]+ MB; best of 1 passes$", out, re.M)
    rows = dict(re.findall(r"^(\S.*?)\s+([\d.]+)\s+[\d.]+$", out, re.M))
    assert {"fixed_tokens(size=400, overlap=0)", "recursive(size=400, overlap=0)"} <= set(rows)
    assert {"chonkie TokenChunker(400)", "LangChain TokenTextSplitter(400)"} <= set(rows)
    assert len(re.findall(r"^\S.* vs .*: [\d.]+x faster$", out, re.M)) == 4


def test_synth_windows() -> None:
    out = bench("benchmarks/synth_windows.py", "--smoke")
    lines = out.splitlines()
    assert lines[1].split() == ["windows", "min", "5%", "median", "95%", "max"]
    labels = [line.rsplit(None, 6)[0].strip() for line in lines[2:]]
    assert labels == [
        "compost-handbook",
        "ledgerline-runbook",
        "sourdough-field-guide",
        "tidewell-manual",
        "all tiles",
        "plan of 5 questions",
        "exact prompt - window",
        "approximate prompt - window",
    ]
    counts = [int(line.split()[-6]) for line in lines[2:6]]
    assert int(lines[6].split()[-6]) == sum(counts)


def test_span_alignment() -> None:
    out = bench("benchmarks/span_alignment.py", "--smoke")
    lines = out.splitlines()
    assert lines[1].split() == ["overlap", "pieces", "split", "s", "align", "s", "spans"]
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["0", "50"]
    # every piece of the splitter is placed: as many spans as pieces
    assert all(r[1] == r[4] and int(r[1].replace(",", "")) > 0 for r in rows)


# --- scripts that read a finished run ---------------------------------------------------------

EXPERIMENT = """\
datasets: [demo]
chunkers:
  - fixed_tokens(size=100, overlap=0)
  - recursive(size=200, overlap=0)
  - contextual(chunker='fixed_tokens(size=100, overlap=0)', method='headings')
  - contextual(chunker='fixed_tokens(size=100, overlap=0)', method='neighbours')
embedders: [fake()]
retrieval:
  - top_k(k=5)
  - token_budget(tokens=256)
scoring: {excerpts: [position, text]}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("smoke")
    (folder / "experiment.yaml").write_text(EXPERIMENT)
    out = folder / "run"
    bench(
        "-m", "chunkmark", "run", folder / "experiment.yaml", "--out", out, "--quiet", "--no-report"
    )
    return out


def test_settings_side_by_side(run: Path) -> None:
    out = bench("benchmarks/settings_side_by_side.py", run)
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("chunker"))
    assert lines[header].split()[1:] == ["top_k(k=5)", "token_budget(tokens=256)"]
    rows = lines[header + 1 : header + 5]
    assert all(len(re.findall(r"[\d.]+/[\d.]+ \[\d+\]", row)) == 2 for row in rows)
    assert lines[header + 5] == "(recall/iou per setting)"
    for metric in ("recall", "iou"):
        assert f"ranking of the chunkers by {metric} (chunker numbers" in out
    assert len(re.findall(r"order differs from top_k\(k=5\) under: ", out)) == 2


def test_excerpts_text(run: Path) -> None:
    out = bench("benchmarks/excerpts_text.py", run, "demo")
    lines = out.splitlines()
    assert lines[0] == "demo: excerpts with an identical copy elsewhere in their document"
    assert lines[1].split() == [
        "document", "questions", "excerpts", "duplicated", "copies", "questions", "hit"
    ]  # fmt: skip
    assert lines[6].split()[:2] == ["all", "64"]
    assert "recall at top_k(k=5), percent: position -> text (difference)" in out
    header = lines.index("recall at top_k(k=5), percent: position -> text (difference)") + 1
    assert lines[header].split()[-1] == "all"
    assert len(lines[header + 1 :]) == 4


def test_context_side_by_side(run: Path) -> None:
    out = bench("benchmarks/context_side_by_side.py", run, "--metric", "recall")
    rows = table(out, "| chunker | plain | late | headings | neighbours |")
    assert [r[0] for r in rows] == ["fixed_tokens(size=100)", "recursive(size=200)"]
    plain, late, headings, neighbours = rows[0][1:]
    assert re.fullmatch(r"[\d.]+ \[[\d.]+, [\d.]+\]", plain)
    assert late == ""  # no late-chunking cell in the run
    for cell in (headings, neighbours):  # the variant's mean, then its paired difference
        assert re.fullmatch(
            r"[\d.]+ \[[\d.]+, [\d.]+\]; [+-][\d.]+ \[[+-][\d.]+, [+-][\d.]+\]", cell
        )
    assert "## Per corpus: Δ vs plain" in out and "### recall" in out
