"""The leaderboard as a table for elsewhere: markdown (a README), LaTeX (a paper), CSV; and a
run logged to MLflow.

Every table has one row per cell and k, the catalog's on-screen and interval metrics as
``mean [low, high]`` in percent (CSV keeps fractions and separate interval columns), chunks,
mean chunk tokens, tokens embedded and the estimated cost.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from chunkmark.errors import MissingDependencyError
from chunkmark.metrics import METRICS, Metric
from chunkmark.report.data import CellInfo, LeaderRow, ReportData

Format = Literal["markdown", "latex", "csv"]
FORMATS: tuple[Format, ...] = ("markdown", "latex", "csv")


def table_metrics() -> list[Metric]:
    """The metrics the tables show: on screen or with an interval, in catalog order."""
    return [m for m in METRICS if m.on_screen or m.interval]


def export_table(data: ReportData, fmt: Format, k: str | None = None) -> str:
    """The leaderboard (all k, or only ``k``) in ``fmt``, best first within each k."""
    rows = _ordered_rows(data, k)
    if fmt == "csv":
        return _csv(data, rows)
    header, body = _cells(data, rows)
    if fmt == "markdown":
        return _markdown(header, body)
    return _latex(header, body)


def _ordered_rows(data: ReportData, k: str | None) -> list[LeaderRow]:
    ks = [k] if k is not None else data.ks
    first = table_metrics()[0].name if table_metrics() else None
    out: list[LeaderRow] = []
    for value in ks:
        rows = [r for r in data.rows if r.k == value]
        if first is not None:
            rows.sort(key=lambda r: -_finite(r.mean.get(first, math.nan)))
        out.extend(rows)
    return out


def _finite(x: float) -> float:
    return x if math.isfinite(x) else -math.inf


def _cells(data: ReportData, rows: Sequence[LeaderRow]) -> tuple[list[str], list[list[str]]]:
    metrics = table_metrics()
    header = ["dataset", "chunker", "embedder", "k", *(m.label for m in metrics)]
    header += ["chunks", "tok/chunk", "tokens embedded", "cost ($)"]
    body = []
    for row in rows:
        cell = data.cells[row.cell]
        values = [_pct(row, m) for m in metrics]
        body.append(
            [
                cell.dataset,
                cell.chunker_short,
                cell.embedder_short,
                row.k,
                *values,
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

    align = ["---" if i < 3 else "---:" for i in range(len(header))]
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
    spec = "lll" + "r" * (len(header) - 3)
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
    header = ["dataset", "chunker", "embedder", "k", "n_questions"]
    for m in metrics:
        header += [f"{m.name}_mean", f"{m.name}_ci_low", f"{m.name}_ci_high"]
    header += ["n_chunks", "mean_chunk_tokens", "tokens_embedded", "cost_usd"]
    writer.writerow(header)
    for row in rows:
        cell = data.cells[row.cell]
        values: list[Any] = [cell.dataset, cell.chunker, cell.embedder, row.k, row.n_questions]
        for m in metrics:
            low, high = row.ci.get(m.name, (math.nan, math.nan))
            values += [row.mean.get(m.name, math.nan), low, high]
        values += [cell.n_chunks, cell.mean_chunk_tokens, cell.tokens_embedded, cell.cost]
        writer.writerow(["" if v is None else v for v in values])
    return buf.getvalue()


def log_to_mlflow(
    data: ReportData, report: Path | None, tracking_uri: str, experiment: str = "chunkmark"
) -> list[str]:
    """Log one MLflow run per cell: its specs as params, every metric at every k
    (``<metric>_at_<k>``), its costs; the report and the leaderboard CSV as artifacts of each.
    Returns the MLflow run ids."""
    try:
        import mlflow
    except ImportError:
        raise MissingDependencyError("mlflow", "mlflow", "Logging to MLflow") from None
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
                        metrics[f"{name}_at_{row.k}"] = value
            mlflow.log_metrics(metrics)
            mlflow.log_text(leaderboard, "leaderboard.csv")
            if report is not None and report.is_file():
                mlflow.log_artifact(str(report))
            ids.append(run.info.run_id)
    return ids
