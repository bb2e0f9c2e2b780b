"""A side of the regression gate and how it is read: the exit statuses and their error
(:class:`GateError`), the :class:`Side` record and its question hash, a results folder read as
a side (:func:`read_run`, :func:`pick_cells`) and the baseline file (:func:`write_baseline`,
:func:`read_baseline`); see :mod:`chunkmark.report.gate`."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.errors import ChunkmarkError
from chunkmark.files import write_bytes_atomic
from chunkmark.metrics import METRICS
from chunkmark.report.settings import Scoring, choose_retrieval, choose_scoring, retrieval_of
from chunkmark.specs import canonical_spec  # the form the runs' cells hold

FloatArray = npt.NDArray[np.float64]
Cell = tuple[str, str]  # chunker, embedder (canonical specs)

PASSED = 0
REGRESSION = 3
QUESTIONS_DIFFER = 4
INCOMPATIBLE = 5
MISSING_CELL = 6
BAD_BASELINE = 7
INCONCLUSIVE_EXIT = 8
USAGE = 2
# Exit status -> what it means (docs/gate.md lists the same table; tests check they agree).
EXIT_CODES: dict[int, str] = {
    PASSED: "passed: no gated cell dropped by more than --max-drop with a significant drop",
    1: "unexpected error (a bug): one line naming a log file with the traceback",
    USAGE: "usage error: an unknown option or metric, a run folder that cannot be read",
    REGRESSION: "regression found: a gated cell dropped by more than --max-drop, significantly",
    QUESTIONS_DIFFER: "the run and the baseline hold different questions (ids or excerpts)",
    INCOMPATIBLE: "the baseline is of another dataset, metric, retrieval setting or scoring",
    MISSING_CELL: "a gated cell is missing from the run",
    BAD_BASELINE: "the baseline file or folder cannot be read (corrupt, not a baseline)",
    INCONCLUSIVE_EXIT: "inconclusive, with --fail-inconclusive only: no cell regressed, but a "
    "cell dropped by more than --max-drop with too few questions to tell",
}


BASELINE_FORMAT = "chunkmark-gate-baseline"
BASELINE_VERSION = 1


class GateError(ChunkmarkError):
    """Bad input to the gate; ``exit_code`` is its status in :data:`EXIT_CODES`."""

    def __init__(self, problem: str, fix: str | None = None, *, exit_code: int = USAGE) -> None:
        super().__init__(problem, fix)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Side:
    """Per-question values of one metric for some cells of one dataset, in one question order."""

    dataset: str
    fingerprint: str
    metric: str
    retrieval: str
    scoring: Scoring
    question_ids: tuple[str, ...]
    cells: dict[Cell, FloatArray]
    question_hash: str | None = None  # None: not computed yet (see :func:`question_hash`)
    source: str | None = None  # where the dataset was loaded from, to compute the hash
    origin: str = ""  # the folder or file it was read from


# --- the question hash ------------------------------------------------------------------------


def question_hash(source: str) -> str:
    """SHA-256 of every question's id, document and excerpts (spans and text), sorted by id.

    Documents may change around the excerpts without changing it; any question added, removed
    or re-anchored changes it."""
    from chunkmark.datasets import load_dataset

    try:
        dataset = load_dataset(source)
    except (ChunkmarkError, OSError) as exc:
        raise GateError(
            f"Cannot read the dataset {source} to hash its questions: {exc}",
            "Run the gate where the run's dataset can be read.",
            exit_code=USAGE,
        ) from None
    texts = {d.id: d.text for d in dataset.documents}
    h = hashlib.sha256()
    for q in sorted(dataset.questions, key=lambda q: q.id):
        text = texts.get(q.doc_id, "")
        excerpts = [[s.start, s.end, text[s.start : s.end]] for s in q.excerpts]
        h.update(json.dumps([q.id, q.doc_id, excerpts], ensure_ascii=False).encode())
    return h.hexdigest()


def with_hash(side: Side) -> Side:
    """``side`` with its question hash, computed from its dataset when missing."""
    if side.question_hash is not None:
        return side
    if not side.source:
        raise GateError(
            f"{side.origin} is of a dataset with another fingerprint and names no source to "
            "compare its questions with.",
            "Gate a run of the baseline's dataset, or rebuild the baseline with --update-baseline.",
            exit_code=INCOMPATIBLE,
        )
    return side_with(side, question_hash=question_hash(side.source))


def side_with(side: Side, **changes: Any) -> Side:
    """``side`` with ``changes`` (a copy)."""
    from dataclasses import replace

    return replace(side, **changes)


def replace_cells(side: Side, cells: dict[Cell, FloatArray]) -> Side:
    """``side`` with other cells."""
    return side_with(side, cells=cells)


# --- reading a results folder -----------------------------------------------------------------

_COLUMNS = ("dataset", "chunker", "embedder", "retrieval", "k", "excerpts", "unit", "denominator")


@dataclass(frozen=True)
class Picks:
    """Which rows of a run the gate reads (the ``--pick-...`` options); None: the default."""

    retrieval: str | None = None
    k: str | None = None
    dataset: str | None = None
    chunkers: tuple[str, ...] = ()
    embedders: tuple[str, ...] = ()


def read_run(
    path: Path,
    metric: str,
    picks: Picks,
    *,
    retrieval: str | None = None,
    exit_code: int = USAGE,
    role: str = "run",
) -> Side:
    """A results folder's values of ``metric`` at the picked (else ``retrieval``, else the
    run's primary) setting and scoring, for the picked cells (all by default)."""
    manifest, table = _read_folder(path, metric, role, exit_code)
    info = _picked_dataset(manifest, path, picks, role, exit_code)
    name = str(info.get("name"))
    n = len(table["question_id"])
    column = {c: table.get(c, [None] * n) for c in _COLUMNS}
    rows = [i for i in range(n) if (column["dataset"][i] or name) == name]
    settings = list(dict.fromkeys(_retrieval(column, i) for i in rows))
    asked = picks.retrieval
    if asked is None and picks.k is None and retrieval is not None and retrieval in settings:
        asked = retrieval
    try:
        setting = choose_retrieval(settings, asked, picks.k, GateError)
    except GateError as exc:
        raise GateError(exc.problem, exc.fix, exit_code=exit_code) from None
    scorings = {_scoring(column, i) for i in rows}
    scoring = choose_scoring(scorings)
    chunker_picks = {canonical_spec("chunker", s) for s in picks.chunkers}
    embedder_picks = {canonical_spec("embedder", s) for s in picks.embedders}
    values: dict[Cell, dict[str, float]] = {}
    present: set[Cell] = set()
    for i in rows:
        if _retrieval(column, i) != setting or _scoring(column, i) != scoring:
            continue
        cell = (str(column["chunker"][i]), str(column["embedder"][i]))
        present.add(cell)
        if chunker_picks and cell[0] not in chunker_picks:
            continue
        if embedder_picks and cell[1] not in embedder_picks:
            continue
        value = table[metric][i]
        values.setdefault(cell, {})[str(table["question_id"][i])] = (
            math.nan if value is None else float(value)
        )
    if present and not values:
        # The folder is fine: the picks name none of its cells (a usage error, not a corrupt
        # baseline). Gating a deliberate swap of embedder or chunker is --pair's job.
        listing = "; ".join(f"{c} x {e}" for c, e in sorted(present)[:4])
        more = f" and {len(present) - 4} more" if len(present) > 4 else ""
        raise GateError(
            f"The {role} {path} has no cell of the picked chunker/embedder; its cells: "
            f"{listing}{more}.",
            "Pick cells it holds; to gate a swap of embedder or chunker, pair the baseline's "
            "with the run's: --pair 'BASELINE_SPEC=RUN_SPEC' (docs/gate.md).",
        )
    ids = _question_ids(values, path, role, exit_code)
    return Side(
        dataset=name,
        fingerprint=str(info.get("fingerprint")),
        metric=metric,
        retrieval=setting,
        scoring=scoring,
        question_ids=ids,
        cells={
            cell: np.asarray([v.get(q, math.nan) for q in ids], dtype=np.float64)
            for cell, v in sorted(values.items())
        },
        source=str(info.get("source") or "") or None,
        origin=str(path),
    )


