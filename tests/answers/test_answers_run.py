"""Answer scoring in a run, against the local OpenAI-compatible wire-format server: what is
asked (retrieved passages within the token budget, the whole document where it fits), how it is
scored (F1, exact match, labels, the judge), what a rerun asks (nothing) and what the plan
prices (the requests the run sends)."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkmark.answers.analysis import answer_analyses
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.errors import ConfigError, LLMError
from chunkmark.experiments.config import ExperimentConfig, make_config
from chunkmark.experiments.plan import Plan
from chunkmark.experiments.plan import plan_grid as plan_with
from chunkmark.experiments.runner import Results
from chunkmark.experiments.runner import evaluate as run_grid
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens
from llm_chunker_helpers import wire_server

D1 = (
    "There was once a King who had a wife with golden hair. She was so beautiful that nobody "
    "in the land was like her. The trial of the new medicine significantly increased the "
    "number of children who could read by the end of the year."
)
D2 = "The miller lived by the river. " + " ".join(f"word{i}" for i in range(1500))
LABELS = ("significantly increased", "no significant difference")


def _span(text: str, part: str) -> Span:
    at = text.index(part)
    return Span(at, at + len(part))


def dataset(folder: Path) -> Path:
    questions = (
        Question(
            "q1",
            "What kind of hair did the wife have?",
            "d1",
            (_span(D1, "golden hair"),),
            {"answers": ["golden hair", "gold"]},
        ),
        Question(
            "q2",
            "What did the medicine do to reading?",
            "d1",
            (_span(D1, "significantly increased"),),
            {"label": LABELS[0]},
        ),
        Question(
            "q3",
            "Where did the miller live?",
            "d2",
            (_span(D2, "by the river"),),
            {"answers": ["the river"]},
        ),
        Question("q4", "Who was beautiful?", "d1", (_span(D1, "She was so beautiful"),)),
    )
    # q2's allowed labels come from the dataset: only one question carries a label, so add the
    # second label through a question-level list
    q2 = questions[1]
    questions = (
        questions[0],
        Question(
            q2.id, q2.text, q2.doc_id, q2.excerpts, {"label": LABELS[0], "labels": list(LABELS)}
        ),
        *questions[2:],
    )
    data = Dataset("tiny", (Document("d1", D1), Document("d2", D2)), questions)
    write_jsonl(data, folder)
    return folder


def answer(path: str, payload: dict[str, Any]) -> str:
    system = payload["messages"][0]["content"]
    user = payload["messages"][-1]["content"]
    if system.startswith("You grade"):
        return 'Verdict: {"correct": true, "faithful": false}'
    if "Labels:" in user:
        return "The answer is: Significantly increased."
    if "What kind of hair" in user:
        return "Golden hair."
    return "by the river bank"


@pytest.fixture
def server() -> Iterator[Any]:
    with wire_server().serve() as state:
        state.answer = answer
        yield state


def evaluate(cfg: ExperimentConfig) -> Results:
    """The runner with the answers analysis handed in, as chunkmark.evaluate and `chunkmark run`
    hand it."""
    return run_grid(cfg, analyses=answer_analyses(cfg))


def plan_grid(cfg: ExperimentConfig) -> Plan:
    return plan_with(cfg, answer_analyses(cfg))


def config(
    tmp_path: Path,
    server: Any,
    out: str,
    chunkers: str = "fixed_tokens(size=[8, 16], overlap=0)",
    **answers: Any,
) -> Any:
    llm = f"openai(model='gpt-4o-mini', base_url='{server.openai_url}', max_retries=0)"
    judge = f"openai(model='judge-model', base_url='{server.openai_url}', max_retries=0)"
    return make_config(
        {
            "datasets": [str(tmp_path / "tiny")],
            "chunkers": [chunkers],
            "embedders": ["fake()"],
            "retrieval": ["token_budget(tokens=20)", "top_k(k=1)"],
            "out": str(tmp_path / out),
            "cache_dir": str(tmp_path / "cache"),
            "report": False,
            "prices": {"llm": {"judge-model": {"input": 1.0, "output": 2.0}}},
            "answers": {
                "llm": llm,
                "setting": "token_budget(tokens=20)",
                "judge": judge,
                "context_window": 1024,
                **answers,
            },
        }
    )


def span_vs_answer_tau(out: Path, answers: list[dict[str, str]], metric: str) -> tuple[float, int]:
    """Kendall's tau (scipy, tau-b) between the retrieved-context cells' mean ``metric`` from
    results.parquet and their mean answer score from answers.csv, over the questions every cell
    has a score and a span value for; and how many questions that is."""
    import pyarrow.parquet as pq
    from scipy.stats import kendalltau

    span = {
        (r["chunker"], r["embedder"], r["retrieval"], r["question_id"]): r[metric]
        for r in pq.read_table(out / "results.parquet").to_pylist()
        if (r["excerpts"], r["unit"], r["denominator"]) == ("position", "chars", "sum")
    }
    score = {
        (r["chunker"], r["embedder"], r["retrieval"], r["question_id"]): float(r["score"])
        for r in answers
        if r["context"] == "retrieved"
    }
    cells = sorted({key[:3] for key in score})
    questions = sorted(
        {key[3] for key in score}
        - {key[3] for key in score if np.isnan(score[key]) or np.isnan(span[key])}
    )
    questions = [q for q in questions if all((*c, q) in score for c in cells)]
    by_span = [np.mean([span[(*c, q)] for q in questions]) for c in cells]
    by_score = [np.mean([score[(*c, q)] for q in questions]) for c in cells]
    return float(kendalltau(by_span, by_score).statistic), len(questions)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_answers_are_asked_scored_judged_and_cached(tmp_path: Path, server: Any) -> None:
    dataset(tmp_path / "tiny")
    plan = plan_grid(config(tmp_path, server, "run"))
    result = evaluate(config(tmp_path, server, "run"))
    out = tmp_path / "run"
    found = rows(out / "answers.csv")
    # q4 has no reference: never asked; q1-q3 x (2 cells + the whole document)
    assert sorted({r["question_id"] for r in found}) == ["q1", "q2", "q3"]
    assert len(found) == 9
    answer_requests = [p for p in server.requests if p["model"] == "gpt-4o-mini"]
    judge_requests = [p for p in server.requests if p["model"] == "judge-model"]
    # 3 questions x 2 cells, plus the whole document of d1 for q1 and q2 (d2 does not fit)
    assert len(answer_requests) == 8
    assert len(judge_requests) == 8
    assert all(p.get("response_format", {}).get("type") == "json_schema" for p in judge_requests)

    # the plan priced exactly the requests the run sent
    by_role = {p.role: p for p in plan.answers}
    assert by_role["answer"].calls == len(answer_requests)
    assert by_role["answer"].baseline_calls == 2 and by_role["answer"].not_fitting == 1
    assert by_role["judge"].calls == len(judge_requests)
    judge_plan = by_role["judge"]
    assert judge_plan.input_tokens is not None
    assert judge_plan.usd == pytest.approx(
        judge_plan.input_tokens * 1.0 / 1e6 + judge_plan.output_tokens * 2.0 / 1e6
    )
    assert by_role["answer"].usd is not None and by_role["answer"].usd > 0  # gpt-4o-mini's price
    assert plan.total_usd is not None and plan.total_usd >= judge_plan.usd

    def of(qid: str, context: str) -> list[dict[str, str]]:
        return [r for r in found if r["question_id"] == qid and r["context"] == context]

    for r in of("q1", "retrieved") + of("q1", "whole_document"):
        assert (r["answer"], float(r["f1"]), float(r["exact_match"])) == ("Golden hair.", 1.0, 1.0)
    for r in of("q2", "retrieved"):
        assert r["predicted_label"] == LABELS[0] and float(r["label_correct"]) == 1.0
        assert float(r["score"]) == 1.0 and r["f1"] == "nan"
    # "by the river bank" vs "the river": tokens [by, river, bank] vs [river] -> P 1/3, R 1
    for r in of("q3", "retrieved"):
        assert float(r["f1"]) == pytest.approx(0.5) and float(r["exact_match"]) == 0.0
    (whole,) = of("q3", "whole_document")
    assert whole["fits"] == "False" and whole["answer"] == "" and whole["f1"] == "nan"
    assert all(
        float(r["judge_correct"]) == 1.0 and float(r["judge_faithful"]) == 0.0
        for r in found
        if r["fits"] == "True"
    )

    # each retrieved context is passages of the document, at most the 20-token budget
    for payload in answer_requests:
        user = payload["messages"][-1]["content"]
        context = user.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        passages = [p for p in re.split(r"(?:^|\n\n)\[\d+\] ", context) if p]
        assert all(p in D1 or p in D2 for p in passages)
        if passages != [D1]:  # not the whole-document baseline
            # the prompt strips each passage's outer whitespace, which can move a token
            # boundary by one (" beautiful" is one token, "beautiful" another)
            assert sum(count_tokens(passages, "cl100k_base")) <= 20 + len(passages)

    section = result.manifest["answers"]
    assert section["counts"]["asked"] == 8 and section["counts"]["not_fitting"] == 1
    assert section["judge_agreement"]["n"] == 8
    # F1 >= 0.5 or label right everywhere, judge says correct everywhere -> all agree
    assert section["judge_agreement"]["accuracy"] == 1.0
    (tau,) = section["span_vs_answer"]
    assert tau["cells"] == 2 and tau["recall"]["questions"] == 3
    for metric in ("recall", "iou"):
        want, questions = span_vs_answer_tau(out, found, metric)
        assert tau[metric]["questions"] == questions
        if np.isnan(want):  # tau is undefined when either ranking is all ties
            assert tau[metric]["tau"] is None or np.isnan(tau[metric]["tau"]), tau
        else:
            assert tau[metric]["tau"] == pytest.approx(want, abs=1e-12), (metric, tau)
    summary = rows(out / "answers_summary.csv")
    assert len(summary) == 3
    cell = next(s for s in summary if s["context"] == "retrieved")
    assert float(cell["f1_mean"]) == pytest.approx((1.0 + 0.5) / 2)  # q1 and q3
    assert int(cell["label_correct_n"]) == 1

    # the report's Answers section reads the same files
    from chunkmark.report.answers import answers_payload
    from chunkmark.report.data import load_runs

    payload = answers_payload(load_runs([out]))
    assert payload is not None
    (group,) = payload["groups"]
    assert [r["baseline"] for r in group["rows"]] == [True, False, False]
    assert group["rows"][1]["mean"]["f1"] == pytest.approx(0.75)
    assert group["tau"]["cells"] == 2
    assert payload["runs"][0]["judgeAgreement"]["n"] == 8

    # a rerun into a new folder asks nothing: every answer and judgement is cached
    before = len(server.requests)
    evaluate(config(tmp_path, server, "again"))
    assert len(server.requests) == before
    assert rows(tmp_path / "again" / "answers.csv") == found
    # and the plan now replays the two baseline answers
    replayed = {p.role: p for p in plan_grid(config(tmp_path, server, "again")).answers}
    assert replayed["answer"].cached_calls == 2
    assert replayed["answer"].calls == 6


def test_an_endpoint_that_answers_nothing_stops_the_analysis(tmp_path: Path, server: Any) -> None:
    dataset(tmp_path / "tiny")
    for _ in range(10):
        server.fail(status=400)
    with pytest.raises(LLMError, match="failed 3 requests in a row"):
        evaluate(config(tmp_path, server, "run", judge=None, baseline=False))
    assert len(server.requests) == 3
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert len(manifest["cells"]) == 2  # the grid's own files are kept


def test_the_runner_and_the_planner_refuse_answers_without_the_analysis(
    tmp_path: Path, server: Any
) -> None:
    """The runner builds no analysis itself: a config with answers: and no answers analysis
    handed in is refused before anything is asked or written, not run without its answers."""
    dataset(tmp_path / "tiny")
    cfg = config(tmp_path, server, "run")
    with pytest.raises(ConfigError, match="no answers analysis was handed to the runner"):
        run_grid(cfg)
    with pytest.raises(ConfigError, match="no answers analysis was handed to the runner"):
        plan_with(cfg)
    assert not (tmp_path / "run").exists()
    assert server.requests == []
    assert [a.name for a in answer_analyses(cfg)] == ["answers"]
    assert answer_analyses(cfg.model_copy(update={"answers": None})) == []


def test_the_setting_must_be_one_of_the_run(tmp_path: Path, server: Any) -> None:
    with pytest.raises(ConfigError, match=r"answers\.setting"):
        config(tmp_path, server, "run", setting="top_k(k=7)")


def test_chunkmark_run_reads_answers_from_the_experiment_file(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from app_runner import invoke

    dataset(tmp_path / "tiny")
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(
        f"datasets: [{tmp_path / 'tiny'}]\n"
        'chunkers: ["fixed_tokens(size=8, overlap=0)"]\n'
        "embedders: [fake()]\n"
        'retrieval: ["token_budget(tokens=20)"]\n'
        f"cache_dir: {tmp_path / 'cache'}\n"
        "answers:\n"
        "  llm: \"fake(answers=['Golden hair'])\"\n"
        "  context_window: 1024\n",
        encoding="utf-8",
    )
    result = invoke("run", str(experiment), "--out", str(tmp_path / "out"), "--no-report")
    assert result.exit_code == 0, result.output
    assert "answers (token_budget(tokens=20)" in result.output
    found = rows(tmp_path / "out" / "answers.csv")
    assert len(found) == 6  # 3 questions x (1 cell + the whole document)
    q1 = [r for r in found if r["question_id"] == "q1"]
    assert [float(r["f1"]) for r in q1] == [1.0, 1.0]


def test_concurrent_answering_stops_with_the_sequential_error(tmp_path: Path, server: Any) -> None:
    dataset(tmp_path / "tiny")
    for _ in range(40):
        server.fail(status=400)
    llm = f"openai(model='m', base_url='{server.openai_url}', max_retries=0, concurrency=4)"
    with pytest.raises(LLMError, match="failed 3 requests in a row and answered none"):
        evaluate(config(tmp_path, server, "run", judge=None, baseline=False, llm=llm))
    assert len(server.requests) >= 3


def test_transport_settings_change_neither_answers_nor_names(tmp_path: Path, server: Any) -> None:
    dataset(tmp_path / "tiny")
    first = evaluate(config(tmp_path, server, "one", judge=None))
    asked = len(server.requests)
    llm = (
        f"openai(model='gpt-4o-mini', base_url='{server.openai_url}', max_retries=2, "
        "timeout=30.0, concurrency=4)"
    )
    second = evaluate(config(tmp_path, server, "two", judge=None, llm=llm))
    assert len(server.requests) == asked  # every answer from the cache: the same keys
    for name in ("answers.csv", "answers_summary.csv", "summary.csv"):
        assert (first.out / name).read_bytes() == (second.out / name).read_bytes()
    one, two = first.manifest["answers"], second.manifest["answers"]
    assert one["llm"] == two["llm"] and one["options"] == two["options"]
    assert "timeout" not in two["llm"]["spec"] and "concurrency" not in two["llm"]["spec"]
    assert first.manifest["config"]["answers"] == second.manifest["config"]["answers"]


def test_span_vs_answer_tau_is_kendalls_tau_of_the_cells(tmp_path: Path, server: Any) -> None:
    """Answers that depend on the context (the first passage, word for word), so that cells
    with other chunk sizes score otherwise: the manifest's tau is a number, and it is scipy's
    Kendall tau of the per-cell means read back from the output files."""

    def echo(path: str, payload: dict[str, Any]) -> str:
        user = payload["messages"][-1]["content"]
        if payload["messages"][0]["content"].startswith("You grade"):
            return 'Verdict: {"correct": true, "faithful": true}'
        context = user.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        first = re.split(r"\n\n\[\d+\] ", context.removeprefix("[1] "))[0]
        return " ".join(first.split()[:6])

    server.answer = echo
    dataset(tmp_path / "tiny")
    result = evaluate(
        config(tmp_path, server, "run", "fixed_tokens(size=[6, 12, 24, 48], overlap=0)")
    )
    out = tmp_path / "run"
    found = rows(out / "answers.csv")
    (tau,) = result.manifest["answers"]["span_vs_answer"]
    assert tau["cells"] == 4
    for metric in ("recall", "iou"):
        want, questions = span_vs_answer_tau(out, found, metric)
        assert not np.isnan(want), metric  # the cells' means differ both ways
        assert tau[metric]["questions"] == questions
        assert tau[metric]["tau"] == pytest.approx(want, abs=1e-12), (metric, tau)
