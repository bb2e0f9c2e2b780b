"""The leaderboard's content as sections of tables and figures (:func:`sections`), rendered two
ways: markdown (:func:`to_markdown`: the tables, a figure's numbers as its text version) and one
self-contained HTML page (:func:`to_html`: the tables, and the figures drawn by the plotly.js the
page carries, packed as the report packs it), and a small summary for ``--json``
(:func:`summary`)."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkmark.report.html import embed_json, packed_script, plotly_js
from chunkmark.suite.analysis import (
    FACTORS,
    TOP,
    Leaderboard,
    RankRow,
    budget_curve,
    ranks_per_set,
    widest_curve,
    winners,
)
from chunkmark.suite.estimates import CellKey, Estimate, json_float
from chunkmark.suite.figures import (
    Figure,
    budget_figures,
    budget_legend,
    rank_heatmap,
    setting_family,
)
from chunkmark.suite.folder import METRICS_SHOWN, SetBoard, SetCell, short
from chunkmark.suite.holdout import HoldOut

METRIC_LABELS = {"recall": "recall", "iou": "IoU", "containment_recall": "containment recall"}


# --- tables: one content, two renderings --------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A table entry: its text, and for estimates the interval's text (rendered apart)."""

    text: str
    interval: str = ""
    number: float | None = None


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: list[tuple[Value, ...]]
    css: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: tuple[str, ...] = ()
    tables: tuple[tuple[str, Table], ...] = ()  # (caption, table)
    level: int = 2
    figures: tuple[Figure, ...] = ()  # drawn on the page; the tables are their text version
    legend: tuple[tuple[str, str], ...] = ()  # (name, colour) shared by the figures


def _num(value: float, digits: int = 3) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.{digits}f}"


def _estimate(e: Estimate, digits: int = 3) -> Value:
    return Value(_num(e.value, digits), f"[{_num(e.low, digits)}, {_num(e.high, digits)}]", e.value)


def _count(n: float) -> Value:
    return Value(f"{n:,.0f}" if math.isfinite(n) else "n/a", number=float(n))


def _cell_names(key: CellKey) -> tuple[Value, Value, Value]:
    return (Value(short("chunker", key[0])), Value(short("embedder", key[1])), Value(key[2]))


def sections(board: Leaderboard) -> list[Section]:
    """The leaderboard's content, in page order."""
    pct = f"{board.level:.0%}"
    out = [_overview(board, pct)]
    if board.added:
        out.append(_added_section(board))
    out.append(_top_section(board, pct))
    if board.ranking:
        out += [_winners_section(board, pct), _pictures_section(board, pct)]
    if board.holdout is not None:
        out.append(_holdout_section(board, board.holdout, pct))
    out.append(_tau_section(board))
    out += [_variance_section(board), _rho_section(board), _embedder_section(board, pct)]
    out.append(_ranking_section(board, pct))
    out += [_set_section(board, b, pct) for b in board.sets]
    if board.notes:
        out.append(Section("Notes", tuple(board.notes)))
    return out


def _overview(board: Leaderboard, pct: str) -> Section:
    sets = Table(
        ("set", "scope", "documents", "questions", "cells"),
        [
            (
                Value(b.name),
                Value(
                    "within each question's document"
                    if b.suite_set.scope == "document"
                    else "whole corpus"
                ),
                _count(b.suite_set.documents),
                _count(len(b.question_ids)),
                _count(len({(c.chunker, c.embedder) for c in b.cells})),
            )
            for b in board.sets
        ],
    )
    settings = Table(
        ("setting", "budget (tokens)", "corpus spec", "document spec"),
        [
            (
                Value(s.label),
                Value("-" if s.tokens is None else f"{s.tokens:,}"),
                Value(s.corpus or "-"),
                Value(s.document or "-"),
            )
            for s in board.suite.settings
        ],
    )
    return Section(
        "Suite",
        (
            f"Read from {board.suite.path} with `{board.command}`. A cell is a chunker x "
            f"embedder x retrieval setting; every metric is a mean over a set's questions with "
            f"its {pct} percentile bootstrap interval ({board.resamples:,} resamples, seed "
            f"{board.seed}). Sets whose questions name no document are searched within each "
            "question's own document (scope 'document'); the others over the whole corpus.",
        ),
        (("Sets", sets), ("Retrieval settings", settings)),
    )