_FIX = "Pass the folder a `chunkmark run` wrote (its --out)."


def _read_folder(
    path: Path, metric: str, role: str, exit_code: int
) -> tuple[Any, dict[str, list[Any]]]:
    """A results folder's manifest, and the columns of its results the gate reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest_file, results_file = path / "manifest.json", path / "results.parquet"
    if not manifest_file.is_file() or not results_file.is_file():
        raise GateError(
            f"The {role} {path} holds no manifest.json and results.parquet.",
            _FIX,
            exit_code=exit_code,
        )
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        schema = pq.read_schema(results_file)
        if metric not in schema.names:
            raise GateError(
                f"The {role} {path} has no {metric!r} values.",
                "Use a metric it holds, or rerun it with this chunkmark version.",
                exit_code=INCOMPATIBLE if role == "baseline" else USAGE,
            )
        wanted = [c for c in (*_COLUMNS, "question_id", metric) if c in schema.names]
        table = pq.read_table(results_file, columns=wanted).to_pydict()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, pa.ArrowInvalid) as exc:
        raise GateError(
            f"Cannot read the {role} {path}: {exc}.", _FIX, exit_code=exit_code
        ) from None
    return manifest, table


def _picked_dataset(
    manifest: Any, path: Path, picks: Picks, role: str, exit_code: int
) -> dict[str, Any]:
    """The manifest's entry of the picked dataset (the only one when none is picked)."""
    from chunkmark.report.data import manifest_datasets

    datasets = manifest_datasets(manifest) if isinstance(manifest, dict) else []
    if not datasets:
        raise GateError(f"{path / 'manifest.json'} names no dataset.", _FIX, exit_code=exit_code)
    names = [str(d.get("name")) for d in datasets]
    if picks.dataset is not None:
        if picks.dataset not in names:
            raise GateError(
                f"The {role} {path} holds no dataset {picks.dataset!r}.",
                f"Use --pick-dataset with one of: {', '.join(names)}.",
                exit_code=INCOMPATIBLE if role == "baseline" else USAGE,
            )
        return dict(datasets[names.index(picks.dataset)])
    if len(datasets) > 1:
        raise GateError(
            f"The {role} {path} holds several datasets: {', '.join(names)}.",
            "Pick one with --pick-dataset.",
        )
    return dict(datasets[0])


