"""Reading results folders into typed tables for the report.

A results folder (``chunkmark run --out``) holds ``manifest.json`` (the datasets, cells and
their facts, cells that failed), ``summary.csv`` (means, standard deviations and bootstrap
intervals per cell x retrieval setting x scoring x scope), ``results.parquet`` (one row per
question x cell x retrieval setting x scoring) and, per computed cell, ``cells/<id>.chunks.parquet``
and ``cells/<id>.ranking.parquet`` (one ranking per ranker and question). Folders written before
retrieval settings, scoring options and several datasets per run are read too: a row without a
``retrieval`` is ``top_k(k=<k>)``, one without scoring columns has the default scoring, a
manifest with one ``dataset`` object holds that dataset, a ranking file without ``ranker`` is the
dense ranking.

Several folders can be read together: cells of the same dataset (same fingerprint) are pooled;
a cell found twice is kept once (the later folder adds only the settings the earlier one lacks).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.costs.embedding_prices import EmbeddingPrices, load_embedding_prices
from chunkmark.errors import ChunkmarkError
from chunkmark.files import read_parquet
from chunkmark.metrics import METRICS
from chunkmark.report.errors import ReportError
from chunkmark.report.settings import (
    DEFAULT_SCORING,
    Scoring,
    fixed_depth,
    is_dense,
    is_dense_ranker,
    ordered,
    retrieval_of,
    short_forms,
    top_k,
)
from chunkmark.specs import parse_spec

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
# The parameter that sets a chunker's size, first match wins; chunkers without one are placed
# by their mean chunk tokens.
SIZE_PARAMS = ("size", "chunk_size", "max_size", "avg_size", "max_tokens", "max_length", "n")
_RUN_FIX = "Pass folders written by `chunkmark run` (their --out)."


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset the report covers: ``key`` labels it on the page (its name, plus the start of
    its fingerprint when two datasets share a name)."""

    key: str
    name: str
    source: str
    fingerprint: str
    documents: int
    questions: int


@dataclass(frozen=True)
class RunInfo:
    """One results folder and the datasets (their keys) it holds."""

    path: Path
    datasets: tuple[str, ...]
    created: str | None
    version: str | None
    wall_seconds: float | None
    cells: int


@dataclass(frozen=True)
class CellInfo:
    """One (dataset, chunker, embedder) cell and what indexing with it costs.

    ``tokens_embedded`` counts the cl100k_base tokens of every chunk: what indexing the corpus
    from scratch embeds, whatever the embedding cache saved. ``cost`` is that times the
    embedder's price (None when the price is unknown).
    """

    index: int
    id: str
    run: int
    dataset: str
    chunker: str
    embedder: str
    chunker_short: str
    embedder_short: str
    family: str
    size_param: str | None
    size: float | None
    n_chunks: int
    mean_chunk_tokens: float
    tokens_embedded: int
    index_seconds: float
    price_per_million: float | None
    cost: float | None
    cell_dir: Path

    @property
    def label(self) -> str:
        """The cell's short name on the page."""
        return f"{self.chunker_short} × {self.embedder_short}"

    def chunks_path(self) -> Path:
        return self.cell_dir / f"{self.id}.chunks.parquet"

    def ranking_path(self) -> Path:
        return self.cell_dir / f"{self.id}.ranking.parquet"


# A leaderboard row's identity: (cell index, retrieval setting, scoring key).
RowKey = tuple[int, str, str]


@dataclass(frozen=True)
class FailedCell:
    """A cell the run could not compute (it has no rows anywhere)."""

    run: int
    id: str
    dataset: str
    chunker: str
    embedder: str
    error: str


@dataclass(frozen=True)
class Scores:
    """Per-question values of one cell at one retrieval setting and scoring, in the order of
    ``question_ids``; ``retrieved_tokens`` is None for folders that did not record it."""

    question_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    k_used: IntArray
    values: dict[str, FloatArray]
    retrieved_tokens: FloatArray | None = None