def _added_section(board: Leaderboard) -> Section:
    """Where the cells merged in with --add came from, and what embedding them cost."""
    rows: list[tuple[Value, ...]] = []
    for a in board.added:
        kind = a.embedder.split("(", 1)[0]
        client = a.versions.get(kind) or a.versions.get(kind.replace("_", "-"))
        cost = "no price known" if a.cost is None else f"{a.cost:.4f}"
        price = "-" if a.price_per_million is None else f"{a.price_per_million:g}"
        rows.append(
            (
                Value(short("embedder", a.embedder)),
                Value(str(a.identity.get("name") or "-")),
                Value(str(a.identity.get("base_url") or "-")),
                Value(a.folder),
                Value(", ".join(a.sets)),
                _count(a.chunkers),
                Value(a.created or "-"),
                Value(
                    f"chunkmark {a.versions.get('chunkmark', '?')}"
                    + (f", {kind} {client}" if client else "")
                ),
                _count(a.tokens_embedded),
                Value(price),
                Value(cost, number=a.cost),
            )
        )
    table = Table(
        (
            "embedder",
            "model",
            "host",
            "results folder",
            "sets",
            "chunkers",
            "run on",
            "versions",
            "tokens embedded",
            "price per 1M tokens (USD)",
            "cost (USD)",
        ),
        rows,
        css="added",
    )
    return Section(
        "Added results",
        (
            "Cells merged in from other suite folders (`chunkmark suite leaderboard --add`), "
            "each run on the board's own samples of its sets (checked by the datasets' "
            "fingerprints): the model as the run recorded it, when and with which versions it "
            "ran, and what embedding every chunking of every set cost (tokens embedded x the "
            "price table's price per million tokens; queries not counted).",
        ),
        (("", table),),
    )


def _rank_table(board: Leaderboard, rows: Sequence[RankRow]) -> Table:
    label = METRIC_LABELS[board.metric]
    return Table(
        (
            "#",
            "chunker",
            "embedder",
            "setting",
            "mean rank",
            "tied with best",
            *(f"{s.name} {label}" for s in board.sets),
        ),
        [
            (
                Value(str(i + 1)),
                *_cell_names(r.key),
                _estimate(r.mean_rank, 2),
                Value(f"{r.tied_sets} of {r.sets}"),
                *(_estimate(_cell_estimate(board, s, r.key, board.metric)) for s in board.sets),
            )
            for i, r in enumerate(rows)
        ],
        css="rank",
    )


def _cell_estimate(board: Leaderboard, set_board: SetBoard, key: CellKey, metric: str) -> Estimate:
    cell = set_board.cell(key)
    return cell.metrics[metric] if cell is not None else Estimate(math.nan, math.nan, math.nan)


def _top_section(board: Leaderboard, pct: str) -> Section:
    return Section(
        f"Top {TOP} at {board.budget:,} tokens",
        (
            f"Cells ranked by {METRIC_LABELS[board.metric]} within each set at a budget of "
            f"{board.budget:,} retrieved tokens, ranks averaged over the {len(board.sets)} sets "
            f"(1 is best). The mean rank's {pct} interval resamples each set's questions and "
            "re-ranks. 'Tied with best' counts the sets where no Holm-adjusted paired "
            f"permutation test ({board.permutations:,} sign flips, alpha 0.05) tells the cell "
            "from the set's best.",
        ),
        (("", _rank_table(board, board.top)),),
    )


