"""Two cells of one or more runs, paired over the same questions, at one retrieval setting and
one scoring (so it pairs like with like): what ``chunkmark compare`` prints and the MCP tool
compare_cells answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkmark.errors import ConfigError
from chunkmark.metrics import METRICS
from chunkmark.metrics.paired import PairedComparison, compare_paired
from chunkmark.metrics.selection import QuestionsNeeded, questions_needed, verdict_of
from chunkmark.specs import canonical_or_none, canonical_spec

if TYPE_CHECKING:
    from chunkmark.report.settings import Scoring

Cell = tuple[str, str, str]  # dataset, chunker, embedder
_KEYS = ("dataset", "chunker", "embedder", "retrieval", "k", "excerpts", "unit", "denominator")


@dataclass(frozen=True)
class CellComparison:
    """Two cells of one dataset compared at one retrieval setting and scoring: the paired
    comparison of their per-question values and its verdict at ``alpha``."""

    dataset: str
    metric: str
    retrieval: str
    k: str
    scoring: Scoring
    a: Cell
    b: Cell
    result: PairedComparison
    alpha: float
    verdict: str
    needed: QuestionsNeeded | None = None
    # Two retrieval settings of one cell (--a and --b name settings): A's and B's.
    settings: tuple[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """What ``chunkmark compare --json`` prints."""
        return {
            "dataset": self.dataset,
            "metric": self.metric,
            "retrieval": self.retrieval,
            "k": self.k,
            "scoring": {
                "excerpts": self.scoring.excerpts,
                "unit": self.scoring.unit,
                "denominator": self.scoring.denominator,
            },
            "a": {"chunker": self.a[1], "embedder": self.a[2]}
            | ({"retrieval": self.settings[0]} if self.settings else {}),
            "b": {"chunker": self.b[1], "embedder": self.b[2]}
            | ({"retrieval": self.settings[1]} if self.settings else {}),
            **self.result.to_dict(),
            "alpha": self.alpha,
            "verdict": self.verdict,
            "questions_needed": None if self.needed is None else self.needed.to_dict(),
        }


def compare_cells(
    runs: Sequence[Path],
    a: str,
    b: str,
    *,
    metric: str = "iou",
    retrieval: str | None = None,
    k: str | None = None,
    excerpts: str = "position",
    unit: str = "chars",
    denominator: str = "sum",
    chunker: str | None = None,
    embedder: str | None = None,
    dataset: str | None = None,
    permutations: int = 10_000,
    alpha: float = 0.05,
    seed: int = 0,
) -> CellComparison:
    """Cell ``a`` against cell ``b`` (each a chunker or an embedder spec, ``chunker`` or
    ``embedder`` pinning the other part) in the runs' rows of one retrieval setting and scoring,
    paired over the questions both have. A ConfigError or SpecError names what to change."""
    if metric not in METRICS:
        raise ConfigError(
            f"Unknown metric {metric!r}.", f"Use one of: {', '.join(METRICS.names())}."
        )
    # The report's reading of retrieval settings and scoring, imported here: the CLI starts fast.
    from chunkmark.report.settings import Scoring, choose_retrieval

    rows = _read_runs(list(runs), metric)
    available = list(dict.fromkeys(rows["retrieval"]))
    settings = _settings_pair(a, b, available)
    if settings is not None:
        if retrieval is not None or k is not None:
            raise ConfigError(
                "--a and --b name retrieval settings, so --pick-retrieval and --pick-k have "
                "nothing to pick.",
                "Leave them out, or name cells in --a and --b.",
            )
        setting = settings[0]
    else:
        setting = choose_retrieval(available, retrieval, k, ConfigError)
    try:
        wanted = Scoring.of(excerpts, unit, denominator)
    except ValueError as exc:
        raise ConfigError(
            str(exc), "Use --pick-excerpts, --pick-unit and --pick-denominator as listed in --help."
        ) from None
    scoring = _pick_scoring(rows, wanted)
    if settings is not None:
        return _compare_settings(
            rows, settings, scoring, metric, chunker, embedder, dataset, permutations, alpha, seed
        )
    rows = _only(rows, setting, scoring)
    chosen = _one_dataset({r[0] for r in rows["cells"]}, dataset)
    cell_a = _select(rows, a, chosen, chunker, embedder, "--a")
    cell_b = _select(rows, b, chosen, chunker, embedder, "--b")
    pair = _paired(_values(rows, cell_a), _values(rows, cell_b), "cells", "run on the same dataset")
    where = (chosen, setting, rows["k"][0] if rows["k"] else "", scoring, cell_a, cell_b)
    return _compared(pair, where, metric, alpha, permutations, seed)


def p_text(value: float | None) -> str:
    """A p-value as printed: "n/a" when its test cannot be computed (one question, NaN)."""
    return "n/a" if value is None else f"{value:.3g}"


def _settings_pair(a: str, b: str, available: Sequence[str]) -> tuple[str, str] | None:
    """The two retrieval settings of the runs that ``a`` and ``b`` name, when both name one
    (and neither names a chunker or an embedder); else None (they name cells)."""
    from chunkmark.report.settings import match_retrieval

    found = []
    for spec in (a, b):
        if any(_canonical(kind, spec, quiet=True) for kind in ("chunker", "embedder")):
            return None
        try:
            found.append(match_retrieval(spec, available, ConfigError))
        except ConfigError:
            return None
    return found[0], found[1]


def _compare_settings(
    rows: dict[str, Any],
    settings: tuple[str, str],
    scoring: Scoring,
    metric: str,
    chunker: str | None,
    embedder: str | None,
    dataset: str | None,
    permutations: int,
    alpha: float,
    seed: int,
) -> CellComparison:
    """One cell at two retrieval settings, paired over the questions both have."""
    first, second = _only(rows, settings[0], scoring), _only(rows, settings[1], scoring)
    chosen = _one_dataset({r[0] for r in first["cells"]} & {r[0] for r in second["cells"]}, dataset)
    wanted_chunker = _canonical("chunker", chunker) if chunker else None
    wanted_embedder = _canonical("embedder", embedder) if embedder else None
    cells = sorted(
        c
        for c in set(first["cells"]) & set(second["cells"])
        if c[0] == chosen
        and (wanted_chunker is None or c[1] == wanted_chunker)
        and (wanted_embedder is None or c[2] == wanted_embedder)
    )
    if len(cells) != 1:
        listing = "; ".join(f"{c[1]} x {c[2]}" for c in cells[:8]) or "none"
        raise ConfigError(
            f"--a {settings[0]} and --b {settings[1]} compare one cell's settings, and "
            f"{len(cells)} cells of dataset {chosen!r} hold both: {listing}.",
            "Pin the cell with --pick-chunker and --pick-embedder.",
        )
    (cell,) = cells
    pair = _paired(_values(first, cell), _values(second, cell), "settings", "of one run")
    where = (chosen, " vs ".join(settings), "", scoring, cell, cell)
    return _compared(pair, where, metric, alpha, permutations, seed, settings)


def _one_dataset(datasets: set[str], dataset: str | None) -> str:
    """The dataset compared: ``dataset``, else the runs' only one."""
    if dataset is None and len(datasets) > 1:
        raise ConfigError(
            f"The runs hold several datasets: {', '.join(sorted(datasets))}.",
            "Pick one with --pick-dataset.",
        )
    return dataset or min(datasets, default="")


