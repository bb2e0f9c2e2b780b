"""Every option that names a cell or a setting of finished runs accepts any spelling of the same
spec: parameters by name or by position, in any order, written out at their defaults or left
out, a bare word for a string (``top_k(k=min)``). The run stores one canonical form; every
command matches what it is given against that form through one function."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import chunkmark
from chunkmark.audit.export import select_cell
from chunkmark.report.compare import compare_cells
from chunkmark.specs import canonical_spec
from cli.app_runner import invoke

FIXED = "fixed_tokens(size=200, overlap=0)"
# Spellings of the chunker the run was given as FIXED (and stores canonical, with its encoding).
FIXED_SPELLINGS = [
    FIXED,
    "fixed_tokens(size=200)",
    "fixed_tokens(200)",
    "fixed_tokens(200, 0)",
    "fixed_tokens(overlap=0, size=200)",
    "fixed_tokens(size=200, overlap=0.0)",  # an overlap below 1 is a fraction of size
    "fixed_tokens(size=200, overlap=0, encoding=cl100k_base)",
    " fixed_tokens( size = 200 ) ",
]
EMBEDDER_SPELLINGS = ["fake()", "fake", "fake(64)", "fake(dimension=64, seed=0)", "fake(seed=0)"]
K5_SPELLINGS = ["top_k(k=5)", "top_k(5)", "top_k()", "top_k"]
MIN_SPELLINGS = ["top_k(k='min')", 'top_k(k="min")', "top_k(k=min)", "top_k(min)"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spellings") / "run"
    chunkmark.evaluate(
        dataset="demo",
        chunkers=[FIXED, "sentences(n=3)"],
        embedders=["fake()", "fake(seed=1)"],
        k=[1, 5, "min"],
        out=out,
        no_cache=True,
        report=False,
    )
    return out


def test_one_canonical_form_for_every_spelling() -> None:
    stored = canonical_spec("chunker", FIXED)
    assert stored == "fixed_tokens(size=200, overlap=0, encoding='cl100k_base')"
    assert {canonical_spec("chunker", s) for s in FIXED_SPELLINGS} == {stored}
    assert {canonical_spec("retrieval", s) for s in MIN_SPELLINGS} == {"top_k(k='min')"}
    assert {canonical_spec("retrieval", s) for s in K5_SPELLINGS} == {"top_k(k=5)"}
    assert len({canonical_spec("embedder", s) for s in EMBEDDER_SPELLINGS}) == 1
    assert canonical_spec("chunker", "fixed_tokens(size=201)") != stored


@pytest.mark.parametrize("spelling", FIXED_SPELLINGS)
def test_export_cell(run: Path, spelling: str) -> None:
    manifest: dict[str, Any] = json.loads((run / "manifest.json").read_text())
    with_fake = {
        **manifest,
        "cells": [c for c in manifest["cells"] if "seed=1" not in c["embedder"]],
    }
    assert select_cell(run, with_fake, spelling)["chunker"] == canonical_spec("chunker", FIXED)


@pytest.mark.parametrize("spelling", FIXED_SPELLINGS)
def test_compare_a_and_b_and_the_mcp_tool(run: Path, spelling: str) -> None:
    result = invoke(
        "compare", str(run), "--a", spelling, "--b", "sentences(3)",
        "--pick-embedder", "fake(seed=0)", "--pick-k", "5", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    # The MCP tool compare_cells answers with the same function, from another spelling.
    assert (
        found
        == compare_cells(
            [run], spelling, "sentences(n=3, overlap=0)", embedder="fake", k="5"
        ).to_dict()
    )


@pytest.mark.parametrize("spelling", EMBEDDER_SPELLINGS)
def test_compare_pick_embedder(run: Path, spelling: str) -> None:
    result = invoke(
        "compare", str(run), "--a", FIXED, "--b", "sentences(n=3)",
        "--pick-embedder", spelling, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("setting", [*K5_SPELLINGS, *MIN_SPELLINGS])
def test_pick_retrieval_in_report_compare_and_gate(run: Path, tmp_path: Path, setting: str) -> None:
    canonical = canonical_spec("retrieval", setting)
    report = invoke("report", str(run), "--pick-retrieval", setting, "--format", "csv")
    assert report.exit_code == 0, report.output
    compared = invoke(
        "compare", str(run), "--a", FIXED, "--b", "sentences(n=3)",
        "--pick-embedder", "fake()", "--pick-retrieval", setting, "--json",
    )  # fmt: skip
    assert compared.exit_code == 0, compared.output
    assert canonical in compared.stdout
    gated = invoke(
        "gate", str(run), "--baseline", str(run), "--pick-retrieval", setting,
        "--pick-chunker", "fixed_tokens(200)", "--pick-embedder", "fake",
    )  # fmt: skip
    assert gated.exit_code == 0, gated.output


@pytest.mark.parametrize("spelling", FIXED_SPELLINGS)
def test_gate_pick_chunker(run: Path, spelling: str) -> None:
    baseline = invoke(
        "gate", str(run), "--baseline", str(run), "--pick-chunker", spelling,
        "--pick-embedder", "fake(dimension=64)",
    )  # fmt: skip
    assert baseline.exit_code == 0, baseline.output
    assert "fixed_tokens(size=200" in baseline.output and "sentences" not in baseline.output


def test_a_spec_of_no_cell_is_still_refused(run: Path) -> None:
    result = invoke("compare", str(run), "--a", "fixed_tokens(size=201)", "--b", "sentences(n=3)")
    assert result.exit_code != 0
    assert "names no cell" in str(result.exception)
