"""``chunkmark relations run``: the usual grid on a relation set's dataset, with relation metrics
per cell and retrieval setting.

:func:`run_relations` is :func:`chunkmark.experiments.runner.evaluate` carrying the
:class:`RelationsAnalysis` (so ``summary.csv``, ``results.parquet``, ``manifest.json`` and
``cells/`` are written and a rerun resumes). The runner hands the analysis each finished
cell's chunks and rankings (a resumed cell's read from ``OUT/cells/`` by the runner); at the
end it extracts once per distinct chunking (chunkings are shared across embedders; each
chunking's extraction is kept in ``OUT/relations/`` so a rerun asks nothing), scores the
metrics of :mod:`chunkmark.relations.metrics`, and the runner writes:

- ``OUT/relations.csv``: one row per dataset x chunker x embedder x retrieval setting, with
  every relation metric, its 95% bootstrap interval where it has a unit, and the extraction's
  counts and cost;
- a ``relations`` section in ``OUT/manifest.json``: the relation set, the extractor's identity,
  gold or silver support, counts (relations, pairs, entities, questions), and per chunking
  the records, unmatched names, malformed records, calls and tokens;
- ``OUT/report.html`` (unless the config's ``report`` is off), built by the runner after those
  two so that it has its Relations section.

:func:`estimate_extraction` is the dry run: per chunker, what the extractor would ask, with no
request and no embedding.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from chunkmark.answers.analysis import answer_analyses
from chunkmark.experiments.analysis import AnalysisOutput, FinishedCell, FinishedRun
from chunkmark.experiments.config import ExperimentConfig
from chunkmark.experiments.runner import EmbedProgress, ReportWriter, Results, evaluate
from chunkmark.experiments.store import csv_bytes
from chunkmark.files import write_bytes_atomic
from chunkmark.relations.metrics import (
    RELATION_METRICS,
    Chunking,
    ChunkPairs,
    Gold,
    MatchedRecords,
    RankedRelations,
    match_records,
    metric_columns,
    metric_row,
    score_chunking,
)
from chunkmark.relations.model import (
    ChunkInput,
    ExtractedRelation,
    Extraction,
    Extractor,
    RelationSet,
    load_relation_set,
)

Progress = Callable[[str], None]
DEFAULT_EXTRACTOR = "cooccurrence"
RELATIONS_CSV = "relations.csv"
STORE_DIR = "relations"
STORE_FORMAT = 1
ID_COLUMNS = ("dataset", "chunker", "embedder", "retrieval", "k", "extractor", "support")
COUNT_COLUMNS = (
    "n_relations",
    "n_pairs",
    "n_questions",
    "n_chunks",
    "chunk_tokens",
    "n_extracted_pairs",
)
COST_COLUMNS = tuple(MatchedRecords(()).counts())  # the extraction's counts and cost


@dataclass
class RelationResults:
    """What a relations run produced: the grid's :class:`Results`, the relations.csv rows and
    the manifest's ``relations`` section."""

    grid: Results
    rows: list[dict[str, Any]]
    section: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return self.grid.out


@dataclass(frozen=True)
class ExtractorSetup:
    """How to build the extractor: its spec, where its LLM client caches, and its budget."""

    spec: str = DEFAULT_EXTRACTOR
    cache_dir: Path | None = None
    no_cache: bool = False
    max_calls: int | None = None
    max_cost: float | None = None
    seed: int = 0
    price_file: Path | None = None  # --prices FILE: LLM prices over the shipped table


def build_extractor(setup: ExtractorSetup, rs: RelationSet) -> tuple[Extractor, str]:
    """The extractor a spec names (``cooccurrence``, ``llm(llm=..., gleanings=...)``), with its
    LLM client cached under the cache folder and held to the budget; and the spec that names
    its results (canonical, without the LLM's transport parameters)."""
    from chunkmark.chunkers import ChunkerContext
    from chunkmark.costs.llm_prices import load_llm_prices
    from chunkmark.errors import ConfigError
    from chunkmark.paths import resolve_cache_dir
    from chunkmark.relations.extract import EXTRACTORS, Budget

    cache = None if setup.no_cache else resolve_cache_dir(setup.cache_dir)
    prices = None if setup.price_file is None else load_llm_prices(setup.price_file, ConfigError)
    extractor, spec = EXTRACTORS.build(
        setup.spec,
        context=ChunkerContext(cache_dir=cache, seed=setup.seed),
        budget=Budget(max_calls=setup.max_calls, max_cost=setup.max_cost, prices=prices),
        relations=rs.relations,
    )
    return extractor, str(EXTRACTORS.identity(spec))