@dataclass(frozen=True)
class LeaderRow:
    """One cell at one retrieval setting and scoring: the summary's means, standard deviations
    and 95% intervals, the mean number of chunks and of tokens retrieved per question.

    ``k`` is the setting's k as the runs write it (``"5"``, ``"min"``; ``""`` for settings
    without one, such as ``token_budget``); ``scoring`` is a :attr:`Scoring.key`.
    """

    cell: int
    retrieval: str
    scoring: str
    k: str
    n_questions: int
    mean: dict[str, float]
    std: dict[str, float]
    ci: dict[str, tuple[float, float]]
    retrieved_tokens: float
    k_used: float = math.nan

    @property
    def key(self) -> RowKey:
        return (self.cell, self.retrieval, self.scoring)


@dataclass(frozen=True)
class ChunkSpans:
    """A cell's chunks in index order (from ``cells/<id>.chunks.parquet``)."""

    doc_ids: tuple[str, ...]
    start: IntArray
    end: IntArray
    tokens: IntArray


@dataclass(frozen=True)
class Ranking:
    """A cell's ranking: per question, chunk indices best first and their cosine similarity."""

    question_ids: tuple[str, ...]
    chunks: list[list[int]]
    scores: list[list[float]]


@dataclass
class ReportData:
    """Everything read from the results folders."""

    runs: list[RunInfo]
    datasets: list[DatasetInfo]
    cells: list[CellInfo]
    rows: list[LeaderRow]
    scores: dict[RowKey, Scores]
    prices: EmbeddingPrices
    failures: list[FailedCell] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _rankings: dict[int, Ranking | None] = field(default_factory=dict, repr=False)
    _chunks: dict[int, ChunkSpans | None] = field(default_factory=dict, repr=False)

    def row(self, cell: int, retrieval: str, scoring: str) -> LeaderRow | None:
        """The leaderboard row of ``cell`` at a retrieval setting and scoring, if any."""
        for row in self.rows:
            if row.key == (cell, retrieval, scoring):
                return row
        return None

    @property
    def retrievals(self) -> list[str]:
        """The retrieval settings of the rows, in display order."""
        return ordered(r.retrieval for r in self.rows)

    @property
    def scorings(self) -> list[Scoring]:
        """The scorings of the rows, sorted."""
        return sorted({Scoring.from_key(r.scoring) for r in self.rows})

    @property
    def ks(self) -> list[str]:
        """The k values of the rows: numbers in order, then the others (``min``)."""
        ks = {r.k for r in self.rows if r.k}
        numbers = sorted((k for k in ks if k.isdigit()), key=int)
        return numbers + sorted(k for k in ks if not k.isdigit())

    def short_retrievals(self) -> dict[str, str]:
        """Each retrieval setting's short form for display (see :func:`short_forms`)."""
        return short_forms(r.retrieval for r in self.rows)

    def cells_of(self, dataset: str) -> list[CellInfo]:
        return [c for c in self.cells if c.dataset == dataset]

    def shared_questions(self, keys: Sequence[RowKey]) -> list[str]:
        """The ids of the questions every one of ``keys`` scored, in the order of the first."""
        if not keys:
            return []
        common = set.intersection(*(set(self.scores[k].question_ids) for k in keys))
        return [q for q in self.scores[keys[0]].question_ids if q in common]

    def ranking(self, cell: int) -> Ranking | None:
        """The cell's dense ranking, read once; None when the run did not keep it."""
        if cell not in self._rankings:
            self._rankings[cell] = read_ranking(self.cells[cell].ranking_path())
        return self._rankings[cell]

    def chunks(self, cell: int) -> ChunkSpans | None:
        """The cell's chunk file, read once; None when the run did not keep it."""
        if cell not in self._chunks:
            self._chunks[cell] = read_chunks(self.cells[cell].chunks_path())
        return self._chunks[cell]


