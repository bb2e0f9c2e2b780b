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

import ast
import importlib
import importlib.util
import itertools
import json
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
    # the one-way regression only removes correct chunks (a question improves only where a
    # better correct chunk moves up); the two-way one moves questions both ways, net down
    one = table(one_way[one_way.index(header) :], header)
    both = table(both_ways[both_ways.index(header) :], header)
    one_worse, one_better = (sum(fraction(r[3])[i] for r in one) for i in (0, 1))
    worse, better = (sum(fraction(r[3])[i] for r in both) for i in (0, 1))
    assert one_worse > 0 and worse > better > one_better
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
    assert out.splitlines()[2].split() == ["chunker", "seconds", "MB/s"]
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


def test_suite_convert() -> None:
    out = bench("benchmarks/suite_convert.py", "--smoke")
    header = (
        "| set | documents | questions raw | kept | dropped (by reason) | mean doc chars "
        "| evidence looked for | exact | normalised | structural | repaired | elided | not placed "
        "| first of several | seconds |"
    )
    rows = table(out, header)
    assert [r[0] for r in rows] == ["covid_qa", "chroma-general"]
    # the conversion is deterministic: docs/suite.md's rows, but for the seconds
    docs = (ROOT / "docs" / "suite.md").read_text(encoding="utf-8")
    quoted = {r[0]: r for r in table(docs, header)}
    assert [r[:-1] for r in rows] == [quoted[r[0]][:-1] for r in rows]
    assert re.search(r"^total: 2 sets, 103 documents, 1,852 questions kept of 1,852$", out, re.M)


def test_full_suite(tmp_path: Path) -> None:
    out = tmp_path / "fast"
    # cold: it converts the sample and distils model2vec from MiniLM (minutes on a busy CPU)
    printed = bench(
        "benchmarks/full_suite.py", "--smoke", "--out", out, "--warm", "1", timeout=1200
    )
    header = "| set | documents | questions | cold wall | CPU (user + system) | peak RSS |"
    rows = table(printed, header)
    assert [r[0] for r in rows] == ["covid_qa", "all"]
    # the questions counted are those of the sample the run converted into its own cache
    converted = out.parent / "fast.cache" / "datasets" / "covid_qa-docs3-seed0" / "questions.jsonl"
    questions = len(converted.read_text(encoding="utf-8").splitlines())
    assert rows[0][1:3] == ["3", str(questions)] and rows[1][1:3] == rows[0][1:3]
    timings = json.loads((tmp_path / "fast.timings.json").read_text(encoding="utf-8"))
    cold, warm = timings["cold"]["covid_qa"], timings["warm"]
    assert cold["exit_code"] == 0 and [w["exit_code"] for w in warm] == [0]
    assert cold["peak_rss_mb"] > 0 and cold["user_s"] > 0
    # the warm run resumed every cell: the log's last run computed none
    log = (tmp_path / "fast.log").read_text(encoding="utf-8")
    assert log.rsplit("$ ", 1)[1].count(": 0 cells computed, 9 resumed.") == 1
    assert f"suite folder: {out}" in printed


def test_embedder_costs_on_the_published_board() -> None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    board = ROOT / "leaderboard" / "default-suite"
    printed = bench("benchmarks/embedder_costs.py", board)
    header = (
        "| set | embedder | cells | model tokens | model s | tokens/s | index s "
        "| recall dense @1024, mean over chunkers | best cell [95% CI] |"
    )
    rows = table(printed, header)
    suite = json.loads((board / "suite.json").read_text(encoding="utf-8"))
    assert {r[0] for r in rows} == {s["name"] for s in suite["sets"]}
    # the best cell's recall, against the mean of its per-question rows in results.parquet
    first = suite["sets"][0]
    spec = next(s for s in suite["settings"] if s["label"] == "dense @1024")[first["scope"]]
    results = pq.read_table(board / first["folder"] / "results.parquet")
    results = results.filter(pc.equal(results["retrieval"], spec))
    per_cell: dict[tuple[str, str], list[float]] = {}
    for chunker, embedder, recall in zip(
        results["chunker"].to_pylist(),
        results["embedder"].to_pylist(),
        results["recall"].to_pylist(),
        strict=True,
    ):
        per_cell.setdefault((chunker, embedder), []).append(recall)
    best = max(sum(v) / len(v) for v in per_cell.values())
    printed_best = max(float(r[8].split()[0]) for r in rows if r[0] == first["name"])
    assert abs(printed_best - 100 * best) < 0.05 + 1e-9  # printed to one decimal


def test_audit_stores_placement() -> None:
    out = bench("benchmarks/audit_stores.py", "--smoke")
    assert out.startswith("demo: 4 documents, ")
    placed = re.findall(
        r"^  (.+): (\d+) chunks, offsets \d+, exact \d+, normalised \d+, fuzzy \d+, "
        r"unplaced \d+; exactly or normalised: ([\d.]+)%$",
        out,
        re.M,
    )
    names = [p[0] for p in placed]
    assert names[0].startswith("LangChain RecursiveCharacterTextSplitter") and names[-1] == "all"
    assert {
        "chonkie TokenChunker(chunk_size=128)",
        "chonkie RecursiveChunker(chunk_size=128)",
    } <= set(names)
    assert int(placed[-1][1]) == sum(int(p[1]) for p in placed[:-1])


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


# --- scripts that load all-MiniLM-L6-v2 (the offline package) --------------------------------