def run_relations(
    folder: str | Path,
    config: ExperimentConfig,
    setup: ExtractorSetup | None = None,
    progress: Progress | None = None,
    embed_progress: EmbedProgress | None = None,
    report_writer: ReportWriter | None = None,
) -> RelationResults:
    """Run ``config``'s grid on the relation set in ``folder`` (its datasets replaced by it)
    with the :class:`RelationsAnalysis` (see the module docs). ``report_writer`` writes
    ``report.html`` when the config asks for one (default: the report's
    :func:`chunkmark.report.write_run_report`)."""
    say: Progress = progress or (lambda _msg: None)
    setup = setup or ExtractorSetup()
    rs = load_relation_set(folder)
    extractor, spec = build_extractor(setup, rs)
    config = with_relation_set(config, folder)
    if setup.max_cost is not None and hasattr(extractor, "estimate"):
        _check_budget(rs, config, extractor, setup.max_cost)
    analysis = RelationsAnalysis(rs, extractor, spec)
    if report_writer is None:
        from chunkmark.report import write_run_report

        report_writer = write_run_report
    grid = evaluate(
        config,
        progress=say,
        embed_progress=embed_progress,
        analyses=[analysis, *answer_analyses(config)],
        report_writer=report_writer,
    )
    files: dict[str, Path] = {
        name: grid.files[name] for name in ("relations", "manifest", "report") if name in grid.files
    }
    return RelationResults(grid, analysis.rows, grid.manifest[analysis.name], files)


@dataclass(frozen=True, eq=False)
class _CellView:
    """What the relation metrics need of one finished cell: its names, its chunking, its
    rankings per ranker and, per retrieval setting, the chunks counted per question."""

    facts: dict[str, Any]
    chunking: Chunking
    rankings: dict[str, Any]
    settings: dict[str, tuple[str, Any]]


class RelationsAnalysis:
    """The relation metrics as an analysis the runner carries
    (:mod:`chunkmark.experiments.analysis`): each finished cell of the relation set is kept as
    its chunking and rankings; at the end every distinct chunking is extracted once and scored,
    and the cells' rows become ``relations.csv`` and the ``relations`` manifest section."""

    name = "relations"

    def __init__(self, rs: RelationSet, extractor: Extractor, spec: str) -> None:
        self.rs = rs
        self.extractor = extractor
        self.spec = spec
        self.started = time.perf_counter()
        self.rows: list[dict[str, Any]] = []
        self._cells: dict[str, _CellView] = {}

    def cell(self, cell: FinishedCell) -> None:
        if cell.facts.get("fingerprint") != self.rs.dataset.fingerprint:
            return
        chunks = cell.chunks.to_pydict()
        self._cells[cell.id] = _CellView(
            facts=cell.facts,
            chunking=Chunking.of(
                chunks["doc_id"], chunks["start"], chunks["end"], chunks["tokens"]
            ),
            rankings=_rankings(cell.rankings, self.rs),
            settings=_settings(cell.table.to_pydict(), self.rs),
        )

    def finish(self, run: FinishedRun) -> AnalysisOutput:
        scorer = _Scorer(self.rs, self.extractor, self.spec, run.out, run.config.seed, run.progress)
        rows: list[dict[str, Any]] = []
        for outcome in run.outcomes:  # the run's order, whichever order cells finished in
            view = self._cells.get(outcome.id)
            if view is not None and not outcome.failed:
                rows.extend(scorer.cell_rows(view))
        self.rows = rows
        section = scorer.section(time.perf_counter() - self.started)
        return AnalysisOutput(
            section=section, files={RELATIONS_CSV: csv_bytes([_ordered(r) for r in rows])}
        )


def with_relation_set(config: ExperimentConfig, folder: str | Path) -> ExperimentConfig:
    """``config`` with its datasets replaced by the relation set's folder."""
    from chunkmark.experiments.config import make_config

    values = config.model_dump(exclude_unset=True)
    values.pop("dataset", None)
    values["datasets"] = [str(folder)]
    return make_config(values)


def _ordered(row: dict[str, Any]) -> dict[str, Any]:
    """A relations.csv row in column order (ids, counts, metrics, cost)."""
    names = [*ID_COLUMNS, *COUNT_COLUMNS, *metric_columns(), *COST_COLUMNS]
    out = {n: row.get(n, "") for n in names}
    out.update({k: v for k, v in row.items() if k not in out})
    return out


