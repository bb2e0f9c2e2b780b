"""The data the page embeds, as JSON-able dicts: cells, leaderboard rows, plot series, the
recommendation and comparisons. The page computes nothing statistical itself; it shows these.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from chunkmark.errors import ChunkmarkError
from chunkmark.metrics import METRICS
from chunkmark.metrics.paired import PairedComparison
from chunkmark.metrics.selection import Separation
from chunkmark.report.comparisons import Comparisons, Option, Pick, Recommendation, pareto_front
from chunkmark.report.data import (
    CellInfo,
    FailedCell,
    LeaderRow,
    ReportData,
    Scores,
    short_name,
)
from chunkmark.report.settings import Scoring, budget_of, fixed_depth, is_dense, name_of
from chunkmark.specs import parse_spec

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
COSTS = ("tokens", "chunks", "dollars")
MAX_HEATMAP_DOCS = 100  # documents with the most questions, when there are more


def num(value: float | int | None, digits: int = 6) -> float | int | None:
    """A number for JSON: rounded to ``digits`` significant digits; NaN and inf become None."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    x = float(value)
    if math.isnan(x) or math.isinf(x):
        return None
    return float(f"{x:.{digits}g}")


def leaderboard_metrics() -> list[str]:
    """The leaderboard's metric columns: the catalog's on-screen metrics and those with an
    interval, in catalog order."""
    return [m.name for m in METRICS if m.on_screen or m.interval]


def metrics_payload() -> list[dict[str, Any]]:
    return [
        {
            "name": m.name,
            "label": m.label,
            "direction": m.direction,
            "interval": m.interval,
            "onScreen": m.on_screen,
            "digits": m.digits,
            "description": m.description,
        }
        for m in METRICS
    ]


def cell_payload(cell: CellInfo) -> dict[str, Any]:
    return {
        "id": cell.id,
        "dataset": cell.dataset,
        "chunker": cell.chunker,
        "embedder": cell.embedder,
        "chunkerShort": cell.chunker_short,
        "embedderShort": cell.embedder_short,
        "label": cell.label,
        "family": cell.family,
        "variant": chunker_variant(cell),
        "sizeParam": cell.size_param,
        "size": num(cell.size),
        "nChunks": cell.n_chunks,
        "meanTokens": num(cell.mean_chunk_tokens),
        "tokens": cell.tokens_embedded,
        "indexSeconds": num(cell.index_seconds, 4),
        "price": num(cell.price_per_million),
        "cost": num(cell.cost, 4),
    }


def chunker_variant(cell: CellInfo) -> str:
    """The chunker's shown parameters other than its size: what tells apart cells of one family
    and size (``overlap=50``), empty when nothing does."""
    try:
        _, _, kwargs = parse_spec(cell.chunker_short)
    except ChunkmarkError:
        return ""
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k != cell.size_param)


def row_payload(row: LeaderRow) -> dict[str, Any]:
    return {
        "cell": row.cell,
        "retrieval": row.retrieval,
        "scoring": row.scoring,
        "k": row.k,
        "n": row.n_questions,
        "mean": {m: num(v) for m, v in row.mean.items()},
        "std": {m: num(v) for m, v in row.std.items()},
        "ci": {m: [num(lo), num(hi)] for m, (lo, hi) in row.ci.items()},
        "retrievedTokens": num(row.retrieved_tokens, 5),
        "kUsed": num(row.k_used, 4),
    }


def retrievals_payload(data: ReportData) -> list[dict[str, Any]]:
    """The retrieval settings of the runs in display order: the canonical spec, its short
    form, its name, whether it reads the dense ranking, its fixed depth and token budget."""
    short = data.short_retrievals()
    return [
        {
            "spec": spec,
            "short": short[spec],
            "name": name_of(spec),
            "dense": is_dense(spec),
            "depth": fixed_depth(spec),
            "budget": num(budget_of(spec)),
        }
        for spec in data.retrievals
    ]


def scorings_payload(data: ReportData) -> list[dict[str, Any]]:
    return [
        {
            "key": s.key,
            "label": s.label,
            "excerpts": s.excerpts,
            "unit": s.unit,
            "denominator": s.denominator,
            "isDefault": s.is_default,
        }
        for s in data.scorings
    ]


