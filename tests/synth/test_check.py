"""``chunkmark synth check SYNTHETIC --against REAL``: the two sets merged with their sources, a
small grid, and the same lines ``chunkmark run`` prints; a document that differs between the
two sets is refused with one line naming it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from chunkmark.datasets import Dataset, load_dataset
from chunkmark.datasets.demo import load_demo
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.report.sources import question_sources
from chunkmark.service.synth_check import merge
from cli.app_runner import error_line, invoke


def halves(tmp_path: Path) -> tuple[Path, Path, Dataset]:
    demo = load_demo()
    real = dataclasses.replace(demo, questions=demo.questions[::2])
    synthetic = dataclasses.replace(demo, questions=demo.questions[1::2])
    write_jsonl(real, tmp_path / "real")
    write_jsonl(synthetic, tmp_path / "synthetic")
    return tmp_path / "synthetic", tmp_path / "real", demo


def test_merge_labels_every_question_by_its_set(tmp_path: Path) -> None:
    synthetic, real, demo = halves(tmp_path)
    merged = merge(load_dataset(synthetic), load_dataset(real))
    sources = question_sources(merged.questions)
    assert len(merged.questions) == len(demo.questions) == len(sources)
    assert sum(s == "human" for s in sources.values()) == len(demo.questions[::2])
    assert all(q.startswith(f"{s}:") for q, s in sources.items())
    assert {d.id for d in merged.documents} == {d.id for d in demo.documents}


def test_check_prints_the_rankings_by_source(tmp_path: Path) -> None:
    synthetic, real, demo = halves(tmp_path)
    result = invoke(
        "synth", "check", str(synthetic), "--against", str(real), "-e", "fake()",
        "-c", "fixed_tokens(size=64)", "-c", "sentences(n=2)", "-c", "words(n=60)",
        "-r", "top_k(k=5)", "--out", str(tmp_path / "check"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    humans, synth = len(demo.questions[::2]), len(demo.questions[1::2])
    assert lines[0].startswith("merged: the recommendation"), result.stdout
    assert f"your {humans} human" in lines[0] and f"{synth} synthetic" in lines[0]
    assert "Kendall's tau of" in lines[0] and "split-half ceiling" in lines[0]
    assert lines[1].startswith(f"  by human questions ({humans}): ")
    assert lines[2].startswith(f"  by synthetic questions ({synth}): ")
    assert lines[-1].startswith("Merged set: ")


def test_a_document_that_differs_is_refused(tmp_path: Path) -> None:
    synthetic, real, _ = halves(tmp_path)
    changed = load_dataset(synthetic)
    first = changed.documents[0]
    docs = (dataclasses.replace(first, text=first.text + " More."), *changed.documents[1:])
    write_jsonl(dataclasses.replace(changed, documents=docs), tmp_path / "other")
    result = invoke("synth", "check", str(tmp_path / "other"), "--against", str(real))
    assert result.exit_code != 0
    assert error_line(result).startswith(f"error: The document {first.id!r} differs between")