class _Scorer:
    """The relation metrics of a run's cells: one extraction and one chunking row per distinct
    chunking, one retrieval row per cell and setting."""

    def __init__(
        self,
        rs: RelationSet,
        extractor: Extractor,
        spec: str,
        out: Path,
        seed: int,
        say: Progress,
    ) -> None:
        self.rs = rs
        self.gold = Gold.of(rs)
        self.extractor = extractor
        self.spec = spec
        self.identity = extractor.identity()
        self.out = out
        self.seed = seed
        self.say = say
        self._chunkings: dict[str, tuple[dict[str, Any], ChunkPairs]] = {}
        self.extracted: list[dict[str, Any]] = []

    def cell_rows(self, view: _CellView) -> list[dict[str, Any]]:
        from chunkmark.retrieval import RETRIEVAL

        cell, chunking = view.facts, view.chunking
        chunk_row, pairs = self._chunking(cell["chunker"], chunking)
        ranked: dict[str, RankedRelations] = {}
        rows = []
        for retrieval, (k_label, depth) in view.settings.items():
            ranker = str(RETRIEVAL.build(retrieval)[0].ranker)
            ranking = view.rankings.get(ranker)
            if ranking is None:
                continue
            if ranker not in ranked:
                ranked[ranker] = RankedRelations.of(self.gold, chunking, ranking, pairs)
            scores = ranked[ranker].score(depth)
            row: dict[str, Any] = {
                "dataset": cell["dataset"],
                "chunker": cell["chunker"],
                "embedder": cell["embedder"],
                "retrieval": retrieval,
                "k": k_label,
                "extractor": self.spec,
                "support": "silver" if self.rs.silver else "gold",
                **chunk_row,
                "n_questions": len(depth),
                **metric_row("retrieval", scores, self.seed),
            }
            rows.append(row)
        return rows

    def _chunking(self, chunker: str, chunking: Chunking) -> tuple[dict[str, Any], ChunkPairs]:
        key = chunking_key(chunking)
        if key not in self._chunkings:
            records, resumed = self._records(chunker, key, chunking)
            scores = score_chunking(self.gold, chunking, records)
            row = {
                "n_relations": len(self.rs.relations),
                "n_pairs": self.gold.n_pairs,
                "n_chunks": len(chunking),
                "chunk_tokens": int(chunking.tokens.sum()),
                "n_extracted_pairs": 0
                if scores.extraction is None
                else len(scores.extraction.pair_correct),
                **metric_row("chunking", scores, self.seed),
                **records.counts(),
            }
            self._chunkings[key] = (row, ChunkPairs.of(self.gold, records))
            self.extracted.append(
                {"chunker": chunker, "chunking": key, "resumed": resumed, **records.counts()}
            )
        return self._chunkings[key]

    def _records(self, chunker: str, key: str, chunking: Chunking) -> tuple[MatchedRecords, bool]:
        """The chunking's matched records: from ``OUT/relations/`` when this extractor already
        extracted it, else extracted now (and stored)."""
        store = self.out / STORE_DIR / f"{self._store_key(key)}.json"
        extractions = read_extractions(store)
        resumed = extractions is not None and len(extractions) == len(chunking)
        if not resumed:
            from chunkmark.chunkers import CHUNKERS

            self.say(f"extract  {CHUNKERS.short(chunker)}: {len(chunking)} chunks")
            extractions = self.extractor.extract(chunk_inputs(self.rs, chunking))
            write_extractions(store, extractions, {"extractor": self.identity, "chunking": key})
        assert extractions is not None
        return match_records(self.rs, chunking, extractions), resumed

    def _store_key(self, chunking: str) -> str:
        text = json.dumps(
            [STORE_FORMAT, self.identity, self.rs.dataset.fingerprint, chunking], sort_keys=True
        )
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def section(self, seconds: float) -> dict[str, Any]:
        rs = self.rs
        totals: dict[str, int] = dict.fromkeys(COST_COLUMNS, 0)
        for item in self.extracted:
            for name in COST_COLUMNS:
                totals[name] += int(item.get(name, 0))
        stats = getattr(self.extractor, "counters", None)
        return {
            "relation_set": rs.source,
            "name": rs.name,
            "fingerprint": rs.dataset.fingerprint,
            "support": "silver" if rs.silver else "gold",
            "extractor": {"spec": self.spec, "identity": self.identity},
            "counts": {
                "documents": len(rs.dataset.documents),
                "entities": len(rs.entities),
                "relations": len(rs.relations),
                "pairs": self.gold.n_pairs,
                "questions": len(rs.dataset.questions),
            },
            "totals": totals,
            "extractor_counters": stats() if callable(stats) else None,
            "chunkings": self.extracted,
            "file": RELATIONS_CSV,
            "seconds": round(seconds, 3),
            # what the report shows beside the numbers, so it needs no import of this package
            "metrics": {
                m.name: {"label": m.label, "interval": m.interval, "description": m.description}
                for m in RELATION_METRICS.values()
            },
        }