def _winners_section(board: Leaderboard, pct: str) -> Section:
    """Per set: its best ranked cell, and where the board's pick stands there."""
    label = METRIC_LABELS[board.metric]
    found = winners(board)
    table = Table(
        (
            "set",
            "best chunker",
            "best embedder",
            "best setting",
            label,
            "cells tied with the best",
            "the pick's rank",
            f"the pick's {label}",
        ),
        [
            (
                Value(w.set),
                *_cell_names(w.best),
                _estimate(w.value),
                Value(f"{w.tied} of {w.cells}"),
                Value(f"{w.pick_rank:g} of {w.cells}"),
                _estimate(w.pick_value),
            )
            for w in found
        ],
        css="winners",
    )
    pick = " x ".join(v.text for v in _cell_names(board.ranking[0].key))
    first = sum(w.best == w.pick for w in found)
    return Section(
        "Per-set winners",
        (
            f"Each set's best cell at {board.budget:,} tokens by {label} (of the "
            f"{len(board.ranking)} cells every set has), with its {pct} interval and how many "
            f"cells no Holm-adjusted paired test tells from it, beside the board's pick ({pick}): "
            f"its rank and {label} on that set. The pick is the best cell on {first} of the "
            f"{len(found)} sets.",
        ),
        (("", table),),
    )


def _pictures_section(board: Leaderboard, pct: str) -> Section:
    """Recall against budget per set for the top cells, and every cell's rank in every set: the
    figures on the page, their numbers as tables."""
    label = METRIC_LABELS[board.metric]
    names = [b.name for b in board.sets]
    per_set = ranks_per_set(board)
    ranks_table = Table(
        ("#", "chunker", "embedder", "setting", *(f"rank in {s}" for s in names)),
        [
            (
                Value(str(i + 1)),
                *_cell_names(r.key),
                *(Value(f"{per_set[r.key][s]:g}") for s in names),
            )
            for i, r in enumerate(board.top)
        ],
    )
    budgets = board.suite.budgets
    curve_rows = []
    for set_board in board.sets:
        for i, r in enumerate(board.top):
            for curve in (budget_curve(set_board, r.key), widest_curve(set_board, r.key)):
                if not curve:
                    continue
                points = {c.tokens: c.metrics[board.metric] for c in curve}
                curve_rows.append(
                    (
                        Value(set_board.name),
                        Value(str(i + 1)),
                        Value(setting_family(curve[0].setting)),
                        *(_estimate(points[b]) if b in points else Value("-") for b in budgets),
                    )
                )
    curves_table = Table(("set", "#", "setting", *(f"{b:,} tokens" for b in budgets)), curve_rows)
    return Section(
        "Recall against budget, and ranks across sets",
        (
            f"Per set, the top {len(board.top)} cells' {label} at every token budget their "
            f"ranker is read at, with {pct} intervals; where a cell's ranker is read at one "
            "budget only, its chunker and embedder under the ranker read at the most budgets "
            "beside it (dotted on the page); then the rank of every one of the "
            f"{len(board.ranking)} cells within each set at {board.budget:,} tokens (1 is best), "
            "in the board's order. The page draws both; the tables below are their numbers for "
            "the top cells.",
        ),
        (
            (f"The top cells' {label} by token budget (# as in the top table)", curves_table),
            (f"Rank of the top cells within each set at {board.budget:,} tokens", ranks_table),
        ),
        figures=(*budget_figures(board, label), rank_heatmap(board, label)),
        legend=tuple(budget_legend(board)),
    )


