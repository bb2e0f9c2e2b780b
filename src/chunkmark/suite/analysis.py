"""The leaderboard's statistics over the sets read from a suite folder
(:mod:`chunkmark.suite.folder`):

- **across sets**, at one budget (default 1,024 tokens), for the cells every set has: the mean
  rank over the sets with a bootstrap interval (:func:`mean_ranks`: questions resampled within
  each set, every cell's mean recomputed and re-ranked), and in how many sets the cell is tied
  with the best (:func:`chunkmark.metrics.paired.tied_with_best`: Holm-adjusted paired
  permutation tests against the set's best cell);
- **Kendall's tau** between every pair of sets on their cells' means at that budget
  (:func:`kendall_matrix`): does a set's order of cells transfer to another set?
- **the variance split** (:func:`variance_split`): the share of the total sum of squares of the
  cell means that the set, the embedder, the chunker and the retrieval setting each explain as
  a main effect; what is left is interactions;
- **the diagnostics' rho** (:func:`diagnostic_rho`): Spearman's rho of each chunk diagnostic
  (:func:`chunkmark.chunkers.diagnostics.diagnose`, recorded per cell in the manifest; boundary
  scores where a set's dataset records its topic boundaries) against recall and IoU at that
  budget, over every cell of every set, and the means of the rhos within each set and within
  each set and retrieval setting;
- **embedders per set** (:class:`EmbedderRow`): each embedder at the budget's dense setting, its
  metric averaged over its chunkers (with a bootstrap interval) and its best chunker, beside the
  tokens embedded and index seconds summed over its chunkers: the recall a faster embedder costs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.metrics import bootstrap_ci
from chunkmark.metrics.agreement import KendallTau, kendall_tau
from chunkmark.metrics.paired import tied_with_best
from chunkmark.suite.estimates import CellKey, Estimate, ranks
from chunkmark.suite.folder import (
    DEFAULT_RESAMPLES,
    SetBoard,
    SetCell,
    Suite,
    ranker_name,
    ranker_spec,
    read_manifest,
)
from chunkmark.suite.holdout import HoldOut

RANK_METRICS = ("recall", "iou", "containment_recall")
RHO_METRICS = ("recall", "iou")
FACTORS = ("set", "embedder", "chunker", "setting")
DEFAULT_BUDGET = 1024
DEFAULT_METRIC = "recall"
TOP = 5


@dataclass(frozen=True)
class RankRow:
    """A cell across sets at the budget: mean rank with its interval, the sets where it is tied
    with the best, and its mean metric per set."""

    key: CellKey
    mean_rank: Estimate
    tied_sets: int
    sets: int
    means: dict[str, float]

    @property
    def chunker(self) -> str:
        return self.key[0]

    @property
    def embedder(self) -> str:
        return self.key[1]

    @property
    def setting(self) -> str:
        return self.key[2]


@dataclass(frozen=True)
class VarianceSplit:
    """Main-effect sums of squares of ``n`` values as shares of their total; ``rest`` is what no
    main effect explains (interactions). Exact as a decomposition when ``balanced``."""

    metric: str
    n: int
    total: float
    shares: dict[str, float]
    rest: float
    balanced: bool


@dataclass(frozen=True)
class Rho:
    """Spearman's rho of a diagnostic against a metric over ``n`` cells of every set, its
    p-value, the mean of the rhos computed within each set (``within_sets`` of them), and the
    mean of the rhos computed within each set and retrieval setting (``within_settings`` groups
    of one set's cells at one setting: free of both the sets' and the settings' differences)."""

    diagnostic: str
    metric: str
    rho: float
    p: float
    n: int
    within: float
    within_sets: int
    within_setting: float = math.nan
    within_settings: int = 0


@dataclass(frozen=True)
class EmbedderRow:
    """One embedder on one set at the dense setting of the board's budget: its recall (or the
    ranked metric) averaged over the chunkers, per question, and its best chunker, with what
    embedding every chunking cost."""

    set: str
    embedder: str
    setting: str
    chunkers: int
    mean: Estimate
    best: Estimate
    best_chunker: str
    tokens_embedded: int
    index_seconds: float


@dataclass(frozen=True)
class Provenance:
    """An embedder whose cells were merged in from another suite folder (``--add``): the model as
    its runs recorded it (``identity``: name, host, dimensions...), when and with which versions
    they ran, the sets and chunkers, and what embedding every chunking cost (tokens embedded x
    the price table's price; None when no price is known)."""

    folder: str
    embedder: str
    identity: dict[str, Any]
    versions: dict[str, str]
    created: str
    sets: tuple[str, ...]
    chunkers: int
    tokens_embedded: int
    price_per_million: float | None
    cost: float | None


@dataclass
class Leaderboard:
    """Everything the page and the table show."""

    suite: Suite
    budget: int
    metric: str
    level: float
    resamples: int
    permutations: int
    seed: int
    sets: list[SetBoard]
    ranking: list[RankRow]
    tau: dict[tuple[str, str], KendallTau]
    variance: list[VarianceSplit]
    rho: list[Rho]
    embedders: list[EmbedderRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    holdout: HoldOut | None = None  # each set left out in turn (chunkmark.suite.holdout)
    added: list[Provenance] = field(default_factory=list)  # cells merged in with --add

    @property
    def top(self) -> list[RankRow]:
        return self.ranking[:TOP]

    @property
    def command(self) -> str:
        adds = "".join(f" --add {p}" for p in dict.fromkeys(a.folder for a in self.added))
        return (
            f"chunkmark suite leaderboard {self.suite.path}{adds} --budget {self.budget} "
            f"--metric {self.metric} --seed {self.seed}"
        )


# --- statistics --------------------------------------------------------------------------------


def mean_ranks(
    values: Sequence[npt.ArrayLike],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> list[Estimate]:
    """Each cell's mean rank over sets, with a percentile bootstrap interval.

    ``values[s]`` is set ``s``'s matrix of per-question values, one row per cell (the same cells
    in the same order in every set). The mean rank is the mean over sets of the cell's rank by
    mean value within the set. Each resample draws every set's questions with replacement (the
    same draw for all cells of the set: the comparison stays paired), recomputes every cell's
    mean, re-ranks within each set and averages the ranks over sets.
    """
    matrices = [np.asarray(v, dtype=np.float64) for v in values]
    if not matrices:
        return []
    cells = matrices[0].shape[0]
    if any(m.ndim != 2 or m.shape[0] != cells or m.shape[1] == 0 for m in matrices):
        raise ValueError("every set needs a (cells x questions) matrix with the same cells")
    rng = np.random.default_rng(seed)
    observed = np.zeros(cells)
    resampled = np.zeros((cells, resamples))
    for m in matrices:
        n = m.shape[1]
        observed += ranks(m.mean(axis=1))
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)  # resamples x n
        resampled += ranks(m @ counts.T.astype(np.float64) / n)
    observed /= len(matrices)
    resampled /= len(matrices)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(resampled, [alpha, 1.0 - alpha], axis=1)
    return [
        Estimate(float(o), float(lo), float(hi))
        for o, lo, hi in zip(observed, low, high, strict=True)
    ]


def kendall_matrix(
    means: Mapping[str, Mapping[Any, float]],
) -> dict[tuple[str, str], KendallTau]:
    """Kendall's tau-b (:func:`chunkmark.metrics.agreement.kendall_tau`) between every ordered
    pair of sets (the diagonal included) on the means of the cells both have; NaN with fewer
    than two such cells or a constant side."""
    out: dict[tuple[str, str], KendallTau] = {}
    for a, b in ((a, b) for a in means for b in means):
        keys = sorted(
            k
            for k in set(means[a]) & set(means[b])
            if math.isfinite(means[a][k]) and math.isfinite(means[b][k])
        )
        out[(a, b)] = kendall_tau([means[a][k] for k in keys], [means[b][k] for k in keys])
    return out


def variance_split(
    factors: Mapping[str, Sequence[str]], values: npt.ArrayLike, metric: str = ""
) -> VarianceSplit:
    """How much of the variation of ``values`` each factor explains as a main effect.

    ``factors[name][i]`` is value ``i``'s level of factor ``name``. A factor's sum of squares is
    ``sum over its levels of n_level * (mean_level - grand mean)^2``; its share is that over the
    total sum of squares ``sum (y - grand mean)^2``. In a balanced design (every combination of
    levels present equally often) the main effects are orthogonal and ``rest`` (one minus their
    shares) is the interactions' share; unbalanced, the shares overlap and ``balanced`` says so.
    """
    y = np.asarray(values, dtype=np.float64)
    if any(len(levels) != len(y) for levels in factors.values()):
        raise ValueError("every factor needs one level per value")
    n = len(y)
    if n == 0:
        return VarianceSplit(metric, 0, 0.0, dict.fromkeys(factors, math.nan), math.nan, False)
    grand = float(y.mean())
    total = float(((y - grand) ** 2).sum())
    shares: dict[str, float] = {}
    for name, levels in factors.items():
        labels = np.asarray(levels, dtype=object)
        ss = 0.0
        for level in dict.fromkeys(levels):
            part = y[labels == level]
            ss += len(part) * (float(part.mean()) - grand) ** 2
        shares[name] = ss / total if total > 0 else math.nan
    combos: dict[tuple[str, ...], int] = {}
    for combo in zip(*factors.values(), strict=True):
        combos[combo] = combos.get(combo, 0) + 1
    size = math.prod(len(set(levels)) for levels in factors.values())
    balanced = len(combos) == size and len(set(combos.values())) == 1
    rest = 1.0 - sum(shares.values()) if total > 0 else math.nan
    return VarianceSplit(metric, n, total, shares, rest, balanced)


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[float, float, int]:
    """Spearman's rho (scipy), its p-value and the pairs used (both values finite); NaN when
    fewer than three pairs or either side is constant."""
    from scipy.stats import spearmanr

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    n = int(keep.sum())
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan, n
    result = spearmanr(a, b)
    return float(result.statistic), float(result.pvalue), n


def diagnostic_rho(cells: Sequence[SetCell], metrics: Sequence[str] = RHO_METRICS) -> list[Rho]:
    """Spearman's rho of every diagnostic the cells carry against each metric, over all of them
    (every set pooled), within each set (their mean) and within each set and retrieval setting
    (their mean)."""
    names = list(dict.fromkeys(d for c in cells for d in c.diagnostics))
    sets = list(dict.fromkeys(c.set for c in cells))
    groups = list(dict.fromkeys((c.set, c.setting) for c in cells))
    out: list[Rho] = []
    for name in names:
        for metric in metrics:

            def pairs(group: Sequence[SetCell], name: str = name, metric: str = metric) -> Any:
                x = [c.diagnostics.get(name, math.nan) for c in group]
                y = [c.metrics[metric].value for c in group]
                return spearman(x, y)

            rho, p, n = pairs(cells)
            within = [pairs([c for c in cells if c.set == s])[0] for s in sets]
            finite = [r for r in within if math.isfinite(r)]
            by_setting = [pairs([c for c in cells if (c.set, c.setting) == g])[0] for g in groups]
            settings = [r for r in by_setting if math.isfinite(r)]
            out.append(
                Rho(
                    name,
                    metric,
                    rho,
                    p,
                    n,
                    float(np.mean(finite)) if finite else math.nan,
                    len(finite),
                    float(np.mean(settings)) if settings else math.nan,
                    len(settings),
                )
            )
    return out


def embedder_rows(
    boards: Sequence[SetBoard],
    labels: Sequence[str],
    metric: str,
    level: float,
    resamples: int,
    seed: int,
) -> list[EmbedderRow]:
    """Per set and embedder, at the budget's dense setting (the exact ranker, no keywords):
    the metric averaged over the embedder's chunkers question by question, with a bootstrap
    interval over the questions, its best chunker, and the tokens embedded and index seconds
    summed over its chunkers (a measured time: what embedding every chunking cost)."""
    rows: list[EmbedderRow] = []
    for board in boards:
        dense = [
            c for c in board.cells if c.setting in labels and ranker_name(c.retrieval) == "exact"
        ]
        for embedder in dict.fromkeys(c.embedder for c in dense):
            cells = [c for c in dense if c.embedder == embedder]
            setting = cells[0].setting
            per_question = np.mean([board.values[c.key][metric] for c in cells], axis=0)
            low, high = bootstrap_ci(
                {metric: per_question}, n_resamples=resamples, level=level, seed=seed
            )[metric]
            best = max(cells, key=lambda c: c.metrics[metric].value)
            rows.append(
                EmbedderRow(
                    set=board.name,
                    embedder=embedder,
                    setting=setting,
                    chunkers=len(cells),
                    mean=Estimate(float(np.mean(per_question)), low, high),
                    best=best.metrics[metric],
                    best_chunker=best.chunker,
                    tokens_embedded=sum(c.tokens_embedded for c in cells),
                    index_seconds=sum(c.index_seconds for c in cells),
                )
            )
    return rows


def rank_cells(
    boards: list[SetBoard],
    common: list[CellKey],
    metric: str,
    level: float,
    resamples: int,
    permutations: int,
    alpha: float,
    seed: int,
) -> list[RankRow]:
    if not common:
        return []
    matrices = [np.stack([b.values[k][metric] for k in common]) for b in boards]
    estimates = mean_ranks(matrices, resamples=resamples, level=level, seed=seed)
    names = {str(i): k for i, k in enumerate(common)}
    for board, matrix in zip(boards, matrices, strict=True):
        if len(common) == 1:
            board.tied = {common[0]}
            continue
        ties = tied_with_best(
            {str(i): row for i, row in enumerate(matrix)},
            alpha=alpha,
            permutations=permutations,
            bootstrap=resamples,
            seed=seed,
        )
        board.tied = {names[t.cell] for t in ties if t.tied}
    rows = [
        RankRow(
            key=key,
            mean_rank=estimate,
            tied_sets=sum(key in b.tied for b in boards),
            sets=len(boards),
            means={b.name: float(np.mean(b.values[key][metric])) for b in boards},
        )
        for key, estimate in zip(common, estimates, strict=True)
    ]
    return sorted(rows, key=lambda r: (r.mean_rank.value, -r.tied_sets, r.key))


def variance_of(cells: Sequence[SetCell], metric: str) -> VarianceSplit:
    kept = [c for c in cells if math.isfinite(c.metrics[metric].value)]
    factors = {
        "set": [c.set for c in kept],
        "embedder": [c.embedder for c in kept],
        "chunker": [c.chunker for c in kept],
        "setting": [c.setting for c in kept],
    }
    return variance_split(factors, [c.metrics[metric].value for c in kept], metric)


# --- what the pictures and the winners table show ----------------------------------------------


@dataclass(frozen=True)
class Winner:
    """One set's best ranked cell at the budget (ties: the one first in the board's order), its
    metric, how many of the ``cells`` ranked cells are tied with it, and the board's pick (its
    first cell by mean rank) on that set: its rank among them and its metric."""

    set: str
    best: CellKey
    value: Estimate
    tied: int
    cells: int
    pick: CellKey
    pick_rank: float
    pick_value: Estimate


def ranks_per_set(board: Leaderboard) -> dict[CellKey, dict[str, float]]:
    """Every ranked cell's rank within each set by its mean metric at the board's budget (1 is
    best; ties share their mean rank): the ranks the board's mean rank averages."""
    if not board.ranking:
        return {}
    names = [b.name for b in board.sets]
    table = ranks([[r.means[s] for s in names] for r in board.ranking])
    return {
        r.key: {s: float(table[i, j]) for j, s in enumerate(names)}
        for i, r in enumerate(board.ranking)
    }


def winners(board: Leaderboard) -> list[Winner]:
    """Per set: its best ranked cell and where the board's pick stands there."""
    if not board.ranking:
        return []
    per_set = ranks_per_set(board)
    pick = board.ranking[0].key
    out = []
    for set_board in board.sets:
        best = min(board.ranking, key=lambda r: per_set[r.key][set_board.name]).key
        out.append(
            Winner(
                set=set_board.name,
                best=best,
                value=_metric(set_board, best, board.metric),
                tied=len(set_board.tied),
                cells=len(board.ranking),
                pick=pick,
                pick_rank=per_set[pick][set_board.name],
                pick_value=_metric(set_board, pick, board.metric),
            )
        )
    return out


def budget_curve(set_board: SetBoard, key: CellKey) -> list[SetCell]:
    """The cell ``key`` on one set at every budget its ranker is read at: the cells of its
    chunker and embedder whose setting has a budget and the same ranker, by budget."""
    cell = set_board.cell(key)
    if cell is None or cell.tokens is None:
        return []
    return _curve(set_board, cell, ranker_spec(cell.retrieval))


def widest_curve(set_board: SetBoard, key: CellKey) -> list[SetCell]:
    """For a cell whose ranker is read at fewer budgets than another ranker of its chunker and
    embedder (hybrid at one budget, dense at three, say): that other ranker's cells, by budget
    (the one read at the most budgets, the first found on a tie); else empty."""
    cell = set_board.cell(key)
    if cell is None or cell.tokens is None:
        return []
    own = len(_curve(set_board, cell, ranker_spec(cell.retrieval)))
    rankers = dict.fromkeys(
        ranker_spec(c.retrieval)
        for c in set_board.cells
        if (c.chunker, c.embedder) == (cell.chunker, cell.embedder) and c.tokens is not None
    )
    curves = [_curve(set_board, cell, r) for r in rankers]
    widest = max(curves, key=len, default=[])
    return widest if len(widest) > max(own, 1) else []


def _curve(set_board: SetBoard, cell: SetCell, ranker: str) -> list[SetCell]:
    points = [
        c
        for c in set_board.cells
        if (c.chunker, c.embedder) == (cell.chunker, cell.embedder)
        and c.tokens is not None
        and ranker_spec(c.retrieval) == ranker
    ]
    return sorted(points, key=lambda c: c.tokens or 0)


def _metric(set_board: SetBoard, key: CellKey, metric: str) -> Estimate:
    cell = set_board.cell(key)
    return cell.metrics[metric] if cell is not None else Estimate(math.nan, math.nan, math.nan)


def provenance(boards: Sequence[SetBoard], added: Sequence[Suite]) -> list[Provenance]:
    """Per added suite folder and embedder: where its cells came from and what they cost."""
    out = []
    for other in added:
        runs = {s.name: read_manifest(other.path / s.folder) for s in other.sets}
        for embedder in dict.fromkeys(e for m in runs.values() for e in m.get("embedders") or []):
            cells = {
                (c.set, c.chunker): c
                for b in boards
                for c in b.cells
                if c.source == str(other.path) and c.embedder == embedder
            }
            if not cells:
                continue
            sets = tuple(dict.fromkeys(s for s, _ in cells))
            first = runs[sets[0]]
            recorded = (first.get("embedding") or {}).get(embedder) or {}
            costs = [c.cost for c in cells.values()]
            out.append(
                Provenance(
                    folder=str(other.path),
                    embedder=embedder,
                    identity=dict(recorded.get("identity") or {}),
                    versions={str(k): str(v) for k, v in (first.get("versions") or {}).items()},
                    created=str(first.get("created") or ""),
                    sets=sets,
                    chunkers=len({chunker for _, chunker in cells}),
                    tokens_embedded=sum(c.tokens_embedded for c in cells.values()),
                    price_per_million=next(iter(cells.values())).price_per_million,
                    cost=None if None in costs else sum(c for c in costs if c is not None),
                )
            )
    return out