def chunking_key(chunking: Chunking) -> str:
    """A chunking's content hash (documents and spans)."""
    h = hashlib.sha256()
    h.update(json.dumps(chunking.doc_ids).encode())
    h.update(np.ascontiguousarray(chunking.start, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(chunking.end, dtype=np.int64).tobytes())
    return h.hexdigest()[:20]


def chunk_inputs(rs: RelationSet, chunking: Chunking) -> list[ChunkInput]:
    """What the extractor reads per chunk: the span's text, document, span and the document's
    gold entities."""
    texts = chunking.texts(rs)
    by_doc = rs.entities_by_doc
    return [
        ChunkInput(text, doc, int(s), int(e), by_doc.get(doc, ()))
        for text, doc, s, e in zip(
            texts, chunking.doc_ids, chunking.start.tolist(), chunking.end.tolist(), strict=True
        )
    ]


def write_extractions(path: Path, extractions: Sequence[Extraction], meta: dict[str, Any]) -> None:
    """A chunking's extractions (relationship records and counters; entity records are not
    kept), written atomically."""
    items = [
        {
            "relations": [[r.source, r.target, r.type] for r in x.relations],
            "malformed": x.malformed,
            "complete": x.complete,
            "calls": x.calls,
            "cache_hits": x.cache_hits,
            "input_tokens": x.input_tokens,
            "output_tokens": x.output_tokens,
        }
        for x in extractions
    ]
    data = {"format": STORE_FORMAT, **meta, "extractions": items}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, json.dumps(data, ensure_ascii=False).encode())


def read_extractions(path: Path) -> list[Extraction] | None:
    """Stored extractions, or None when missing or unreadable (they are then extracted again)."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != STORE_FORMAT:
            return None
        return [
            Extraction(
                relations=tuple(ExtractedRelation(s, t, kind) for s, t, kind in x["relations"]),
                malformed=int(x["malformed"]),
                complete=bool(x["complete"]),
                calls=int(x["calls"]),
                cache_hits=int(x["cache_hits"]),
                input_tokens=int(x["input_tokens"]),
                output_tokens=int(x["output_tokens"]),
            )
            for x in data["extractions"]
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _rankings(table: pa.Table, rs: RelationSet) -> dict[str, Any]:
    """Per ranker, the ranking as a ``(questions, depth)`` array in the dataset's question
    order (-1 pads a shorter list)."""
    data = table.to_pydict()
    order = {q.id: i for i, q in enumerate(rs.dataset.questions)}
    lists: dict[str, list[list[int]]] = {}
    for ranker, qid, chunks in zip(
        data["ranker"], data["question_id"], data["chunks"], strict=True
    ):
        rows = lists.get(ranker)
        if rows is None:  # built once per ranker, not once per row
            rows = lists[ranker] = [[] for _ in order]
        rows[order[qid]] = list(chunks or [])
    out: dict[str, Any] = {}
    for ranker, rows in lists.items():
        width = max((len(r) for r in rows), default=0)
        arr = np.full((len(rows), width), -1, dtype=np.int64)
        for i, r in enumerate(rows):
            arr[i, : len(r)] = r
        out[ranker] = arr
    return out


def _settings(table: dict[str, list[Any]], rs: RelationSet) -> dict[str, tuple[str, Any]]:
    """Per retrieval setting of a cell: its k label and the chunks counted per question (the
    cell's ``k_used``, dataset question order; the first scoring option's rows)."""
    order = {q.id: i for i, q in enumerate(rs.dataset.questions)}
    out: dict[str, tuple[str, Any]] = {}
    seen: set[tuple[str, str]] = set()
    for retrieval, k, qid, used in zip(
        table["retrieval"], table["k"], table["question_id"], table["k_used"], strict=True
    ):
        if retrieval not in out:
            out[retrieval] = (str(k), np.zeros(len(order), dtype=np.int64))
        if (retrieval, qid) in seen:
            continue
        seen.add((retrieval, qid))
        out[retrieval][1][order[qid]] = int(used)
    return out


# --- dry run and budget -----------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkerEstimate:
    """A chunker's chunks and what extracting them would ask (None: the extractor gives no
    estimate, or the chunker's chunks are unknown before it runs, in ``note``)."""

    chunker: str
    chunks: int
    estimate: Any | None
    note: str = ""