def test_precision() -> None:
    out = bench("benchmarks/precision.py", "--smoke", "--device", "cpu")
    lines = out.splitlines()
    assert lines[0] == "all-MiniLM-L6-v2: 8 texts on cpu; seconds are the best of 1 passes"
    assert lines[1].split() == [
        "precision",
        "batch",
        "texts/s",
        "tokens/s",
        "vs",
        "first",
        "mean",
        "cos",
        "min",
        "cos",
    ]
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["fp32", "fp32"] and rows[1][1] == "4"
    # the first row is the reference: ratio 1 and cosine 1 to itself
    assert rows[0][-3:] == ["1.00x", "1.000000", "1.000000"]
    # every text is at least its two special tokens: more tokens than texts per second (texts/s
    # is printed to one decimal, so no tighter ratio holds on a slow machine)
    for row in rows:
        assert float(row[-4]) > float(row[-5])
    assert float(rows[1][-1]) > 0.9999  # fp32 at another batch size: the same vectors, nearly


def test_precision_grid_order() -> None:
    out = bench(
        "benchmarks/precision.py", "--smoke", "--device", "cpu", "--precisions", "fp32,bf16",
        "--grid", "demo", timeout=900,
    )  # fmt: skip
    grid = out.split("\nall-MiniLM-L6-v2: grid on demo (10 cells), cold, on cpu\n", 1)[1]
    lines = grid.splitlines()
    assert re.fullmatch(r"fp32: [\d.]+ s \(1\.00x\) \| bf16: [\d.]+ s \([\d.]+x\)", lines[0])
    assert lines[1].split() == ["cell", "fp32", "recall", "bf16", "recall"]
    cells = [line.rsplit(None, 2) for line in lines[2:12]]
    # every chunker at both settings, in fp32's order, best first
    assert sorted(c[0] for c in cells) == sorted(
        f"{chunker} | {setting}"
        for chunker in (
            "fixed_tokens(size=128)", "fixed_tokens(size=256)", "fixed_tokens(size=512)",
            "recursive(size=256)", "sentences(n=5)",
        )
        for setting in ("top_k(5)", "dense @1024")
    )  # fmt: skip
    fp32 = [float(c[1]) for c in cells]
    assert fp32 == sorted(fp32, reverse=True) and all(0 <= r <= 1 for r in fp32)
    verdict = re.fullmatch(
        r"bf16 vs fp32: order equal: (yes|no); Kendall's tau ([+-][\d.]+); recall difference "
        r"mean ([+-][\d.]+), largest ([+-][\d.]+)",
        lines[12],
    )
    assert verdict is not None
    bf16 = [float(c[2]) for c in cells]
    largest = max((b - f for f, b in zip(fp32, bf16, strict=True)), key=abs)
    assert float(verdict.group(4)) == pytest.approx(largest, abs=1e-4)
    if verdict.group(1) == "yes":  # bf16's recalls, listed in fp32's order, never rise
        assert all(a >= b for a, b in itertools.pairwise(bf16))


def test_autocast_agreement() -> None:
    out = bench("benchmarks/autocast_agreement.py", "--smoke")
    lines = out.splitlines()
    assert re.fullmatch(r"4 chunks, all-MiniLM-L6-v2 on the CPU \(torch .+\)", lines[0])
    assert lines[1].split() == ["vectors", "min", "cos", "mean", "cos", "(to", "fp32)"]
    rows = {line.rsplit(None, 2)[0].strip(): line.split()[-2:] for line in lines[2:]}
    assert list(rows) == ["fp16 autocast", "bf16 autocast", "int8 dynamic"]
    for low, mean in rows.values():
        assert 0 < float(low) <= float(mean) <= 1.0000001


def test_engine() -> None:
    out = bench("benchmarks/engine.py", "--smoke")
    assert "\n=== fp32\n" in out
    phases = re.findall(r"^  (\w+)\s+([\d.]+)\s+([\d.]+)$", out, re.M)
    assert {"chunk", "embed_documents", "embed_queries", "wall"} <= {p[0] for p in phases}
    assert re.search(r"^embedding work: \d+ texts requested, \d+ distinct, ", out, re.M)
    assert re.search(r"^warm command [\d.]+s: [\d.]+x faster than cold$", out, re.M)
    cells = re.findall(r"^  (fixed_tokens\(.*?\))\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out, re.M)
    assert cells == ["fixed_tokens(size=800, overlap=400)", "fixed_tokens(size=400, overlap=200)"]
    header = next(line for line in out.splitlines() if line.startswith("chunker "))
    assert header.split() == ["chunker", "chunks", "recall", "precision", "precision_omega", "iou"]
    assert re.search(r"^\d+ values outside the tolerances \{'recall': 1.0", out, re.M)


# --- every script: the names it imports from chunkmark exist ----------------------------------


def chunkmark_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from chunkmark... import name`` in a script, functions too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module or "", alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chunkmark")
        for alias in node.names
    ]


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks").glob("*.py")), ids=lambda p: p.name)
def test_every_chunkmark_name_a_script_imports_exists(path: Path) -> None:
    # Most scripts import chunkmark inside main(), so a renamed function breaks them only when
    # run; this finds it for the scripts too slow, or needing too much, to run here.
    missing = []
    for module, name in chunkmark_imports(path):
        loaded = importlib.import_module(module)
        package = hasattr(loaded, "__path__")  # a name may be a submodule of a package
        if not hasattr(loaded, name) and not (
            package and importlib.util.find_spec(f"{module}.{name}") is not None
        ):
            missing.append(f"{module}.{name}")
    assert missing == []
