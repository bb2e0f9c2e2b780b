"""What the MCP tools read, as small JSON-able dicts from the library's own functions (no
printing): a chunking of one file, the report's recommendation with its intervals and cost, and
where a run's report and files are (a paired comparison of two cells is
:func:`chunkmark.report.compare.compare_cells`, as ``chunkmark compare`` reads it)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from chunkmark.service.replies import Payload, cut

if TYPE_CHECKING:
    from chunkmark.report.comparisons import Pick
    from chunkmark.report.data import ReportData


def preview(
    file: str,
    chunker: str,
    embedder: str = "sentence_transformers",
    show: int = 3,
    chars: int = 160,
    cache_dir: Path | None = None,
) -> Payload:
    """``chunker`` on one UTF-8 file: how many chunks, their spans' coverage and overlap, their
    token counts (cl100k_base), and the first ``show`` chunks (text cut to ``chars``)."""
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.service.chunking import chunk_file
    from chunkmark.spans import as_array, total_length, union
    from chunkmark.tokenizers import count_tokens

    path = Path(file).expanduser()
    text, spec, chunks = chunk_file(path, chunker, embedder, cache_dir)
    texts = [c.text(text) for c in chunks]
    tokens = count_tokens(texts, "cl100k_base") if texts else []
    pairs = as_array([(c.start, c.end) for c in chunks])
    covered, spanned = total_length(union(pairs)), total_length(pairs)
    found: Payload = {
        "file": str(path.resolve()),
        "chunker": str(spec),
        "short": CHUNKERS.short(spec),
        "characters": len(text),
        "chunks": len(chunks),
        "coverage": covered / len(text) if text else 0.0,
        "overlap_characters": spanned - covered,
        "tokens": _token_stats(tokens),
        "first": [
            {
                "i": i,
                "start": c.start,
                "end": c.end,
                "tokens": tokens[i],
                "text": cut(texts[i], chars),
            }
            for i, c in enumerate(chunks[: max(0, show)])
        ],
    }
    return found


def _token_stats(tokens: Sequence[int]) -> Payload:
    if not tokens:
        return {"encoding": "cl100k_base", "total": 0}
    return {
        "encoding": "cl100k_base",
        "total": sum(tokens),
        "min": min(tokens),
        "median": statistics.median(tokens),
        "mean": sum(tokens) / len(tokens),
        "max": max(tokens),
    }


def recommendation(
    out: Path,
    metric: str | None = None,
    retrieval: str | None = None,
    k: str | None = None,
    max_context_tokens: float = 1000.0,
) -> Payload:
    """The report's recommendation for each dataset of the run in ``out``: the best cell with
    its 95% interval and indexing cost, the test that separates it from the runner-up or the
    cells tied with it, the cheapest tied cell, and the cell with the best recall among those
    retrieving at most ``max_context_tokens`` tokens per question (as the report's budget pick)."""
    from chunkmark.metrics import METRICS
    from chunkmark.report import ReportOptions
    from chunkmark.report.recommendation import recommend
    from chunkmark.report.settings import Scoring

    options = ReportOptions(
        metric=metric, retrieval=retrieval, k=k, max_context_tokens=max_context_tokens
    )
    data, found = recommend(out, options.stats())
    first = found[0] if found else None
    # Left out, the metric is the one the report reads (recall at a token budget, else IoU).
    metric = first.metric if first else (metric or "iou")
    report = out / "report.html"
    payload: Payload = {
        "run": str(out),
        "metric": metric,
        "metric_label": METRICS[metric].label,
        "better": METRICS[metric].direction,
        "retrieval": first.retrieval if first else None,
        "scoring": Scoring.from_key(first.scoring).label if first else None,
        "test": first.test if first else None,
        "recommendations": [],
        "report": str(report) if report.is_file() else None,
    }
    for r in found:
        entry: Payload = {"dataset": r.dataset, "questions": r.n_questions}
        if r.best is None:
            entry["best"] = None
            payload["recommendations"].append(entry)
            continue
        entry["best"] = _pick(data, r.best)
        if r.best.comparison is not None and r.best.versus is not None and not _tied(r.best):
            c = r.best.comparison
            entry["runner_up"] = {
                "cell": data.cells[r.best.versus[0]].label,
                "difference": c.difference,
                "ci95": [c.ci_low, c.ci_high],
                "p_holm": r.best.p_adjusted,
            }
        tied = [data.cells[o[0]].label for o in r.best.tied if o != r.best.option]
        entry["tied_with_best"] = tied
        entry["verdict"] = r.verdict
        entry["reason"] = r.reason
        if r.cheapest_tied is not None and r.cheapest_tied.cell != r.best.cell:
            entry["cheapest_tied"] = _pick(data, r.cheapest_tied)
        entry["max_context_tokens"] = r.max_context_tokens
        entry["best_within_budget"] = None if r.budget is None else _pick(data, r.budget)
        payload["recommendations"].append(entry)
    return payload


def _tied(pick: Pick) -> bool:
    return any(o != pick.option for o in pick.tied)


def _pick(data: ReportData, pick: Pick) -> Payload:
    cell = data.cells[pick.cell]
    return {
        "cell": cell.label,
        "metric": pick.metric,
        "chunker": cell.chunker_short,  # a spec that resolves to the cell's own
        "embedder": cell.embedder_short,
        "retrieval": pick.retrieval,
        "mean": pick.mean,
        "ci95": [pick.ci_low, pick.ci_high],
        "retrieved_tokens": pick.retrieved_tokens,
        "chunks": cell.n_chunks,
        "tokens_embedded": cell.tokens_embedded,
        "usd_per_million": cell.price_per_million,
        "index_usd": cell.cost,
    }


def report_files(out: Path) -> Payload:
    """Where the run's report and files are; why the report is missing when it is."""
    files = {
        name: str(out / name)
        for name in ("report.html", "summary.csv", "results.parquet", "manifest.json")
        if (out / name).is_file()
    }
    found: Payload = {"run": str(out), "report": files.pop("report.html", None), "files": files}
    if found["report"] is None:
        manifest = out / "manifest.json"
        reason = None
        if manifest.is_file():
            reason = json.loads(manifest.read_text(encoding="utf-8")).get("report_error")
        found["why_no_report"] = reason or (
            f"The run was made without a report; build it with: chunkmark report {out}"
        )
    return found
