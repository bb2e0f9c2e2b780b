"""benchmarks/vs_baseline.py on a tiny input: the demo dataset, one fixed_tokens cell and the
fake embedder (baseline process, chunkmark cold and warm, all real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
CELL = "fixed_tokens(size=200, overlap=0)"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_benchmark("vs_baseline")


def test_table_has_ratios_and_consistent_numbers(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "numbers.json"
    argv = ["--data", "demo", "--cells", CELL, "--embedder", "fake", "--json", str(out)]
    result = script.main(argv)
    printed = capsys.readouterr().out

    header = next(line for line in printed.splitlines() if line.startswith("chunker"))
    for column in ("baseline s", "cold s", "baseline/cold", "warm s", "baseline/warm", "match"):
        assert column in header
    assert CELL in printed
    assert "total (whole processes)" in printed
    assert "1/1 cells match the baseline" in printed

    saved = json.loads(out.read_text())
    assert saved["total"] == pytest.approx(result["total"])
    (cell,) = saved["cells"]
    assert cell["label"] == CELL
    assert cell["match"] and cell["max_diff"] <= script.MATCH_TOLERANCE
    assert cell["n_chunks"]["baseline"] == cell["n_chunks"]["chunkmark"] > 0
    assert cell["cold_ratio"] == pytest.approx(cell["baseline_s"] / cell["cold_s"])
    assert cell["warm_ratio"] == pytest.approx(cell["baseline_s"] / cell["warm_s"])
    total = saved["total"]
    assert total["baseline_s"] == pytest.approx(cell["baseline_s"])
    assert total["cold_ratio"] == pytest.approx(total["baseline_s"] / total["cold_s"])
    assert total["warm_ratio"] == pytest.approx(total["baseline_s"] / total["warm_s"])
    # the whole cold process holds the cell and more (start-up, questions, writing)
    assert total["cold_s"] >= cell["cold_s"] > 0
    assert f"{total['cold_ratio']:.2f}x" in printed


def test_reference_command(script: ModuleType, tmp_path: Path) -> None:
    args = script.parse(
        ["--reference", str(tmp_path), "--reference-python", "/ref/bin/python", "--cells", CELL]
    )
    cmd = script.worker_command(args, "recursive(size=400, overlap=200)", "/models/minilm")
    assert cmd[:4] == ["/ref/bin/python", script.__file__, "--worker", "reference"]
    assert cmd[-2:] == ["--model-dir", "/models/minilm"]
    cell = json.loads(cmd[cmd.index("--cell") + 1])
    assert cell["class"] == "RecursiveTokenChunker"
    assert cell["length"] == "openai_token_count"
    assert cell["kwargs"]["chunk_size"] == 400 and cell["kwargs"]["chunk_overlap"] == 200
    assert cell["kwargs"]["separators"] == ["\n\n", "\n", ".", "?", "!", " ", ""]
    env = script.worker_env(tmp_path)
    assert env["PYTHONPATH"].split(":")[0] == str(tmp_path)

    semantic = script.reference_chunker("kamradt_modified(avg_size=300)")
    assert semantic == {
        "class": "KamradtModifiedChunker",
        "length": None,
        "needs_embedder": True,
        "kwargs": {"avg_chunk_size": 300, "min_chunk_size": 50},
    }
    fixed = script.reference_chunker(CELL)
    assert fixed["class"] == "FixedTokenChunker"
    assert fixed["kwargs"] == {
        "chunk_size": 200,
        "chunk_overlap": 0,
        "encoding_name": "cl100k_base",
    }