def _retrieval(column: Mapping[str, list[Any]], i: int) -> str:
    return retrieval_of({"retrieval": column["retrieval"][i], "k": column["k"][i]})


def _scoring(column: Mapping[str, list[Any]], i: int) -> Scoring:
    return Scoring.from_row({c: column[c][i] for c in ("excerpts", "unit", "denominator")})


def _question_ids(
    values: Mapping[Cell, Mapping[str, float]], path: Path, role: str, exit_code: int
) -> tuple[str, ...]:
    """The questions every cell has, in the first cell's order; cells that disagree are an
    error (a run's cells are scored on the same questions)."""
    if not values:
        raise GateError(
            f"The {role} {path} holds no rows for the picked cells.",
            "Check --pick-chunker/--pick-embedder against the cells it holds.",
            exit_code=exit_code,
        )
    first = next(iter(values.values()))
    for cell, v in values.items():
        if set(v) != set(first):
            raise GateError(
                f"The {role} {path}: cell {cell[0]} x {cell[1]} was scored on other questions "
                "than its other cells.",
                "Rerun it with `chunkmark run`.",
                exit_code=exit_code,
            )
    return tuple(first)


def pick_cells(side: Side, picks: Picks) -> Side:
    """``side`` with only the cells the picks name (every cell without picks)."""
    chunkers = {canonical_spec("chunker", s) for s in picks.chunkers}
    embedders = {canonical_spec("embedder", s) for s in picks.embedders}
    kept = {
        cell: v
        for cell, v in side.cells.items()
        if (not chunkers or cell[0] in chunkers) and (not embedders or cell[1] in embedders)
    }
    if not kept:
        listing = "; ".join(f"{c} x {e}" for c, e in list(side.cells)[:4])
        raise GateError(
            f"The picks name none of the baseline's cells ({listing}).",
            "Check --pick-chunker/--pick-embedder; to gate a swap of embedder or chunker, pair "
            "the baseline's with the run's: --pair 'BASELINE_SPEC=RUN_SPEC' (docs/gate.md).",
        )
    return side_with(side, cells=kept)


# --- the baseline file ------------------------------------------------------------------------


