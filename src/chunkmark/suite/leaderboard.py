"""The suite's leaderboard: a static HTML page and a markdown table read from one suite folder.

A suite folder (``chunkmark suite run``) holds ``suite.json`` and one results folder of
``chunkmark run`` per set::

    SUITE_DIR/suite.json   {"format": 1,
                            "sets": [{"name", "folder", "scope": "corpus" | "document",
                                      "dataset", "documents", "questions"}, ...],
                            "settings": [{"label", "corpus", "document", "tokens"}, ...],
                            "chunkers": [...], "embedders": [...]}
    SUITE_DIR/<folder>/    results.parquet, summary.csv, manifest.json, cells/

A set's rows carry the concrete retrieval spec of its scope (a setting's ``corpus`` or
``document`` spec); they are mapped back to the setting's label by comparing canonical specs
(``RETRIEVAL.resolve``). A leaderboard *cell* is a chunker x embedder x setting label; only the
default scoring is read. The leaderboard holds:

- **per set**, every cell's recall, IoU and containment recall with their bootstrap intervals
  (:func:`chunkmark.metrics.bootstrap_ci` over the set's questions), grouped by token budget,
  and the chunks, tokens embedded and index seconds of its chunker x embedder (counts and a
  measured time, not estimates: they carry no interval);
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

import dataclasses
import functools
import html
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.errors import ChunkmarkError, MissingDependencyError
from chunkmark.files import write_bytes_atomic
from chunkmark.metrics import bootstrap_ci
from chunkmark.metrics.paired import PERMUTATIONS, tied_with_best
from chunkmark.report.data import ReportData, load_runs, read_chunks, short_name
from chunkmark.report.settings import DEFAULT_SCORING
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS
from chunkmark.suite.estimates import CellKey as CellKey
from chunkmark.suite.estimates import Estimate as Estimate
from chunkmark.suite.estimates import ranks as ranks
from chunkmark.suite.holdout import HoldOut, leave_one_set_out

FloatArray = npt.NDArray[np.float64]
Scope = Literal["corpus", "document"]

SUITE_FILE = "suite.json"
SUITE_FORMAT = 1
MARKDOWN_FILE = "leaderboard.md"
HTML_FILE = "leaderboard.html"
SCOPES: tuple[Scope, ...] = ("corpus", "document")
METRICS_SHOWN = ("recall", "iou", "containment_recall")
METRIC_LABELS = {"recall": "recall", "iou": "IoU", "containment_recall": "containment recall"}
RANK_METRICS = ("recall", "iou", "containment_recall")
RHO_METRICS = ("recall", "iou")
FACTORS = ("set", "embedder", "chunker", "setting")
DEFAULT_BUDGET = 1024
DEFAULT_METRIC = "recall"
DEFAULT_RESAMPLES = 1000
TOP = 5
_SUITE_FIX = "Pass a folder written by `chunkmark suite run` (it holds suite.json)."


class LeaderboardError(ChunkmarkError):
    """A suite folder cannot be read into a leaderboard (missing files, a bad suite.json)."""


# --- the suite folder --------------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteSet:
    """One set of a suite: its results ``folder`` (under the suite folder), the ``scope`` its
    questions are searched in, and the dataset it was run on."""

    name: str
    folder: str
    scope: Scope
    dataset: str
    documents: int
    questions: int


@dataclass(frozen=True)
class SuiteSetting:
    """A retrieval setting of a suite: its ``label`` and its spec for each scope; ``tokens`` is
    its token budget (None for settings without one, such as ``top_k``)."""

    label: str
    corpus: str | None
    document: str | None
    tokens: int | None

    def spec(self, scope: Scope) -> str | None:
        return self.corpus if scope == "corpus" else self.document


@dataclass(frozen=True)
class Suite:
    """A suite folder's ``suite.json``."""

    path: Path
    sets: tuple[SuiteSet, ...]
    settings: tuple[SuiteSetting, ...]
    chunkers: tuple[str, ...]
    embedders: tuple[str, ...]

    @property
    def budgets(self) -> list[int]:
        return sorted({s.tokens for s in self.settings if s.tokens is not None})


