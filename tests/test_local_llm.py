"""Every LLM feature against a real model: llama.cpp's ``llama-server`` with the smallest local
model (SmolLM2-135M-Instruct, ``chunkmark.llm.local``), reached through the ``openai`` client.

A model this small writes poor questions, contexts and records, so these tests check what must
hold whatever it writes: requests reach the server and come back, counts and manifests add up,
answers asked for as JSON with a schema are never malformed, spans stay valid, and a rerun is
answered from the cache. Quality is measured by ``benchmarks/llm_features.py`` with a larger
model.
"""

from __future__ import annotations

import json
import os
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document
from chunkmark.llm import build_llm
from chunkmark.llm.local import LocalServer

pytestmark = [pytest.mark.integration, pytest.mark.local_llm]

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "src/chunkmark/datasets/demo_data/documents"
SHARED = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared")).resolve()
TEXT = (
    "The Tidewell pump moves water from the lower tank to the roof tank. It runs on a 24 volt "
    "supply and draws at most 3 amperes. The pump must be primed before its first start: open "
    "the bleed screw until water comes out, then close it.\n\n"
    "Sourdough needs a lively starter. Feed the starter twice a day with equal weights of flour "
    "and water, and keep it at about 24 degrees. A starter that doubles within six hours is "
    "ready to bake with.\n\n"
    "Compost heaps work best with a mix of green and brown material. Turn the heap every two "
    "weeks so that air reaches the middle, and keep it as damp as a wrung-out sponge."
)


@pytest.fixture(scope="module")
def redocred_json() -> Path:
    path = SHARED / "datasets" / "redocred" / "test_revised.json"
    if not path.exists():
        pytest.skip(f"Re-DocRED not found at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


def llm_spec(server: LocalServer) -> str:
    return server.spec(timeout=600.0, max_retries=1)


def chunker(spec: str, cache: Path) -> Any:
    built, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=cache, seed=0))
    return built