def paired_values(
    data: ReportData, options: Sequence[RowKey], metric: str
) -> dict[RowKey, FloatArray]:
    """Each scored option's per-question values of ``metric`` over the questions all of them
    share, in one order (:meth:`ReportData.shared_questions`)."""
    scored = [o for o in options if o in data.scores]
    order = data.shared_questions(scored)
    out: dict[RowKey, FloatArray] = {}
    for o in scored:
        position = {q: i for i, q in enumerate(data.scores[o].question_ids)}
        out[o] = data.scores[o].values[metric][[position[q] for q in order]]
    return out


def load_prices(path: str | Path | None = None) -> EmbeddingPrices:
    """The embedding price table (:mod:`chunkmark.costs.embedding_prices`) with the entries of
    ``path`` (``--prices FILE``); a bad file is a ReportError."""
    return load_embedding_prices(path, ReportError)


def load_runs(paths: Sequence[str | Path], prices: EmbeddingPrices | None = None) -> ReportData:
    """Read results folders into a :class:`ReportData` (a ReportError names a bad folder)."""
    if not paths:
        raise ReportError("No results folder was given.", _RUN_FIX)
    price_table = prices or load_prices()
    manifests = [(Path(p), _read_manifest(Path(p))) for p in paths]
    keys = _dataset_keys([m for _, m in manifests])
    data = ReportData([], [], [], [], {}, price_table)
    seen: dict[tuple[str, str, str], int] = {}
    for run_index, (path, manifest) in enumerate(manifests):
        infos = [_dataset_info(d, keys) for d in manifest_datasets(manifest)]
        for info in infos:
            if all(d.key != info.key for d in data.datasets):
                data.datasets.append(info)
        _add_run(data, run_index, path, manifest, infos, seen)
    _fill_retrieved_tokens(data)
    return data


def manifest_datasets(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's datasets: its ``datasets`` list, or the one ``dataset`` of older runs."""
    many = manifest.get("datasets")
    if isinstance(many, list):
        return [d for d in many if isinstance(d, dict)]
    one = manifest.get("dataset")
    return [one] if isinstance(one, dict) else []


def _add_run(
    data: ReportData,
    run_index: int,
    path: Path,
    manifest: dict[str, Any],
    infos: list[DatasetInfo],
    seen: dict[tuple[str, str, str], int],
) -> None:
    """Add one folder's cells, leaderboard rows, per-question scores and failures to ``data``."""
    summary = _read_summary(path)
    results = _read_results(path)
    identities = {s: e.get("identity", {}) for s, e in (manifest.get("embedding") or {}).items()}
    added = 0
    for facts in manifest.get("cells") or []:
        info = _dataset_of(facts, infos)
        chunker, embedder = str(facts["chunker"]), str(facts["embedder"])
        own = (info.name, chunker, embedder)
        cell_summary = [r for r in summary if _summary_key(r, info) == own]
        cell_results = {k[3:]: v for k, v in results.items() if (k[0] or info.name, *k[1:3]) == own}
        key = (info.fingerprint, chunker, embedder)
        if key in seen:
            cell = data.cells[seen[key]]
            new = _add_rows(data, cell, cell_summary, cell_results)
            more = (
                f"; its {new} row(s) for settings the earlier folder lacks are added" if new else ""
            )
            data.notes.append(
                f"{path}: the cell {chunker} x {embedder} is also in an earlier folder; the "
                f"first one is shown{more}."
            )
            continue
        cell = _cell_info(len(data.cells), run_index, path, info, facts, identities, data)
        seen[key] = cell.index
        data.cells.append(cell)
        added += 1
        _add_rows(data, cell, cell_summary, cell_results)
    for failure in manifest.get("failures") or []:
        data.failures.append(_failure(run_index, failure, infos))
    timings = manifest.get("timings") or {}
    data.runs.append(
        RunInfo(
            path=path,
            datasets=tuple(d.key for d in infos),
            created=manifest.get("created"),
            version=(manifest.get("versions") or {}).get("chunkmark"),
            wall_seconds=timings.get("wall"),
            cells=added,
        )
    )


def _summary_key(row: dict[str, str], info: DatasetInfo) -> tuple[str, str, str]:
    return (row.get("dataset") or info.name, row["chunker"], row["embedder"])


def _dataset_of(facts: dict[str, Any], infos: list[DatasetInfo]) -> DatasetInfo:
    """A cell's dataset: by its fingerprint, else its dataset name, else the run's only one."""
    fingerprint, name = facts.get("fingerprint"), facts.get("dataset")
    for info in infos:
        if fingerprint and info.fingerprint == str(fingerprint):
            return info
    for info in infos:
        if name and info.name == str(name):
            return info
    if len(infos) == 1:
        return infos[0]
    raise ReportError(
        f"The cell {facts.get('chunker')} x {facts.get('embedder')} names a dataset "
        f"({name or fingerprint}) its manifest does not list.",
        "Rerun `chunkmark run`.",
    )


def _failure(run: int, failure: dict[str, Any], infos: list[DatasetInfo]) -> FailedCell:
    name = str(failure.get("dataset") or "")
    key = next((i.key for i in infos if i.name == name), name)
    return FailedCell(
        run=run,
        id=str(failure.get("id") or ""),
        dataset=key,
        chunker=str(failure.get("chunker") or ""),
        embedder=str(failure.get("embedder") or ""),
        error=str(failure.get("error") or ""),
    )


def _read_manifest(path: Path) -> dict[str, Any]:
    file = path / "manifest.json"
    if not file.is_file():
        raise ReportError(f"{path} holds no manifest.json.", _RUN_FIX)
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"Cannot read {file}: {exc}.", "Rerun `chunkmark run`.") from None
    if not isinstance(manifest, dict) or "cells" not in manifest:
        raise ReportError(f"{file} is not a chunkmark manifest.", _RUN_FIX)
    datasets = manifest_datasets(manifest)
    if not datasets or any("name" not in d or "fingerprint" not in d for d in datasets):
        raise ReportError(f"{file} names no dataset (name and fingerprint).", _RUN_FIX)
    return manifest


