"""The leaderboard's pictures, as plotly.js figures (``data`` and ``layout``, plain JSON) that the
page draws with the plotly.js it carries (:func:`chunkmark.report.html.plotly_js`):

- **recall against token budget, per set** (:func:`budget_figures`): for each of the board's
  top cells, its metric at every budget its ranker is read at on that set (a chunker x embedder
  x ranker: ``dense @512``, ``dense @1024`` and ``dense @2048`` are one line), with the
  bootstrap interval as error bars; a setting read at one budget only is one point, drawn
  beside its chunker and embedder under the ranker read at the most budgets (dotted);
- **ranks, cells x sets** (:func:`rank_heatmap`): every ranked cell's rank within each set at
  the board's budget (1 is best; ties share their mean rank), the cells in the board's order.

What they show is computed in :mod:`chunkmark.suite.analysis` (:func:`budget_curve`,
:func:`widest_curve`, :func:`ranks_per_set`); here it is only laid out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chunkmark.suite.analysis import Leaderboard, budget_curve, ranks_per_set, widest_curve
from chunkmark.suite.estimates import CellKey
from chunkmark.suite.folder import SetCell, short

# one colour per top cell, the same in every set's figure (plotly's default sequence)
COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692")
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12}


@dataclass(frozen=True)
class Figure:
    """One plotly.js figure of the page: the id of its element, a title for the reader, and the
    ``data`` and ``layout`` handed to ``Plotly.newPlot``."""

    id: str
    title: str
    data: list[dict[str, Any]]
    layout: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "data": self.data, "layout": self.layout}


def cell_name(key: CellKey) -> str:
    """A cell by the short names of its chunker and embedder, and its setting's label."""
    return f"{short('chunker', key[0])} x {short('embedder', key[1])} x {key[2]}"


def setting_family(label: str) -> str:
    """A setting's label without its budget (``dense @1024`` -> ``dense``)."""
    return label.rsplit(" @", 1)[0] if " @" in label else label


def budget_figures(board: Leaderboard, label: str) -> list[Figure]:
    """Per set: the top cells' ``label`` (the ranked metric) against the token budget, each
    cell's own ranker solid and, where that ranker is read at one budget only, its chunker and
    embedder under the ranker read at the most budgets dashed (:func:`widest_curve`)."""
    figures = []
    for index, set_board in enumerate(board.sets):
        traces = []
        for i, row in enumerate(board.top):
            colour = COLOURS[i % len(COLOURS)]
            own = budget_curve(set_board, row.key)
            wide = widest_curve(set_board, row.key)
            name = f"{i + 1}. {cell_name(row.key)}"
            traces.append(_curve_trace(own, board.metric, label, name, colour, "solid"))
            if wide:
                family = setting_family(wide[0].setting)
                traces.append(
                    _curve_trace(wide, board.metric, label, f"{name}, {family}", colour, "dot")
                )
        figures.append(
            Figure(
                id=f"figure-budget-{index}",
                title=f"{set_board.name}: {label} against token budget",
                data=traces,
                layout=_budget_layout(set_board.name, board.suite.budgets, label),
            )
        )
    return figures


def _curve_trace(
    cells: Sequence[SetCell], metric: str, label: str, name: str, colour: str, dash: str
) -> dict[str, Any]:
    estimates = [c.metrics[metric] for c in cells]
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": [c.tokens for c in cells],
        "y": [e.value for e in estimates],
        "error_y": {
            "type": "data",
            "symmetric": False,
            "array": [e.high - e.value for e in estimates],
            "arrayminus": [e.value - e.low for e in estimates],
            "thickness": 1,
            "width": 3,
        },
        "line": {"color": colour, "dash": dash, "width": 2 if dash == "solid" else 1.5},
        "marker": {"color": colour, "size": 8 if dash == "solid" else 5},
        "hovertemplate": f"{name}<br>%{{x}} tokens: {label} %{{y:.3f}}<extra></extra>",
    }


def _budget_layout(title: str, budgets: Sequence[int], label: str) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}},
        "font": FONT,
        "height": 300,
        "margin": {"l": 55, "r": 15, "t": 40, "b": 45},
        "xaxis": {
            "title": {"text": "token budget"},
            "type": "log",
            "tickvals": list(budgets),
            "ticktext": [f"{b:,}" for b in budgets],
        },
        "yaxis": {"title": {"text": label}},
        "showlegend": False,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#f6f8fa",
    }


def budget_legend(board: Leaderboard) -> list[tuple[str, str]]:
    """The top cells' names and colours, as the budget figures draw them (the page shows one
    legend for all of them)."""
    return [
        (f"{i + 1}. {cell_name(row.key)}", COLOURS[i % len(COLOURS)])
        for i, row in enumerate(board.top)
    ]


def rank_heatmap(board: Leaderboard, label: str) -> Figure:
    """Every ranked cell (rows, in the board's order) by its rank within each set (columns)."""
    names = [b.name for b in board.sets]
    per_set = ranks_per_set(board)
    rows = [f"{i + 1}. {cell_name(r.key)}" for i, r in enumerate(board.ranking)]
    z = [[per_set[r.key][s] for s in names] for r in board.ranking]
    means = [[r.means[s] for s in names] for r in board.ranking]
    return Figure(
        id="figure-ranks",
        title=f"Rank of every cell within each set at {board.budget:,} tokens",
        data=[
            {
                "type": "heatmap",
                "x": names,
                "y": rows,
                "z": z,
                "customdata": means,
                "zmin": 1,
                "zmax": max(len(board.ranking), 2),
                "colorscale": "Viridis",
                "reversescale": True,
                "colorbar": {"title": {"text": "rank"}},
                "texttemplate": "%{z:.0f}",
                "hovertemplate": (
                    f"%{{y}}<br>%{{x}}: rank %{{z:.1f}} of {len(board.ranking)}, "
                    f"{label} %{{customdata:.3f}}<extra></extra>"
                ),
            }
        ],
        layout={
            "font": FONT,
            "height": 140 + 20 * len(rows),
            "margin": {"l": 10, "r": 10, "t": 30, "b": 80},
            "xaxis": {"side": "top", "automargin": True},
            "yaxis": {"autorange": "reversed", "automargin": True},
            "paper_bgcolor": "#ffffff",
        },
    )
