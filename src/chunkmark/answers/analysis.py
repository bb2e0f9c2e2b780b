"""Answer scoring as an analysis the runner carries (``answers:`` in an experiment file).

:class:`AnswerAnalysis` keeps, from each finished cell, its chunks, the ranking its retrieval
setting reads and, per question, the chunks counted, the tokens retrieved and the span metrics
at that setting (the first scoring option's rows). At the end of the run, for each dataset, each
question with reference answers (``metadata["answers"]``) or a label (``metadata["label"]``) is
answered by the LLM from each cell's retrieved passages (the token budget's cut of the last
chunk applied as the run applied it), and from the whole document (the no-retrieval baseline)
where that fits the model's context window. Answers come from the LLM answer cache when asked
before, so a rerun asks nothing. Each answer is scored (:mod:`chunkmark.answers.scoring`), and
judged when a judge is configured. The runner writes:

- ``OUT/answers.csv``: one row per dataset x cell (or baseline) x question;
- ``OUT/answers_summary.csv``: one row per dataset x cell (or baseline): means with 95%
  bootstrap intervals, the paired comparison with the best cell;
- the manifest's ``answers`` section: the LLM and judge, the prompt version, counts, the
  per-cell summaries, the judge's agreement with the references and, per dataset, Kendall's tau
  between the cells' span and answer rankings (:mod:`chunkmark.answers.agreement`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkmark.answers.agreement import judge_agreement, rank_agreement
from chunkmark.answers.plan import plan_answers
from chunkmark.answers.prompt import (
    VERSION,
    Request,
    answer_request,
    judge_request,
    parse_judgement,
)
from chunkmark.answers.scoring import (
    allowed_labels,
    best_exact_match,
    best_f1,
    dataset_labels,
    has_reference,
    label_of,
    parse_label,
    references_of,
    select_questions,
)
from chunkmark.datasets.model import Dataset, Question
from chunkmark.errors import LLMError
from chunkmark.experiments.analysis import AnalysisOutput, FinishedCell, FinishedRun
from chunkmark.experiments.config import AnswerOptions, ExperimentConfig
from chunkmark.experiments.store import csv_bytes

if TYPE_CHECKING:
    from chunkmark.costs.llm_prices import LLMPrices
    from chunkmark.experiments.plan_model import AnswerPlan
    from chunkmark.llm.cache import LLMCache

ANSWERS_CSV = "answers.csv"
SUMMARY_CSV = "answers_summary.csv"
BASELINE = "whole_document"
RETRIEVED = "retrieved"
SPAN_METRICS = ("recall", "iou", "precision")
# Per-question values summarised per cell (mean and 95% bootstrap interval).
SUMMARISED = (
    "score",
    "f1",
    "exact_match",
    "label_correct",
    "judge_correct",
    "judge_faithful",
    *SPAN_METRICS,
)
ROW_COLUMNS = (
    "dataset",
    "chunker",
    "embedder",
    "retrieval",
    "context",
    "question_id",
    "doc_id",
    "chunks",
    "context_tokens",
    "fits",
    *SPAN_METRICS,
    "answer",
    "f1",
    "exact_match",
    "label",
    "predicted_label",
    "label_correct",
    "score",
    "judge_correct",
    "judge_faithful",
    "error",
)
TIE_COLUMNS = (
    "tied_with_best",
    "difference_vs_best",
    "difference_ci_low",
    "difference_ci_high",
    "p_vs_best",
)
FAILURES_BEFORE_STOP = 3  # requests failing in a row, before any succeeded, stop the analysis
TIE_RESAMPLES = 2000


@dataclass(frozen=True, eq=False)
class _CellView:
    """What answering needs of one finished cell."""

    facts: dict[str, Any]
    doc_ids: list[str]
    start: np.ndarray
    end: np.ndarray
    tokens: np.ndarray
    ranking: dict[str, list[int]]  # question id -> chunk indices, best first
    used: dict[str, tuple[int, int, dict[str, float]]]  # id -> (chunks, tokens, span metrics)


@dataclass
class _Counters:
    asked: int = 0
    errors: int = 0
    not_fitting: int = 0
    unparsed_labels: int = 0
    judge_errors: int = 0
    judge_unparsed: int = 0
    succeeded: int = 0
    failed_in_a_row: int = 0
    last_error: str = ""


@dataclass
class AnswerAnalysis:
    """Answers per cell and question, scored (module docs), for the run's config by
    :func:`answer_analyses`; the LLMs' answer cache is the run's cache folder."""

    options: AnswerOptions
    seed: int = 0
    name: str = "answers"
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    _cells: dict[str, _CellView] = field(default_factory=dict)
    _started: float = field(default_factory=time.perf_counter)

    def plan(
        self, dataset: Dataset, cells: int, prices: LLMPrices, answers: LLMCache | None
    ) -> tuple[list[AnswerPlan], list[str]]:
        """What answering ``dataset``'s questions over ``cells`` cells would ask and cost
        (:mod:`chunkmark.answers.plan`)."""
        return plan_answers(dataset, self.options, cells, prices, answers, self.seed)

    @property
    def setting(self) -> str:
        assert self.options.setting is not None  # the config fills it in
        return self.options.setting

    def cell(self, cell: FinishedCell) -> None:
        from chunkmark.retrieval import RETRIEVAL

        ranker = str(RETRIEVAL.build(self.setting)[0].ranker)
        chunks = cell.chunks.to_pydict()
        ranking: dict[str, list[int]] = {}
        r = cell.rankings.to_pydict()
        for name, qid, found in zip(r["ranker"], r["question_id"], r["chunks"], strict=True):
            if name == ranker:
                ranking[qid] = list(found or [])
        used: dict[str, tuple[int, int, dict[str, float]]] = {}
        t = cell.table.to_pydict()
        for i, (retrieval, qid) in enumerate(zip(t["retrieval"], t["question_id"], strict=True)):
            if retrieval != self.setting or qid in used:
                continue
            spans = {m: float(t[m][i]) for m in SPAN_METRICS if m in t}
            used[qid] = (int(t["k_used"][i]), int(t["retrieved_tokens"][i]), spans)
        self._cells[cell.id] = _CellView(
            facts=dict(cell.facts),
            doc_ids=list(chunks["doc_id"]),
            start=np.asarray(chunks["start"], dtype=np.int64),
            end=np.asarray(chunks["end"], dtype=np.int64),
            tokens=np.asarray(chunks["tokens"], dtype=np.int64),
            ranking=ranking,
            used=used,
        )

    def finish(self, run: FinishedRun) -> AnalysisOutput:
        from chunkmark.llm import build_llm, identity_spec

        llm = build_llm(self.options.llm, cache_dir=run.cache_dir, seed=self.seed)
        judge = (
            None
            if self.options.judge is None
            else build_llm(self.options.judge, cache_dir=run.cache_dir, seed=self.seed)
        )
        asker = _Asker(llm, judge, self.options, run)
        datasets: list[dict[str, Any]] = []
        jobs: list[_Job] = []
        for dataset in run.datasets:
            questions = select_questions(dataset, self.options.questions, self.seed)
            labels = dataset_labels(dataset)
            datasets.append(
                {
                    "name": dataset.name,
                    "fingerprint": dataset.fingerprint,
                    "questions": len(dataset.questions),
                    "with_references": sum(has_reference(q) for q in dataset.questions),
                    "answered": len(questions),
                    "labels": list(labels),
                }
            )
            if not questions:
                run.progress(
                    f"answers  {dataset.name}: no question has reference answers or a label"
                )
                continue
            if self.options.baseline:
                jobs.extend(asker.baseline_jobs(dataset, questions, labels))
            for outcome in run.outcomes:  # the run's order, whichever order cells finished in
                view = self._cells.get(outcome.id)
                if view is None or outcome.failed:
                    continue
                if view.facts.get("fingerprint") != dataset.fingerprint:
                    continue
                jobs.extend(asker.cell_jobs(dataset, view, questions, labels, self.setting))
        rows = asker.rows(jobs)
        self.rows = rows
        self.summary, extra = summarise(rows, self.seed)
        section = {
            "llm": {"spec": identity_spec(self.options.llm), "identity": llm.identity()},
            "judge": None
            if judge is None or self.options.judge is None
            else {"spec": identity_spec(self.options.judge), "identity": judge.identity()},
            "setting": self.setting,
            "prompt_version": VERSION,
            "options": self.options.named().model_dump(mode="json"),
            "datasets": datasets,
            "counts": {
                "answers": len(rows),
                "asked": asker.counts.asked,
                "errors": asker.counts.errors,
                "not_fitting": asker.counts.not_fitting,
                "unparsed_labels": asker.counts.unparsed_labels,
                "judge_errors": asker.counts.judge_errors,
                "judge_unparsed": asker.counts.judge_unparsed,
            },
            "llm_stats": llm.stats().to_dict(),
            "judge_stats": None if judge is None else judge.stats().to_dict(),
            "cells": [_clean(r) for r in self.summary],
            **extra,
            "files": [ANSWERS_CSV, SUMMARY_CSV],
            "seconds": round(time.perf_counter() - self._started, 3),
        }
        return AnalysisOutput(
            section=section,
            files={
                ANSWERS_CSV: csv_bytes([_ordered(r) for r in rows]),
                SUMMARY_CSV: csv_bytes(self.summary),
            },
        )


def answer_analyses(config: ExperimentConfig) -> list[AnswerAnalysis]:
    """The analyses ``config`` asks for, to hand to the runner and the planner: the answers
    analysis with ``answers:``, else none."""
    return [] if config.answers is None else [AnswerAnalysis(config.answers, config.seed)]


@dataclass(frozen=True, eq=False)
class _Job:
    """One row to make: its fields before the answer, the question, the passages shown and the
    request (None when the context does not fit: nothing is asked); ``progress``: the line
    said when its turn comes (the first row of a cell)."""

    base: dict[str, Any]
    question: Question
    passages: tuple[str, ...]
    labels: tuple[str, ...]
    request: Request | None
    progress: str | None = None


@dataclass(frozen=True)
class _Fetched:
    """What the LLMs said for one job: the answer or its error, and the judge's answer (None
    when there is no judge, nothing to judge, or the judge failed)."""

    answer: str | None = None
    error: LLMError | None = None
    judged: str | None = None


class _Asker:
    """Asks and scores: one row per question and context. The requests are sent concurrently
    (up to the answering client's ``concurrency``; the same request twice, one after the
    other) and the rows are made in order, so they are the same whatever it is."""

    def __init__(self, llm: Any, judge: Any, options: AnswerOptions, run: FinishedRun) -> None:
        self.llm = llm
        self.judge = judge
        self.options = options
        self.run = run
        self.counts = _Counters()

    def baseline_jobs(
        self, dataset: Dataset, questions: Sequence[Question], labels: Sequence[str]
    ) -> list[_Job]:
        from chunkmark.llm.estimate import framed_tokens

        docs = dataset.by_id
        jobs = []
        for q in questions:
            text = docs[q.doc_id].text
            request = self._request(q, [text], labels)
            _, (prompt_tokens,) = framed_tokens(request.system, [request.user])
            fits = prompt_tokens + request.max_tokens <= self.options.context_window
            base = {
                "dataset": dataset.name,
                "chunker": "",
                "embedder": "",
                "retrieval": BASELINE,
                "context": BASELINE,
                "question_id": q.id,
                "doc_id": q.doc_id,
                "chunks": 1,
                "context_tokens": prompt_tokens,
                "fits": fits,
                **dict.fromkeys(SPAN_METRICS, math.nan),
            }
            jobs.append(_Job(base, q, (text,), tuple(labels), request if fits else None))
        if jobs:
            said = f"answers  {dataset.name}: whole document, {len(questions)} questions"
            jobs[0] = replace(jobs[0], progress=said)
        return jobs

    def cell_jobs(
        self,
        dataset: Dataset,
        view: _CellView,
        questions: Sequence[Question],
        labels: Sequence[str],
        setting: str,
    ) -> list[_Job]:
        from chunkmark.chunkers import CHUNKERS

        facts = view.facts
        jobs = []
        for q in questions:
            k_used, tokens, spans = view.used.get(q.id, (0, 0, {}))
            passages = retrieved_passages(dataset, view, q.id, k_used, tokens)
            base = {
                "dataset": dataset.name,
                "chunker": facts["chunker"],
                "embedder": facts["embedder"],
                "retrieval": setting,
                "context": RETRIEVED,
                "question_id": q.id,
                "doc_id": q.doc_id,
                "chunks": len(passages),
                "context_tokens": tokens,
                "fits": True,
                **{m: spans.get(m, math.nan) for m in SPAN_METRICS},
            }
            request = self._request(q, passages, labels)
            jobs.append(_Job(base, q, tuple(passages), tuple(labels), request))
        if jobs:
            said = (
                f"answers  {dataset.name}: {CHUNKERS.short(facts['chunker'])}, "
                f"{len(questions)} questions"
            )
            jobs[0] = replace(jobs[0], progress=said)
        return jobs

    def rows(self, jobs: Sequence[_Job]) -> list[dict[str, Any]]:
        """The rows of ``jobs``, in order; raises when the answering LLM keeps failing (see
        :data:`FAILURES_BEFORE_STOP`), as a sequential run would at the same row."""
        from chunkmark.llm.pool import ordered, workers_for

        def key(job: _Job) -> Any:
            r = job.request
            return ("job", id(job)) if r is None else (r.system, r.user, r.max_tokens)

        rows: list[dict[str, Any]] = []
        fetched = ordered(self._fetch, jobs, workers=workers_for(self.llm), key=key)
        with closing(fetched):
            for job, found in zip(jobs, fetched, strict=True):
                if job.progress is not None:
                    self.run.progress(job.progress)
                if job.request is None:
                    self.counts.not_fitting += 1
                    rows.append({**job.base, **_unscored(job.question, "")})
                else:
                    rows.append({**job.base, **self._scored(job, found)})
        return rows

    def _request(self, q: Question, passages: Sequence[str], labels: Sequence[str]) -> Request:
        allowed = allowed_labels(q.metadata, labels) if label_of(q.metadata) else ()
        return answer_request(q.text, passages, allowed, self.options.max_tokens)

    def _fetch(self, job: _Job) -> _Fetched:
        """Ask for one job's answer, and the judge's verdict on it (in any thread; nothing is
        counted here)."""
        if job.request is None:
            return _Fetched()
        r = job.request
        try:
            text = self.llm.complete(r.system, r.user, max_tokens=r.max_tokens)
        except LLMError as exc:
            return _Fetched(error=exc)
        if self.judge is None:
            return _Fetched(text)
        q = job.question
        label = label_of(q.metadata)
        references = references_of(q.metadata) or ((label,) if label else ())
        judging = judge_request(q.text, references, job.passages, text)
        try:
            judged = self.judge.complete(
                judging.system,
                judging.user,
                max_tokens=judging.max_tokens,
                json_schema=judging.json_schema,
            )
        except LLMError:
            return _Fetched(text)
        return _Fetched(text, judged=judged)

    def _scored(self, job: _Job, found: _Fetched) -> dict[str, Any]:
        """One answered row's scores, counted (in order)."""
        q = job.question
        self.counts.asked += 1
        if found.error is not None:
            self._failed(found.error)
            return _unscored(q, _one_line(found.error))
        assert found.answer is not None
        self.counts.succeeded += 1
        self.counts.failed_in_a_row = 0
        out = score_answer(q, found.answer, job.labels)
        if out["label"] and not out["predicted_label"]:
            self.counts.unparsed_labels += 1
        if self.judge is not None:
            out.update(self._judged(found))
        return out

    def _failed(self, exc: LLMError) -> None:
        self.counts.errors += 1
        self.counts.failed_in_a_row += 1
        self.counts.last_error = _one_line(exc)
        if not self.counts.succeeded and self.counts.failed_in_a_row >= FAILURES_BEFORE_STOP:
            raise LLMError(
                f"The answering LLM failed {self.counts.failed_in_a_row} requests in a row and "
                f"answered none: {self.counts.last_error}",
                "Check answers.llm (endpoint, model, key) and rerun with the same --out: the "
                "cells are kept, and answers already given come from the cache.",
            ) from exc

    def _judged(self, found: _Fetched) -> dict[str, Any]:
        if found.judged is None:
            self.counts.judge_errors += 1
            return {}
        correct, faithful = parse_judgement(found.judged)
        if correct is None or faithful is None:
            self.counts.judge_unparsed += 1
        return {
            "judge_correct": math.nan if correct is None else float(correct),
            "judge_faithful": math.nan if faithful is None else float(faithful),
        }


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _unscored(q: Question, error: str) -> dict[str, Any]:
    return {
        "answer": "",
        "f1": math.nan,
        "exact_match": math.nan,
        "label": label_of(q.metadata) or "",
        "predicted_label": "",
        "label_correct": math.nan,
        "score": math.nan,
        "judge_correct": math.nan,
        "judge_faithful": math.nan,
        "error": error,
    }