def _dataset_keys(manifests: list[dict[str, Any]]) -> dict[str, str]:
    """fingerprint -> the label of its dataset (name, plus a fingerprint prefix on clashes)."""
    names: dict[str, set[str]] = {}
    for m in manifests:
        for d in manifest_datasets(m):
            names.setdefault(str(d["name"]), set()).add(str(d["fingerprint"]))
    keys: dict[str, str] = {}
    for name, prints in names.items():
        for fp in prints:
            keys[fp] = name if len(prints) == 1 else f"{name}@{fp[:6]}"
    return keys


def _dataset_info(d: dict[str, Any], keys: dict[str, str]) -> DatasetInfo:
    return DatasetInfo(
        key=keys[str(d["fingerprint"])],
        name=str(d["name"]),
        source=str(d.get("source") or ""),
        fingerprint=str(d["fingerprint"]),
        documents=int(d.get("documents") or 0),
        questions=int(d.get("questions") or 0),
    )


def _cell_info(
    index: int,
    run: int,
    path: Path,
    dataset: DatasetInfo,
    facts: dict[str, Any],
    identities: dict[str, Any],
    data: ReportData,
) -> CellInfo:
    chunker, embedder = str(facts["chunker"]), str(facts["embedder"])
    family, size_param, size = chunker_size(chunker)
    n_chunks = int(facts.get("n_chunks") or 0)
    tokens = int(facts.get("chunk_tokens") or 0)
    timings = facts.get("timings") or {}
    price = data.prices.price_of(embedder, identities.get(embedder))
    return CellInfo(
        index=index,
        id=str(facts["id"]),
        run=run,
        dataset=dataset.key,
        chunker=chunker,
        embedder=embedder,
        chunker_short=short_name("chunker", chunker),
        embedder_short=short_name("embedder", embedder),
        family=family,
        size_param=size_param,
        size=size,
        n_chunks=n_chunks,
        mean_chunk_tokens=tokens / n_chunks if n_chunks else math.nan,
        tokens_embedded=tokens,
        index_seconds=float(timings.get("embed_documents", 0.0)) + float(timings.get("chunk", 0.0)),
        price_per_million=price,
        cost=None if price is None else tokens * price / 1_000_000,
        cell_dir=path / "cells",
    )


