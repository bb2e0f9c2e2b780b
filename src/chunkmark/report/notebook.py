"""A run's results at home in a notebook: :class:`Results` is what :func:`chunkmark.evaluate`
returns and :func:`open_results` reads back from a results folder. Beside the summary rows and
the files it adds

- ``to_pandas()``: one row per question, cell, retrieval setting and scoring (``results.parquet``),
- ``summary_frame()``: the summary rows (``summary.csv``) as a DataFrame,
- ``recommendation()``: the report's recommendation as a typed record
  (:class:`~chunkmark.report.recommendation.RunRecommendation`, the fields ``chunkmark run``
  prints),
- ``figures()``: the report's plots as plotly Figures (:mod:`chunkmark.report.figures`),
- ``_repr_html_()``: the recommendation and the best rows, shown when the object is the value
  of a cell.

pandas is optional (``pip install 'chunkmark[notebook]'``): without it the DataFrame methods
raise a MissingDependencyError naming the extra, and the rest works.
"""

from __future__ import annotations

import csv
import html
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from chunkmark.errors import ChunkmarkError
from chunkmark.experiments import runner
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.files import read_parquet
from chunkmark.metrics import METRICS
from chunkmark.optional import import_optional
from chunkmark.report.data import short_name
from chunkmark.report.errors import ReportError
from chunkmark.report.recommendation import RunRecommendation, recommendations, summary_lines

TOP_ROWS = 10  # rows of the summary shown by _repr_html_


def pandas() -> Any:
    """The ``pandas`` module (a MissingDependencyError naming the extra without it)."""
    return import_optional("pandas", "pandas", "notebook", "A DataFrame of the results")


@dataclass
class Results(runner.Results):
    """What a run produced (:class:`chunkmark.experiments.runner.Results`), with DataFrames,
    the recommendation and the report's figures for a notebook."""

    @classmethod
    def of(cls, results: runner.Results) -> Results:
        """``results`` as this class (the same fields)."""
        if isinstance(results, cls):
            return results
        return cls(**{f.name: getattr(results, f.name) for f in fields(runner.Results)})

    def to_pandas(self) -> Any:
        """The per-question rows of ``results.parquet`` as a pandas DataFrame: one row per
        dataset, chunker, embedder, retrieval setting, scoring and question, with every metric
        (fractions; NaN where a metric does not apply)."""
        pd = pandas()
        table = read_parquet(self.out / "results.parquet")
        frame: Any = table.to_pandas()
        assert isinstance(frame, pd.DataFrame)
        return frame

    def summary_frame(self) -> Any:
        """The summary rows (``summary.csv``: means, standard deviations and 95% intervals per
        cell, retrieval setting, scoring and scope) as a pandas DataFrame."""
        return pandas().DataFrame(self.summary)

    def recommendations(
        self,
        *,
        metric: str | None = None,
        retrieval: str | None = None,
        min_p_best: float | None = None,
    ) -> list[RunRecommendation]:
        """The report's recommendation for every dataset of the run (as ``chunkmark run``
        prints it), at the report's defaults or the ``metric``, ``retrieval`` setting and
        ``min_p_best`` given."""
        return recommendations(self.out, metric=metric, retrieval=retrieval, min_p_best=min_p_best)

    def recommendation(
        self,
        dataset: str | None = None,
        *,
        metric: str | None = None,
        retrieval: str | None = None,
        min_p_best: float | None = None,
    ) -> RunRecommendation:
        """The report's recommendation for ``dataset`` (needed only when the run has several),
        as ``chunkmark run`` prints it (see :meth:`recommendations`)."""
        found = self.recommendations(metric=metric, retrieval=retrieval, min_p_best=min_p_best)
        names = [r.dataset for r in found]
        if dataset is None and len(found) == 1:
            return found[0]
        for r in found:
            if r.dataset == dataset:
                return r
        raise ReportError(
            f"The run has {len(found)} datasets ({', '.join(names)}) and "
            + ("none was named." if dataset is None else f"none is {dataset!r}."),
            "Name one: results.recommendation('<dataset>').",
        )

    def figures(
        self,
        *,
        dataset: str | None = None,
        metric: str = "iou",
        retrieval: str | None = None,
        cost: str = "tokens",
    ) -> dict[str, Any]:
        """The report's plots as plotly Figures by name (``size: <family>``,
        ``recall_precision``, ``cost``); see :func:`chunkmark.report.figures.run_figures`."""
        from chunkmark.report.figures import run_figures

        return run_figures(self.out, dataset=dataset, metric=metric, retrieval=retrieval, cost=cost)

    def _repr_html_(self) -> str:
        """The recommendation and the best summary rows at its retrieval setting, as HTML."""
        cells = {(r["dataset"], r["chunker"], r["embedder"]) for r in self.summary}
        parts = [
            f"<p><b>chunkmark results</b> in <code>{html.escape(str(self.out))}</code>: "
            f"{len(cells)} cells scored, {len(self.failures)} failed.</p>"
        ]
        try:
            found = self.recommendations()
        except ChunkmarkError as exc:
            parts.append(f"<p>No recommendation: {html.escape(str(exc))}</p>")
            found = []
        if found:
            items = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(found))
            parts.append(f"<p>Recommended:</p><ul>{items}</ul>")
            parts.append(_top_rows(self.summary, found[0]))
        return "\n".join(parts)


