"""Question generation against a local OpenAI / Anthropic server: the plan, faults, resuming
after a kill, identical reruns, budgets and dry runs, both excerpt modes, both layouts."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from chunkmark.datasets import Document, load_dataset, read_corpus
from chunkmark.errors import DatasetError, LLMError
from chunkmark.llm import FakeLLM, build_llm
from chunkmark.llm.cache import cache_key
from chunkmark.paths import CACHE_DIR_ENV
from chunkmark.spans import Span
from chunkmark.synth.answers import parse_json
from chunkmark.synth.excerpts import collapses
from chunkmark.synth.generate import estimate, generate
from chunkmark.synth.options import MAX_ATTEMPTS, SynthError, load_prices
from chunkmark.synth.plan import document_windows, make_plan, quotas, tiles
from chunkmark.synth.prompt import EXACT_SCHEMA, build_prompt, style_schema
from chunkmark.synth.run import RETRY_SEED_STEP, RETRY_TEMPERATURE, GenerationReport

from .conftest import (
    FACT,
    KEY,
    KEY_ENV,
    Scripted,
    SynthServer,
    asked_section,
    corpus_texts,
    fact,
    model_answer,
    style_of,
    window_text,
    write_corpus,
)
from .conftest import _user as user_of

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

WINDOW = 600  # small windows: several per document, a few facts each


def run(corpus: Path, out: Path, spec: str, cache: Path | None, **options: Any) -> GenerationReport:
    options.setdefault("window_chars", WINDOW)
    llm = build_llm(spec, cache_dir=cache, seed=options.get("seed", 0))
    return generate(corpus, llm, out, **options)


def files(out: Path) -> dict[str, bytes]:
    """Every file of a dataset folder, by relative path."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def check_excerpts(out: Path) -> list[dict[str, Any]]:
    """Every question line of a JSONL output, each excerpt checked against its document."""
    docs = {
        d["id"]: d["text"]
        for d in map(json.loads, (out / "documents.jsonl").read_text("utf-8").splitlines())
    }
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text("utf-8").splitlines()]
    for row in rows:
        for e in row["excerpts"]:
            assert docs[row["doc_id"]][e["start"] : e["end"]] == e["text"]
    load_dataset(out)  # the loader's own checks
    return rows


def manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "manifest.json").read_text("utf-8"))
    return data


def counts(out: Path) -> dict[str, int]:
    found: dict[str, int] = manifest(out)["counts"]
    return found


# --- the plan ------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=12), st.integers(1, 300))
def test_quotas_are_proportional_within_one(lengths: list[int], n: int) -> None:
    import random

    found = quotas(lengths, n, random.Random(0))
    assert sum(found) == n
    total = sum(lengths)
    assert all(abs(q - n * length / total) < 1 for q, length in zip(found, lengths, strict=True))


def test_tiles_cover_the_text_evenly() -> None:
    assert tiles(500, 1000) == [tiles(500, 1000)[0]]
    spans = tiles(10_000, 3000)
    assert spans[0].start == 0 and spans[-1].end == 10_000 and len(spans) == 4
    assert all(len(s) == 3000 for s in spans)