def chunker_size(spec: str) -> tuple[str, str | None, float | None]:
    """A chunker spec's family (its name), and its size parameter and value when it has one."""
    try:
        name, _, kwargs = parse_spec(spec)
    except ChunkmarkError:
        return spec.split("(", 1)[0], None, None
    for param in SIZE_PARAMS:
        value = kwargs.get(param)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return name, param, float(value)
    return name, None, None


def short_name(kind: str, spec: str) -> str:
    """The spec for display (``Registry.short``), or the spec itself when it does not resolve."""
    try:
        if kind == "chunker":
            from chunkmark.chunkers import CHUNKERS

            return CHUNKERS.short(spec)
        from chunkmark.embedders import EMBEDDERS

        return EMBEDDERS.short(spec)
    except ChunkmarkError:
        return spec


def _read_summary(path: Path) -> list[dict[str, str]]:
    file = path / "summary.csv"
    try:
        with file.open(encoding="utf-8", newline="") as handle:
            return [row for row in csv.DictReader(handle) if row.get("scope") == "all"]
    except OSError as exc:
        raise ReportError(f"Cannot read {file}: {exc}.", _RUN_FIX) from None


# results.parquet groups: (dataset, chunker, embedder, retrieval, scoring key)
ResultKey = tuple[str, str, str, str, str]
_KEY_COLUMNS = ("dataset", "chunker", "embedder", "retrieval", "k")
_SCORING_COLUMNS = ("excerpts", "unit", "denominator")
_DEFAULTS = (DEFAULT_SCORING.excerpts, DEFAULT_SCORING.unit, DEFAULT_SCORING.denominator)


