"""Questions by ``metadata.source``: each source's ranking of the cells, Kendall's tau of the
other sources against the human one (checked against scipy), the human set's split-half
ceiling, the sentence naming the questions a recommendation rests on, and ``chunkmark run``
printing it after the recommendation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from chunkmark.datasets import Question
from chunkmark.datasets.demo import load_demo
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.report.sources import check_sources, question_sources, split_half
from cli.app_runner import invoke

CELLS = ("a", "b", "c", "d", "e", "f")
EFFECT = np.array([0.60, 0.52, 0.45, 0.40, 0.30, 0.22])  # a is best, f worst


def values(effect: np.ndarray, n: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return effect[:, None] + noise * rng.standard_normal((len(effect), n))


def mixed(
    human: np.ndarray, synthetic: np.ndarray
) -> tuple[dict[str, np.ndarray], list[str], dict[str, str]]:
    both = np.hstack([human, synthetic])
    ids = [f"h{i}" for i in range(human.shape[1])] + [f"s{i}" for i in range(synthetic.shape[1])]
    sources = {q: ("human" if q.startswith("h") else "synthetic") for q in ids}
    return dict(zip(CELLS, both, strict=True)), ids, sources


def test_tau_and_rankings_match_an_independent_computation() -> None:
    human = values(EFFECT, 40, 0.3, seed=1)
    synthetic = values(EFFECT[[1, 0, 2, 5, 4, 3]], 60, 0.3, seed=2)
    per_cell, ids, sources = mixed(human, synthetic)
    check = check_sources("set", "recall", per_cell, ids, sources, resamples=300)
    assert check is not None and check.counts == {"human": 40, "synthetic": 60}
    expected = kendalltau(human.mean(axis=1), synthetic.mean(axis=1)).statistic  # tau-b
    found = check.agreement["synthetic"]
    assert math.isclose(found.tau, expected, abs_tol=1e-12)
    assert found.ci_low <= found.tau <= found.ci_high
    ranking = check.ranking("human")
    assert ranking is not None and ranking.questions == 40
    assert list(ranking.cells) == [CELLS[i] for i in np.argsort(-human.mean(axis=1))]
    assert np.allclose(ranking.means, np.sort(human.mean(axis=1))[::-1])


def test_agreeing_synthetic_questions_carry_the_recommendation() -> None:
    per_cell, ids, sources = mixed(values(EFFECT, 40, 0.05, 3), values(EFFECT, 80, 0.05, 4))
    check = check_sources("set", "recall", per_cell, ids, sources, resamples=300)
    assert check is not None and check.agrees()
    sentence = check.rests_on()
    assert sentence.startswith("set: the recommendation rests on all 120 questions: 80 synthetic")
    assert "like your 40 human ones" in sentence and "split-half ceiling" in sentence


def test_disagreeing_synthetic_questions_leave_it_to_the_human_ones() -> None:
    human = values(EFFECT, 40, 0.05, 5)
    per_cell, ids, sources = mixed(human, values(EFFECT[::-1], 80, 0.05, 6))
    check = check_sources("set", "recall", per_cell, ids, sources, resamples=300)
    assert check is not None and not check.agrees()
    assert check.agreement["synthetic"].ci_high < 0  # reversed: tau near -1
    top = [CELLS[i] for i in np.argsort(-human.mean(axis=1))[:3]]
    assert check.rests_on().endswith(
        f"It rests on your 40 human questions alone: by their mean, {', '.join(top)}."
    )


def test_synthetic_questions_alone_are_said_to_be_unchecked() -> None:
    per_cell, ids, _ = mixed(values(EFFECT, 0, 0.1, 7), values(EFFECT, 30, 0.1, 8))
    check = check_sources(
        "set", "recall", per_cell, ids, dict.fromkeys(ids, "synthetic"), resamples=100
    )
    assert check is not None and check.ceiling is None and not check.agreement
    assert "none is human" in check.rests_on()
    # only human questions, or none labelled: nothing to say
    assert check_sources("set", "recall", per_cell, ids, dict.fromkeys(ids, "human")) is None
    assert check_sources("set", "recall", per_cell, ids, {}) is None


def test_split_half_ceiling() -> None:
    # cells that differ by the same amount on every question: any two halves agree exactly
    exact = split_half(np.repeat(EFFECT[:, None], 20, axis=1), resamples=50)
    # (scipy's tau-b divides by a square root: a perfect agreement may come back one ulp short)
    assert exact is not None
    assert (exact.tau, exact.low, exact.high) == pytest.approx((1.0, 1.0, 1.0), abs=1e-12)
    # cells that do not differ at all: halves agree by chance only, tau around 0
    noise = split_half(values(np.zeros(6), 60, 1.0, 9), resamples=500)
    assert noise is not None and noise.low < 0 < noise.high and abs(noise.tau) < 0.3
    # a clear effect beside noise: well above 0, not 1
    clear = split_half(values(EFFECT, 60, 0.3, 10), resamples=500)
    assert clear is not None and clear.low > 0 and clear.tau < 1
    assert split_half(np.ones((6, 3))) is None  # too few questions to halve


def test_question_sources_reads_metadata_source() -> None:
    questions = [
        Question("1", "q?", "d", (), {"source": "human"}),
        Question("2", "q?", "d", (), {"source": " synthetic "}),
        Question("3", "q?", "d", (), {}),
        Question("4", "q?", "d", (), {"source": 3}),
    ]
    assert question_sources(questions) == {"1": "human", "2": "synthetic"}


def test_run_prints_which_questions_the_recommendation_rests_on(tmp_path: Path) -> None:
    demo = load_demo()
    folder = tmp_path / "mixed"
    write_jsonl(demo, folder)
    path = folder / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for i, row in enumerate(rows):
        row.setdefault("metadata", {})["source"] = "human" if i % 2 else "synthetic"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    result = invoke(
        "run", "--dataset", str(folder), "--embedder", "fake()", "-c", "fixed_tokens(size=64)",
        "-c", "sentences(n=2)", "-c", "words(n=60)", "--k", "5", "--out", str(out),
        "--no-cache", "--no-report",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith("mixed: the recommendation")]
    assert len(said) == 1, result.stdout
    humans, synthetic = sum(i % 2 for i in range(len(rows))), len(rows) // 2
    assert f"your {humans} human" in lines[said[0]] and f"{synthetic} synthetic" in lines[said[0]]
    assert lines[said[0] + 1].startswith(f"  by human questions ({humans}): ")
    assert lines[said[0] + 2].startswith(f"  by synthetic questions ({synthetic}): ")
    # the recommendation comes first
    assert any("ecommended" in line or "No single winner" in line for line in lines[: said[0]])
