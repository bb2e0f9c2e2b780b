"""A vector store and a suite set added by a plugin package: the two files docs/contributing.md
shows ("A vector store", "A suite set"), installed as one package with two entry points in the
``chunkmark`` group, are listed beside the built-ins and work: a run's cell exported into the
store audits back to the run's numbers, and the set converts from its pinned file into the
questions and excerpts its raw file states.

The in-process tests install the package as tests/test_plugins.py installs its in-process
plugins: a ``*.dist-info`` folder with ``entry_points.txt`` and the modules, in a folder on
``sys.path``. The last test builds it as a real package with setuptools, installs its wheel with
pip into a fresh virtual environment and runs the command line there.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from typer.testing import CliRunner

from chunkmark import plugins
from chunkmark.audit.stores import STORES, open_store, parse_address, store_help
from chunkmark.datasets import load_dataset
from chunkmark.datasets.suite import SUITE_SETS
from chunkmark.errors import ChunkmarkError, DatasetError
from chunkmark.suite import sets
from conftest import ROOT
from test_plugins import fresh_environment, install, project, run

CONTRIBUTING = ROOT / "docs" / "contributing.md"
BUILT_IN_SETS = [
    "cuad",
    "qmsum",
    "evidence_inference",
    "fairytaleqa",
    "covid_qa",
    "redocred-evidence",
    "chroma-general",
]


def block_after(marker: str, info: str) -> str:
    """The first fenced ``info`` block after the line ``marker`` in docs/contributing.md."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    found = re.search(re.escape(marker) + r".*?```" + info + r"\n(.*?)```\n", text, re.S)
    assert found, f"no {info} block after {marker!r} in {CONTRIBUTING}"
    return found.group(1)


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The docs' store and set, installed as the package ``chunkmark-tea`` (discovery not yet
    done); afterwards both are gone and discovery is as it was."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(plugins, "_state", plugins._State())
    monkeypatch.syspath_prepend(str(site))
    install(
        site,
        "chunkmark-tea",
        {"npz": "chunkmark_npz", "tea": "chunkmark_tea_notes"},
        chunkmark_npz=block_after("`chunkmark_npz.py`:", "python"),
        chunkmark_tea_notes=block_after("`chunkmark_tea_notes.py`:", "python"),
    )
    try:
        yield site
    finally:
        STORES.unregister("npz")
        SUITE_SETS.unregister("tea_notes")
        for name in ("chunkmark_npz", "chunkmark_tea_notes"):
            sys.modules.pop(name, None)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})