def write_baseline(path: Path, side: Side, *, run: str = "") -> None:
    """Write ``side`` (with its question hash) as a baseline file, atomically."""
    from chunkmark.version import __version__

    side = with_hash(side)
    data = {
        "format": BASELINE_FORMAT,
        "version": BASELINE_VERSION,
        "chunkmark": __version__,
        "created": datetime.now().astimezone().isoformat(timespec="seconds"),
        "run": run,
        "dataset": {"name": side.dataset, "fingerprint": side.fingerprint},
        "metric": side.metric,
        "retrieval": side.retrieval,
        "scoring": side.scoring.columns(),
        "questions": {"count": len(side.question_ids), "hash": side.question_hash},
        "question_ids": list(side.question_ids),
        "cells": [
            {
                "chunker": c,
                "embedder": e,
                "mean": float(np.mean(v)),
                "values": [float(x) for x in v],
            }
            for (c, e), v in side.cells.items()
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, ensure_ascii=False)
    write_bytes_atomic(path, (text + "\n").encode("utf-8"))  # a file to commit: umask's mode


def read_baseline(path: Path) -> Side:
    """A baseline file; anything wrong in it is one :class:`GateError` line (exit
    :data:`BAD_BASELINE`) naming the key."""
    fix = f"Rebuild it: chunkmark gate RUN --baseline {path} --update-baseline."
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError(
            f"The baseline file {path} does not exist.",
            f"Write it first: chunkmark gate RUN --baseline {path} --update-baseline.",
            exit_code=BAD_BASELINE,
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GateError(f"Cannot read {path}: {exc}.", fix, exit_code=BAD_BASELINE) from None
    except json.JSONDecodeError as exc:
        raise GateError(
            f"{path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).",
            fix,
            exit_code=BAD_BASELINE,
        ) from None

    def bad(key: str, what: str) -> GateError:
        return GateError(f"{path}: {key} {what}.", fix, exit_code=BAD_BASELINE)

    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise bad("format", f"is not {BASELINE_FORMAT!r}: not a chunkmark gate baseline")
    if data.get("version") != BASELINE_VERSION:
        raise bad("version", f"is {data.get('version')!r}, this chunkmark reads {BASELINE_VERSION}")
    dataset = _field(data, "dataset", dict, bad)
    name = _field(dataset, "name", str, bad, "dataset.name")
    fingerprint = _field(dataset, "fingerprint", str, bad, "dataset.fingerprint")
    metric = _field(data, "metric", str, bad)
    if metric not in METRICS:
        raise bad("metric", f"{metric!r} is not a chunkmark metric")
    retrieval = _field(data, "retrieval", str, bad)
    scoring_data = _field(data, "scoring", dict, bad)
    try:
        scoring = Scoring.from_row(scoring_data)
    except ValueError as exc:
        raise bad("scoring", str(exc).rstrip(".")) from None
    questions = _field(data, "questions", dict, bad)
    digest = _field(questions, "hash", str, bad, "questions.hash")
    ids = _field(data, "question_ids", list, bad)
    if not ids or not all(isinstance(q, str) for q in ids) or len(set(ids)) != len(ids):
        raise bad("question_ids", "must be a non-empty list of distinct strings")
    cells: dict[Cell, FloatArray] = {}
    for i, entry in enumerate(_field(data, "cells", list, bad)):
        where = f"cells[{i}]"
        if not isinstance(entry, dict):
            raise bad(where, "is not an object")
        chunker = _field(entry, "chunker", str, bad, f"{where}.chunker")
        embedder = _field(entry, "embedder", str, bad, f"{where}.embedder")
        values = _field(entry, "values", list, bad, f"{where}.values")
        if len(values) != len(ids) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        ):
            raise bad(f"{where}.values", f"must be {len(ids)} numbers, one per question id")
        cells[(chunker, embedder)] = np.asarray(values, dtype=np.float64)
    if not cells:
        raise bad("cells", "is empty")
    return Side(
        dataset=name,
        fingerprint=fingerprint,
        metric=metric,
        retrieval=retrieval,
        scoring=scoring,
        question_ids=tuple(ids),
        cells=cells,
        question_hash=digest,
        origin=str(path),
    )


def _field(data: Mapping[str, Any], key: str, kind: type, bad: Any, name: str | None = None) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise bad(name or key, "is missing" if value is None else f"is not a {kind.__name__}")
    return value