def estimate_extraction(
    folder: str | Path,
    config: ExperimentConfig,
    setup: ExtractorSetup | None = None,
) -> list[ChunkerEstimate]:
    """Per chunker of ``config``: its chunks of the relation set and the extractor's estimate
    of extracting them. No request is made; chunkers that call an LLM are not run."""
    setup = setup or ExtractorSetup()
    rs = load_relation_set(folder)
    extractor, _ = build_extractor(setup, rs)
    return _estimates(rs, with_relation_set(config, folder), extractor)


def _estimates(
    rs: RelationSet, config: ExperimentConfig, extractor: Extractor
) -> list[ChunkerEstimate]:
    """Chunk with every chunker that can be run without a request, the one way estimates
    chunk (:func:`chunkmark.experiments.plan_chunks.estimate_chunks`): a chunker that embeds reads its
    vectors from the embedding cache only (a dry run or a --max-cost check never embeds; with
    texts not cached, its chunks are unknown until it runs); an LLM chunker's chunks are
    unknown before it runs."""
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import EmbeddingCache
    from chunkmark.experiments.plan_chunks import estimate_chunks
    from chunkmark.paths import resolve_cache_dir

    estimate = getattr(extractor, "estimate", None)
    embedder = cache = None
    if any(CHUNKERS.traits(spec).embeds for spec in config.chunkers):
        embedder = EMBEDDERS.build(config.embedders[0])[0]
        cache = None if config.no_cache else EmbeddingCache(resolve_cache_dir(config.cache_dir))
    out: list[ChunkerEstimate] = []
    for spec in config.chunkers:
        found = estimate_chunks(rs.dataset, spec, embedder=embedder, cache=cache, seed=config.seed)
        if found.chunks is None:
            out.append(ChunkerEstimate(spec, 0, None, found.note))
            continue
        chunks = found.chunks
        chunking = Chunking.of(
            [c.doc_id for c in chunks], [c.start for c in chunks], [c.end for c in chunks]
        )
        result = None if estimate is None else estimate(chunk_inputs(rs, chunking))
        out.append(ChunkerEstimate(spec, len(chunks), result))
    return out


def _check_budget(
    rs: RelationSet, config: ExperimentConfig, extractor: Extractor, max_cost: float
) -> None:
    """Refuse to start when the grid's embedding estimate plus the extraction's exceeds
    ``max_cost`` US dollars, or when a part's price is unknown."""
    from chunkmark.costs.budget import CostLimitError, usd
    from chunkmark.experiments.plan import plan_grid

    plan = plan_grid(config, answer_analyses(config))
    found = _estimates(rs, config, extractor)
    unknown = [e for e in found if e.estimate is None]
    if unknown:
        raise CostLimitError(
            f"The extraction cost of {unknown[0].chunker} is unknown ({unknown[0].note}), so "
            f"--max-cost {usd(max_cost)} cannot be enforced.",
            "Run the grid once without --max-cost (chunkmark run), or drop that chunker.",
        )
    extraction = [e.estimate.usd for e in found if e.estimate is not None]
    if plan.total_usd is None or any(u is None for u in extraction):
        raise CostLimitError(
            f"The cost of this run cannot be estimated (a price is unknown), so --max-cost "
            f"{usd(max_cost)} cannot be enforced.",
            "Run with --dry-run to see which part, give its price, or run without --max-cost.",
        )
    total = plan.total_usd + sum(float(u) for u in extraction)
    if total > max_cost:
        raise CostLimitError(
            f"Estimated cost {usd(total)} (embedding {usd(plan.total_usd)}, extraction "
            f"{usd(total - plan.total_usd)}) exceeds --max-cost {usd(max_cost)}.",
            "Raise --max-cost, or run fewer chunkers or a cheaper model (see --dry-run).",
        )