def _holdout_section(board: Leaderboard, held: HoldOut, pct: str) -> Section:
    """Each set left out in turn: the picks made on the other sets, scored on it."""
    label = METRIC_LABELS[board.metric]
    rules = ("mean rank", "minimax regret")
    rows = []
    for s in held.sets:
        row: list[Value] = [Value(s.set), _count(s.questions), *_cell_names(s.best)]
        for rule in rules:
            chosen = s.pick(rule)
            row += [
                *_cell_names(chosen.cell),
                Value(f"{chosen.rank:g} of {s.cells}"),
                _estimate(chosen.regret),
            ]
        rows.append(tuple(row))
    header: tuple[str, ...] = (
        "held-out set",
        "questions",
        "best chunker",
        "best embedder",
        "best setting",
    )
    for rule in rules:
        header += (
            f"{rule} pick: chunker",
            "embedder",
            "setting",
            "rank",
            f"regret ({label})",
        )
    names = " x ".join(v.text for v in _cell_names(held.full_pick))
    return Section(
        "Does the pick hold on a set it was not fitted on?",
        (
            f"The board recommends {names}: the best mean rank over all "
            f"{len(board.sets)} sets. To test that rule where it was not fitted, each set is "
            "left out in turn: the cells are ranked on the other sets only, the pick is made "
            f"there and scored on the held-out set, by its rank among the {len(held.keys)} "
            f"cells and its regret (the held-out set's best {label} minus the pick's), with a "
            f"{pct} paired bootstrap interval over the held-out questions that chooses the best "
            f"cell again in every resample. Out of sample the mean-rank pick's regret was "
            f"{held.worst('mean rank'):.3f} at worst and {held.mean('mean rank'):.3f} on "
            f"average; the minimax-regret pick (the cell whose worst regret over the other sets "
            f"is smallest) {held.worst('minimax regret'):.3f} and "
            f"{held.mean('minimax regret'):.3f}.",
        ),
        (("", Table(header, rows, css="holdout")),),
    )


def _ranking_section(board: Leaderboard, pct: str) -> Section:
    return Section(
        f"Every cell at {board.budget:,} tokens",
        (f"All {len(board.ranking)} cells every set has at this budget, by mean rank.",),
        (("", _rank_table(board, board.ranking)),),
    )


def _tau_section(board: Leaderboard) -> Section:
    names = [b.name for b in board.sets]
    table = Table(
        ("", *names),
        [
            (
                Value(a),
                *(
                    Value(
                        _num(board.tau[(a, b)].tau, 2),
                        "" if a == b else f"p={_num(board.tau[(a, b)].p, 3)}",
                        board.tau[(a, b)].tau,
                    )
                    for b in names
                ),
            )
            for a in names
        ],
        css="matrix",
    )
    n = max((t.n for t in board.tau.values()), default=0)
    return Section(
        "Does a set's winner transfer? Kendall's tau",
        (
            f"Kendall's tau-b between two sets' orders of the cells at {board.budget:,} tokens "
            f"(by mean {METRIC_LABELS[board.metric]}, over the {n} cells both have), with its "
            "p-value: 1 is the same order, 0 no relation, -1 the reverse.",
        ),
        (("", table),),
    )


def _variance_section(board: Leaderboard) -> Section:
    rows = []
    for split in board.variance:
        rows.append(
            (
                Value(METRIC_LABELS[split.metric]),
                _count(split.n),
                *(Value(_pct(split.shares[f]), number=split.shares[f]) for f in FACTORS),
                Value(_pct(split.rest), number=split.rest),
                Value("yes" if split.balanced else "no"),
            )
        )
    table = Table(("metric", "cells", *FACTORS, "interactions", "balanced"), rows)
    return Section(
        "What explains the variance",
        (
            "The share of the total sum of squares of the cell means (every set, embedder, "
            "chunker and retrieval setting) that each factor explains as a main effect: "
            "sum over its levels of (cells at the level) x (level mean - grand mean)^2, over "
            "sum (cell mean - grand mean)^2. What is left is interactions. The shares add up "
            "exactly only when the grid is balanced (every combination present).",
        ),
        (("", table),),
    )


def _embedder_section(board: Leaderboard, pct: str) -> Section:
    label = METRIC_LABELS[board.metric]
    table = Table(
        (
            "set",
            "embedder",
            "setting",
            "chunkers",
            f"mean {label}",
            f"best {label}",
            "best chunker",
            "tokens embedded",
            "index seconds",
            "tokens per second",
        ),
        [
            (
                Value(r.set),
                Value(short("embedder", r.embedder)),
                Value(r.setting),
                _count(r.chunkers),
                _estimate(r.mean),
                _estimate(r.best),
                Value(short("chunker", r.best_chunker)),
                _count(r.tokens_embedded),
                Value(_num(r.index_seconds, 1), number=r.index_seconds),
                _count(r.tokens_embedded / r.index_seconds if r.index_seconds > 0 else math.nan),
            )
            for r in board.embedders
        ],
    )
    return Section(
        "Embedders per set: recall against cost",
        (
            f"Each embedder at the dense setting of {board.budget:,} tokens (vectors only, no "
            f"keywords): its {label} averaged over its chunkers question by question, with the "
            f"{pct} bootstrap interval over the set's questions, and its best chunker. Tokens "
            "embedded and index seconds (chunking and embedding, as measured in the run that "
            "wrote the results; a warm cache makes them small) are summed over the chunkers: "
            "what trying every chunking with that embedder cost.",
        ),
        (("", table),),
    )