def _read_results(path: Path) -> dict[ResultKey, Scores]:
    """results.parquet grouped by dataset, cell, retrieval setting and scoring.

    Read column by column: only the columns used, the key columns dictionary-encoded (one
    Python string per distinct value, not per row) and the metric columns as numpy arrays, so
    a full suite's millions of rows never become Python objects row by row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = path / "results.parquet"
    try:
        present = set(pq.read_schema(file).names)
        names = [m for m in METRICS.names() if m in present]
        fixed = ("question_id", "doc_id", "k_used", "retrieved_tokens")
        wanted = [c for c in (*_KEY_COLUMNS, *_SCORING_COLUMNS, *fixed) if c in present]
        table = read_parquet(file, columns=wanted + names)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ReportError(f"Cannot read {file}: {exc}.", _RUN_FIX) from None
    n = table.num_rows
    if n == 0:
        return {}
    codes: list[IntArray] = []
    values: list[list[Any]] = []
    for column in (*_KEY_COLUMNS, *_SCORING_COLUMNS):
        if column in table.column_names:
            c, v = _encoded(table.column(column))
        else:
            c, v = np.zeros(n, dtype=np.int64), [None]
        codes.append(c)
        values.append(v)
    group_of = np.zeros(n, dtype=np.int64)
    for c, v in zip(codes, values, strict=True):  # dense codes after each column: no overflow
        group_of = np.unique(group_of * len(v) + c, return_inverse=True)[1].astype(np.int64)
    _, first, inverse = np.unique(group_of, return_index=True, return_inverse=True)
    # each distinct combination of raw values gets its key; combinations spelling one key
    # differently (no retrieval column and top_k(k=5), an empty scoring and the default) merge
    keys: list[ResultKey] = []
    key_ids: dict[ResultKey, int] = {}
    key_of_group = np.empty(len(first), dtype=np.int64)
    for g in np.argsort(first, kind="stable"):  # in the order of their first row
        row = int(first[g])
        dataset, chunker, embedder, retrieval, k, *scoring = (
            v[int(c[row])] for c, v in zip(codes, values, strict=True)
        )
        key = (
            str(dataset or ""),
            str(chunker),
            str(embedder),
            str(retrieval) if retrieval else top_k(str(k)),
            Scoring.of(*(str(v or d) for v, d in zip(scoring, _DEFAULTS, strict=True))).key,
        )
        key_of_group[g] = key_ids.setdefault(key, len(keys))
        if key_ids[key] == len(keys):
            keys.append(key)
    row_key = key_of_group[inverse.reshape(-1)]
    members = np.argsort(row_key, kind="stable")  # file order within a key
    bounds = np.searchsorted(row_key[members], np.arange(len(keys) + 1))
    columns = {m: _floats(table.column(m)) for m in names}
    k_used = np.asarray(table.column("k_used").to_numpy(zero_copy_only=False), dtype=np.int64)
    retrieved = _floats(table.column("retrieved_tokens")) if "retrieved_tokens" in present else None
    question_codes, question_values = _encoded(table.column("question_id"))
    doc_codes, doc_values = _encoded(table.column("doc_id"))
    out: dict[ResultKey, Scores] = {}
    for i, key in enumerate(keys):
        idx = members[bounds[i] : bounds[i + 1]]
        out[key] = Scores(
            question_ids=tuple(question_values[j] for j in question_codes[idx]),
            doc_ids=tuple(doc_values[j] for j in doc_codes[idx]),
            k_used=k_used[idx],
            values={m: columns[m][idx] for m in names},
            retrieved_tokens=None if retrieved is None else retrieved[idx],
        )
    return out


def _encoded(column: Any) -> tuple[IntArray, list[Any]]:
    """A pyarrow column as integer codes into its distinct values (nulls are one value,
    None)."""
    import pyarrow as pa

    encoded = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_dictionary(encoded.type):
        encoded = encoded.dictionary_encode(null_encoding="encode")
    dictionary: list[Any] = encoded.dictionary.to_pylist()
    indices = encoded.indices
    if indices.null_count:  # a dictionary column read back with nulls as null indices
        dictionary.append(None)
        indices = indices.fill_null(len(dictionary) - 1)
    return np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64), dictionary


def _floats(column: Any) -> FloatArray:
    """A numeric pyarrow column as float64, nulls as NaN."""
    import pyarrow.compute as pc

    return np.asarray(pc.cast(column, "float64").to_numpy(zero_copy_only=False), dtype=np.float64)


def _add_rows(
    data: ReportData,
    cell: CellInfo,
    summary: list[dict[str, str]],
    results: dict[tuple[str, str], Scores],
) -> int:
    """The cell's leaderboard rows (from summary.csv) and per-question scores, keyed by
    (retrieval, scoring) in ``results``; rows the cell already has are skipped. Returns how
    many were added."""
    have = {r.key for r in data.rows if r.cell == cell.index}
    added = 0
    for row in summary:
        retrieval, scoring = retrieval_of(row), Scoring.from_row(row).key
        key = (cell.index, retrieval, scoring)
        if key in have:
            continue
        have.add(key)
        mean = {m: _float(row.get(f"{m}_mean")) for m in METRICS.names()}
        std = {m: _float(row.get(f"{m}_std")) for m in METRICS.names()}
        ci = {
            m: (_float(row.get(f"{m}_ci_low")), _float(row.get(f"{m}_ci_high")))
            for m in METRICS.with_interval()
        }
        data.rows.append(
            LeaderRow(
                cell=cell.index,
                retrieval=retrieval,
                scoring=scoring,
                k=str(row.get("k") or ""),
                n_questions=int(row["n_questions"]),
                mean=mean,
                std=std,
                ci=ci,
                retrieved_tokens=_float(row.get("mean_retrieved_tokens")),
                k_used=_float(row.get("mean_k_used")),
            )
        )
        added += 1
        scores = results.get((retrieval, scoring))
        if scores is not None:
            data.scores[key] = scores
    return added


def _float(text: str | None) -> float:
    if text is None or text == "":
        return math.nan
    return float(text)


def _fill_retrieved_tokens(data: ReportData) -> None:
    """Fill what older folders did not record: the mean tokens retrieved per question (the
    retrieved chunks' tokens summed when the cell's chunks and dense ranking were kept, else
    chunks retrieved x the mean chunk tokens) and the mean chunks retrieved."""
    for i, row in enumerate(data.rows):
        cell = data.cells[row.cell]
        scores = data.scores.get(row.key)
        k_used = row.k_used
        if math.isnan(k_used):
            depth = fixed_depth(row.retrieval)
            if scores is not None and len(scores.k_used):
                k_used = float(np.mean(scores.k_used))
            elif depth is not None:
                k_used = float(depth)
        tokens = row.retrieved_tokens
        if math.isnan(tokens):
            if scores is not None and scores.retrieved_tokens is not None:
                tokens = float(np.mean(scores.retrieved_tokens)) if len(scores.k_used) else 0.0
            elif scores is not None and is_dense(row.retrieval):
                tokens = _retrieved_tokens(data, cell, scores)
            else:
                tokens = k_used * cell.mean_chunk_tokens
        data.rows[i] = replace(row, retrieved_tokens=float(tokens), k_used=float(k_used))


def _retrieved_tokens(data: ReportData, cell: CellInfo, scores: Scores) -> float:
    chunks, ranking = data.chunks(cell.index), data.ranking(cell.index)
    if chunks is None or ranking is None or not len(scores.k_used):
        return float(np.mean(scores.k_used)) * cell.mean_chunk_tokens if len(scores.k_used) else 0.0
    position = {q: i for i, q in enumerate(ranking.question_ids)}
    total = 0
    for q, depth in zip(scores.question_ids, scores.k_used.tolist(), strict=True):
        ids = ranking.chunks[position[q]][:depth] if q in position else []
        total += int(chunks.tokens[ids].sum()) if ids else 0
    return total / len(scores.question_ids)


def read_chunks(path: Path) -> ChunkSpans | None:
    """A cell's chunk file, or None when it is missing or unreadable."""
    table = _read_optional(path, ["doc_id", "start", "end", "tokens"])
    if table is None:
        return None
    return ChunkSpans(
        doc_ids=tuple(table["doc_id"]),
        start=np.asarray(table["start"], dtype=np.int64),
        end=np.asarray(table["end"], dtype=np.int64),
        tokens=np.asarray(table["tokens"], dtype=np.int64),
    )


def read_ranking(path: Path) -> Ranking | None:
    """A cell's dense ranking (the rows whose ``ranker`` is ``exact(...)``, or every row of a
    file without that column), or None when it is missing, unreadable or has none."""
    table = _read_optional(path, ["question_id", "chunks", "scores"], optional=["ranker"])
    if table is None:
        return None
    rankers = table.get("ranker")
    keep = [
        i
        for i in range(len(table["question_id"]))
        if rankers is None or is_dense_ranker(rankers[i])
    ]
    if not keep:
        return None
    return Ranking(
        tuple(table["question_id"][i] for i in keep),
        [table["chunks"][i] for i in keep],
        [table["scores"][i] for i in keep],
    )


def _read_optional(
    path: Path, columns: list[str], optional: Sequence[str] = ()
) -> dict[str, list[Any]] | None:
    """``columns`` (and those of ``optional`` the file has) of a parquet file, or None when it
    is missing, unreadable or lacks one of ``columns``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        names = pq.read_schema(path).names
        wanted = columns + [c for c in optional if c in names]
        data: dict[str, list[Any]] = read_parquet(path, columns=wanted).to_pydict()
    except (OSError, pa.ArrowInvalid, KeyError):
        return None
    return data