def test_windows_are_spread_and_not_reused_until_every_tile_is_used() -> None:
    import random

    text = " ".join(f"w{i:04d}" for i in range(2000))  # 11,999 characters
    count = len(tiles(len(text), 1000))
    first = document_windows(text, count, 1000, random.Random(1))
    assert len({w.start for w in first}) == count  # every tile once
    some = document_windows(text, 4, 1000, random.Random(1))
    assert [w.start for w in some] == sorted(w.start for w in some)
    quarters = {w.start * 4 // len(text) for w in some}
    assert quarters == {0, 1, 2, 3}  # one window per quarter of the document
    more = document_windows(text, count + 3, 1000, random.Random(1))
    assert len(more) == count + 3
    for w in more:  # snapped to word boundaries
        assert w.start == 0 or text[w.start - 1] == " "
        assert w.end == len(text) or " " in text[w.end - 1 : w.end + 1]


def test_plan_is_deterministic_and_follows_the_seed() -> None:
    docs = [Document(name, text) for name, text in corpus_texts().items()]
    plan = make_plan(docs, 12, seed=3, window_chars=WINDOW, styles=("factoid", "multi"))
    assert plan == make_plan(docs, 12, seed=3, window_chars=WINDOW, styles=("factoid", "multi"))
    assert plan != make_plan(docs, 12, seed=4, window_chars=WINDOW, styles=("factoid", "multi"))
    per_doc = Counter(s.doc_id for s in plan)
    lengths = {d.id: len(d.text) for d in docs}
    total = sum(lengths.values())
    for doc_id, n in per_doc.items():
        assert abs(n - 12 * lengths[doc_id] / total) < 1
    assert Counter(s.style for s in plan) == {"factoid": 6, "multi": 6}
    assert [s.index for s in plan] == list(range(12))
    assert plan[0].doc_id == "atlas"  # the longest document leads the interleaving


# --- prompts and answers -------------------------------------------------------------------


def test_prompt_shows_window_style_examples_and_earlier_questions() -> None:
    doc = Document("atlas", corpus_texts()["atlas"])
    plan = make_plan([doc], 3, seed=0, window_chars=WINDOW, styles=("paraphrased",))
    prompt = build_prompt(
        doc, plan[1], mode="exact", asked=["What is fact 0-1?"], examples=["How tall is X?"]
    )
    assert doc.text[plan[1].start : plan[1].end] in prompt.user
    assert "word it in your own way" in prompt.user
    assert "- How tall is X?" in prompt.user and "- What is fact 0-1?" in prompt.user
    passages = prompt.schema["properties"]["passages"]
    assert (passages["minItems"], passages["maxItems"]) == (1, 3)  # paraphrased: 1 to 3
    assert {**prompt.schema, "properties": EXACT_SCHEMA["properties"]} == EXACT_SCHEMA
    multi = build_prompt(doc, replace(plan[0], style="multi"), mode="approximate")
    assert multi.schema["properties"]["pieces"]["minItems"] == 2
    bare = build_prompt(doc, plan[0], mode="approximate")
    assert "[[1]]" in bare.user and "already asked" not in bare.user and bare.pieces


def test_parse_json_strips_fences_and_chatter() -> None:
    assert parse_json('```json\n{"question": "q", "passages": []}\n```') == {
        "question": "q",
        "passages": [],
    }
    assert parse_json('Here it is: {"a": 1} hope that helps') == {"a": 1}
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json("no json here")


def test_json_schema_is_part_of_the_cache_key(tmp_path: Path) -> None:
    base = {"provider": "fake", "model": "m"}
    plain = cache_key(base, "s", "u", max_tokens=5, temperature=0.0, seed=0)
    assert plain == cache_key(
        base, "s", "u", max_tokens=5, temperature=0.0, seed=0, json_schema=None
    )
    with_schema = cache_key(
        base, "s", "u", max_tokens=5, temperature=0.0, seed=0, json_schema=EXACT_SCHEMA
    )
    assert with_schema != plain
    llm = FakeLLM(["a", "b"], cache_dir=tmp_path)
    assert llm.complete("s", "u", max_tokens=5) == "a"
    assert llm.complete("s", "u", max_tokens=5, json_schema=EXACT_SCHEMA) == "b"
    assert llm.complete("s", "u", max_tokens=5, json_schema=EXACT_SCHEMA) == "b"
    assert llm.schemas == [None, EXACT_SCHEMA]


# --- end to end against the server ---------------------------------------------------------


def test_openai_generates_a_dataset_that_loads(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    report = run(synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=8)
    assert report.accepted == 8 and report.complete and report.shortfall() == []
    rows = check_excerpts(out)
    assert [r["id"] for r in rows] == [f"q{i:04d}" for i in range(8)]
    assert {r["metadata"]["style"] for r in rows} == {"factoid"}
    assert all(r["metadata"]["matches"] == ["exact"] for r in rows)
    m = manifest(out)
    assert m["status"] == "complete" and m["sources"] == [{"path": "atlas.pdf", "doc_id": "atlas"}]
    assert m["settings"]["llm"]["provider"] == "openai" and m["settings"]["prompt_version"]
    assert [p["status"] for p in m["plan"]] == ["accepted"] * 8
    assert m["counts"]["answers"] == 8 and m["counts"]["accepted"] == 8
    assert sum(d["quota"] for d in m["documents"]) == 8
    first = synth_server.requests[0]
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"] == style_schema(
        EXACT_SCHEMA, "factoid"
    )
    assert first["max_tokens"] == 1024 and first["seed"] == 0
    # The prompts of a document's later slots list its earlier questions.
    later = [p for p in synth_server.user_prompts() if "already asked" in p]
    assert later and all("- What does fact" in p for p in later)


def test_anthropic_generates_the_same_way(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    report = run(synth_corpus, out, synth_server.anthropic_spec(), tmp_path / "cache", questions=5)
    assert report.accepted == 5
    check_excerpts(out)
    assert set(synth_server.paths) == {"/v1/messages"}
    assert all("response_format" not in r for r in synth_server.requests)
    assert manifest(out)["settings"]["llm"]["api"] == "messages"


def test_faults_are_handled_and_counted(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    """Malformed JSON, a passage not in the text, a copy with straightened quotes and single
    spaces, 429 with Retry-After, 500 and a timeout: every question is still accepted, and each
    rejection is counted."""
    saying = "The keeper said \u201cnever  again\u201d \u2014 it\u2019s a local saying."
    straight = 'The keeper said "never again" - it\'s a local saying.'
    docs = [Document(k, v) for k, v in corpus_texts().items()]
    plan = make_plan(docs, 6, seed=0, window_chars=WINDOW, styles=("factoid",))
    chronicle = next(s for s in plan if s.doc_id == "chronicle")
    assert saying in docs[2].text[chronicle.start : chronicle.end]

    def keeper(number: int, user: str) -> Scripted | None:
        if "The keeper said" in window_text(user):
            return Scripted(json.dumps({"question": "What do locals say?", "passages": [straight]}))
        return None

    synth_server.responder = keeper
    # One request at a time, in plan order: slot 0 malformed, then corrected; slot 1 cites a
    # passage that is not in the text, then corrected; slot 2 meets a 429, slot 3 a 500 and
    # slot 4 a stall longer than the client's timeout, each then answered.
    synth_server.answer_next("A good question would be about the bridge, I think.")
    synth_server.as_usual_next()
    synth_server.answer_next(
        json.dumps({"question": "How far is the moon?", "passages": ["The moon is far away."]})
    )
    synth_server.as_usual_next()
    synth_server.fail_next(429, {"retry-after": "0"})
    synth_server.as_usual_next()
    synth_server.fail_next(500)
    synth_server.as_usual_next()
    synth_server.fail_next(500, delay=1.5)  # the client gives up after 1 s
    out = tmp_path / "out"
    report = run(
        synth_corpus, out, synth_server.openai_spec(timeout=1.0), tmp_path / "cache", questions=6
    )
    rows = check_excerpts(out)
    c = counts(out)
    assert report.accepted == 6 and report.complete
    assert c["malformed"] == 1 and c["not_found"] == 1 and c["normalised"] == 1
    assert c["answers"] == 8 and c["windows_skipped"] == 0  # six questions, two corrections
    assert report.llm.requests == 11 and report.llm.retries == 3  # 429, 500, timeout
    assert len(synth_server.requests) == 11
    keeper_row = next(r for r in rows if r["doc_id"] == "chronicle")
    assert keeper_row["excerpts"][0]["text"] == saying
    assert keeper_row["metadata"]["matches"] == ["normalised"]
    malformed_row = rows[0]
    assert malformed_row["metadata"]["attempts"] == 2
    assert malformed_row["metadata"]["rejected"] == {"malformed": 1}
    # The correction repeats the prompt, quotes the answer and says what was wrong.
    correction = synth_server.user_prompts()[1]
    assert correction.startswith(synth_server.user_prompts()[0])
    assert "A good question would be about the bridge" in correction
    assert "not the JSON object asked for" in correction
    assert "is not in the text" in synth_server.user_prompts()[3]


def test_a_window_is_skipped_after_three_unusable_answers(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    for attempt in range(MAX_ATTEMPTS):  # three different unusable answers
        synth_server.answer_next(f'{{"question": "Which {attempt}?", "passages": [], "x": 1}}')
    out = tmp_path / "out"
    report = run(synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=4)
    check_excerpts(out)
    c = counts(out)
    assert report.accepted == 3 and c["accepted"] == 3
    assert c["malformed"] == 3 and c["windows_skipped"] == 1 and c["answers"] == 6
    assert manifest(out)["plan"][0]["status"] == "skipped"
    assert manifest(out)["status"] == "complete"
    lines = report.shortfall()
    assert lines[0] == "1 of 4 questions were not written:"
    assert "1 windows skipped after 3 unusable answers" in lines[1] and "malformed 3" in lines[1]
    assert len(synth_server.requests) == 6  # bounded: three for the skipped window
    # A rerun asks nothing (the skipped window's answers are cached) and changes nothing.
    before = files(out)
    synth_server.requests.clear()
    run(synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=4)
    assert synth_server.requests == [] and files(out) == before


def test_401_stops_at_once_and_the_rerun_continues(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    synth_server.as_usual_next(2)
    synth_server.fail_next(401)
    out = tmp_path / "out"
    spec = synth_server.openai_spec()
    with pytest.raises(LLMError, match="HTTP 401") as caught:
        run(synth_corpus, out, spec, tmp_path / "cache", questions=6)
    assert KEY_ENV in str(caught.value) and KEY not in str(caught.value)
    assert len(synth_server.requests) == 3  # never retried
    rows = check_excerpts(out)
    assert len(rows) == 2
    m = manifest(out)
    assert m["status"] == "incomplete" and "HTTP 401" in m["stopped"]
    assert m["counts"]["accepted"] == 2 and m["counts"]["not_attempted"] == 4
    report = run(synth_corpus, out, spec, tmp_path / "cache", questions=6)
    assert report.accepted == 6 and report.resumed == 2 and report.complete
    check_excerpts(out)
    assert manifest(out)["status"] == "complete" and manifest(out)["stopped"] is None
    assert set(synth_server.answered.values()) == {1}


def test_retries_exhausted_stop_the_run(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    synth_server.as_usual_next()
    for _ in range(2):
        synth_server.fail_next(500, {"retry-after": "0"})
    out = tmp_path / "out"
    spec = synth_server.openai_spec(max_retries=1)
    with pytest.raises(LLMError, match="still failing after 2 attempts"):
        run(synth_corpus, out, spec, tmp_path / "cache", questions=3)
    assert len(synth_server.requests) == 3
    assert len(check_excerpts(out)) == 1


def test_a_rerun_makes_no_request_and_writes_the_same_bytes(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    spec = synth_server.openai_spec()
    options: dict[str, Any] = {"questions": 7, "styles": ("factoid", "multi", "paraphrased")}
    run(synth_corpus, out, spec, tmp_path / "cache", **options)
    rows = check_excerpts(out)
    assert {r["metadata"]["style"] for r in rows} == {"factoid", "multi", "paraphrased"}
    for row in rows:
        if row["metadata"]["style"] == "multi":
            assert len(row["excerpts"]) == 2
    before = files(out)
    asked = len(synth_server.requests)
    report = run(synth_corpus, out, spec, tmp_path / "cache", **options)
    assert len(synth_server.requests) == asked and report.llm.requests == 0
    assert report.resumed == 7 and files(out) == before
    # Starting over in a new folder with the same cache also asks nothing.
    again = tmp_path / "again"
    run(synth_corpus, again, spec, tmp_path / "cache", **options)
    assert len(synth_server.requests) == asked and files(again) == before


def test_concurrency_gives_the_same_files(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    options: dict[str, Any] = {"questions": 12, "styles": ("factoid", "multi")}
    one, four = synth_server.openai_spec(), synth_server.openai_spec(concurrency=4)
    run(synth_corpus, tmp_path / "one", one, tmp_path / "cache1", concurrency=1, **options)
    run(synth_corpus, tmp_path / "four", four, tmp_path / "cache4", **options)
    assert files(tmp_path / "one") == files(tmp_path / "four")
    assert len(synth_server.requests) == 24
    check_excerpts(tmp_path / "four")


def test_a_partly_written_last_line_is_dropped_and_asked_again(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    spec = synth_server.openai_spec()
    run(synth_corpus, out, spec, tmp_path / "cache", questions=5)
    check_excerpts(out)
    before = files(out)
    questions = out / "questions.jsonl"
    lines = questions.read_bytes().splitlines(keepends=True)
    questions.write_bytes(b"".join(lines[:2]) + lines[2][:30])  # killed while writing line 3
    report = run(synth_corpus, out, spec, tmp_path / "cache", questions=5)
    assert report.resumed == 2 and report.llm.cache_hits == 3 and report.llm.requests == 0
    assert files(out) == before


# --- kill -9 and resume, through the command line -------------------------------------------


def _command(corpus: Path, out: Path, spec: str, cache: Path, questions: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "chunkmark",
        "synth",
        "generate",
        str(corpus),
        "--llm",
        spec,
        "--out",
        str(out),
        "--questions",
        str(questions),
        "--window-chars",
        str(WINDOW),
        "--cache-dir",
        str(cache),
        "--quiet",
    ]


def test_kill_9_then_rerun_loses_nothing_duplicates_nothing_pays_nothing_twice(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    spec = synth_server.openai_spec()
    env = {**os.environ, KEY_ENV: KEY, "CHUNKMARK_LOG_DIR": str(tmp_path / "logs")}
    command = _command(synth_corpus, out, spec, cache, 8)
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def written() -> int:
        path = out / "questions.jsonl"
        return len(path.read_text("utf-8").splitlines()) if path.exists() else 0

    def kill_at_the_fourth_request(number: int) -> bool:
        if number == 4:
            # A server on this machine gets one request at a time, but the fourth may leave
            # while the third answer is still being written: wait for it (a loaded machine
            # once killed the run between the two), so the kill lands with three written.
            deadline = time.monotonic() + 60
            while written() < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            return True  # never answered
        return False

    synth_server.on_request = kill_at_the_fourth_request
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    synth_server.on_request = None
    assert len(check_excerpts(out)) == 3
    assert manifest(out)["status"] == "incomplete"

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (
        "wrote 8 of 8 questions" in done.stderr
        and "3 were written by an earlier run" in done.stderr
    )
    rows = check_excerpts(out)
    assert [r["metadata"]["slot"] for r in rows] == list(range(8))  # none lost, none twice
    assert len({r["question"] for r in rows}) == 8
    assert set(synth_server.answered.values()) == {1}  # no answered request paid twice
    assert sum(synth_server.answered.values()) == 8
    assert len(synth_server.requests) == 9  # the killed request was never answered

    # The same as a run that was never interrupted.
    reference = tmp_path / "reference"
    run(synth_corpus, reference, spec, tmp_path / "cache-ref", questions=8)
    assert files(reference) == files(out)


# --- budgets and dry runs -------------------------------------------------------------------


def _expensive_prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"gpt-4o-mini": {"input": 1000.0, "output": 0.0}}}))
    return path


def test_max_cost_stops_before_crossing_and_cached_answers_cost_nothing(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    prices = load_prices(_expensive_prices(tmp_path))
    spec = synth_server.openai_spec()
    out, cache = tmp_path / "out", tmp_path / "cache"
    report = run(synth_corpus, out, spec, cache, questions=8, max_cost=1.5, prices=prices)
    assert report.stopped is not None and "--max-cost" in report.stopped
    asked = len(synth_server.requests)
    assert 1 <= asked < 8 and report.accepted == asked
    assert report.cost_usd is not None and report.cost_usd <= 1.5
    c = counts(out)
    assert c["not_attempted"] == 8 - asked and manifest(out)["status"] == "incomplete"
    assert any("not attempted" in line for line in report.shortfall())
    check_excerpts(out)
    # The same budget in a new folder: the cached answers are free, so it gets further.
    report2 = run(
        synth_corpus, tmp_path / "out2", spec, cache, questions=8, max_cost=1.5, prices=prices
    )
    assert report2.accepted > asked
    check_excerpts(tmp_path / "out2")
    # Continuing the first folder with a larger budget pays nothing twice.
    run(synth_corpus, out, spec, cache, questions=8, max_cost=100.0, prices=prices)
    assert len(check_excerpts(out)) == 8
    assert set(synth_server.answered.values()) == {1}


def test_an_unknown_price_is_a_clear_error_before_any_request(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    spec = "openai(model='my-api-model', base_url='https://api.acme.example/v1')"  # not here
    with pytest.raises(SynthError, match="No price is known for the model 'my-api-model'") as e:
        run(synth_corpus, tmp_path / "out", spec, tmp_path / "cache", questions=2, max_cost=1.0)
    assert "--prices" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_a_model_served_from_this_machine_is_free_under_max_cost(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    spec = synth_server.openai_spec(model="my-local-model")  # the server is on 127.0.0.1
    report = run(
        synth_corpus, tmp_path / "out", spec, tmp_path / "cache", questions=2, max_cost=0.0
    )
    assert report.accepted == 2 and len(synth_server.requests) == report.llm.requests >= 2


def test_dry_run_estimates_and_asks_nothing(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    spec = synth_server.openai_spec()
    cache = tmp_path / "cache"
    llm = build_llm(spec, cache_dir=cache)
    found = estimate(synth_corpus, llm, tmp_path / "out", questions=6, window_chars=WINDOW)
    assert found.slots == 6 and found.calls == 6 and found.cached == 0
    assert found.input_tokens > 6 * 300 and found.output_tokens == 6 * 1024
    assert found.cost_usd is not None and found.worst_cost_usd == pytest.approx(3 * found.cost_usd)
    assert found.cost_usd == pytest.approx(
        (found.input_tokens * 0.15 + found.output_tokens * 0.60) / 1e6
    )
    assert synth_server.requests == [] and not (tmp_path / "out").exists()
    run(synth_corpus, tmp_path / "out", spec, cache, questions=6)
    check_excerpts(tmp_path / "out")
    after = estimate(synth_corpus, llm, tmp_path / "out", questions=6, window_chars=WINDOW)
    assert after.slots == 0 and after.calls == 0
    fresh = estimate(synth_corpus, llm, tmp_path / "new", questions=6, window_chars=WINDOW)
    assert fresh.cached == 3  # each document's first slot: its prompt is known and cached


def _cli(*args: str) -> Any:
    import typer

    from chunkmark.cli.synth_generate import register

    app = typer.Typer()
    group = typer.Typer()
    register(group)
    app.add_typer(group, name="synth")
    return CliRunner().invoke(app, ["synth", "generate", *args], env={"COLUMNS": "200"})


def test_cli_dry_run_and_run(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    examples = tmp_path / "examples.txt"
    examples.write_text("How long is the old bridge?\n\nWhich tower is tallest?\n")
    common = [
        str(synth_corpus),
        "--llm",
        synth_server.openai_spec(),
        "--out",
        str(tmp_path / "out"),
    ]
    common += ["--questions", "4", "--window-chars", str(WINDOW), "--examples", str(examples)]
    dry = _cli(*common, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "4 requests" in dry.output and "No request was made" in dry.output
    assert "$0.15 / $0.6 per 1M tokens for gpt-4o-mini, list prices of 2025-11-20" in dry.output
    assert synth_server.requests == []
    done = _cli(*common, "--style", "factoid,paraphrased")
    assert done.exit_code == 0, done.output
    assert "wrote 4 of 4 questions" in done.output
    assert "[4/4] slot 3" in done.output
    assert all("- Which tower is tallest?" in p for p in synth_server.user_prompts())
    check_excerpts(tmp_path / "out")
    remote = "openai(model='my-api-model', base_url='https://api.acme.example/v1')"
    no_price = _cli(*common, "--dry-run", "--llm", remote)
    assert isinstance(no_price.exception, SynthError)
    assert "requests" in no_price.output
    local = _cli(*common, "--dry-run", "--llm", synth_server.openai_spec(model="local"))
    assert local.exit_code == 0, local.output
    assert "estimated cost: $0.0000" in local.output and "local is served from this" in local.output


# --- styles, modes and layouts --------------------------------------------------------------


def test_a_model_repeating_its_answer_gets_a_new_correction_each_time(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    # At temperature 0 a model asked again after a duplicate may answer the same duplicate:
    # each correction lists every rejected answer so far, so every attempt is a new request
    # (the same correction twice would be answered from the cache, asking nothing).
    def stubborn(number: int, user: str) -> Scripted | None:
        asked = asked_section(user)
        if not asked:
            return None
        first = asked.splitlines()[1].removeprefix("- ")
        facts = FACT.findall(window_text(user))
        return Scripted(json.dumps({"question": first, "passages": facts[-1:]}))

    synth_server.responder = stubborn
    out = tmp_path / "out"
    report = run(synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=4)
    c = counts(out)
    skipped = c["windows_skipped"]
    assert skipped >= 1 and c["duplicate"] == MAX_ATTEMPTS * skipped
    assert report.llm.cache_hits == 0 and report.llm.requests == c["answers"]
    prompts = synth_server.user_prompts()
    assert len(set(prompts)) == len(prompts)  # no request asked twice
    last = prompts[-1]
    assert "Your previous answer 1 was:" in last and "Your previous answer 2 was:" in last
    assert last.count("was already asked; ask about something else") == MAX_ATTEMPTS - 1
    # after a duplicate, each further answer is asked at another temperature and seed
    first_tries = [r for r in synth_server.requests if "Your previous answer" not in user_of(r)]
    retries = [r for r in synth_server.requests if "Your previous answer" in user_of(r)]
    assert {(r["temperature"], r["seed"]) for r in first_tries} == {(0.0, 0)}
    assert {r["temperature"] for r in retries} == {RETRY_TEMPERATURE}
    seeds = {r["seed"] for r in retries if "Your previous answer was" in user_of(r)}
    assert seeds == {RETRY_SEED_STEP * 2}
    assert c["duplicate_exact"] + c["duplicate_near"] == c["duplicate"]


def test_collapsed_copied_and_repeated_questions_are_rejected(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    texts = corpus_texts()

    def faulty(number: int, user: str) -> Scripted | None:
        if "Your previous answer" in user:
            return None
        facts = FACT.findall(window_text(user))
        style = style_of(user)
        if style == "multi":  # two facts side by side: one passage, not two
            return Scripted(json.dumps({"question": "Compare?", "passages": facts[:2]}))
        if style == "paraphrased":  # copies words of its passage
            question = f"What does {facts[0].split(': ')[1][:40]} measure?"
            return Scripted(json.dumps({"question": question, "passages": facts[:1]}))
        asked = asked_section(user)
        if asked:  # the first earlier question, again
            first = asked.splitlines()[1].removeprefix("- ")
            return Scripted(json.dumps({"question": first, "passages": facts[-1:]}))
        return None

    synth_server.responder = faulty
    out = tmp_path / "out"
    report = run(
        synth_corpus,
        out,
        synth_server.openai_spec(),
        tmp_path / "cache",
        questions=9,
        styles=("factoid", "multi", "paraphrased"),
    )
    c = counts(out)
    assert report.accepted == 9
    assert c["collapsed"] == 3 and c["copied"] == 3 and c["duplicate"] >= 1
    assert c["answers"] == 9 + c["collapsed"] + c["copied"] + c["duplicate"]
    rows = check_excerpts(out)
    for row in rows:
        spans = [Span(e["start"], e["end"]) for e in row["excerpts"]]
        assert len(spans) == 1 or not collapses(texts[row["doc_id"]], spans)


def test_approximate_mode_cites_piece_ranges(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    report = run(
        synth_corpus,
        out,
        synth_server.anthropic_spec(),
        tmp_path / "cache",
        questions=8,
        mode="approximate",
        styles=("multi", "factoid"),
    )
    assert report.accepted == 8
    rows = check_excerpts(out)
    multi = [r for r in rows if r["metadata"]["style"] == "multi"]
    assert multi
    for row in rows:
        assert row["metadata"]["matches"] == ["pieces"] * len(row["excerpts"])
        assert all(len(p) == 2 for p in row["metadata"]["pieces"])
    for row in multi:
        # Each range has its own offsets: the first and second facts named in the question.
        first, second = row["question"].split("facts ")[1].split(" compare")[0].split(" and ")
        assert f"Fact {first}:" in row["excerpts"][0]["text"]
        assert f"Fact {second}:" in row["excerpts"][1]["text"]
        assert row["excerpts"][0]["end"] < row["excerpts"][1]["start"]
    assert "[[1]]" in synth_server.user_prompts()[0]


def test_chroma_layout_loads_and_resumes(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    spec = synth_server.openai_spec()
    run(synth_corpus, out, spec, tmp_path / "cache", questions=5, layout="chroma")
    dataset = load_dataset(out)
    assert len(dataset.questions) == 5
    texts = corpus_texts()
    for q in dataset.questions:
        assert all(0 <= s.start < s.end <= len(texts[q.doc_id]) for s in q.excerpts)
    with (out / "questions_df.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for ref in json.loads(row["references"]):
            text = texts[row["corpus_id"]]
            assert text[ref["start_index"] : ref["end_index"]] == ref["content"]
    assert [json.loads(r["metadata"])["slot"] for r in rows] == list(range(5))
    assert {p.name for p in (out / "corpora").iterdir()} == {f"{n}.md" for n in texts}
    before = files(out)
    lines = (out / "questions_df.csv").read_bytes().splitlines(keepends=True)
    (out / "questions_df.csv").write_bytes(b"".join(lines[:3]) + lines[3][:20])
    asked = len(synth_server.requests)
    run(synth_corpus, out, spec, tmp_path / "cache", questions=5, layout="chroma")
    assert len(synth_server.requests) == asked and files(out) == before


# --- the output folder and the corpus -------------------------------------------------------


def test_other_settings_or_a_foreign_folder_are_refused(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    spec = synth_server.openai_spec()
    run(synth_corpus, out, spec, tmp_path / "cache", questions=3)
    check_excerpts(out)
    with pytest.raises(SynthError, match=r"other settings \(seed differ\)"):
        run(synth_corpus, out, spec, tmp_path / "cache", questions=3, seed=1)
    assert manifest(out)["settings"]["temperature"] == 0.0
    warmer = synth_server.openai_spec(temperature=0.7)
    with pytest.raises(SynthError, match=r"other settings \(temperature differ\)"):
        run(synth_corpus, out, warmer, tmp_path / "cache", questions=3)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(SynthError, match="holds no manifest"):
        run(synth_corpus, foreign, spec, tmp_path / "cache", questions=3)
    with pytest.raises(SynthError, match="is the corpus folder"):
        run(synth_corpus, synth_corpus, spec, tmp_path / "cache", questions=3)
    with pytest.raises(SynthError, match="Unknown question style 'trivia'"):
        run(synth_corpus, tmp_path / "x", spec, tmp_path / "cache", styles=("trivia",))


def test_a_dataset_folder_is_a_corpus_too(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    first = tmp_path / "first"
    spec = synth_server.openai_spec()
    run(synth_corpus, first, spec, tmp_path / "cache", questions=3)
    second = tmp_path / "second"
    run(first, second, spec, tmp_path / "cache", questions=3)  # a JSONL dataset as the corpus
    check_excerpts(first)
    check_excerpts(second)
    assert (second / "documents.jsonl").read_bytes() == (first / "documents.jsonl").read_bytes()
    assert manifest(second)["sources"] == [{"path": "atlas.pdf", "doc_id": "atlas"}]


def test_read_corpus(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    (folder / "corpora").mkdir(parents=True)
    (folder / "corpora" / "b.txt").write_bytes(b"two\r\nlines\r\n")
    (folder / "corpora" / "a.md").write_bytes("caf\u00e9\n".encode())
    (folder / "corpora" / "skip.pdf").write_bytes(b"%PDF")
    docs = read_corpus(folder)
    assert docs == [Document("a", "caf\u00e9\n"), Document("b", "two\nlines\n")]
    (folder / "corpora" / "c.md").write_bytes(b"\xff\xfe")
    with pytest.raises(DatasetError, match="not valid UTF-8"):
        read_corpus(folder)
    with pytest.raises(DatasetError, match="missing the corpora folder"):
        read_corpus(tmp_path)
    assert write_corpus(tmp_path / "w").is_dir()
    assert [d.id for d in read_corpus(tmp_path / "w")] == ["atlas", "bulletin", "chronicle"]
    assert fact(0, 0) in read_corpus(tmp_path / "w")[0].text


def test_timing_is_not_part_of_the_files(synth_corpus: Path, tmp_path: Path) -> None:
    """A fake LLM run twice into two folders gives the same bytes (no dates, no durations)."""
    llm = FakeLLM(lambda system, user: model_answer(user), cache_dir=None)
    generate(synth_corpus, llm, tmp_path / "a", questions=3, window_chars=WINDOW)
    time.sleep(0.01)
    generate(synth_corpus, llm, tmp_path / "b", questions=3, window_chars=WINDOW)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    check_excerpts(tmp_path / "a")
