"""benchmarks/llm_concurrency.py on a tiny input: every LLM feature one request at a time and
with four workers, against the benchmark's local server with random per-request delays (so
answers finish in another order than they were asked): the same requests, the same files, and
never more requests in flight than the workers."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parent.parent


def test_every_feature_writes_the_same_files_with_four_workers(tmp_path: Path) -> None:
    numbers = tmp_path / "numbers.json"
    argv = [
        "--latency", "0.01", "--jitter", "0.01", "--workers", "4", "--documents", "3",
        "--facts", "6", "--questions", "6", "--answer-questions", "4",
        "--out", str(tmp_path / "out"), "--json", str(numbers), "--no-warm-up",
    ]  # fmt: skip
    assert load_benchmark("llm_concurrency").main(argv) == 0
    found = json.loads(numbers.read_text())["features"]
    assert sorted(found) == sorted(
        ["generate", "contextual", "propositions", "relations", "answers"]
    )
    for feature, f in found.items():
        assert f["identical"] and not f["differing"], feature
        assert f["requests"][0] == f["requests"][1] > 0, feature
        assert f["max_in_flight"][0] == 1 and 2 <= f["max_in_flight"][1] <= 4, feature
        assert f["files"] >= 3, feature


def test_the_model_answers_each_feature_from_its_prompt() -> None:
    script = load_benchmark("llm_concurrency")
    sentence, noun, place, metres = script.fact(2, 5)
    assert sentence == f"Fact 2-5: the {noun} near {place} measures {metres} metres."
    props = json.loads(
        script.respond(
            "", f"<text>\n{sentence} {sentence}\n</text>\n\nBreak this text into propositions."
        )
    )
    assert props == {"propositions": [sentence, sentence]}
    asked = f"<text>\n{sentence}\n</text>\nThese questions were already asked: - fact 2-5"
    assert json.loads(script.respond("", asked))["passages"] == []
    answer = script.respond("You answer a question", f"{sentence}\nQuestion: How long (fact 2-5)?")
    assert answer == f"{metres} metres"
