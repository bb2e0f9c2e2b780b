"""``chunkmark metrics``: the metric catalog, as the summary and the tables use it."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chunkmark.metrics import METRICS


def register(app: typer.Typer) -> None:
    """Add the ``metrics`` command to the app."""
    app.command("metrics")(list_metrics)


def list_metrics(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the catalog as a JSON list.")
    ] = False,
) -> None:
    """List the metrics every cell is scored with: column, label, direction, interval."""
    if as_json:
        rows = [
            {
                "name": m.name,
                "label": m.label,
                "direction": m.direction,
                "interval": m.interval,
                "on_screen": m.on_screen,
                "description": m.description,
            }
            for m in METRICS
        ]
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table(title="Metrics (per question; summary.csv has <name>_mean and <name>_std)")
    table.add_column("name", style="bold")
    table.add_column("label")
    table.add_column("better")
    table.add_column("95% interval")
    table.add_column("description")
    for m in METRICS:
        table.add_row(
            m.name,
            m.label,
            m.direction,
            "yes" if m.interval else "",
            Text(m.description),
        )
    Console().print(table)