def test_the_plugins_store_and_set_are_listed_after_the_built_ins(plugin: Path) -> None:
    assert "npz" in STORES  # an unknown name: the plugins are imported
    assert [p.package for p in plugins.loaded()] == ["chunkmark-tea", "chunkmark-tea"]
    assert list(STORES) == ["chroma", "lancedb", "pgvector", "qdrant", "npz"]
    assert STORES.origin("npz") == "chunkmark-tea" and STORES.origin("chroma") is None
    assert store_help().endswith("npz:FOLDER?collection=NAME (a NumPy file per collection)")
    assert sets.names() == [*BUILT_IN_SETS, "tea_notes"]
    assert SUITE_SETS.origin("tea_notes") == "chunkmark-tea"
    assert sets.expand(["suite"])[-1] == "tea_notes"
    listed = invoke("datasets", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["tea_notes"]["description"].startswith("Tea notes: short notes on tea")
    assert rows["tea_notes"]["status"] == "not downloaded (chunkmark datasets download tea_notes)"
    # A URI of a scheme nobody registered still names every store, the plugin's included.
    with pytest.raises(ChunkmarkError, match=r"Write one of: chroma:FOLDER.*npz:FOLDER"):
        parse_address("redis://localhost?collection=x")


def test_the_plugins_set_converts_from_its_pinned_file(plugin: Path, tmp_path: Path) -> None:
    raw = block_after("This one converts `notes.json`:", "json")
    (tmp_path / "raw" / "tea_notes").mkdir(parents=True)
    (tmp_path / "raw" / "tea_notes" / "notes.json").write_text(raw, encoding="utf-8")
    env = {"CHUNKMARK_CACHE_DIR": str(tmp_path / "cache")}
    done = invoke("datasets", "download", "tea_notes", "--from", str(tmp_path / "raw"), env=env)
    assert done.exit_code == 0, done.output
    folder = tmp_path / "cache" / "datasets" / "tea_notes"
    assert f"ok: tea_notes in {folder} (2 documents, 3 questions, 0 dropped" in " ".join(
        done.output.split()
    )
    # The reference: the raw file's notes, evidence strings and questions, read here.
    notes = json.loads(raw)["notes"]
    expected = {
        (note["id"], item["question"], item["evidence"])
        for note in notes
        for item in note["questions"]
    }
    dataset = load_dataset(folder)
    got = {
        (q.doc_id, q.text, dataset.by_id[q.doc_id].text[e.start : e.end])
        for q in dataset.questions
        for e in q.excerpts
    }
    assert got == expected
    assert {d.id: d.text for d in dataset.documents} == {n["id"]: n["text"] for n in notes}
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["source"]["repository"] == "https://github.com/example/tea-notes"
    from chunkmark.suite.run import scope_of

    assert scope_of(dataset) == SUITE_SETS["tea_notes"].scope == "document"
    # The pin is in force: an altered file is refused, naming it.
    (tmp_path / "raw" / "tea_notes" / "notes.json").write_text(raw.replace("red", "amber"))
    with pytest.raises(DatasetError, match=r"notes\.json has SHA-256 .* not the pinned"):
        sets.download_one(
            "tea_notes",
            force=True,
            from_dir=tmp_path / "raw",
            sample=sets.Sample(),
            progress=lambda line: None,
        )


def test_a_cell_exported_into_the_plugins_store_audits_to_the_runs_numbers(
    plugin: Path, tmp_path: Path
) -> None:
    from chunkmark.audit.collection import audit
    from chunkmark.audit.export import export
    from chunkmark.experiments.runner import evaluate

    chunker = "fixed_tokens(size=64)"
    run = tmp_path / "run"
    evaluate(
        None,
        datasets=["demo"],
        chunkers=[chunker],
        embedders=["fake()"],
        retrieval=["top_k(k=1)", "top_k(k=5)"],
        out=run,
        cache_dir=tmp_path / "cache",
        report=False,
    )
    uri = f"npz:{tmp_path / 'vectors'}?collection=demo"
    done = export(run, chunker, uri, tmp_path / "cache")
    with pytest.raises(ChunkmarkError, match="already exists"):
        export(run, chunker, uri, tmp_path / "cache")
    stored = open_store(uri).read()
    assert len(stored.ids) == done.chunks and stored.vectors.shape == (done.chunks, done.dimension)
    audited = audit(
        uri,
        "demo",
        "fake()",
        k=[1, 5],
        out=tmp_path / "audit",
        cache_dir=tmp_path / "cache",
        report=False,
    )
    keys = ["question_id", "retrieval"]
    mine = pq.read_table(audited.results.out / "results.parquet").to_pandas()
    theirs = pq.read_table(run / "results.parquet").to_pandas()
    exact = mine[mine.retrieval.str.startswith("top_k")].sort_values(keys)
    theirs = theirs.sort_values(keys)
    assert len(exact) == len(theirs) > 0
    for column in ("recall", "precision", "iou"):
        np.testing.assert_allclose(
            exact[column].to_numpy(float), theirs[column].to_numpy(float), rtol=0, atol=1e-9
        )
    # The store's own search is exact too: it loses nothing against the exact top k.
    for summary in audited.section["ann"]:
        assert summary["recall_lost"] == pytest.approx(0.0, abs=1e-9), summary


@pytest.mark.integration
def test_the_installed_package_adds_its_store_and_set_to_the_command_line(
    tmp_path: Path,
) -> None:
    pytest.importorskip("setuptools", reason="the dev environment has setuptools to build with")
    modules = {
        "chunkmark_npz": ("npz", block_after("`chunkmark_npz.py`:", "python")),
        "chunkmark_tea_notes": ("tea", block_after("`chunkmark_tea_notes.py`:", "python")),
    }
    package = project(tmp_path, "chunkmark-tea", modules)
    python, env, log, install = fresh_environment(tmp_path, package)
    run([*install, "chunkmark-tea"], env, log)

    chunkmark = [python, "-m", "chunkmark"]
    help_text = " ".join(run([*chunkmark, "audit", "--help"], env, log).stdout.split())
    assert "npz:FOLDER?collection=NAME (a NumPy file per collection)" in help_text
    listed = json.loads(run([*chunkmark, "datasets", "--json"], env, log).stdout)
    assert [row["name"] for row in listed][-2:] == ["tea_notes", "chroma-general"]
    raw = tmp_path / "raw" / "tea_notes"
    raw.mkdir(parents=True)
    (raw / "notes.json").write_text(block_after("This one converts `notes.json`:", "json"))
    download = [*chunkmark, "datasets", "download", "tea_notes", "--from", raw.parent]
    done = run(download, env, log)
    assert "ok: tea_notes in " in done.stdout and "3 questions" in done.stdout
    unknown = run([*chunkmark, "datasets", "download", "coffee_notes"], env, log, code=2)
    (line,) = unknown.stderr.splitlines()
    assert "no downloadable dataset named 'coffee_notes'" in line and "tea_notes" in line
    assert "warning" not in "\n".join(log) and "Traceback" not in "\n".join(log)
