"""Reading a suite folder for its leaderboard: ``suite.json`` and each set's results folder.

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
default scoring is read (:func:`read_set`), each shown metric with its bootstrap interval
(:func:`chunkmark.metrics.bootstrap_ci` over the set's questions), beside the chunks, tokens
embedded and index seconds of its chunker x embedder and its chunk diagnostics.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.errors import ChunkmarkError, MissingDependencyError
from chunkmark.metrics import bootstrap_ci
from chunkmark.report.data import (
    CellInfo,
    LeaderRow,
    ReportData,
    load_runs,
    read_chunks,
    short_name,
)
from chunkmark.report.settings import DEFAULT_SCORING
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS
from chunkmark.suite.estimates import CellKey, Estimate

FloatArray = npt.NDArray[np.float64]
Scope = Literal["corpus", "document"]

SUITE_FILE = "suite.json"
SUITE_FORMAT = 1
SCOPES: tuple[Scope, ...] = ("corpus", "document")
METRICS_SHOWN = ("recall", "iou", "containment_recall")
DEFAULT_RESAMPLES = 1000
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
    raw = _json_object(file, "Rerun `chunkmark suite run`.")
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
def short(kind: str, spec: str) -> str:
    return short_name(kind, spec)


# --- what is read --------------------------------------------------------------------------------


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
    source: str = ""  # the added suite folder the cell was read from ("": the board's own)
    cost: float | None = None  # tokens embedded x the embedder's price (None: no price known)
    price_per_million: float | None = None  # the embedder's price per million tokens

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
    return f"{NO_EMBEDDER[:-1]}; chunked with {short('embedder', embedder)})"


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


@functools.lru_cache(maxsize=1024)
def ranker_spec(retrieval: str) -> str:
    """The ranker of a retrieval setting with its parameters (``exact(block_rows=1024)``,
    ``in_document(ranker=...)``): two budgets of one ranker share it."""
    built, _ = RETRIEVAL.build(retrieval)
    return str(built.ranker)


def reads_vectors(retrieval: str) -> bool:
    """Whether a retrieval setting's ranking reads the chunk vectors (False for BM25, scoped by
    document or not), so that its rows depend on the embedder."""
    return ranker_name(retrieval) != "bm25"


@dataclass(frozen=True)
class _Row:
    """One row of a set's results folder at a setting of the suite, its per-question values in
    the order of the sorted question ids."""

    row: LeaderRow
    info: CellInfo
    setting: SuiteSetting
    ids: tuple[str, ...]
    per_question: dict[str, FloatArray]
    source: str


def read_set(
    suite: Suite,
    suite_set: SuiteSet,
    *,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    notes: list[str] | None = None,
    added: Sequence[Suite] = (),
) -> SetBoard:
    """One set's results folder as a :class:`SetBoard`: its rows at the suite's settings (the
    default scoring), with bootstrap intervals of the shown metrics; with the same set's folders
    of the ``added`` suites (:func:`read_added`) merged in, each checked to hold the same
    sample."""
    notes = notes if notes is not None else []
    folder = suite.path / suite_set.folder
    if not folder.is_dir():
        raise LeaderboardError(
            f"{folder} (set {suite_set.name}) does not exist.",
            f"Rerun `chunkmark suite run` to write it, or remove the set from {suite.path / SUITE_FILE}.",
        )
    folders, sources = [folder], [""]
    for other in added:
        for each in other.sets:
            if each.name == suite_set.name:
                folders.append(_same_sample(folder, other.path / each.folder, each.name))
                sources.append(str(other.path))
    data = load_runs(folders)
    diagnostics = _diagnostics(folders)
    boundaries = _boundary_scores(suite, suite_set, data, notes)
    cells: list[SetCell] = []
    values: dict[CellKey, dict[str, FloatArray]] = {}
    keyword_rows: dict[tuple[str, str], list[tuple[str, dict[str, FloatArray]]]] = {}
    question_ids: tuple[str, ...] | None = None
    for read in _set_rows(suite, suite_set, data, notes, sources):
        if question_ids is None:
            question_ids = read.ids
        elif read.ids != question_ids:
            raise LeaderboardError(
                f"{folder}: the cell {read.info.chunker} x {read.info.embedder} at "
                f"{read.row.retrieval} has other questions than the set's other cells.",
                "Rerun the set with `chunkmark suite run` (all its cells read one dataset).",
            )
        embedder_free = not reads_vectors(read.row.retrieval)
        embedder = read.info.embedder
        if embedder_free:
            group = (read.info.chunker, read.setting.label)
            named = keyword_embedder(group, embedder, keyword_rows, read.per_question)
            if named is None:
                continue  # the same keyword ranking under another embedder: counted once
            embedder = named
        key: CellKey = (read.info.chunker, embedder, read.setting.label)
        if key in values and read.source:
            if all(np.array_equal(values[key][m], read.per_question[m]) for m in values[key]):
                continue  # the same cell in the board's folder and an added one: counted once
            raise LeaderboardError(
                f"{read.source}: the cell {read.info.chunker} x {read.info.embedder} at "
                f"{read.row.retrieval} (set {suite_set.name}) is also in {folder}, with other "
                "results.",
                "Add only cells the board does not have (run the added suite without them).",
            )
        if key in values:
            raise LeaderboardError(
                f"{folder}: two retrieval specs of the set map to the setting "
                f"{read.setting.label!r}.",
                f"Give each setting of {suite.path / SUITE_FILE} its own spec.",
            )
        values[key] = read.per_question
        diag = dict(diagnostics.get((read.info.chunker, read.info.embedder), {}))
        diag.update(boundaries.get(read.info.index, {}))
        intervals = bootstrap_ci(read.per_question, n_resamples=resamples, level=level, seed=seed)
        cells.append(_set_cell(suite_set, read, embedder, embedder_free, intervals, diag))
    _name_keyword_cells(keyword_rows, cells, values)
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


def _set_rows(
    suite: Suite, suite_set: SuiteSet, data: ReportData, notes: list[str], sources: list[str]
) -> Iterator[_Row]:
    """The rows of a set's folder (the default scoring) at the suite's settings for the set's
    scope, with their per-question values; a row without them, or at a setting suite.json does
    not list, is left out with a note."""
    wanted: dict[str, SuiteSetting] = {}
    for each in suite.settings:
        spec = each.spec(suite_set.scope)
        if spec is not None:
            wanted[spec] = each
    unmatched: set[str] = set()
    for row in data.rows:
        if row.scoring != DEFAULT_SCORING.key:
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
        per_question = {
            m: np.asarray(scores.values[m], dtype=np.float64)[order] for m in METRICS_SHOWN
        }
        yield _Row(row, info, setting, ids, per_question, sources[info.run])
    if unmatched:
        notes.append(
            f"{suite_set.name}: {len(unmatched)} retrieval setting(s) of the folder are not in "
            f"suite.json and are left out ({', '.join(sorted(unmatched))})."
        )


def _set_cell(
    suite_set: SuiteSet,
    read: _Row,
    embedder: str,
    embedder_free: bool,
    intervals: Mapping[str, tuple[float, float]],
    diagnostics: dict[str, float],
) -> SetCell:
    info, setting = read.info, read.setting
    return SetCell(
        set=suite_set.name,
        chunker=info.chunker,
        embedder=embedder,
        setting=setting.label,
        tokens=setting.tokens,
        retrieval=read.row.retrieval,
        n_questions=len(read.ids),
        metrics={
            m: Estimate(float(np.mean(read.per_question[m])), *intervals[m]) for m in METRICS_SHOWN
        },
        retrieved_tokens=read.row.retrieved_tokens,
        chunks=info.n_chunks,
        tokens_embedded=0 if embedder_free else info.tokens_embedded,
        index_seconds=info.index_seconds,
        diagnostics=diagnostics,
        source=read.source,
        cost=None if embedder_free else info.cost,
        price_per_million=None if embedder_free else info.price_per_million,
    )


def _diagnostics(folders: Sequence[Path]) -> dict[tuple[str, str], dict[str, float]]:
    """Per chunker x embedder: the diagnostics the folders' manifests record for its cell."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for folder in folders:
        for c in read_manifest(folder).get("cells") or []:
            if isinstance(c, dict):
                out[(str(c.get("chunker")), str(c.get("embedder")))] = diagnostic_values(
                    c.get("diagnostics")
                )
    return out