def score_answer(q: Question, text: str, labels: Sequence[str]) -> dict[str, Any]:
    """An answer's scores against the question's references and label. ``score`` (what cells
    are ranked by) is the token F1 where the question has reference answers, else the label's
    correctness."""
    references = references_of(q.metadata)
    label = label_of(q.metadata)
    predicted = None
    label_correct = math.nan
    if label is not None:
        predicted = parse_label(text, allowed_labels(q.metadata, labels))
        label_correct = float(predicted == label)
    f1 = best_f1(text, references)
    return {
        "answer": text.strip(),
        "f1": f1,
        "exact_match": best_exact_match(text, references),
        "label": label or "",
        "predicted_label": predicted or "",
        "label_correct": label_correct,
        "score": f1 if references else label_correct,
        "judge_correct": math.nan,
        "judge_faithful": math.nan,
        "error": "",
    }


def retrieved_passages(
    dataset: Dataset, view: _CellView, qid: str, k_used: int, tokens: int
) -> list[str]:
    """The texts a question's retrieval counted, in rank order: the first ``k_used`` chunks of
    the ranking, each its document span; the last cut to the tokens the setting kept of it
    (``tokens`` retrieved in all, as a token budget counts a cut chunk)."""
    from chunkmark.retrieval.settings import kept_characters

    chosen = view.ranking.get(qid, [])[:k_used]
    docs = dataset.by_id
    texts = [docs[view.doc_ids[i]].text[int(view.start[i]) : int(view.end[i])] for i in chosen]
    if chosen:
        before = int(view.tokens[chosen[:-1]].sum())
        keep = tokens - before
        if 0 < keep < int(view.tokens[chosen[-1]]):
            texts[-1] = texts[-1][: kept_characters(texts[-1], keep, "cl100k_base")]
    return texts


