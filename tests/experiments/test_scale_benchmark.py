"""benchmarks/scale.py runs end to end at a tiny size and prints its report."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
DATA = SHARED / "datasets" / "chroma_general"


@pytest.mark.skipif(not DATA.is_dir(), reason="needs the Chroma general benchmark")
def test_scale_benchmark_at_two_megabytes(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale.py"),
            "--size-mb",
            "2",
            "--questions",
            "40",
            "--data",
            str(DATA),
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = done.stdout
    assert re.search(r"^machine: .+, \d+ CPUs$", out, re.M)
    assert re.search(r"^corpus: \d+ documents, [\d.]+ MB, 40 questions", out, re.M)
    assert re.search(r"^chunkmark run: [\d.]+ s, peak RSS [\d.]+ GB$", out, re.M)
    for phase in ("load_dataset", "chunk", "count_tokens", "embed_documents", "search", "score"):
        assert re.search(rf"^  run phase {phase}: [\d.]+ s$", out, re.M), phase
        assert re.search(rf"^  cell phase {phase}: [\d.]+ s$", out, re.M) or phase == "load_dataset"
        assert re.search(rf"^  peak RSS in {phase}: [\d.]+ GB$", out, re.M), phase
    assert re.search(
        r"^chunkmark report: [\d.]+ s, peak RSS [\d.]+ GB, written, [\d.]+ MB$", out, re.M
    )
    # the tags make every chunk text distinct: the count comes from the run's chunk store
    assert re.search(r"^chunks: [\d,]+ \(0 duplicate texts\)$", out, re.M)
    assert re.search(r"^top_k\(k=5\): recall [\d.]+, precision [\d.]+$", out, re.M)
    assert re.search(r"^peak RSS: [\d.]+ GB \(a command's process tree, sampled\)", out, re.M)
    assert (tmp_path / "scale" / "corpus" / "questions_df.csv").is_file()  # --workdir keeps it
    assert (tmp_path / "scale" / "run" / "report.html").is_file()


def test_tags_number_every_copy_and_place_and_keep_offsets() -> None:
    from benchmark_scripts import load_benchmark

    scale = load_benchmark("scale")
    text = "\u00a4 " * 200 + "\u00e9t\u00e9 \U0001f600 end"
    width = scale.tag_width(copies=3, longest=len(text))
    tagged = [scale.tag(text, copy, len(text), width) for copy in range(3)]
    assert all(len(t) == len(text) for t in tagged)
    for copy, t in enumerate(tagged):
        marks = [i for i, ch in enumerate(t) if ch == "\u00a4"]
        assert marks == list(range(0, len(text) - width, scale.TAG_EVERY))
        codes = [t[m + 1 : m + 1 + width] for m in marks]
        slots = len(text) // scale.TAG_EVERY + 1
        expected = [copy * slots + m // scale.TAG_EVERY for m in marks]
        assert [int_base62(c) for c in codes] == expected
        untouched = [i for i in range(len(text)) if all(not 0 <= i - m <= width for m in marks)]
        assert all(t[i] == text[i].replace("\u00a4", "\u00a3") for i in untouched)


def int_base62(code: str) -> int:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    value = 0
    for ch in code:
        value = value * 62 + alphabet.index(ch)
    return value