def test_server_answers_with_json_matching_the_schema(local_llm: LocalServer) -> None:
    llm = build_llm(llm_spec(local_llm), cache_dir=None, seed=0)
    schema = {
        "title": "colour",
        "type": "object",
        "properties": {"colour": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["colour", "count"],
        "additionalProperties": False,
    }
    answer = llm.complete(
        "You answer with JSON.", "Name a colour and a number.", max_tokens=64, json_schema=schema
    )
    value = json.loads(answer)
    assert set(value) == {"colour", "count"} and isinstance(value["count"], int)
    stats = llm.stats()
    assert stats.requests == 1 and stats.input_tokens > 0 and stats.output_tokens > 0


def test_synth_generate(local_llm: LocalServer, tmp_path: Path) -> None:
    from chunkmark.synth.generate import generate

    out, cache = tmp_path / "out", tmp_path / "cache"
    llm = build_llm(llm_spec(local_llm), cache_dir=cache, seed=0)
    report = generate(DEMO, llm, out, questions=2, seed=0, window_chars=1200)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    counts = manifest["counts"]
    assert manifest["status"] == "complete" and counts["planned"] == 2
    # every answer is accepted or rejected for one reason; schema-constrained JSON is never
    # malformed
    rejected = sum(v for k, v in counts.items() if k in report.counts and k in REJECTION_KEYS)
    assert counts["answers"] == counts["accepted"] + rejected
    assert counts["malformed"] == 0
    assert counts["accepted"] + counts["windows_skipped"] == 2
    assert llm.stats().requests == counts["answers"]
    lines = (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == counts["accepted"]
    documents = {json.loads(x)["id"]: json.loads(x)["text"] for x in _documents(out)}
    for line in lines:
        q = json.loads(line)
        for e in q["excerpts"]:
            assert documents[q["doc_id"]][e["start"] : e["end"]] == e["text"]
    # a rerun with the same cache asks nothing and writes the same
    again = build_llm(llm_spec(local_llm), cache_dir=cache, seed=0)
    before = (out / "questions.jsonl").read_bytes()
    generate(DEMO, again, tmp_path / "out2", questions=2, seed=0, window_chars=1200)
    assert again.stats().requests == 0
    assert (tmp_path / "out2" / "questions.jsonl").read_bytes() == before


REJECTION_KEYS = (
    "malformed",
    "empty_answer",
    "empty",
    "too_short",
    "not_found",
    "bad_range",
    "collapsed",
    "copied",
    "duplicate",
)


def _documents(out: Path) -> list[str]:
    return (out / "documents.jsonl").read_text(encoding="utf-8").splitlines()


def test_contextual_llm(local_llm: LocalServer, tmp_path: Path) -> None:
    spec = (
        f"contextual(chunker='sentences(n=3)', method='llm', llm={llm_spec(local_llm)!r}, "
        "max_context_tokens=48)"
    )
    built = chunker(spec, tmp_path)
    chunks = chunk_document(built, "d", TEXT)
    plain = chunk_document(chunker("sentences(n=3)", tmp_path), "d", TEXT)
    assert [(c.start, c.end) for c in chunks] == [(c.start, c.end) for c in plain]
    stats = built.stats()
    counters = stats.counters
    assert counters["llm_calls"] == counters["llm_requests"] == len(chunks) == 3
    assert stats.llm is not None and stats.llm.requests == 3
    with_context = [c for c in chunks if c.embed_text != TEXT[c.start : c.end]]
    assert len(with_context) + counters["empty_answers"] == len(chunks)
    for c in with_context:  # the context comes first, then the chunk itself
        assert c.embed_text.endswith(TEXT[c.start : c.end])


def test_propositions(local_llm: LocalServer, tmp_path: Path) -> None:
    spec = (
        f"propositions(llm={llm_spec(local_llm)!r}, chunker='recursive(size=60, overlap=0)', "
        "max_answer_tokens=256)"
    )
    built = chunker(spec, tmp_path)
    chunks = chunk_document(built, "d", TEXT)
    counters = built.stats().counters
    # JSON asked for with a schema: never unreadable, so no correction and no fallback
    assert counters["corrections"] == 0 and counters["fallback_chunks"] == 0
    assert counters["llm_calls"] == counters["chunks"] >= 3
    assert counters["aligned"] + counters["dropped"] == counters["propositions"]
    assert len(chunks) == counters["aligned"]
    for c in chunks:
        assert 0 <= c.start < c.end <= len(TEXT) and TEXT[c.start : c.end].strip()


def test_llm_semantic(local_llm: LocalServer, tmp_path: Path) -> None:
    spec = f"llm_semantic(llm={llm_spec(local_llm)!r}, chunk_size=20, window_tokens=120)"
    built = chunker(spec, tmp_path)
    chunks = chunk_document(built, "d", TEXT)
    counters = built.stats().counters
    assert counters["windows"] >= 1
    assert counters["fallback_windows"] <= counters["corrections"] <= counters["windows"]
    # the chunks are consecutive pieces: in order, no overlap, covering every word
    assert chunks and chunks[0].start <= TEXT.index("The") and chunks[-1].end == len(TEXT.rstrip())
    for a, b in pairwise(chunks):
        assert a.end <= b.start and not TEXT[a.end : b.start].strip()


def test_relations_run_with_llm_extractor(
    local_llm: LocalServer, tmp_path: Path, redocred_json: Path
) -> None:
    from chunkmark.cli.app import _register_commands, app

    _register_commands()

    data, out = tmp_path / "set", tmp_path / "out"
    runner = CliRunner()
    prepared = runner.invoke(
        app,
        [
            "relations",
            "prepare",
            "--redocred",
            str(redocred_json),
            "--out",
            str(data),
            "--docs",
            "1",
            "--seed",
            "0",
        ],
        catch_exceptions=False,
    )
    assert prepared.exit_code == 0, prepared.output
    extractor = f"llm(llm={llm_spec(local_llm)!r}, max_tokens=512)"
    args = [
        "relations",
        "run",
        "--dataset",
        str(data),
        "-c",
        "fixed_tokens(size=1200)",
        "-e",
        "fake()",
        "--k",
        "1",
        "--extractor",
        extractor,
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-report",
    ]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    section = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["relations"]
    counters = section["extractor_counters"]
    assert counters["texts"] == counters["chunks"] >= 1
    assert counters["requests"] == counters["answers"] >= 1
    totals = section["totals"]
    assert totals["unmatched_names"] <= totals["names"]
    assert totals["malformed"] == counters["malformed"]
    # a rerun resumes from the stored extraction and asks nothing
    again = runner.invoke(app, args, catch_exceptions=False)
    assert again.exit_code == 0 and "resumed" in again.output


def test_a_gguf_file_of_ones_own_is_served(tmp_path: Path) -> None:
    """``--gguf``: any GGUF file, here a copy of the installed SmolLM2 under another name."""
    from chunkmark.llm import local

    installed = local.model_path(local.SMALLEST)
    if not (installed.exists() and local.server_path().exists()):
        pytest.skip(f"{installed} is not installed (python -m chunkmark.llm.local install)")
    own = tmp_path / "my-own-model.gguf"
    own.symlink_to(installed)
    with local.start(gguf=own) as server:
        assert server.model == "my-own-model"
        assert server.spec().startswith("openai(model='my-own-model', ")
        llm = build_llm(llm_spec(server), cache_dir=None, seed=0)
        answer = llm.complete("You answer briefly.", "Say hello.", max_tokens=8)
        assert answer.strip() and llm.stats().output_tokens > 0
    assert server.process.poll() is not None  # stopped after the block