def _values(rows: dict[str, Any], cell: Cell) -> dict[str, float]:
    """``cell``'s value per question id (rows of one setting and scoring)."""
    found = zip(rows["cells"], rows["question_id"], rows["value"], strict=True)
    return {question: float(value) for c, question, value in found if c == cell}


def _paired(
    a: dict[str, float], b: dict[str, float], what: str, fix: str
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A's and B's values over the questions both have."""
    common = [q for q in a if q in b]
    if not common:
        raise ConfigError(f"The two {what} share no question.", f"Compare {what} {fix}.")
    return np.array([a[q] for q in common]), np.array([b[q] for q in common])


def _compared(
    pair: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    where: tuple[str, str, str, Scoring, Cell, Cell],
    metric: str,
    alpha: float,
    permutations: int,
    seed: int,
    settings: tuple[str, str] | None = None,
) -> CellComparison:
    """The paired comparison of ``pair`` and its verdict at ``alpha``; ``where``: the dataset,
    retrieval setting, k, scoring and the two cells compared."""
    result = compare_paired(*pair, permutations=permutations, seed=seed)
    needed = questions_needed(*pair, alpha=alpha) if result.n >= 2 else None
    dataset, retrieval, k, scoring, a, b = where
    verdict = _verdict(result, metric, alpha, needed)
    return CellComparison(
        dataset, metric, retrieval, k, scoring, a, b, result, alpha, verdict, needed, settings
    )


def _read_runs(runs: list[Path], metric: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from chunkmark.report.settings import Scoring, retrieval_of

    out: dict[str, list[Any]] = {
        "cells": [],
        "retrieval": [],
        "k": [],
        "scoring": [],
        "question_id": [],
        "value": [],
    }
    for run in runs:
        path = run / "results.parquet"
        if not path.is_file():
            raise ConfigError(
                f"{run} holds no results.parquet.",
                "Pass the folder a `chunkmark run` wrote (its --out).",
            )
        table = pq.read_table(path)
        if metric not in table.column_names:
            raise ConfigError(
                f"{run} has no {metric!r} column.", "Rerun it with this chunkmark version."
            )
        data = table.select([c for c in (*_KEYS, "question_id", metric) if c in table.column_names])
        columns = data.to_pydict()
        for i in range(data.num_rows):
            row = {c: columns[c][i] for c in _KEYS if c in columns}
            out["cells"].append((row["dataset"], row["chunker"], row["embedder"]))
            out["retrieval"].append(retrieval_of(row))
            out["k"].append(str(row.get("k") or ""))
            out["scoring"].append(Scoring.from_row(row))
            out["question_id"].append(columns["question_id"][i])
            out["value"].append(columns[metric][i])
    if not out["cells"]:
        raise ConfigError("The runs hold no scored rows.", "Rerun `chunkmark run`.")
    return out


def _pick_scoring(rows: dict[str, Any], wanted: Scoring) -> Scoring:
    present = sorted(set(rows["scoring"]))
    if wanted not in present:
        raise ConfigError(
            f"The runs hold no rows scored with {wanted.label}.",
            "Use --pick-excerpts, --pick-unit and --pick-denominator for one of: "
            + "; ".join(s.label for s in present)
            + ".",
        )
    return wanted


def _only(rows: dict[str, Any], retrieval: str, scoring: Scoring) -> dict[str, Any]:
    """The rows of one retrieval setting and scoring."""
    keep = [
        i
        for i, (r, s) in enumerate(zip(rows["retrieval"], rows["scoring"], strict=True))
        if r == retrieval and s == scoring
    ]
    return {name: [values[i] for i in keep] for name, values in rows.items()}


def _select(
    rows: dict[str, Any],
    spec: str,
    dataset: str,
    chunker: str | None,
    embedder: str | None,
    flag: str,
) -> Cell:
    """The one cell of ``dataset`` that ``spec`` (a chunker or an embedder spec) names."""
    cells: list[Cell] = sorted({c for c in rows["cells"] if c[0] == dataset})
    wanted_chunker = _canonical("chunker", chunker) if chunker else None
    wanted_embedder = _canonical("embedder", embedder) if embedder else None
    matches: list[Cell] = []
    for kind, index in (("chunker", 1), ("embedder", 2)):
        name = _canonical(kind, spec, quiet=True)
        if name is None:
            continue
        for cell in cells:
            if cell[index] != name:
                continue
            if wanted_chunker and cell[1] != wanted_chunker:
                continue
            if wanted_embedder and cell[2] != wanted_embedder:
                continue
            matches.append(cell)
    if len(matches) == 1:
        return matches[0]
    listing = "; ".join(f"{c[1]} x {c[2]}" for c in (matches or cells)[:8])
    if not matches:
        raise ConfigError(
            f"{flag} {spec!r} names no cell of dataset {dataset!r}.",
            f"Cells in the runs: {listing}.",
        )
    raise ConfigError(
        f"{flag} {spec!r} matches {len(matches)} cells: {listing}.",
        "Pin the other part with --pick-chunker or --pick-embedder.",
    )


def _canonical(kind: str, spec: str, quiet: bool = False) -> str | None:
    """``spec``'s canonical form (:func:`chunkmark.specs.canonical_spec`), the form the runs'
    cells hold; None for one that does not resolve when ``quiet``."""
    return canonical_or_none(kind, spec) if quiet else canonical_spec(kind, spec)


def _verdict(
    result: PairedComparison, metric: str, alpha: float, needed: QuestionsNeeded | None = None
) -> str:
    """The verdict line: better or worse when the test rejects; "inconclusive" when it cannot
    but the interval excludes zero or more questions are needed than there are; "tied" only
    when the interval holds zero and no realistic number of questions would separate them."""
    direction = METRICS[metric].direction
    label = METRICS[metric].label
    kind = verdict_of(result.p_permutation, result.ci_low, result.ci_high, result.n, needed, alpha)
    if kind == "untestable" or result.p_permutation is None:
        return (
            f"cannot tell: a {label} value is missing (NaN) for some question, so no test "
            "can be computed; rerun the cells that produced it"
        )
    p = result.p_permutation
    if kind == "significant":
        better = (result.difference > 0) == (direction == "higher")
        return (
            f"A is {'better' if better else 'worse'} than B on {label} by "
            f"{100 * abs(result.difference):.2f} points (p = {p:.3g})"
        )
    # With n questions the smallest two-sided sign-flip p-value is 2 / 2^m, m the questions
    # whose values differ (a tied question flips to itself).
    differ = result.wins + result.losses
    few = ""
    if 2.0 ** (1 - differ) >= alpha:
        few = (
            f"; {result.n} question{'s' * (result.n != 1)}: no test on so few can reach "
            f"p < {alpha:g}"
            if differ == result.n
            else f"; only {differ} of the {result.n} questions differ, and no test on so few "
            f"can reach p < {alpha:g}"
        )
    if kind == "tied":
        return (
            f"no detectable difference in {label} (p = {p:.3g} >= {alpha:g}{few}): treat A and "
            "B as tied on these questions"
        )
    interval = f"[{100 * result.ci_low:+.2f}, {100 * result.ci_high:+.2f}]"
    why = (
        f"the {100 * result.level:.0f}% interval {interval} excludes zero"
        if result.ci_low > 0 or result.ci_high < 0
        else f"the {100 * result.level:.0f}% interval {interval} is too wide to call a tie"
    )
    if needed is not None and needed.n is not None:
        more = (
            f"about {needed.n:,} paired questions are needed to detect a difference this large "
            f"({100 * needed.power:.0f}% power), and there are {result.n}"
        )
    else:
        more = f"more paired questions are needed than the {result.n} there are"
    return (
        f"inconclusive on {label}: the test cannot reject a tie (p = {p:.3g} >= {alpha:g}{few}), "
        f"but {why}: {more}. Do not read it as a tie"
    )