def failure_payload(failure: FailedCell, data: ReportData) -> dict[str, Any]:
    return {
        "run": str(data.runs[failure.run].path) if failure.run < len(data.runs) else "",
        "id": failure.id,
        "dataset": failure.dataset,
        "chunker": failure.chunker,
        "embedder": failure.embedder,
        "chunkerShort": short_name("chunker", failure.chunker),
        "embedderShort": short_name("embedder", failure.embedder),
        "error": failure.error,
    }


def cost_of(cell: CellInfo, measure: str) -> float:
    """A cell's cost on one measure (NaN when unknown)."""
    if measure == "tokens":
        return float(cell.tokens_embedded)
    if measure == "chunks":
        return float(cell.n_chunks)
    return math.nan if cell.cost is None else cell.cost


def fronts(data: ReportData, scoring: str) -> dict[str, dict[str, Any]]:
    """Per dataset and retrieval setting (at ``scoring``): the recall-precision front, and per
    metric and cost measure the quality-cost front, as row indices into ``rows``."""
    out: dict[str, dict[str, Any]] = {}
    for dataset in data.datasets:
        per_k: dict[str, Any] = {}
        for retrieval in data.retrievals:
            rows = [
                i
                for i, r in enumerate(data.rows)
                if (r.retrieval, r.scoring) == (retrieval, scoring)
                and data.cells[r.cell].dataset == dataset.key
            ]
            if not rows:
                continue
            recall = [data.rows[i].mean["recall"] for i in rows]
            precision = [data.rows[i].mean["precision"] for i in rows]
            rp = pareto_front(recall, precision, x="higher", y="higher")
            cost: dict[str, dict[str, list[int]]] = {}
            for metric in METRICS:
                quality = [data.rows[i].mean[metric.name] for i in rows]
                cost[metric.name] = {
                    measure: [
                        rows[j]
                        for j in pareto_front(
                            [cost_of(data.cells[data.rows[i].cell], measure) for i in rows],
                            quality,
                            x="lower",
                            y=metric.direction,
                        )
                    ]
                    for measure in COSTS
                }
            per_k[retrieval] = {"recallPrecision": [rows[j] for j in rp], "cost": cost}
        out[dataset.key] = per_k
    return out


def per_document(data: ReportData, scoring: str) -> dict[str, Any]:
    """Per dataset, its documents (up to MAX_HEATMAP_DOCS, most questions first), and per row
    at ``scoring`` (the plots' scoring) the mean of every metric over each document's questions
    (None: no question)."""
    counts: dict[str, dict[str, int]] = {}
    for (cell, _, _), found in data.scores.items():
        c = counts.setdefault(data.cells[cell].dataset, {})
        if not c:
            for d in found.doc_ids:
                c[d] = c.get(d, 0) + 1
    docs = {
        dataset: sorted(sorted(c, key=lambda d: (-c[d], d))[:MAX_HEATMAP_DOCS])
        for dataset, c in counts.items()
    }
    values: dict[str, dict[str, list[float | int | None]]] = {}
    for i, row in enumerate(data.rows):
        scores = data.scores.get(row.key)
        if scores is not None and row.scoring == scoring:
            values[str(i)] = _document_means(scores, docs[data.cells[row.cell].dataset])
    total = {ds: len(c) for ds, c in counts.items()}
    return {"docs": docs, "documents": total, "values": values}


def _document_means(scores: Scores, docs: list[str]) -> dict[str, list[float | int | None]]:
    doc_ids = np.asarray(scores.doc_ids)
    masks = [doc_ids == d for d in docs]
    return {
        m: [num(float(v[mask].mean()), 4) if mask.any() else None for mask in masks]
        for m, v in scores.values.items()
    }


def similarity(data: ReportData, scoring: str) -> dict[str, Any]:
    """Per cell, the top-1 similarity of every question in the dense ranking; per row at
    ``scoring`` of a setting that reads it (top_k, token_budget, threshold), the share of
    retrieved chunks (the top k_used of every question) whose similarity reaches each
    threshold."""
    top1: dict[str, list[float]] = {}
    share: dict[str, list[float | int | None]] = {}
    for cell in data.cells:
        ranking = data.ranking(cell.index)
        if ranking is None:
            continue
        top1[str(cell.index)] = [round(float(s[0]), 3) for s in ranking.scores if len(s)]
        position = {q: i for i, q in enumerate(ranking.question_ids)}
        for i, row in enumerate(data.rows):
            scores = data.scores.get(row.key)
            if row.cell != cell.index or scores is None or row.scoring != scoring:
                continue
            if not is_dense(row.retrieval):
                continue
            retrieved = [
                s
                for q, depth in zip(scores.question_ids, scores.k_used.tolist(), strict=True)
                if q in position
                for s in ranking.scores[position[q]][:depth]
            ]
            values = np.asarray(retrieved, dtype=np.float64)
            share[str(i)] = [
                num(float((values >= t).mean()) if len(values) else None, 4) for t in THRESHOLDS
            ]
    return {"thresholds": list(THRESHOLDS), "top1": top1, "share": share}


