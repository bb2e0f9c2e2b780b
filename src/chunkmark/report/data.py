"""Reading results folders into typed tables for the report.

A results folder (``chunkmark run --out``) holds ``manifest.json`` (cells, their facts and the
dataset), ``summary.csv`` (means, standard deviations and bootstrap intervals per cell x k x
scope), ``results.parquet`` (one row per question x cell x k) and, per computed cell,
``cells/<id>.chunks.parquet`` and ``cells/<id>.ranking.parquet``. Several folders can be read
together: cells of the same dataset (same fingerprint) are pooled, a cell found twice is kept
once.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.errors import ChunkmarkError
from chunkmark.metrics import METRICS
from chunkmark.report.errors import ReportError
from chunkmark.report.prices import PriceTable, load_prices
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
    """One results folder."""

    path: Path
    dataset: str
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


@dataclass(frozen=True)
class Scores:
    """Per-question values of one cell at one k, in the order of ``question_ids``."""

    question_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    k_used: IntArray
    values: dict[str, FloatArray]


@dataclass(frozen=True)
class LeaderRow:
    """One cell at one k: the summary's means, standard deviations and 95% intervals, and the
    mean number of tokens retrieved per question."""

    cell: int
    k: str
    n_questions: int
    mean: dict[str, float]
    std: dict[str, float]
    ci: dict[str, tuple[float, float]]
    retrieved_tokens: float


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
    scores: dict[tuple[int, str], Scores]
    ks: list[str]
    prices: PriceTable
    notes: list[str] = field(default_factory=list)
    _rankings: dict[int, Ranking | None] = field(default_factory=dict, repr=False)
    _chunks: dict[int, ChunkSpans | None] = field(default_factory=dict, repr=False)

    def row(self, cell: int, k: str) -> LeaderRow | None:
        """The leaderboard row of ``cell`` at ``k``, if the runs hold it."""
        for row in self.rows:
            if row.cell == cell and row.k == k:
                return row
        return None

    def cells_of(self, dataset: str) -> list[CellInfo]:
        return [c for c in self.cells if c.dataset == dataset]

    def ranking(self, cell: int) -> Ranking | None:
        """The cell's ranking file, read once; None when the run did not keep it."""
        if cell not in self._rankings:
            self._rankings[cell] = read_ranking(self.cells[cell].ranking_path())
        return self._rankings[cell]

    def chunks(self, cell: int) -> ChunkSpans | None:
        """The cell's chunk file, read once; None when the run did not keep it."""
        if cell not in self._chunks:
            self._chunks[cell] = read_chunks(self.cells[cell].chunks_path())
        return self._chunks[cell]


def load_runs(paths: Sequence[str | Path], prices: PriceTable | None = None) -> ReportData:
    """Read results folders into a :class:`ReportData` (a ReportError names a bad folder)."""
    if not paths:
        raise ReportError("No results folder was given.", _RUN_FIX)
    price_table = prices or load_prices()
    manifests = [(Path(p), _read_manifest(Path(p))) for p in paths]
    keys = _dataset_keys([m for _, m in manifests])
    data = ReportData([], [], [], [], {}, [], price_table)
    seen: dict[tuple[str, str, str], int] = {}
    for run_index, (path, manifest) in enumerate(manifests):
        dataset = _dataset_info(manifest, keys)
        if all(d.key != dataset.key for d in data.datasets):
            data.datasets.append(dataset)
        _add_run(data, run_index, path, manifest, dataset, seen)
    data.ks = _ordered_ks(data.rows)
    _fill_retrieved_tokens(data)
    return data


def _add_run(
    data: ReportData,
    run_index: int,
    path: Path,
    manifest: dict[str, Any],
    dataset: DatasetInfo,
    seen: dict[tuple[str, str, str], int],
) -> None:
    """Add one folder's cells, leaderboard rows and per-question scores to ``data``."""
    summary = _read_summary(path)
    results = _read_results(path)
    cells = manifest.get("cells") or []
    identities = {s: e.get("identity", {}) for s, e in (manifest.get("embedding") or {}).items()}
    added = 0
    for facts in cells:
        key = (dataset.fingerprint, str(facts["chunker"]), str(facts["embedder"]))
        if key in seen:
            data.notes.append(
                f"{path}: the cell {facts['chunker']} x {facts['embedder']} is also in an "
                "earlier folder; the first one is shown."
            )
            continue
        cell = _cell_info(len(data.cells), run_index, path, dataset, facts, identities, data)
        seen[key] = cell.index
        data.cells.append(cell)
        added += 1
        _add_rows(data, cell, summary, results)
    timings = manifest.get("timings") or {}
    data.runs.append(
        RunInfo(
            path=path,
            dataset=dataset.key,
            created=manifest.get("created"),
            version=(manifest.get("versions") or {}).get("chunkmark"),
            wall_seconds=timings.get("wall"),
            cells=added,
        )
    )