def read_suite(suite_dir: str | Path) -> Suite:
    """Read ``SUITE_DIR/suite.json``; a missing file or a bad key is one LeaderboardError line
    naming the file and key."""
    path = Path(suite_dir)
    file = path / SUITE_FILE
    if not file.is_file():
        raise LeaderboardError(f"{path} holds no {SUITE_FILE}.", _SUITE_FIX)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LeaderboardError(
            f"Cannot read {file}: {exc}.", "Rerun `chunkmark suite run`."
        ) from None
    if not isinstance(raw, dict):
        raise LeaderboardError(f"{file} is not a JSON object.", _SUITE_FIX)
    if raw.get("format") != SUITE_FORMAT:
        raise LeaderboardError(
            f"{file}: format {raw.get('format')!r}; this chunkmark reads format {SUITE_FORMAT}.",
            "Rerun `chunkmark suite run` with this chunkmark.",
        )
    sets = tuple(_suite_set(file, i, s) for i, s in enumerate(_list(file, raw, "sets")))
    settings = tuple(_suite_setting(file, i, s) for i, s in enumerate(_list(file, raw, "settings")))
    if not sets or not settings:
        raise LeaderboardError(f"{file} lists no sets or no settings.", _SUITE_FIX)
    for what, names in (("set", [s.name for s in sets]), ("setting", [s.label for s in settings])):
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise LeaderboardError(
                f"{file}: the {what} {doubled[0]!r} is listed twice.", f"Give each {what} once."
            )
    return Suite(
        path=path,
        sets=sets,
        settings=settings,
        chunkers=tuple(str(c) for c in raw.get("chunkers") or ()),
        embedders=tuple(str(e) for e in raw.get("embedders") or ()),
    )


def _list(file: Path, raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = raw.get(key)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise LeaderboardError(f"{file}: {key!r} must be a list of objects.", _SUITE_FIX)
    return value


def _suite_set(file: Path, i: int, raw: dict[str, Any]) -> SuiteSet:
    where = f"{file}: sets[{i}]"
    for key in ("name", "folder", "scope"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise LeaderboardError(f"{where} has no {key!r}.", _SUITE_FIX)
    scope = raw["scope"]
    if scope not in SCOPES:
        raise LeaderboardError(
            f"{where} ({raw['name']}) has scope {scope!r}.", "The scope is 'corpus' or 'document'."
        )
    return SuiteSet(
        name=raw["name"],
        folder=raw["folder"],
        scope=scope,
        dataset=str(raw.get("dataset") or ""),
        documents=int(raw.get("documents") or 0),
        questions=int(raw.get("questions") or 0),
    )


def _suite_setting(file: Path, i: int, raw: dict[str, Any]) -> SuiteSetting:
    where = f"{file}: settings[{i}]"
    label = raw.get("label")
    if not isinstance(label, str) or not label:
        raise LeaderboardError(f"{where} has no 'label'.", _SUITE_FIX)
    specs: dict[str, str | None] = {}
    for scope in SCOPES:
        spec = raw.get(scope)
        if spec is not None and not isinstance(spec, str):
            raise LeaderboardError(
                f"{where} ({label}): {scope!r} must be a spec string.", _SUITE_FIX
            )
        specs[scope] = canonical(spec, f"{where} ({label}) {scope!r}") if spec else None
    tokens = raw.get("tokens")
    if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool)):
        raise LeaderboardError(
            f"{where} ({label}): 'tokens' is {tokens!r}.", "Give the budget in tokens, or null."
        )
    return SuiteSetting(label, specs["corpus"], specs["document"], tokens)


@functools.lru_cache(maxsize=4096)
def canonical(spec: str, where: str = "") -> str:
    """The canonical form of a retrieval setting spec (``RETRIEVAL.resolve``); a spec that does
    not resolve is a LeaderboardError naming ``where`` (a spec read from a results folder that
    does not resolve is kept as written: ``where`` empty)."""
    from chunkmark.retrieval import RETRIEVAL

    try:
        return str(RETRIEVAL.resolve(spec))
    except ChunkmarkError as exc:
        if not where:
            return spec
        raise LeaderboardError(f"{where}: {exc}", "Fix the spec in suite.json.") from None


