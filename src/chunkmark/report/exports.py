"""The leaderboard as a table for elsewhere: markdown (a README), LaTeX (a paper), CSV; and a
run logged to MLflow.

Every table has one row per cell, retrieval setting and scoring: the setting (its short form;
CSV keeps the canonical spec, its k and the scoring options), the catalog's on-screen and
interval metrics as ``mean [low, high]`` in percent (CSV keeps fractions and separate interval
columns), tokens retrieved per question, chunks, mean chunk tokens, tokens embedded and the
estimated cost. Markdown and LaTeX name the scoring in a column only when the runs hold more
than one.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from chunkmark.metrics import METRICS, Metric
from chunkmark.optional import import_optional
from chunkmark.report.data import CellInfo, LeaderRow, ReportData
from chunkmark.report.settings import DEFAULT_SCORING, Scoring, name_of

Format = Literal["markdown", "latex", "csv"]
FORMATS: tuple[Format, ...] = ("markdown", "latex", "csv")


def table_metrics() -> list[Metric]:
    """The metrics the tables show: on screen or with an interval, in catalog order."""
    return [m for m in METRICS if m.on_screen or m.interval]


def export_table(data: ReportData, fmt: Format, retrieval: str | None = None) -> str:
    """The leaderboard (every retrieval setting, or only ``retrieval``, a setting of the runs)
    in ``fmt``, best first within each setting and scoring."""
    rows = _ordered_rows(data, retrieval)
    if fmt == "csv":
        return _csv(data, rows)
    header, body = _cells(data, rows)
    if fmt == "markdown":
        return _markdown(header, body)
    return _latex(header, body)


def export_runs(
    runs: Sequence[Path], fmt: str, retrieval: str | None, k: str | None, prices: Path | None
) -> tuple[ReportData, str]:
    """The runs' data and their leaderboard in ``fmt`` (only the setting ``retrieval`` or
    ``k`` picks, when either is given), prices from ``prices`` when given. An unknown ``fmt``
    is a ConfigError naming the formats."""
    from chunkmark.errors import ConfigError
    from chunkmark.report.data import load_prices, load_runs
    from chunkmark.report.settings import choose_retrieval

    chosen = next((name for name in FORMATS if name == fmt), None)
    if chosen is None:
        raise ConfigError(
            f"Unknown --format {fmt!r}.", f"Use html or one of: {', '.join(FORMATS)}."
        )
    data = load_runs(runs, load_prices(prices) if prices is not None else None)
    setting = None
    if retrieval is not None or k is not None:
        setting = choose_retrieval(data.retrievals, retrieval, k, ConfigError)
    return data, export_table(data, chosen, setting)


def _ordered_rows(data: ReportData, retrieval: str | None) -> list[LeaderRow]:
    settings = [retrieval] if retrieval is not None else data.retrievals
    first = table_metrics()[0].name if table_metrics() else None
    out: list[LeaderRow] = []
    for value in settings:
        for scoring in data.scorings:
            rows = [r for r in data.rows if (r.retrieval, r.scoring) == (value, scoring.key)]
            if first is not None:
                rows.sort(key=lambda r: -_finite(r.mean.get(first, math.nan)))
            out.extend(rows)
    return out


def _finite(x: float) -> float:
    return x if math.isfinite(x) else -math.inf


def _cells(data: ReportData, rows: Sequence[LeaderRow]) -> tuple[list[str], list[list[str]]]:
    metrics = table_metrics()
    short = data.short_retrievals()
    scored = len(data.scorings) > 1
    header = ["dataset", "chunker", "embedder", "retrieval", *(["scoring"] if scored else [])]
    header += [m.label for m in metrics]
    header += ["tok retrieved/q", "chunks", "tok/chunk", "tokens embedded", "cost ($)"]
    body = []
    for row in rows:
        cell = data.cells[row.cell]
        values = [_pct(row, m) for m in metrics]
        body.append(
            [
                cell.dataset,
                cell.chunker_short,
                cell.embedder_short,
                short[row.retrieval],
                *([row.scoring] if scored else []),
                *values,
                f"{row.retrieved_tokens:.0f}",
                str(cell.n_chunks),
                f"{cell.mean_chunk_tokens:.0f}",
                str(cell.tokens_embedded),
                _cost(cell),
            ]
        )
    return header, body


def _pct(row: LeaderRow, metric: Metric) -> str:
    mean = row.mean.get(metric.name, math.nan)
    text = f"{100 * mean:.{metric.digits}f}"
    if metric.name in row.ci:
        low, high = row.ci[metric.name]
        text += f" [{100 * low:.{metric.digits}f}, {100 * high:.{metric.digits}f}]"
    return text


def _cost(cell: CellInfo) -> str:
    return "" if cell.cost is None else f"{cell.cost:.4f}"


def _markdown(header: list[str], body: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    text = 5 if "scoring" in header else 4  # the left-aligned columns
    align = ["---" if i < text else "---:" for i in range(len(header))]
    return "\n".join([line(header), "|" + "|".join(align) + "|", *map(line, body)]) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (Ω becomes ``$\\Omega$``)."""
    out = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)
    return out.replace("Ω", r"$\Omega$").replace("×", r"$\times$")


