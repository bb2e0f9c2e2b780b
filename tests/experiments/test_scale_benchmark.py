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
    assert re.search(r"^corpus: \d+ documents, [\d.]+ MB .*, 40 questions$", out, re.M)
    assert "embedding dimension: 64" in out
    assert re.search(r"^chunks: [\d,]+ \(\d+ duplicate texts\)$", out, re.M)
    for phase in ("generate", "load_dataset", "chunk", "count_tokens", "embed_documents"):
        assert re.search(rf"^phase {phase}: [\d.]+ s \(peak RSS [\d.]+ GB\)$", out, re.M), phase
    assert re.search(r"^phase search: ", out, re.M) and re.search(r"^phase score: ", out, re.M)
    assert re.search(r"^top_k\(k=5\): recall [\d.]+, precision [\d.]+$", out, re.M)
    assert re.search(r"^peak RSS: [\d.]+ GB \(ru_maxrss\), [\d.]+ GB \(sampled\)$", out, re.M)
    assert (tmp_path / "scale" / "questions_df.csv").is_file()  # --workdir keeps the corpus
