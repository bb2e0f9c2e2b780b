"""``chunkmark relations run`` end to end on the tiny relation set: the grid with the fake
embedder, the cooccurrence oracle (or a scripted extractor), relations.csv and the manifest's
relations section checked against hand-computed numbers, and resumption."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chunkmark.cli.relations_run import add_commands
from chunkmark.experiments.config import make_config
from chunkmark.relations.extract import EXTRACTORS
from chunkmark.relations.runner import ExtractorSetup, run_relations
from relations.run_helpers import (
    D1,
    D2,
    SENTENCES,
    WHOLE,
    ScriptedExtractor,
    run_args,
    write_tiny_set,
)


def _app() -> typer.Typer:
    app = typer.Typer()
    group = typer.Typer()
    app.add_typer(group, name="relations")
    add_commands(group)
    return app


def cli(*args: str) -> Any:
    return CliRunner().invoke(_app(), list(args), catch_exceptions=False)


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "relations.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _row(rows: list[dict[str, str]], chunker: str, k: str) -> dict[str, str]:
    (row,) = [r for r in rows if r["chunker"].startswith(chunker.split("(")[0]) and r["k"] == k]
    return row


def test_relations_run_writes_files_numbers_and_resumes(tmp_path: Path) -> None:
    folder = write_tiny_set(tmp_path / "tiny")
    out = tmp_path / "out"
    first = cli(*run_args(folder, out, "--no-report"))
    assert first.exit_code == 0, first.output
    assert "contain" in first.output and "RelR@k" in first.output
    for name in ("relations.csv", "summary.csv", "results.parquet", "manifest.json"):
        assert (out / name).is_file(), name
    assert len(list((out / "relations").glob("*.json"))) == 2  # one extraction per chunking

    rows = _rows(out)
    assert len(rows) == 2 * 2  # chunkers x k
    sentences, whole = _row(rows, SENTENCES, "4"), _row(rows, WHOLE, "4")
    # sentences: r3's support spans both sentences of d1, and the oracle cannot name Acme
    # beside Alice in one sentence; one chunk per document holds everything
    expected_sentences = {
        "support_containment_mean": 4 / 5,
        "recall_mean": 4 / 5,
        "precision_mean": 1.0,
        "directed_recall_mean": 4 / 5,
        "typed_recall_mean": 4 / 5,
        "recall_split_mean": 0.0,
        "recall_contained_mean": 1.0,
        "recall_cross_sentence_mean": 1 / 2,
        "unmatched_name_rate": 0.0,
        # k=4 retrieves every chunk: all four extracted pairs, every support
        "rel_recall_mean": (1 / 2 + 1 / 2 + 2 / 3 + 1 + 1) / 5,
        "rel_precision_mean": (1 / 4 + 1 / 4 + 2 / 4 + 1 / 4 + 1 / 4) / 5,
        "support_recall_mean": 1.0,
    }
    for name, value in expected_sentences.items():
        assert float(sentences[name]) == pytest.approx(value), name
    expected_whole = {
        "support_containment_mean": 1.0,
        "recall_mean": 1.0,
        "precision_mean": 1.0,
        "f1": 1.0,
        "typed_precision_mean": 1.0,
        "rel_recall_mean": 1.0,
        "rel_precision_mean": (2 + 2 + 3 + 1 + 1) / 25,
        "support_recall_mean": 1.0,
    }
    for name, value in expected_whole.items():
        assert float(whole[name]) == pytest.approx(value), name
    assert whole["n_chunks"] == "2" and sentences["n_chunks"] == "4"
    assert whole["extractor"] == "cooccurrence()" and whole["support"] == "gold"
    assert float(whole["support_containment_ci_low"]) <= 1.0
    at_one = _row(rows, SENTENCES, "1")
    assert 0.0 <= float(at_one["support_recall_mean"]) <= 1.0
    assert at_one["recall_mean"] == sentences["recall_mean"]  # extraction does not depend on k

    manifest = json.loads((out / "manifest.json").read_text())
    section = manifest["relations"]
    assert section["counts"] == {
        "documents": 2,
        "entities": 7,
        "relations": 5,
        "pairs": 5,
        "questions": 5,
    }
    assert section["extractor"]["spec"] == "cooccurrence()"
    assert section["totals"]["calls"] == 0 and section["totals"]["records"] == 4 + 5
    assert [c["resumed"] for c in section["chunkings"]] == [False, False]
    assert manifest["cells"] and manifest["datasets"][0]["questions"] == 5

    before = (out / "relations.csv").read_text()
    again = cli(*run_args(folder, out, "--no-report"))
    assert again.exit_code == 0, again.output
    assert "0 cells computed, 2 resumed" in " ".join(again.output.split())
    assert (out / "relations.csv").read_text() == before
    section = json.loads((out / "manifest.json").read_text())["relations"]
    assert [c["resumed"] for c in section["chunkings"]] == [True, True]


def test_dry_run_with_llm_extractor_asks_nothing(tmp_path: Path) -> None:
    folder = write_tiny_set(tmp_path / "tiny")
    out = tmp_path / "out"
    done = cli(
        *run_args(folder, out, "--no-report", "--extractor", "llm(llm='fake()')", "--dry-run")
    )
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "Dry run" in text and "no request was made" in text
    assert "sentences" in text and "0.0000" in text  # the fake model is free
    assert not (out / "relations.csv").exists()


def test_relations_metrics_lists_definitions() -> None:
    done = cli("relations", "metrics", "--json")
    assert done.exit_code == 0
    names = [m["name"] for m in json.loads(done.output)]
    assert names[0] == "support_containment" and "support_recall" in names


@pytest.fixture
def scripted() -> Iterator[ScriptedExtractor]:
    extractor = ScriptedExtractor(
        {
            D1[0:23]: [("Alice", "Bob", "knows"), ("Alice", "Nobody", "")],
            D1[24:42]: [("Acme", "Bob", "employer")],
            D2[0:20]: [("Carol", "Rome", "P551")],
        },
        calls=1,
        input_tokens=100,
        output_tokens=10,
    )
    EXTRACTORS.register("scripted_for_test")(lambda: extractor)
    yield extractor
    EXTRACTORS.unregister("scripted_for_test")


def test_run_relations_counts_cost_once_per_chunking(
    tmp_path: Path, scripted: ScriptedExtractor
) -> None:
    folder = write_tiny_set(tmp_path / "tiny")
    config = make_config(
        {
            "chunkers": [SENTENCES],
            "embedders": ["fake()", "fake(seed=1)"],
            "k": [2],
            "no_cache": True,
            "report": False,
            "out": tmp_path / "out",
        }
    )
    done = run_relations(folder, config, ExtractorSetup("scripted_for_test"))
    assert len(done.rows) == 2  # two embedders share the chunking: extracted once
    assert len(scripted.seen) == 4
    row = done.rows[0]
    assert (row["calls"], row["input_tokens"], row["output_tokens"]) == (4, 400, 40)
    assert row["recall_mean"] == pytest.approx(3 / 5)
    assert row["precision_mean"] == pytest.approx(1.0)
    assert row["directed_recall_mean"] == pytest.approx(2 / 5)
    assert row["unmatched_name_rate"] == pytest.approx(1 / 8)
    assert done.section["totals"]["unmatched_names"] == 1


def test_experiment_file_gives_the_grid_and_its_datasets_are_replaced(tmp_path: Path) -> None:
    folder = write_tiny_set(tmp_path / "tiny")
    config = tmp_path / "exp.yaml"
    config.write_text(
        "datasets: [demo]\nchunkers: ['sentences(n=1)']\nembedders: ['fake()']\nk: [2]\n"
        "no_cache: true\nreport: false\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    done = cli("relations", "run", str(config), "-d", str(folder), "--out", str(out), "-q")
    assert done.exit_code == 0, done.output
    (row,) = _rows(out)
    assert row["dataset"] == "tiny" and row["k"] == "2"
    assert float(row["support_containment_mean"]) == pytest.approx(4 / 5)


def test_estimates_of_a_chunker_that_embeds_send_no_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dry run and a --max-cost check read a semantic chunker's vectors from the cache only:
    the embedding server (OpenAI's wire format, on 127.0.0.1) counts every request."""
    pytest.importorskip("openai")
    from chunkmark.datasets.jsonl import write_jsonl
    from chunkmark.datasets.model import Dataset, Document, Question
    from chunkmark.relations.model import Entity, Relation, write_relation_files
    from chunkmark.spans import Span
    from embedding_server import serve_embeddings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # Four sentences: a kamradt chunker embeds them (with fewer than three it never embeds).
    text = "Alice met Bob in Paris. Bob works at Acme. Acme sells tea. Alice drinks tea."
    folder = tmp_path / "four"
    support = Span(0, 23)
    write_jsonl(
        Dataset(
            "four", (Document("d1", text),), (Question("r1", "Who met Bob?", "d1", (support,)),)
        ),
        folder,
    )
    alice = Entity("e1", "d1", "PER", ("Alice",), (Span(0, 5), Span(59, 64)))
    bob = Entity("e2", "d1", "PER", ("Bob",), (Span(10, 13), Span(24, 27)))
    knows = Relation("r1", "d1", "e1", "e2", "P1", "knows", (support,), "evidence", True)
    write_relation_files(folder, (alice, bob), (knows,))
    with serve_embeddings() as server:
        embedder = f"openai(model='text-embedding-3-small', base_url='{server.url}')"
        args = [
            *("relations", "run", "-d", str(folder), "-c", "kamradt(breakpoint_percentile=50)"),
            *("-e", embedder, "--k", "1", "--no-report", "--cache-dir", str(tmp_path / "cache")),
            *("--extractor", "llm(llm='fake()')"),
        ]
        dry = cli(*args, "--out", str(tmp_path / "dry"), "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert server.requests == []
        assert "the cache does not hold" in " ".join(dry.output.split())
        capped = CliRunner().invoke(
            _app(), [*args, "--out", str(tmp_path / "cap"), "--max-cost", "5"]
        )
        assert capped.exit_code != 0
        assert "kamradt" in str(capped.exception) and "--max-cost" in str(capped.exception)
        assert server.requests == []  # neither asked the API for anything
        done = cli(*args, "--out", str(tmp_path / "real"))
        assert done.exit_code == 0, done.output
        sent = len(server.requests)
        assert sent > 0
        warm = cli(*args, "--out", str(tmp_path / "dry2"), "--dry-run")
        assert warm.exit_code == 0, warm.output
        assert "the cache does not hold" not in " ".join(warm.output.split())
        assert len(server.requests) == sent  # the cached vectors chunk it now: still no request