def _latex(header: list[str], body: list[list[str]]) -> str:
    text = 5 if "scoring" in header else 4
    spec = "l" * text + "r" * (len(header) - text)
    lines = [
        r"\begin{tabular}{" + spec + "}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in header) + r" \\",
        r"\midrule",
        *(" & ".join(latex_escape(c) for c in row) + r" \\" for row in body),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    return "\n".join(lines) + "\n"


def _csv(data: ReportData, rows: Sequence[LeaderRow]) -> str:
    metrics = table_metrics()
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    header = ["dataset", "chunker", "embedder", "retrieval", "k", "excerpts", "unit"]
    header += ["denominator", "n_questions"]
    for m in metrics:
        header += [f"{m.name}_mean", f"{m.name}_ci_low", f"{m.name}_ci_high"]
    header += ["mean_k_used", "mean_retrieved_tokens"]
    header += ["n_chunks", "mean_chunk_tokens", "tokens_embedded", "cost_usd"]
    writer.writerow(header)
    for row in rows:
        cell = data.cells[row.cell]
        scoring = Scoring.from_key(row.scoring)
        values: list[Any] = [cell.dataset, cell.chunker, cell.embedder, row.retrieval, row.k]
        values += [scoring.excerpts, scoring.unit, scoring.denominator, row.n_questions]
        for m in metrics:
            low, high = row.ci.get(m.name, (math.nan, math.nan))
            values += [row.mean.get(m.name, math.nan), low, high]
        values += [row.k_used, row.retrieved_tokens]
        values += [cell.n_chunks, cell.mean_chunk_tokens, cell.tokens_embedded, cell.cost]
        writer.writerow(["" if v is None else v for v in values])
    return buf.getvalue()


def log_to_mlflow(
    data: ReportData, report: Path | None, tracking_uri: str, experiment: str = "chunkmark"
) -> list[str]:
    """Log one MLflow run per cell: its specs as params, every metric at every retrieval setting
    and scoring (see :func:`mlflow_metric_name`), its costs; the report and the leaderboard CSV
    as artifacts of each. Returns the MLflow run ids."""
    mlflow = import_optional("mlflow", "mlflow", "mlflow", "Logging to MLflow")
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment)
    leaderboard = export_table(data, "csv")
    ids = []
    for cell in data.cells:
        with mlflow.start_run(run_name=cell.label) as run:
            mlflow.log_params(
                {"dataset": cell.dataset, "chunker": cell.chunker, "embedder": cell.embedder}
            )
            metrics: dict[str, float] = {
                "n_chunks": float(cell.n_chunks),
                "mean_chunk_tokens": cell.mean_chunk_tokens,
                "tokens_embedded": float(cell.tokens_embedded),
                "index_seconds": cell.index_seconds,
            }
            if cell.cost is not None:
                metrics["cost_usd"] = cell.cost
            for row in data.rows:
                if row.cell != cell.index:
                    continue
                for name, value in row.mean.items():
                    if math.isfinite(value):
                        metrics[mlflow_metric_name(name, row)] = value
            mlflow.log_metrics(metrics)
            mlflow.log_text(leaderboard, "leaderboard.csv")
            if report is not None and report.is_file():
                mlflow.log_artifact(str(report))
            ids.append(run.info.run_id)
    return ids


def mlflow_metric_name(metric: str, row: LeaderRow) -> str:
    """``<metric>_at_<k>`` for top_k at the default scoring (the names of runs before retrieval
    settings), else ``<metric>_at_<setting>`` with the scoring appended when it is not the
    default, every run of characters MLflow does not take written as ``_``."""
    if name_of(row.retrieval) == "top_k" and row.k and row.scoring == DEFAULT_SCORING.key:
        return f"{metric}_at_{row.k}"
    name = f"{metric}_at_{row.retrieval}"
    if row.scoring != DEFAULT_SCORING.key:
        name += f"_{row.scoring}"
    return re.sub(r"[^A-Za-z0-9.-]+", "_", name).strip("_")