@functools.lru_cache(maxsize=1024)
def _short(kind: str, spec: str) -> str:
    return short_name(kind, spec)


# --- what is read and computed ---------------------------------------------------------------


@dataclass(frozen=True)
class SetCell:
    """One cell of one set: its metrics with intervals, and what indexing with it took."""

    set: str
    chunker: str
    embedder: str
    setting: str
    tokens: int | None
    retrieval: str
    n_questions: int
    metrics: dict[str, Estimate]
    retrieved_tokens: float
    chunks: int
    tokens_embedded: int
    index_seconds: float
    diagnostics: dict[str, float]

    @property
    def key(self) -> CellKey:
        return (self.chunker, self.embedder, self.setting)


@dataclass
class SetBoard:
    """One set's cells; ``values[key][metric]`` are the per-question values in the order of
    ``question_ids``; ``tied`` names the cells at the leaderboard's budget tied with the best."""

    suite_set: SuiteSet
    cells: list[SetCell]
    question_ids: tuple[str, ...]
    values: dict[CellKey, dict[str, FloatArray]]
    tied: set[CellKey] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.suite_set.name

    def cell(self, key: CellKey) -> SetCell | None:
        return next((c for c in self.cells if c.key == key), None)


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
class Tau:
    """Kendall's tau-b between two sets' cell means over the ``n`` cells both have."""

    tau: float
    p: float
    n: int


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
    tau: dict[tuple[str, str], Tau]
    variance: list[VarianceSplit]
    rho: list[Rho]
    embedders: list[EmbedderRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    holdout: HoldOut | None = None  # each set left out in turn (chunkmark.suite.holdout)

    @property
    def top(self) -> list[RankRow]:
        return self.ranking[:TOP]

    @property
    def command(self) -> str:
        return (
            f"chunkmark suite leaderboard {self.suite.path} --budget {self.budget} "
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


def kendall_matrix(means: Mapping[str, Mapping[Any, float]]) -> dict[tuple[str, str], Tau]:
    """Kendall's tau-b (scipy) between every ordered pair of sets (the diagonal included) on
    the means of the cells both have; NaN with fewer than two such cells or a constant side."""
    from scipy.stats import kendalltau

    out: dict[tuple[str, str], Tau] = {}
    for a, b in ((a, b) for a in means for b in means):
        keys = sorted(
            k
            for k in set(means[a]) & set(means[b])
            if math.isfinite(means[a][k]) and math.isfinite(means[b][k])
        )
        if len(keys) < 2:
            out[(a, b)] = Tau(math.nan, math.nan, len(keys))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = kendalltau([means[a][k] for k in keys], [means[b][k] for k in keys])
        out[(a, b)] = Tau(float(result.statistic), float(result.pvalue), len(keys))
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


# --- reading the sets --------------------------------------------------------------------------


def diagnostic_values(diagnostics: Mapping[str, Any] | None) -> dict[str, float]:
    """The diagnostics a cell's manifest entry records (see ``diagnose``), as numbers:

    - ``excerpts cut``: the share of excerpts no single chunk holds whole;
    - ``fragments per excerpt``: the mean number of chunks holding part of an excerpt;
    - ``length spread``: (p95 - p5) / mean of the chunk lengths in tokens (characters when no
      token counts were recorded);
    - ``mean chunk tokens``: the mean chunk length in tokens.
    """
    if not diagnostics:
        return {}
    out: dict[str, float] = {}
    excerpts = diagnostics.get("excerpts") or {}
    if "cut_share" in excerpts:
        out["excerpts cut"] = float(excerpts["cut_share"])
    fragments = excerpts.get("fragments") or {}
    if "mean" in fragments:
        out["fragments per excerpt"] = float(fragments["mean"])
    lengths = diagnostics.get("tokens") or diagnostics.get("chars") or {}
    if lengths.get("mean"):
        out["length spread"] = (float(lengths["p95"]) - float(lengths["p5"])) / float(
            lengths["mean"]
        )
    tokens = diagnostics.get("tokens") or {}
    if "mean" in tokens:
        out["mean chunk tokens"] = float(tokens["mean"])
    return out


NO_EMBEDDER = "none (keywords only)"


def keyword_embedder(
    group: tuple[str, str],
    embedder: str,
    seen: dict[tuple[str, str], list[tuple[str, dict[str, FloatArray]]]],
    per_question: Mapping[str, FloatArray],
) -> str | None:
    """The embedder part of a keyword ranking's cell key, or None for a ranking equal on every
    question to one already seen for its chunker x setting (``group``): the same cell again.

    A keyword ranking reads no vectors, so one chunking gives it under every embedder and it is
    counted once, as :data:`NO_EMBEDDER`; a chunker that embeds while chunking (a semantic one
    using the cell's embedder) chunks differently under each embedder, and then each ranking is
    its own cell, named by the embedder it was chunked with (:func:`keyword_label`; the first of
    such a group is renamed once the group is read, by :func:`_name_keyword_cells`)."""
    rankings = seen.setdefault(group, [])
    for _, earlier in rankings:
        if all(np.array_equal(earlier[m], per_question[m]) for m in per_question):
            return None
    rankings.append((embedder, dict(per_question)))
    return NO_EMBEDDER if len(rankings) == 1 else keyword_label(embedder)


def keyword_label(embedder: str) -> str:
    """The embedder part of a keyword cell whose chunking depends on the cell's embedder (the
    embedder by its short name)."""
    return f"{NO_EMBEDDER[:-1]}; chunked with {_short('embedder', embedder)})"


def _name_keyword_cells(
    seen: Mapping[tuple[str, str], list[tuple[str, dict[str, FloatArray]]]],
    cells: list[SetCell],
    values: dict[CellKey, dict[str, FloatArray]],
) -> None:
    """Rename the first keyword cell of every chunker x setting that turned out to have more
    than one ranking, so that each names the embedder it was chunked with."""
    for (chunker, setting), rankings in seen.items():
        if len(rankings) < 2:
            continue
        old: CellKey = (chunker, NO_EMBEDDER, setting)
        new: CellKey = (chunker, keyword_label(rankings[0][0]), setting)
        values[new] = values.pop(old)
        cells[:] = [dataclasses.replace(c, embedder=new[1]) if c.key == old else c for c in cells]


def ranker_name(retrieval: str) -> str:
    """The ranker a retrieval setting reads (``exact``, ``bm25``, ``hybrid``...), looking
    through ``in_document`` to the ranker it applies within the document."""
    built, _ = RETRIEVAL.build(retrieval)
    ranker = built.ranker
    if ranker.name == "in_document":
        inner = dict(ranker.params).get("ranker", "exact()")
        ranker = RETRIEVERS.resolve(str(inner))
    return str(ranker.name)


def reads_vectors(retrieval: str) -> bool:
    """Whether a retrieval setting's ranking reads the chunk vectors (False for BM25, scoped by
    document or not), so that its rows depend on the embedder."""
    return ranker_name(retrieval) != "bm25"


def read_set(
    suite: Suite,
    suite_set: SuiteSet,
    *,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    notes: list[str] | None = None,
) -> SetBoard:
    """One set's results folder as a :class:`SetBoard`: its rows at the suite's settings (the
    default scoring), with bootstrap intervals of the shown metrics."""
    notes = notes if notes is not None else []
    folder = suite.path / suite_set.folder
    if not folder.is_dir():
        raise LeaderboardError(
            f"{folder} (set {suite_set.name}) does not exist.",
            f"Rerun `chunkmark suite run` to write it, or remove the set from {suite.path / SUITE_FILE}.",
        )
    data = load_runs([folder])
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    diagnostics = {
        (str(c.get("chunker")), str(c.get("embedder"))): diagnostic_values(c.get("diagnostics"))
        for c in manifest.get("cells") or []
        if isinstance(c, dict)
    }
    boundaries = _boundary_scores(suite, suite_set, data, notes)
    wanted: dict[str, SuiteSetting] = {}
    for each in suite.settings:
        spec = each.spec(suite_set.scope)
        if spec is not None:
            wanted[spec] = each
    default = DEFAULT_SCORING.key
    cells: list[SetCell] = []
    values: dict[CellKey, dict[str, FloatArray]] = {}
    keyword_rows: dict[tuple[str, str], list[tuple[str, dict[str, FloatArray]]]] = {}
    question_ids: tuple[str, ...] | None = None
    unmatched: set[str] = set()
    for row in data.rows:
        if row.scoring != default:
            continue
        setting = wanted.get(canonical(row.retrieval))
        scores = data.scores.get(row.key)
        if setting is None:
            unmatched.add(row.retrieval)
            continue
        info = data.cells[row.cell]
        if scores is None:
            notes.append(
                f"{suite_set.name}: the cell {info.chunker} x {info.embedder} at {row.retrieval} "
                "has no per-question rows in results.parquet and is left out."
            )
            continue
        order = np.argsort(np.asarray(scores.question_ids, dtype=object), kind="stable")
        ids = tuple(scores.question_ids[i] for i in order)
        if question_ids is None:
            question_ids = ids
        elif ids != question_ids:
            raise LeaderboardError(
                f"{folder}: the cell {info.chunker} x {info.embedder} at {row.retrieval} has "
                "other questions than the set's other cells.",
                "Rerun the set with `chunkmark suite run` (all its cells read one dataset).",
            )
        per_question = {
            m: np.asarray(scores.values[m], dtype=np.float64)[order] for m in METRICS_SHOWN
        }
        embedder_free = not reads_vectors(row.retrieval)
        embedder = info.embedder
        if embedder_free:
            group = (info.chunker, setting.label)
            named = keyword_embedder(group, embedder, keyword_rows, per_question)
            if named is None:
                continue  # the same keyword ranking under another embedder: counted once
            embedder = named
        key: CellKey = (info.chunker, embedder, setting.label)
        intervals = bootstrap_ci(per_question, n_resamples=resamples, level=level, seed=seed)
        if key in values:
            raise LeaderboardError(
                f"{folder}: two retrieval specs of the set map to the setting {setting.label!r}.",
                f"Give each setting of {suite.path / SUITE_FILE} its own spec.",
            )
        values[key] = per_question
        diag = dict(diagnostics.get((info.chunker, info.embedder), {}))
        diag.update(boundaries.get(info.index, {}))
        cells.append(
            SetCell(
                set=suite_set.name,
                chunker=info.chunker,
                embedder=embedder,
                setting=setting.label,
                tokens=setting.tokens,
                retrieval=row.retrieval,
                n_questions=len(ids),
                metrics={
                    m: Estimate(float(np.mean(per_question[m])), *intervals[m])
                    for m in METRICS_SHOWN
                },
                retrieved_tokens=row.retrieved_tokens,
                chunks=info.n_chunks,
                tokens_embedded=0 if embedder_free else info.tokens_embedded,
                index_seconds=info.index_seconds,
                diagnostics=diag,
            )
        )
    _name_keyword_cells(keyword_rows, cells, values)
    if unmatched:
        notes.append(
            f"{suite_set.name}: {len(unmatched)} retrieval setting(s) of the folder are not in "
            f"suite.json and are left out ({', '.join(sorted(unmatched))})."
        )
    for failure in data.failures:
        notes.append(
            f"{suite_set.name}: the cell {failure.chunker} x {failure.embedder} failed: {failure.error}"
        )
    if not cells:
        raise LeaderboardError(
            f"{folder} (set {suite_set.name}) has no rows at the settings of suite.json for its "
            f"scope ({suite_set.scope}).",
            "Rerun the set with `chunkmark suite run`.",
        )
    return SetBoard(suite_set, cells, question_ids or (), values)


def _boundary_scores(
    suite: Suite, suite_set: SuiteSet, data: ReportData, notes: list[str]
) -> dict[int, dict[str, float]]:
    """Per cell (index in ``data``): boundary F1, Pk and WindowDiff of its chunks against the
    topic boundaries the set's dataset folder records (``boundaries.json`` of a stitched
    corpus); empty when it records none."""
    from chunkmark.datasets.stitch import BOUNDARIES_FILE

    folder = Path(suite_set.dataset) if suite_set.dataset else None
    if folder is not None and not folder.is_absolute() and (suite.path / folder).is_dir():
        folder = suite.path / folder
    if folder is None or not (folder / BOUNDARIES_FILE).is_file():
        return {}
    from chunkmark.chunkers.diagnostics import boundary_agreement
    from chunkmark.datasets import load_dataset
    from chunkmark.datasets.stitch import read_boundaries

    dataset = load_dataset(folder)
    truth = read_boundaries(folder, dataset)
    out: dict[int, dict[str, float]] = {}
    for cell in data.cells:
        spans = read_chunks(cell.chunks_path())
        if spans is None:
            continue
        chunks = list(zip(spans.doc_ids, spans.start.tolist(), spans.end.tolist(), strict=True))
        try:
            agreement = boundary_agreement(dataset, chunks, truth)
        except MissingDependencyError as exc:
            notes.append(f"{suite_set.name}: no boundary scores: {exc}")
            return {}
        out[cell.index] = {
            "boundary F1": agreement.f1,
            "Pk": agreement.pk,
            "WindowDiff": agreement.windowdiff,
        }
    return out


# --- the leaderboard ---------------------------------------------------------------------------


def build_leaderboard(
    suite_dir: str | Path,
    *,
    budget: int = DEFAULT_BUDGET,
    metric: str = DEFAULT_METRIC,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = PERMUTATIONS,
    alpha: float = 0.05,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Leaderboard:
    """Read a suite folder and compute the leaderboard (nothing is written)."""
    say = progress or (lambda _msg: None)
    if metric not in RANK_METRICS:
        raise LeaderboardError(
            f"The leaderboard ranks by one of {', '.join(RANK_METRICS)}, not {metric!r}.",
            f"Pass --metric {DEFAULT_METRIC}.",
        )
    suite = read_suite(suite_dir)
    if budget not in suite.budgets:
        have = ", ".join(str(b) for b in suite.budgets) or "none"
        raise LeaderboardError(
            f"{suite.path / SUITE_FILE} has no setting with a budget of {budget} tokens "
            f"(budgets: {have}).",
            "Pass --budget with one of its budgets.",
        )
    notes: list[str] = []
    boards = []
    for suite_set in suite.sets:
        say(f"reading {suite_set.name}")
        boards.append(
            read_set(suite, suite_set, level=level, resamples=resamples, seed=seed, notes=notes)
        )
    labels = [s.label for s in suite.settings if s.tokens == budget]
    at_budget = [[c for c in b.cells if c.setting in labels] for b in boards]
    common = sorted(set.intersection(*({c.key for c in cells} for cells in at_budget)))
    everywhere = set().union(*({c.key for c in cells} for cells in at_budget))
    if len(everywhere) > len(common):
        notes.append(
            f"{len(everywhere) - len(common)} cell(s) at {budget} tokens are missing from some "
            "set and are not ranked across sets."
        )
    say(f"ranking {len(common)} cells over {len(boards)} sets")
    ranking = _ranking(boards, common, metric, level, resamples, permutations, alpha, seed)
    means = {
        b.name: {c.key: c.metrics[metric].value for c in cells}
        for b, cells in zip(boards, at_budget, strict=True)
    }
    holdout = None
    if len(boards) > 1 and common:
        say(f"leaving each of the {len(boards)} sets out")
        holdout = leave_one_set_out(
            {b.name: np.stack([b.values[k][metric] for k in common]) for b in boards},
            common,
            metric=metric,
            budget=budget,
            resamples=resamples,
            level=level,
            seed=seed,
        )
    every_cell = [c for b in boards for c in b.cells]
    variance = [_variance(every_cell, m) for m in RHO_METRICS]
    rho = diagnostic_rho([c for cells in at_budget for c in cells])
    embedders = _embedder_rows(boards, labels, metric, level, resamples, seed)
    if not any("boundary F1" in c.diagnostics for c in every_cell):
        notes.append(
            "Boundary scores (Pk, WindowDiff, boundary F1) need a set whose dataset records its "
            "topic boundaries (a corpus of `chunkmark datasets stitch`); no set here does."
        )
    return Leaderboard(
        suite=suite,
        budget=budget,
        metric=metric,
        level=level,
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        sets=boards,
        ranking=ranking,
        tau=kendall_matrix(means),
        variance=variance,
        rho=rho,
        embedders=embedders,
        notes=notes,
        holdout=holdout,
    )


def _embedder_rows(
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


def _ranking(
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


def _variance(cells: Sequence[SetCell], metric: str) -> VarianceSplit:
    kept = [c for c in cells if math.isfinite(c.metrics[metric].value)]
    factors = {
        "set": [c.set for c in kept],
        "embedder": [c.embedder for c in kept],
        "chunker": [c.chunker for c in kept],
        "setting": [c.setting for c in kept],
    }
    return variance_split(factors, [c.metrics[metric].value for c in kept], metric)


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


def _num(value: float, digits: int = 3) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.{digits}f}"


def _estimate(e: Estimate, digits: int = 3) -> Value:
    return Value(_num(e.value, digits), f"[{_num(e.low, digits)}, {_num(e.high, digits)}]", e.value)


def _text(text: str) -> Value:
    return Value(text)


def _count(n: float) -> Value:
    return Value(f"{n:,.0f}" if math.isfinite(n) else "n/a", number=float(n))


def _cell_names(key: CellKey) -> tuple[Value, Value, Value]:
    return (_text(_short("chunker", key[0])), _text(_short("embedder", key[1])), _text(key[2]))


def sections(board: Leaderboard) -> list[Section]:
    """The leaderboard's content, in page order."""
    pct = f"{board.level:.0%}"
    out = [_overview(board, pct), _top_section(board, pct)]
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
                _text(b.name),
                _text(
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
                _text(s.label),
                _text("-" if s.tokens is None else f"{s.tokens:,}"),
                _text(s.corpus or "-"),
                _text(s.document or "-"),
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
                _text(str(i + 1)),
                *_cell_names(r.key),
                _estimate(r.mean_rank, 2),
                _text(f"{r.tied_sets} of {r.sets}"),
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


def _holdout_section(board: Leaderboard, held: HoldOut, pct: str) -> Section:
    """Each set left out in turn: the picks made on the other sets, scored on it."""
    label = METRIC_LABELS[board.metric]
    rules = ("mean rank", "minimax regret")
    rows = []
    for s in held.sets:
        row: list[Value] = [_text(s.set), _count(s.questions), *_cell_names(s.best)]
        for rule in rules:
            chosen = s.pick(rule)
            row += [
                *_cell_names(chosen.cell),
                _text(f"{chosen.rank:g} of {s.cells}"),
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
                _text(a),
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
                _text(METRIC_LABELS[split.metric]),
                _count(split.n),
                *(Value(_pct(split.shares[f]), number=split.shares[f]) for f in FACTORS),
                Value(_pct(split.rest), number=split.rest),
                _text("yes" if split.balanced else "no"),
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
                _text(r.set),
                _text(_short("embedder", r.embedder)),
                _text(r.setting),
                _count(r.chunkers),
                _estimate(r.mean),
                _estimate(r.best),
                _text(_short("chunker", r.best_chunker)),
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
                _text(r.diagnostic),
                _text(METRIC_LABELS[r.metric]),
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
                _text(_tied_text(board, set_board, c)),
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
"""


def to_html(board: Leaderboard) -> str:
    """The leaderboard as one self-contained HTML page: inline CSS, no script, no external
    resource."""
    title = f"chunkmark suite leaderboard: {board.suite.path.name}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head>",
        '<body data-ready="true"><main>',
        f"<h1>{html.escape(title)}</h1>",
    ]
    for index, section in enumerate(sections(board)):
        tag = f"h{section.level}"
        parts.append(f'<section id="section-{index}">')
        parts.append(f"<{tag}>{html.escape(section.title)}</{tag}>")
        parts += [f"<p>{_inline_code(p)}</p>" for p in section.paragraphs]
        for caption, table in section.tables:
            parts.append(_html_table(caption, table))
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


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
    variance split, and the files written."""
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
                **{f: _json_float(v.shares[f]) for f in FACTORS},
                "interactions": _json_float(v.rest),
            }
            for v in board.variance
        },
        "notes": list(board.notes),
        "files": {name: str(path) for name, path in (files or {}).items()},
    }


def _json_float(value: float) -> float | None:
    return value if math.isfinite(value) else None


def write_leaderboard(board: Leaderboard, out: str | Path) -> dict[str, Path]:
    """Write ``leaderboard.md`` and ``leaderboard.html`` into ``out`` (created if missing)."""
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LeaderboardError(
            f"Cannot create the folder {folder}: {exc.strerror or exc}.", "Pass another --out."
        ) from None
    files = {"markdown": folder / MARKDOWN_FILE, "html": folder / HTML_FILE}
    write_bytes_atomic(files["markdown"], to_markdown(board).encode("utf-8"))
    write_bytes_atomic(files["html"], to_html(board).encode("utf-8"))
    return files


def leave_one_set_out_suite(
    suite_dir: str | Path,
    *,
    budget: int = DEFAULT_BUDGET,
    metric: str = DEFAULT_METRIC,
    baseline: tuple[str, str, str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> HoldOut:
    """:func:`chunkmark.suite.holdout.leave_one_set_out` over a suite folder's cells at ``budget`` tokens (the board's
    cells). ``baseline`` names a cell by substrings of its chunker, embedder and setting label
    (say ``("fixed_tokens(size=512", "all-MiniLM-L6-v2', ", "dense @1024")``); exactly one cell
    must match."""
    if metric not in RANK_METRICS:
        raise LeaderboardError(
            f"Leaving a set out ranks by one of {', '.join(RANK_METRICS)}, not {metric!r}.",
            f"Pass --metric {DEFAULT_METRIC}.",
        )
    suite = read_suite(suite_dir)
    labels = {s.label for s in suite.settings if s.tokens == budget}
    if not labels:
        raise LeaderboardError(
            f"{suite.path / SUITE_FILE} has no setting with a budget of {budget} tokens.",
            "Pass --budget with one of its budgets.",
        )
    if len(suite.sets) < 2:
        raise LeaderboardError(
            f"{suite.path / SUITE_FILE} holds {len(suite.sets)} set(s); leaving one out needs two.",
            "Run the suite on more sets (`chunkmark suite run`).",
        )
    boards = [read_set(suite, s, resamples=1, seed=seed) for s in suite.sets]
    common = sorted(set.intersection(*({k for k in b.values if k[2] in labels} for b in boards)))
    if not common:
        raise LeaderboardError(
            f"No cell at {budget} tokens is in every set of {suite.path}.",
            "Rerun the sets with one grid (`chunkmark suite run`).",
        )
    base: CellKey | None = None
    if baseline is not None:
        found = [k for k in common if all(part in k[i] for i, part in enumerate(baseline))]
        if len(found) != 1:
            raise LeaderboardError(
                f"The baseline {baseline} matches {len(found)} cells at {budget} tokens.",
                "Name it by substrings of its chunker, embedder and setting that match one cell.",
            )
        base = found[0]
    values = {b.name: np.stack([b.values[k][metric] for k in common]) for b in boards}
    return leave_one_set_out(
        values,
        common,
        baseline=base,
        metric=metric,
        budget=budget,
        resamples=resamples,
        level=level,
        seed=seed,
    )
