"""The report's Relations section: written at the end of ``chunkmark relations run`` (after
relations.csv) and by ``chunkmark report`` from the same folder, its numbers are relations.csv's
(and summary.csv's IoU), silver support is labelled, and a plain run has no section."""

from __future__ import annotations

import csv
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.experiments.config import make_config
from chunkmark.relations.metrics import RELATION_METRICS
from chunkmark.relations.model import write_relation_files
from chunkmark.relations.runner import run_relations
from chunkmark.report import ReportOptions, build_report
from chunkmark.report.relations import SHOWN
from relations.run_helpers import (
    ENTITIES,
    RELATIONS,
    SENTENCES,
    WHOLE,
    run_args,
    tiny_dataset,
    write_tiny_set,
)

FAST = ReportOptions(permutations=200, bootstrap=200)


def page_data(page: str) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    payload: dict[str, Any] = json.loads(found.group(1))
    return payload


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def relations_app() -> typer.Typer:
    from chunkmark.cli.relations_run import add_commands
    from chunkmark.cli.report import register

    app = typer.Typer()
    group = typer.Typer()
    app.add_typer(group, name="relations")
    add_commands(group)
    register(app)
    return app


def cli(*args: str) -> Any:
    return CliRunner().invoke(relations_app(), list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``chunkmark relations run`` on the tiny set, the report left on."""
    root = tmp_path_factory.mktemp("relations-report")
    folder = write_tiny_set(root / "tiny")
    out = root / "out"
    done = cli(*run_args(folder, out))
    assert done.exit_code == 0, done.output
    return out


def test_relations_run_writes_the_report_after_relations_csv(gold_run: Path) -> None:
    page = gold_run / "report.html"
    assert page.is_file()
    assert page.stat().st_mtime_ns >= (gold_run / "relations.csv").stat().st_mtime_ns
    manifest = json.loads((gold_run / "manifest.json").read_text())
    assert manifest["config"]["report"] is True and "relations" in manifest
    text = page.read_text(encoding="utf-8")
    assert '<section id="relations" hidden>' in text and "renderRelations" in text
    assert "<script src=" not in text.lower()  # offline: every script is inline
    section = page_data(text)["relations"]
    assert section is not None
    assert [s["support"] for s in section["sets"]] == ["gold"]
    assert section["sets"][0]["extractor"] == "cooccurrence()"
    assert section["sets"][0]["counts"]["relations"] == 5
    assert [m["name"] for m in section["metrics"]] == [*SHOWN, "iou"]
    # Definitions come from the manifest the run wrote (the report imports no relations code).
    for shown in section["metrics"][:-1]:
        metric = RELATION_METRICS[shown["name"]]
        assert (shown["short"], shown["interval"]) == (metric.label, metric.interval)
        assert shown["description"] == metric.description != ""
        assert manifest["relations"]["metrics"][metric.name]["description"] == metric.description


def test_the_section_shows_relations_csv_and_summary_numbers(gold_run: Path) -> None:
    section = page_data((gold_run / "report.html").read_text(encoding="utf-8"))["relations"]
    rows = read_csv(gold_run / "relations.csv")
    summary = {
        (r["chunker"], r["retrieval"]): r
        for r in read_csv(gold_run / "summary.csv")
        if r["scope"] == "all" and r["unit"] == "chars"
    }
    groups = {(g["embedder"], g["retrieval"]): g for g in section["groups"]}
    assert len(groups) == 2  # one embedder x top_k(k=1), top_k(k=4)
    assert sum(len(g["rows"]) for g in groups.values()) == len(rows) == 4
    for row in rows:
        group = groups[(row["embedder"], row["retrieval"])]
        assert group["support"] == "gold" and group["k"] == row["k"]
        (shown,) = [r for r in group["rows"] if r["chunker"] == row["chunker"]]
        for name in SHOWN:
            if name == "f1":
                assert shown["mean"]["f1"] == pytest.approx(float(row["f1"]), rel=1e-5)
                assert "f1" not in shown["ci"]
                continue
            assert shown["mean"][name] == pytest.approx(float(row[f"{name}_mean"]), rel=1e-5)
            low, high = shown["ci"][name]
            assert low == pytest.approx(float(row[f"{name}_ci_low"]), rel=1e-5)
            assert high == pytest.approx(float(row[f"{name}_ci_high"]), rel=1e-5)
        assert shown["relationsPer1k"] == pytest.approx(
            float(row["relations_per_1k_tokens"]), rel=1e-5
        )
        assert (shown["calls"], shown["inputTokens"], shown["outputTokens"]) == (0, 0, 0)
        assert shown["n"] == 5 and shown["nChunks"] == int(row["n_chunks"])
        iou = summary[(row["chunker"], row["retrieval"])]
        assert shown["mean"]["iou"] == pytest.approx(float(iou["iou_mean"]), rel=1e-5)
        assert shown["ci"]["iou"][0] == pytest.approx(float(iou["iou_ci_low"]), rel=1e-5)

    for group in groups.values():
        ranked = group["rows"]
        # whole documents keep every relation; one sentence per chunk splits r3's support
        assert ranked[0]["chunkerShort"] == WHOLE and ranked[1]["chunkerShort"] == SENTENCES
        assert ranked[0]["mean"]["support_containment"] == pytest.approx(1.0)
        assert ranked[1]["mean"]["support_containment"] == pytest.approx(4 / 5)
        assert group["mostRelations"] == 0
        ious = [r["mean"]["iou"] for r in ranked]
        assert group["bestPassages"] == ious.index(max(ious))
        assert group["agree"] is (group["bestPassages"] == 0)


def test_the_report_command_rebuilds_the_section(gold_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    done = cli("report", str(gold_run), "--out", str(out), "--permutations", "1000")
    assert done.exit_code == 0, done.output
    again = page_data((out / "report.html").read_text(encoding="utf-8"))["relations"]
    first = page_data((gold_run / "report.html").read_text(encoding="utf-8"))["relations"]
    assert again == first


def test_a_plain_run_has_no_relations_section(gold_run: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(gold_run, plain)
    (plain / "relations.csv").unlink()
    report = build_report([plain], tmp_path / "plain.html", FAST)
    data = page_data(report.path.read_text(encoding="utf-8"))
    assert data["relations"] is None
    assert data["rows"]  # the rest of the report is there


def test_no_report_writes_none(tmp_path: Path) -> None:
    folder = write_tiny_set(tmp_path / "tiny")
    out = tmp_path / "out"
    done = cli(*run_args(folder, out, "--no-report"))
    assert done.exit_code == 0, done.output
    assert (out / "relations.csv").is_file() and not (out / "report.html").exists()


def test_silver_support_is_labelled(tmp_path: Path) -> None:
    folder = tmp_path / "silver"
    write_jsonl(tiny_dataset(), folder)
    write_relation_files(folder, ENTITIES, [replace(r, support_kind="silver") for r in RELATIONS])
    config = make_config(
        {
            "chunkers": [SENTENCES],
            "embedders": ["fake()"],
            "k": [2],
            "no_cache": True,
            "out": tmp_path / "out",
        }
    )
    done = run_relations(folder, config)
    assert "report" in done.files
    text = done.files["report"].read_text(encoding="utf-8")
    section = page_data(text)["relations"]
    assert section["sets"][0]["support"] == "silver"
    assert [g["support"] for g in section["groups"]] == ["silver"]
    assert "what an LLM extracted from the excerpts" in text  # the page's label for it


def test_a_relations_csv_without_rows_adds_no_section(gold_run: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    shutil.copytree(gold_run, empty)
    (empty / "relations.csv").write_text("", encoding="utf-8")
    report = build_report([empty], tmp_path / "empty.html", FAST)
    assert page_data(report.path.read_text(encoding="utf-8"))["relations"] is None


def test_a_relations_csv_without_its_key_columns_is_noted(gold_run: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(gold_run, broken)
    (broken / "relations.csv").write_text("chunker,recall_mean\nx,0.5\n", encoding="utf-8")
    report = build_report([broken], tmp_path / "broken.html", FAST)
    data = page_data(report.path.read_text(encoding="utf-8"))
    assert data["relations"] is None
    assert any("lacks the column(s) dataset, embedder" in n for n in data["meta"]["notes"])