def _pct(share: float) -> str:
    return "n/a" if not math.isfinite(share) else f"{share:.1%}"


def _rho_section(board: Leaderboard) -> Section:
    table = Table(
        (
            "diagnostic",
            "metric",
            "rho",
            "p",
            "cells",
            "mean rho within a set",
            "sets",
            "mean rho within a set and setting",
            "groups",
        ),
        [
            (
                Value(r.diagnostic),
                Value(METRIC_LABELS[r.metric]),
                Value(_num(r.rho, 2), number=r.rho),
                Value(_num(r.p, 3), number=r.p),
                _count(r.n),
                Value(_num(r.within, 2), number=r.within),
                _count(r.within_sets),
                Value(_num(r.within_setting, 2), number=r.within_setting),
                _count(r.within_settings),
            )
            for r in board.rho
        ],
    )
    return Section(
        "Do chunk diagnostics predict retrieval?",
        (
            "Spearman's rho of each diagnostic (measured on the chunks alone, before any "
            f"question is asked) against each metric at {board.budget:,} tokens, over every cell "
            "of every set, the mean of the rhos computed within each set (free of the "
            "differences between sets), and the mean of those computed within each set and "
            "retrieval setting (free of the settings' differences too: BM25 against dense, top-k "
            "against a budget). Excerpts cut: the share of evidence no single chunk "
            "holds whole; fragments: chunks per piece of evidence; length spread: (p95 - p5) / "
            "mean chunk tokens.",
        ),
        (("", table),),
    )


def _set_section(board: Leaderboard, set_board: SetBoard, pct: str) -> Section:
    order = {s.label: i for i, s in enumerate(board.suite.settings)}
    budgets = sorted({c.tokens for c in set_board.cells}, key=lambda t: (t is None, t or 0))
    tables = []
    for tokens in budgets:
        cells = sorted(
            (c for c in set_board.cells if c.tokens == tokens),
            key=lambda c: (-_finite(c.metrics[board.metric].value), order[c.setting], c.key),
        )
        rows = [
            (
                *_cell_names(c.key),
                *(_estimate(c.metrics[m]) for m in METRICS_SHOWN),
                _count(c.retrieved_tokens),
                _count(c.chunks),
                _count(c.tokens_embedded),
                Value(_num(c.index_seconds, 2), number=c.index_seconds),
                Value(_tied_text(board, set_board, c)),
            )
            for c in cells
        ]
        caption = "settings without a budget" if tokens is None else f"{tokens:,} tokens"
        tables.append(
            (
                caption,
                Table(
                    (
                        "chunker",
                        "embedder",
                        "setting",
                        *(METRIC_LABELS[m] for m in METRICS_SHOWN),
                        "tokens retrieved",
                        "chunks",
                        "tokens embedded",
                        "index s",
                        "tied with best",
                    ),
                    rows,
                ),
            )
        )
    scope = (
        "within each question's document"
        if set_board.suite_set.scope == "document"
        else "over the whole corpus"
    )
    return Section(
        f"Set: {set_board.name}",
        (
            f"{len(set_board.question_ids):,} questions, searched {scope}. Metrics with their "
            f"{pct} intervals; chunks, tokens embedded and index seconds are those of the "
            "chunker x embedder (the same at every setting). 'Tied with best' is given at "
            f"{board.budget:,} tokens.",
        ),
        tuple(tables),
        level=3,
    )