def _ordered(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row.get(name, "") for name in ROW_COLUMNS}


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


# --- summaries --------------------------------------------------------------------------------


GroupKey = tuple[str, str, str, str, str]


def _group_key(row: dict[str, Any]) -> GroupKey:
    return (row["dataset"], row["chunker"], row["embedder"], row["retrieval"], row["context"])


def summarise(
    rows: Sequence[dict[str, Any]], seed: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per dataset x cell (or baseline): counts, means with 95% bootstrap intervals, and the
    paired comparison of its answer score with the best cell's; and, per dataset, the judge's
    agreement and the rank agreement between span and answer metrics."""
    from chunkmark.metrics import bootstrap_ci

    groups: dict[GroupKey, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_group_key(row), []).append(row)
    summary: list[dict[str, Any]] = []
    for key, members in groups.items():
        out: dict[str, Any] = dict(
            zip(("dataset", "chunker", "embedder", "retrieval", "context"), key, strict=True)
        )
        answered = [r for r in members if r["fits"] and not r["error"]]
        out["n_questions"] = len(members)
        out["n_answered"] = len(answered)
        out["n_errors"] = sum(bool(r["error"]) for r in members)
        out["n_not_fitting"] = sum(not r["fits"] for r in members)
        tokens = [float(r["context_tokens"]) for r in members if r["fits"]]
        out["mean_context_tokens"] = float(np.mean(tokens)) if tokens else math.nan
        values = {m: _known([r[m] for r in answered]) for m in SUMMARISED}
        for m in SUMMARISED:  # each over its own questions (a label, a judgement may be missing)
            v = values[m]
            out[f"{m}_n"] = len(v)
            out[f"{m}_mean"] = float(v.mean()) if len(v) else math.nan
            out[f"{m}_ci_low"], out[f"{m}_ci_high"] = bootstrap_ci({m: v}, seed=seed)[m]
        out.update(dict.fromkeys(TIE_COLUMNS, ""))
        summary.append(out)
    extra = {
        "ties": _ties(groups, summary, seed),
        "span_vs_answer": _span_vs_answer(groups, seed),
        "judge_agreement": _judge_agreement(rows),
    }
    return summary, extra


def _known(values: Sequence[Any]) -> np.ndarray:
    arr = np.asarray([float(v) for v in values], dtype=np.float64)
    return arr[~np.isnan(arr)]


def _paired_scores(
    groups: dict[GroupKey, list[dict[str, Any]]], dataset: str, column: str
) -> tuple[list[GroupKey], list[str], np.ndarray]:
    """The retrieved-context groups of ``dataset`` and a ``(groups, questions)`` array of
    ``column`` over the questions every group has."""
    keys = [k for k in groups if k[0] == dataset and k[4] == RETRIEVED]
    if not keys:
        return [], [], np.zeros((0, 0))
    by_key = {k: {r["question_id"]: r for r in groups[k]} for k in keys}
    qids = [q for q in by_key[keys[0]] if all(q in by_key[k] for k in keys)]
    values = np.asarray(
        [[float(by_key[k][q][column]) for q in qids] for k in keys], dtype=np.float64
    ).reshape(len(keys), len(qids))
    return keys, qids, values


def _ties(
    groups: dict[GroupKey, list[dict[str, Any]]], summary: list[dict[str, Any]], seed: int
) -> list[dict[str, Any]]:
    """Per dataset, each cell's answer score against the best cell's on the questions every
    cell answered (paired; Holm-adjusted permutation p-values): the cells no test tells from
    the best. The summary rows get ``tied_with_best``, ``difference_vs_best`` with its interval
    and ``p_vs_best``."""
    from chunkmark.metrics.paired import tied_with_best

    out: list[dict[str, Any]] = []
    index = {_group_key(s): s for s in summary}
    for dataset in dict.fromkeys(k[0] for k in groups):
        keys, _, values = _paired_scores(groups, dataset, "score")
        if len(keys) < 2:
            continue
        keep = ~np.isnan(values).any(axis=0)
        if not keep.any():
            continue
        names = {str(i): k for i, k in enumerate(keys)}
        found = tied_with_best(
            {str(i): values[i, keep] for i in range(len(keys))},
            permutations=TIE_RESAMPLES,
            bootstrap=TIE_RESAMPLES,
            seed=seed,
        )
        for tie in found:
            key = names[tie.cell]
            row = index[key]
            c = tie.comparison
            row["tied_with_best"] = tie.tied
            row["difference_vs_best"] = 0.0 if c is None else -c.difference
            row["difference_ci_low"] = 0.0 if c is None else -c.ci_high
            row["difference_ci_high"] = 0.0 if c is None else -c.ci_low
            row["p_vs_best"] = math.nan if c is None else tie.p_adjusted
        best = names[found[0].cell]
        out.append(
            {
                "dataset": dataset,
                "questions": int(keep.sum()),
                "best": {"chunker": best[1], "embedder": best[2]},
                "tied": [
                    {"chunker": names[t.cell][1], "embedder": names[t.cell][2]}
                    for t in found
                    if t.tied
                ],
            }
        )
    return out


def _span_vs_answer(
    groups: dict[GroupKey, list[dict[str, Any]]], seed: int
) -> list[dict[str, Any]]:
    """Per dataset: Kendall's tau between the cells' ranking by recall (and IoU) and their
    ranking by answer score, with a bootstrap interval over questions."""
    out = []
    for dataset in dict.fromkeys(k[0] for k in groups):
        keys, _, score = _paired_scores(groups, dataset, "score")
        if len(keys) < 2:
            continue
        entry: dict[str, Any] = {"dataset": dataset, "cells": len(keys)}
        for metric in ("recall", "iou"):
            _, _, span = _paired_scores(groups, dataset, metric)
            entry[metric] = _clean(rank_agreement(span, score, seed=seed).to_dict())
        out.append(entry)
    return out


def _judge_agreement(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    judged = [r for r in rows if not r["error"] and r["fits"]]
    if not any(not math.isnan(float(r["judge_correct"])) for r in judged):
        return None
    found = judge_agreement([r["judge_correct"] for r in judged], [r["score"] for r in judged])
    cleaned: dict[str, Any] = _clean(found.to_dict())
    return cleaned