def _read_manifest(path: Path) -> dict[str, Any]:
    file = path / "manifest.json"
    if not file.is_file():
        raise ReportError(f"{path} holds no manifest.json.", _RUN_FIX)
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"Cannot read {file}: {exc}.", "Rerun `chunkmark run`.") from None
    if not isinstance(manifest, dict) or "cells" not in manifest or "dataset" not in manifest:
        raise ReportError(f"{file} is not a chunkmark manifest.", _RUN_FIX)
    return manifest


def _dataset_keys(manifests: list[dict[str, Any]]) -> dict[str, str]:
    """fingerprint -> the label of its dataset (name, plus a fingerprint prefix on clashes)."""
    names: dict[str, set[str]] = {}
    for m in manifests:
        names.setdefault(str(m["dataset"]["name"]), set()).add(str(m["dataset"]["fingerprint"]))
    keys: dict[str, str] = {}
    for name, prints in names.items():
        for fp in prints:
            keys[fp] = name if len(prints) == 1 else f"{name}@{fp[:6]}"
    return keys


def _dataset_info(manifest: dict[str, Any], keys: dict[str, str]) -> DatasetInfo:
    d = manifest["dataset"]
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


def _read_results(path: Path) -> dict[tuple[str, str, str], Scores]:
    """results.parquet grouped by (chunker, embedder, k)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = path / "results.parquet"
    try:
        table = pq.read_table(file)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ReportError(f"Cannot read {file}: {exc}.", _RUN_FIX) from None
    names = [m for m in METRICS.names() if m in table.column_names]
    data = table.to_pydict()
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, key in enumerate(zip(data["chunker"], data["embedder"], data["k"], strict=True)):
        groups.setdefault(key, []).append(i)
    columns = {m: np.asarray(data[m], dtype=np.float64) for m in names}
    k_used = np.asarray(data["k_used"], dtype=np.int64)
    out: dict[tuple[str, str, str], Scores] = {}
    for key, rows in groups.items():
        idx = np.asarray(rows, dtype=np.int64)
        out[key] = Scores(
            question_ids=tuple(data["question_id"][i] for i in rows),
            doc_ids=tuple(data["doc_id"][i] for i in rows),
            k_used=k_used[idx],
            values={m: columns[m][idx] for m in names},
        )
    return out


def _add_rows(
    data: ReportData,
    cell: CellInfo,
    summary: list[dict[str, str]],
    results: dict[tuple[str, str, str], Scores],
) -> None:
    """The cell's leaderboard rows (from summary.csv) and per-question scores."""
    for row in summary:
        if row["chunker"] != cell.chunker or row["embedder"] != cell.embedder:
            continue
        k = row["k"]
        mean = {m: _float(row.get(f"{m}_mean")) for m in METRICS.names()}
        std = {m: _float(row.get(f"{m}_std")) for m in METRICS.names()}
        ci = {
            m: (_float(row.get(f"{m}_ci_low")), _float(row.get(f"{m}_ci_high")))
            for m in METRICS.with_interval()
        }
        data.rows.append(LeaderRow(cell.index, k, int(row["n_questions"]), mean, std, ci, math.nan))
        scores = results.get((cell.chunker, cell.embedder, k))
        if scores is not None:
            data.scores[(cell.index, k)] = scores


def _float(text: str | None) -> float:
    if text is None or text == "":
        return math.nan
    return float(text)


def _ordered_ks(rows: list[LeaderRow]) -> list[str]:
    """The k values of the runs: numbers in order, then the others (``min``)."""
    ks = {r.k for r in rows}
    numbers = sorted((k for k in ks if k.isdigit()), key=int)
    return numbers + sorted(k for k in ks if not k.isdigit())


def _fill_retrieved_tokens(data: ReportData) -> None:
    """Mean tokens retrieved per question for every row: summed over the retrieved chunks when
    the cell's chunks and ranking were kept, else k_used x the mean chunk tokens."""
    for i, row in enumerate(data.rows):
        cell = data.cells[row.cell]
        scores = data.scores.get((row.cell, row.k))
        if scores is None:
            depth = float(row.k) if row.k.isdigit() else math.nan
            value = depth * cell.mean_chunk_tokens
        else:
            value = _retrieved_tokens(data, cell, scores)
        data.rows[i] = LeaderRow(
            row.cell, row.k, row.n_questions, row.mean, row.std, row.ci, float(value)
        )


def _retrieved_tokens(data: ReportData, cell: CellInfo, scores: Scores) -> float:
    chunks, ranking = data.chunks(cell.index), data.ranking(cell.index)
    if chunks is None or ranking is None or not len(scores.k_used):
        return float(np.mean(scores.k_used)) * cell.mean_chunk_tokens
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
    """A cell's ranking file, or None when it is missing or unreadable."""
    table = _read_optional(path, ["question_id", "chunks", "scores"])
    if table is None:
        return None
    return Ranking(tuple(table["question_id"]), table["chunks"], table["scores"])


def _read_optional(path: Path, columns: list[str]) -> dict[str, list[Any]] | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        data: dict[str, list[Any]] = pq.read_table(path, columns=columns).to_pydict()
    except (OSError, pa.ArrowInvalid, KeyError):
        return None
    return data