def _top_rows(summary: list[dict[str, Any]], rec: RunRecommendation) -> str:
    """The best summary rows (scope ``all``) at the recommendation's retrieval setting and
    scoring, by its metric, as an HTML table."""
    metric = METRICS[rec.metric]
    excerpts, unit, denominator = rec.scoring.split("/")
    rows = [
        r
        for r in summary
        if r.get("scope") == "all"
        and r.get("retrieval") == rec.retrieval
        and (r.get("excerpts"), r.get("unit"), r.get("denominator"))
        == (excerpts, unit, denominator)
    ]
    key = f"{metric.name}_mean"
    sign = -1.0 if metric.direction == "higher" else 1.0
    rows.sort(key=lambda r: sign * float(r.get(key, float("nan"))))
    cis = [f"{metric.name}_ci_low", f"{metric.name}_ci_high"]
    head = ["dataset", "chunker", "embedder", f"{metric.label} (%)", "95% interval"]
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(v)}</td>"
            for v in (
                str(r["dataset"]),
                short_name("chunker", str(r["chunker"])),
                short_name("embedder", str(r["embedder"])),
                _pct(r.get(key)),
                f"[{_pct(r.get(cis[0]))}, {_pct(r.get(cis[1]))}]" if cis[0] in r else "",
            )
        )
        + "</tr>"
        for r in rows[:TOP_ROWS]
    )
    return (
        f"<p>Top {min(TOP_ROWS, len(rows))} of {len(rows)} rows with "
        f"{html.escape(rec.retrieval_short)} by {html.escape(metric.label)}:</p>"
        f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"
    )


def _pct(value: Any) -> str:
    if not isinstance(value, (int, float)) or value != value:
        return "–"
    return f"{100 * value:.2f}"


def open_results(out: str | Path) -> Results:
    """The results of the finished run in ``out`` (its ``manifest.json`` and ``summary.csv``),
    as :func:`chunkmark.evaluate` returned them; a ReportError names a folder that is not one."""
    folder = Path(out)
    manifest_path = folder / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        recorded = dict(manifest["config"])
        if recorded.get("retrieval") is not None:  # the depths were put in the settings
            recorded.pop("k", None)
        config = ExperimentConfig.model_validate(recorded)
        summary = read_summary(folder / "summary.csv")
    except (OSError, ValueError, KeyError) as exc:
        raise ReportError(
            f"{folder} is not a finished results folder ({type(exc).__name__}: {exc}).",
            "Pass the --out folder of a finished `chunkmark run` (it holds manifest.json, "
            "summary.csv and results.parquet).",
        ) from None
    files = {
        name: folder / file
        for name, file in (
            ("results", "results.parquet"),
            ("summary", "summary.csv"),
            ("manifest", "manifest.json"),
            ("report", "report.html"),
        )
        if (folder / file).is_file()
    }
    return Results(
        config=config,
        out=folder,
        summary=summary,
        manifest=manifest,
        files=files,
        failures=list(manifest.get("failures", [])),
        report_error=manifest.get("report_error"),
    )


def read_summary(path: Path) -> list[dict[str, Any]]:
    """``summary.csv`` as rows with the run's types: the columns naming a row's group as
    written, counts as ints, the others as floats (an empty field as None)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    text = {*runner.GROUP_COLUMNS, "scope"}
    return [{k: v if k in text else _number(v) for k, v in row.items()} for row in rows]


def _number(text: str) -> int | float | None:
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)