def comparison_payload(c: PairedComparison | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "n": c.n,
        "meanA": num(c.mean_a),
        "meanB": num(c.mean_b),
        "difference": num(c.difference),
        "ciLow": num(c.ci_low),
        "ciHigh": num(c.ci_high),
        "p": num(c.p_permutation, 4),
        "pTtest": num(c.p_ttest, 4),
        "pWilcoxon": num(c.p_wilcoxon, 4),
        "wins": c.wins,
        "ties": c.ties,
        "losses": c.losses,
        "permutations": c.permutations,
        "level": c.level,
    }


def _option(option: Option | None) -> dict[str, Any] | None:
    if option is None:
        return None
    return {"cell": option[0], "retrieval": option[1], "scoring": option[2]}


def pick_payload(pick: Pick | None) -> dict[str, Any] | None:
    if pick is None:
        return None
    return {
        "cell": pick.cell,
        "retrieval": pick.retrieval,
        "scoring": pick.scoring,
        "metric": pick.metric,
        "mean": num(pick.mean),
        "ciLow": num(pick.ci_low),
        "ciHigh": num(pick.ci_high),
        "versus": _option(pick.versus),
        "comparison": comparison_payload(pick.comparison),
        "pAdjusted": num(pick.p_adjusted, 4),
        "tied": [_option(o) for o in pick.tied],
        "retrievedTokens": num(pick.retrieved_tokens, 5),
        "compared": pick.compared,
        "isBest": pick.is_best,
    }


def recommendation_payload(r: Recommendation) -> dict[str, Any]:
    return {
        "dataset": r.dataset,
        "metric": r.metric,
        "retrieval": r.retrieval,
        "scoring": r.scoring,
        "scoringLabel": Scoring.from_key(r.scoring).label,
        "n": r.n_questions,
        "best": pick_payload(r.best),
        "cheapestTied": pick_payload(r.cheapest_tied),
        "budget": pick_payload(r.budget),
        "maxContextTokens": num(r.max_context_tokens),
        "smallest": _option(r.smallest_retrieval),
        "test": r.test,
        "pBest": [{**(_option(o) or {}), "p": num(p, 4)} for o, p in r.p_best],
        "minPBest": r.min_p_best,
        "winner": _option(r.winner),
        "verdict": r.verdict,
        "reason": r.reason,
        "topTwo": separation_payload(r.top_two),
        "cheapestSeparation": separation_payload(r.cheapest),
    }


def separation_payload(s: Separation[Option] | None) -> dict[str, Any] | None:
    """The questions needed to separate two options; ``n`` null: no realistic number."""
    if s is None:
        return None
    q = s.needed
    return {
        "a": _option(s.a),
        "b": _option(s.b),
        "n": q.n,
        "difference": num(q.difference),
        "sd": num(q.sd),
        "power": q.power,
        "alpha": q.alpha,
        "minDifference": q.min_difference,
        "maxQuestions": q.max_questions,
        "reason": q.reason,
        "method": q.method,
    }


def comparisons_payload(c: Comparisons) -> dict[str, Any]:
    return {
        "bestPerEmbedder": {
            ds: [_option(o) for o in options] for ds, options in c.best_per_embedder.items()
        },
        "embedderPairs": {
            ds: [
                {
                    "chunker": p.chunker,
                    "a": p.a,
                    "b": p.b,
                    "comparison": comparison_payload(p.comparison),
                    "pAdjusted": num(p.p_adjusted, 4),
                }
                for p in pairs
            ]
            for ds, pairs in c.embedder_pairs.items()
        },
        "agreements": [
            {
                "a": a.a,
                "b": a.b,
                "n": a.n_cells,
                "tau": num(a.tau, 4),
                "p": num(a.p_value, 4),
            }
            for a in c.agreements
        ],
    }