def _finite(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def _tied_text(board: Leaderboard, set_board: SetBoard, cell: SetCell) -> str:
    if cell.tokens != board.budget:
        return ""
    return "yes" if cell.key in set_board.tied else "no"


# --- renderings --------------------------------------------------------------------------------


def to_markdown(board: Leaderboard) -> str:
    """The leaderboard as markdown: every section, every table."""
    lines = [f"# chunkmark suite leaderboard: {board.suite.path.name}", ""]
    for section in sections(board):
        lines += ["#" * section.level + " " + section.title, ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        for caption, table in section.tables:
            if caption:
                lines += [f"**{caption}**", ""]
            lines.append("| " + " | ".join(_md(h) for h in table.header) + " |")
            lines.append("|" + "---|" * len(table.header))
            for row in table.rows:
                lines.append("| " + " | ".join(_md(_joined(v)) for v in row) + " |")
            lines.append("")
    return "\n".join(lines)


def _joined(value: Value) -> str:
    return f"{value.text} {value.interval}" if value.interval else value.text


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2330;
  background: #fafbfc; }
main { max-width: 1400px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 0.6rem; border-bottom: 1px solid #d6dae1;
  padding-bottom: 0.3rem; }
h3 { font-size: 1.1rem; margin: 2rem 0 0.5rem; }
p { max-width: 70rem; line-height: 1.45; }
.table-wrap { overflow-x: auto; margin: 0.4rem 0 1.2rem; }
table { border-collapse: collapse; font-size: 0.86rem; background: #fff; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid #dfe3e8; padding: 0.3rem 0.55rem; text-align: left;
  vertical-align: top; }
th { background: #eef1f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.ci { color: #5b6472; font-size: 0.8em; margin-left: 0.25em; }
table.matrix td.num { min-width: 4.5rem; }
code { background: #eef1f5; padding: 0.05rem 0.3rem; border-radius: 3px; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr));
  gap: 0.8rem; margin: 0.6rem 0 1rem; }
.figure { background: #fff; border: 1px solid #dfe3e8; min-height: 300px; }
.figure.wide { grid-column: 1 / -1; }
.legend { display: flex; flex-wrap: wrap; gap: 0.3rem 1.2rem; list-style: none; padding: 0;
  margin: 0.4rem 0; font-size: 0.86rem; }
.legend .swatch { display: inline-block; width: 1.6rem; height: 0.25rem; margin-right: 0.4rem;
  vertical-align: middle; }
#figures-note { color: #a33; }
details { margin: 0.4rem 0 1rem; }
summary { cursor: pointer; color: #3a4a66; }
"""

# plotly.js comes gzip-compressed and base64-encoded in #plotly-js (as the report carries it),
# inflated with the browser's DecompressionStream; then every figure of #figures is drawn and
# the body marked ready.
SCRIPT = """
(async () => {
  const note = document.getElementById("figures-note");
  try {
    const packed = document.getElementById("plotly-js");
    const bytes = Uint8Array.from(atob(packed.textContent.trim()), (c) => c.charCodeAt(0));
    const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const script = document.createElement("script");
    script.textContent = await new Response(inflated).text();
    document.head.append(script);
    const figures = JSON.parse(document.getElementById("figures").textContent);
    for (const f of figures) {
      await Plotly.newPlot(f.id, f.data, f.layout, { displaylogo: false, responsive: true });
    }
  } catch (error) {
    if (note) note.textContent = `The figures could not be drawn: ${error}.`;
    console.error(error);
  }
  document.body.setAttribute("data-ready", "true");
})();
"""


def to_html(board: Leaderboard) -> str:
    """The leaderboard as one self-contained HTML page: inline CSS, the figures' data and
    plotly.js inline (packed), no external resource: it opens from disk with no network."""
    title = f"chunkmark suite leaderboard: {board.suite.path.name}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head>",
        "<body><main>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    figures: list[Figure] = []
    for index, section in enumerate(sections(board)):
        tag = f"h{section.level}"
        parts.append(f'<section id="section-{index}">')
        parts.append(f"<{tag}>{html.escape(section.title)}</{tag}>")
        parts += [f"<p>{_inline_code(p)}</p>" for p in section.paragraphs]
        tables = [_html_table(caption, table) for caption, table in section.tables]
        if section.figures:
            parts.append(_html_figures(section))
            tables = ["<details><summary>The figures' numbers</summary>", *tables, "</details>"]
            figures += section.figures
        parts += tables
        parts.append("</section>")
    parts.append("</main>")
    parts.append(f'<script type="application/json" id="figures">{_figures_json(figures)}</script>')
    parts.append(
        '<script type="application/octet-stream" id="plotly-js" data-encoding="gzip+base64">'
        f"{packed_script(plotly_js())}</script>"
    )
    parts.append(f"<script>{SCRIPT}</script>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _figures_json(figures: Sequence[Figure]) -> str:
    """The figures as JSON safe inside a ``<script>`` element (NaN written as null: a gap)."""
    return embed_json([_no_nan(f.to_dict()) for f in figures])


def _no_nan(value: Any) -> Any:
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


def _html_figures(section: Section) -> str:
    out = ['<p id="figures-note"></p>']
    if section.legend:
        out.append('<ul class="legend">')
        out += [
            f'<li><span class="swatch" style="background:{colour}"></span>{html.escape(name)}</li>'
            for name, colour in section.legend
        ]
        out.append("</ul>")
    out.append('<div class="figures">')
    for figure in section.figures:
        wide = " wide" if figure.data and figure.data[0].get("type") == "heatmap" else ""
        out.append(
            f'<div class="figure{wide}" id="{figure.id}" role="img" '
            f'aria-label="{html.escape(figure.title)}"></div>'
        )
    out.append("</div>")
    return "\n".join(out)


def _inline_code(paragraph: str) -> str:
    pieces = html.escape(paragraph).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))


def _html_table(caption: str, table: Table) -> str:
    css = f' class="{table.css}"' if table.css else ""
    out = ['<div class="table-wrap">', f"<table{css}>"]
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    out.append(
        "<thead><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
        + "</tr></thead>"
    )
    out.append("<tbody>")
    for row in table.rows:
        cells = []
        for value in row:
            if value.number is None and not value.interval:
                cells.append(f"<td>{html.escape(value.text)}</td>")
                continue
            data = (
                ""
                if value.number is None or not math.isfinite(value.number)
                else f' data-value="{value.number!r}"'
            )
            interval = (
                f' <span class="ci">{html.escape(value.interval)}</span>' if value.interval else ""
            )
            cells.append(f'<td class="num"{data}>{html.escape(value.text)}{interval}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def summary(board: Leaderboard, files: Mapping[str, Path] | None = None) -> dict[str, Any]:
    """A small machine-readable summary: the sets, the top cells with their intervals, the
    variance split, the cells added from other folders with their cost, and the files
    written."""
    return {
        "suite": str(board.suite.path),
        "budget": board.budget,
        "metric": board.metric,
        "level": board.level,
        "sets": [
            {
                "name": b.name,
                "scope": b.suite_set.scope,
                "questions": len(b.question_ids),
                "cells": len(b.cells),
                "tied_with_best": len(b.tied),
            }
            for b in board.sets
        ],
        "top": [
            {
                "chunker": r.chunker,
                "embedder": r.embedder,
                "setting": r.setting,
                "mean_rank": r.mean_rank.to_dict(),
                "tied_sets": r.tied_sets,
            }
            for r in board.top
        ],
        "variance": {
            v.metric: {
                **{f: json_float(v.shares[f]) for f in FACTORS},
                "interactions": json_float(v.rest),
            }
            for v in board.variance
        },
        "added": [
            {
                "folder": a.folder,
                "embedder": a.embedder,
                "model": a.identity.get("name"),
                "sets": list(a.sets),
                "tokens_embedded": a.tokens_embedded,
                "price_per_million": a.price_per_million,
                "cost": a.cost,
            }
            for a in board.added
        ],
        "notes": list(board.notes),
        "files": {name: str(path) for name, path in (files or {}).items()},
    }