def read_manifest(folder: Path) -> dict[str, Any]:
    """A results folder's ``manifest.json`` (a LeaderboardError line when it cannot be read)."""
    return _json_object(folder / "manifest.json", "Rerun the set with `chunkmark suite run`.")


def _json_object(file: Path, fix: str) -> dict[str, Any]:
    """The JSON object in ``file``; one LeaderboardError line with ``fix`` when it cannot be
    read or is not an object."""
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LeaderboardError(f"Cannot read {file}: {exc}.", fix) from None
    if not isinstance(raw, dict):
        raise LeaderboardError(f"{file} is not a JSON object.", fix)
    return raw


def read_added(suite: Suite, paths: Sequence[str | Path]) -> list[Suite]:
    """Suite folders whose cells join the board's (``--add``): say, a closed model's results
    from ``chunkmark suite run -e "openai(...)"`` over the board's sets. Each set of an added
    folder must be a set of the board, searched in the same scope (its sample is checked when
    the set is read); a set the board has and an added folder lacks leaves the added cells off
    the ranking across sets, with a note."""
    added = [read_suite(p) for p in paths]
    board = {s.name: s for s in suite.sets}
    for other in added:
        for each in other.sets:
            mine = board.get(each.name)
            if mine is None:
                raise LeaderboardError(
                    f"{other.path / SUITE_FILE}: the set {each.name!r} is not on the board "
                    f"({suite.path / SUITE_FILE} has {', '.join(board)}).",
                    "Add results of the board's own sets (`chunkmark suite run` with its sets).",
                )
            if each.scope != mine.scope:
                raise LeaderboardError(
                    f"{other.path / SUITE_FILE}: the set {each.name!r} was searched in scope "
                    f"{each.scope!r}, on the board in scope {mine.scope!r}.",
                    "Rerun the added suite with this chunkmark's `chunkmark suite run`.",
                )
    return added


def _same_sample(board: Path, added: Path, name: str) -> Path:
    """``added``, when its dataset is the one the board's folder of the set was run on (the
    same fingerprint: the same documents and questions); else one LeaderboardError line."""
    if not added.is_dir():
        raise LeaderboardError(
            f"{added} (set {name}) does not exist.",
            "Rerun the added suite with `chunkmark suite run`, or remove the set from its "
            "suite.json.",
        )
    found = []
    for folder in (board, added):
        datasets = read_manifest(folder).get("datasets") or [{}]
        found.append((str(datasets[0].get("fingerprint")), datasets[0].get("questions")))
    if found[0] != found[1]:
        raise LeaderboardError(
            f"{added}: the set {name} was run on another sample than the board's ({found[1][1]} "
            f"questions, dataset fingerprint {found[1][0]}; the board's {board}: {found[0][1]} "
            f"questions, fingerprint {found[0][0]}).",
            "Run the added suite on the board's sample: the same sets and the same --docs and "
            "--seed (or --full) in `chunkmark suite run`.",
        )
    return added


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
