"""The grid runner: several datasets in one run, failures as results, vector checks."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkmark import evaluate
from chunkmark.datasets import load_dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import ConfigError
from chunkmark.experiments.cell import question_table
from chunkmark.experiments.checks import EmbedderMismatchError, check_same_embedder, query_signal
from chunkmark.metrics import ChunkTable
from embedding_server import serve_embeddings

CHUNKERS = ["fixed_tokens(size=200)", "recursive(size=300)", "sentences(n=4)"]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _key(row: dict[str, str]) -> tuple[str, ...]:
    return (row["dataset"], row["chunker"], row["retrieval"], row["scope"])


def test_two_datasets_in_one_run_equal_two_single_runs(
    tmp_path: Path, general_subset: Path
) -> None:
    common: dict[str, Any] = {
        "chunkers": ["fixed_tokens(size=[200, 400])"],
        "embedders": ["fake()"],
        "retrieval": ["top_k(k=[1, 5])", "token_budget(tokens=512)"],
        "cache_dir": tmp_path / "cache",
        "report": False,
    }
    both = evaluate(datasets=["demo", str(general_subset)], out=tmp_path / "both", **common)
    demo = evaluate(datasets=["demo"], out=tmp_path / "demo", **common)
    general = evaluate(datasets=[str(general_subset)], out=tmp_path / "general", **common)
    combined = _rows(tmp_path / "both" / "summary.csv")
    singles = _rows(tmp_path / "demo" / "summary.csv") + _rows(tmp_path / "general" / "summary.csv")
    assert {r["dataset"] for r in combined} == {"demo", general_subset.name}
    assert len(combined) == len(singles) > 0
    assert sorted(combined, key=_key) == sorted(singles, key=_key)
    assert [d["name"] for d in both.manifest["datasets"]] == ["demo", general_subset.name]
    assert demo.failures == general.failures == both.failures == []


@pytest.fixture
def general_subset(tmp_path: Path) -> Path:
    """A small second dataset in the JSONL layout: two documents of the demo set renamed."""
    demo = load_dataset("demo")
    folder = tmp_path / "mini"
    folder.mkdir()
    keep = demo.documents[:2]
    with (folder / "documents.jsonl").open("w", encoding="utf-8") as f:
        for doc in keep:
            f.write(json.dumps({"id": doc.id, "text": doc.text}) + "\n")
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as f:
        for q in demo.questions:
            if q.doc_id in {d.id for d in keep}:
                excerpts = [{"start": s.start, "end": s.end} for s in q.excerpts]
                row = {"id": q.id, "question": q.text, "doc_id": q.doc_id, "excerpts": excerpts}
                f.write(json.dumps(row) + "\n")
    return folder


def test_a_failing_cell_is_a_result_and_a_rerun_computes_only_it(tmp_path: Path) -> None:
    with serve_embeddings() as server:
        spec = f"openai(model='text-embedding-3-small', base_url='{server.url}', max_retries=1)"

        def progress(message: str) -> None:
            if message.startswith("cell") and "recursive" in message:
                for _ in range(2):  # the first try and its one retry both get a 500
                    server.fail(500)

        options: dict[str, Any] = {
            "datasets": ["demo"],
            "chunkers": CHUNKERS,
            "embedders": [spec],
            "k": "1,5",
            "out": tmp_path / "run",
            "cache_dir": tmp_path / "cache",
            "report": False,
        }
        env = {"OPENAI_API_KEY": "sk-test"}
        with pytest.MonkeyPatch.context() as mp:
            for k, v in env.items():
                mp.setenv(k, v)
            first = evaluate(progress=progress, **options)
            assert first.cells_computed == 2
            assert len(first.failures) == 1
            failure = first.failures[0]
            assert failure["chunker"].startswith("recursive(")
            assert "500" in failure["error"] or "Server" in failure["error"]
            manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
            assert manifest["failures"][0]["id"] == failure["id"]
            assert (tmp_path / "run" / "cells" / f"{failure['id']}.failed.json").is_file()
            summary = _rows(tmp_path / "run" / "summary.csv")
            assert {r["chunker"].split("(")[0] for r in summary} == {"fixed_tokens", "sentences"}
            assert all(r["recall_mean"] not in ("", "nan") for r in summary)

            before = len(server.requests)
            second = evaluate(**options)
        assert second.failures == []
        assert (second.cells_resumed, second.cells_computed) == (2, 1)
        recursive_texts = sum(len(r["input"]) for r in server.requests[before:])
        assert recursive_texts > 0  # only the failed cell's chunks went to the server
        cell_file = tmp_path / "run" / "cells" / f"{failure['id']}.failed.json"
        assert not cell_file.exists()
        assert len({r["chunker"] for r in _rows(tmp_path / "run" / "summary.csv")}) == 3


def test_failed_cells_make_the_cli_exit_non_zero(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chunkmark.cli.app import _register_commands, app

    _register_commands()

    from chunkmark.chunkers import CHUNKERS as REGISTRY

    def fail(text: str) -> list[Any]:
        raise RuntimeError("this chunker is broken")

    @REGISTRY.register("broken_for_test")
    def broken() -> Any:
        """Always fails."""
        return fail

    try:
        result = CliRunner().invoke(
            app,
            [
                "run",
                "-c",
                "broken_for_test()",
                "-c",
                "fixed_tokens(size=200)",
                "-e",
                "fake()",
                "--k",
                "5",
                "--out",
                str(tmp_path / "run"),
                "--no-cache",
                "--no-report",
            ],
        )
    finally:
        REGISTRY.unregister("broken_for_test")
    assert result.exit_code == 3, result.output
    output = " ".join(result.output.split())
    assert "1 cell(s) failed" in output
    assert "RuntimeError: this chunker is broken" in output


def test_query_and_chunk_vectors_must_match() -> None:
    q = np.ones((3, 4), np.float32)
    with pytest.raises(EmbedderMismatchError, match="dimensions"):
        check_same_embedder({"m": 1}, {"m": 1}, q, np.ones((2, 5), np.float32))
    with pytest.raises(EmbedderMismatchError, match="same embedder"):
        check_same_embedder({"m": 1}, {"m": 2}, q, np.ones((2, 4), np.float32))
    check_same_embedder({"m": 1}, {"m": 1}, q, np.ones((2, 4), np.float32))
    assert issubclass(EmbedderMismatchError, ConfigError)


def _demo_vectors(query_fn: Any) -> tuple[Any, ChunkTable, Any, Any]:
    from chunkmark.chunkers import CHUNKERS as REGISTRY
    from chunkmark.experiments.cell import chunk_dataset

    dataset = load_dataset("demo")
    chunker, _ = REGISTRY.build("fixed_tokens(size=200)")
    chunks = chunk_dataset(dataset, chunker)
    index = {d.id: i for i, d in enumerate(dataset.documents)}
    table = ChunkTable.from_rows([(index[c.doc_id], c.start, c.end) for c in chunks])
    embedder = FakeEmbedder()
    docs = embedder.embed([c.text(dataset.by_id[c.doc_id].text) for c in chunks])
    queries = query_fn(embedder, [q.text for q in dataset.questions])
    return question_table(dataset), table, queries, docs


def test_a_working_query_embedder_is_not_flagged() -> None:
    questions, table, queries, docs = _demo_vectors(lambda e, texts: e.embed(texts, "query"))
    check = query_signal(questions, table, queries, docs)
    assert check is not None
    assert check["answer_similarity"] > check["shuffled_similarity"]
    assert not check["flagged"]


def test_a_mocked_query_embedder_is_flagged() -> None:
    def random_vectors(embedder: Any, texts: list[str]) -> Any:
        rng = np.random.default_rng(1)
        v = rng.standard_normal((len(texts), 64)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    questions, table, queries, docs = _demo_vectors(random_vectors)
    check = query_signal(questions, table, queries, docs)
    assert check is not None and check["flagged"]


def test_the_manifest_records_the_query_check(tmp_path: Path) -> None:
    results = evaluate(
        datasets=["demo"],
        chunkers=["fixed_tokens(size=200)"],
        embedders=["fake()"],
        k="5",
        out=tmp_path / "run",
        no_cache=True,
        report=False,
    )
    check = results.manifest["cells"][0]["query_check"]
    assert check["flagged"] is False
    assert check["questions"] == len(load_dataset("demo").questions)
    assert EMBEDDERS.resolve("fake()")  # the registry still resolves after the run


def test_unknown_dataset_in_a_list_fails_before_any_cell(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="nowhere"):
        evaluate(
            datasets=["demo", str(tmp_path / "nowhere")],
            embedders=["fake()"],
            out=tmp_path / "run",
            report=False,
        )
    assert not (tmp_path / "run" / "cells").exists()


def test_max_cost_below_the_estimate_refuses_before_any_request(tmp_path: Path) -> None:
    with serve_embeddings() as server:
        spec = f"openai(model='text-embedding-3-small', base_url='{server.url}')"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "chunkmark",
                "run",
                "-e",
                spec,
                "-c",
                "fixed_tokens(size=200)",
                "--max-cost",
                "0.000001",
                "--out",
                str(tmp_path / "run"),
                "--cache-dir",
                str(tmp_path / "cache"),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"},
            timeout=300,
        )
        assert server.requests == []
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: Estimated cost $")
    assert "exceeds --max-cost" in lines[0]
    assert not (tmp_path / "run" / "cells").exists()
