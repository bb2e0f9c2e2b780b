"""One grid over many sets: ``chunkmark suite run``.

Each set is run as an ordinary grid (:func:`chunkmark.experiments.runner.evaluate`) into its
own results folder under the suite folder, so a rerun resumes finished cells and every set's
folder opens with ``chunkmark report`` and ``chunkmark compare``. Beside them the suite writes
``suite.json`` (the sets, their scope, the grid and the retrieval settings by label) and
``combined.csv`` (every set's summary rows with the set and the setting label).

A setting is named once by its label (``dense @1024``) and made concrete per set: a set whose
questions are asked of one document each (``metadata.scope == "document"`` on every question)
reads the ``in_document`` ranker, searching only the question's document; the others search
the corpus. The leaderboard (:mod:`chunkmark.suite.leaderboard`) reads the folder back.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from chunkmark.datasets import Dataset, load_dataset
from chunkmark.errors import ChunkmarkError, ConfigError
from chunkmark.experiments.config import ExperimentConfig, make_config
from chunkmark.experiments.runner import ReportWriter, Results, evaluate
from chunkmark.files import write_bytes_atomic
from chunkmark.retrieval import RETRIEVAL
from chunkmark.specs import Catalog

SUITE_FILE = "suite.json"
COMBINED_FILE = "combined.csv"
FORMAT = 1

Scope = Literal["corpus", "document"]

MINILM = 'sentence_transformers(model="all-MiniLM-L6-v2")'
MINILM_LATE = 'sentence_transformers(model="all-MiniLM-L6-v2", late_chunking=True)'
MODEL2VEC = "model2vec()"


@dataclass(frozen=True)
class Setting:
    """A retrieval setting by label, with its spec for each scope; ``tokens`` is its budget
    (None for a top-k setting)."""

    label: str
    corpus: str
    document: str
    tokens: int | None = None

    def spec(self, scope: Scope) -> str:
        return self.corpus if scope == "corpus" else self.document

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "corpus": str(RETRIEVAL.resolve(self.corpus)),
            "document": str(RETRIEVAL.resolve(self.document)),
            "tokens": self.tokens,
        }


def budget(tokens: int, ranker: str | None = None) -> Setting:
    """The token-budget setting of ``ranker`` (dense exact search when None) at ``tokens``."""
    if ranker is None:
        return Setting(
            f"dense @{tokens}",
            f"token_budget(tokens={tokens})",
            f"token_budget(tokens={tokens}, ranker='in_document()')",
            tokens,
        )
    return Setting(
        f"{ranker} @{tokens}",
        f"token_budget(tokens={tokens}, ranker='{ranker}')",
        f"token_budget(tokens={tokens}, ranker=\"in_document(ranker='{ranker}')\")",
        tokens,
    )


TOP5 = Setting("top_k(5)", "top_k(k=5)", "in_document(k=5)")
DEFAULT_SETTINGS = (
    TOP5,
    budget(512),
    budget(1024),
    budget(2048),
    budget(1024, "bm25"),
    budget(1024, "hybrid"),
)
DEFAULT_CHUNKERS = (
    "fixed_tokens(size=128)",
    "fixed_tokens(size=256)",
    "fixed_tokens(size=512)",
    "fixed_tokens(size=1024)",
    "recursive(size=256)",
    "recursive(size=512)",
    "sentences(n=5)",
    "paragraphs()",
    "cluster_semantic(max_size=400)",
)


@dataclass(frozen=True)
class Grid:
    """What every set is run with."""

    name: str
    chunkers: tuple[str, ...]
    embedders: tuple[str, ...]
    settings: tuple[Setting, ...] = DEFAULT_SETTINGS

    def replacing(self, chunkers: Sequence[str] = (), embedders: Sequence[str] = ()) -> Grid:
        """This grid with its chunkers and/or embedders replaced (those not given are kept)."""
        return replace(
            self,
            chunkers=tuple(chunkers or self.chunkers),
            embedders=tuple(embedders or self.embedders),
        )


# The grids ``chunkmark suite run --grid`` knows; a plugin adds one with
# ``GRIDS.add(Grid(...))``.
GRIDS: Catalog[Grid] = Catalog(
    "suite grid", error=ConfigError, problem="{name!r} is not a {kind}.", fix="Use one of {known}."
)
# The common question: the chunkings people choose between, MiniLM (plain and late chunking),
# model2vec, and BM25 / hybrid at equal budgets.
GRIDS.add(Grid("default", DEFAULT_CHUNKERS, (MINILM, MINILM_LATE, MODEL2VEC)))
# No transformer at run time: model2vec vectors and BM25 (a laptop's coffee break).
GRIDS.add(Grid("fast", DEFAULT_CHUNKERS, (MODEL2VEC,)))


@dataclass(frozen=True)
class SuiteSet:
    """A prepared set: its name and converted dataset folder."""

    name: str
    folder: Path


def own_sets(folders: Sequence[Path], taken: Sequence[str] = ()) -> list[SuiteSet]:
    """A user's dataset folders as suite sets, each named by its folder (``data/myset`` is set
    ``myset``, its results in ``OUT/myset``), beside the sets named in ``taken``. A folder that
    does not exist, or two sets that would share a name (and so a results folder), is a
    ConfigError naming the folder and the fix; nothing is run."""
    sets: list[SuiteSet] = []
    names = set(taken)
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(
                f"--dataset {folder}: no such folder.",
                "Give the folder of a dataset (Chroma or JSONL layout; "
                "`chunkmark datasets validate FOLDER` checks one).",
            )
        name = folder.resolve().name
        if name in names:
            raise ConfigError(
                f"--dataset {folder}: a set named {name!r} is already in this suite run, and "
                "each set's results go to OUT/<set name>.",
                "Give each dataset folder its own name (rename or link the folder).",
            )
        names.add(name)
        sets.append(SuiteSet(name, folder.resolve()))
    return sets


@dataclass
class SuiteResult:
    """What a suite run did: each set's results (or the line saying why it failed)."""

    out: Path
    results: dict[str, Results] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    scopes: dict[str, Scope] = field(default_factory=dict)

    def summary(self, grid: str, not_converted: Sequence[str], seconds: float) -> dict[str, Any]:
        """What the run did as a JSON-ready dict: each set's folder and scope, the sets that
        failed (``not_converted`` first: those that never reached the run), the cells."""
        return {
            "out": str(self.out),
            "grid": grid,
            "sets": {name: str(r.out) for name, r in self.results.items()},
            "scopes": self.scopes,
            "failed": [*not_converted, *self.failures],
            "seconds": round(seconds, 1),
            "cells_computed": sum(r.cells_computed for r in self.results.values()),
            "cells_resumed": sum(r.cells_resumed for r in self.results.values()),
        }


def scope_of(dataset: Dataset) -> Scope:
    """``document`` when every question says it is asked of its own document, else ``corpus``."""
    questions = dataset.questions
    if questions and all(q.metadata.get("scope") == "document" for q in questions):
        return "document"
    return "corpus"


def run_suite(
    sets: Sequence[SuiteSet],
    out: Path,
    grid: Grid,
    *,
    cache_dir: Path | None = None,
    max_cost: float | None = None,
    report_writer: ReportWriter | None = None,
    progress: Callable[[str], None] | None = None,
    price_file: Path | None = None,
) -> SuiteResult:
    """Run ``grid`` on every set into ``out/<set>/`` (resuming finished cells), then write
    ``suite.json`` and ``combined.csv``. A set that fails is recorded with its one-line
    reason and the others go on; the files describe the sets that ran."""
    say = progress or (lambda line: None)
    result = SuiteResult(out)
    out.mkdir(parents=True, exist_ok=True)
    for one in sets:
        try:
            dataset = load_dataset(one.folder)
            scope = scope_of(dataset)
            config = suite_config(
                one, grid, scope, out, cache_dir, max_cost, report_writer, price_file=price_file
            )
            say(f"{one.name}: {len(dataset.questions)} questions, {scope} scope")
            result.results[one.name] = evaluate(
                config, progress=_prefixed(say, one.name), report_writer=report_writer
            )
            result.scopes[one.name] = scope
        except ChunkmarkError as exc:
            result.failures[one.name] = str(exc)  # the caller says it (once)
    write_suite_files(result, sets, grid)
    return result


def _prefixed(say: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: say(f"{name}: {line}")


def suite_config(
    one: SuiteSet,
    grid: Grid,
    scope: Scope,
    out: Path,
    cache_dir: Path | None,
    max_cost: float | None,
    report_writer: ReportWriter | None,
    *,
    price_file: Path | None = None,
) -> ExperimentConfig:
    """The experiment a set is run with (``price_file``: ``--prices FILE``)."""
    try:
        return make_config(
            {
                "datasets": [str(one.folder)],
                "chunkers": list(grid.chunkers),
                "embedders": list(grid.embedders),
                "retrieval": [s.spec(scope) for s in grid.settings],
                "out": out / one.name,
                "cache_dir": cache_dir,
                "max_cost": max_cost,
                "price_file": price_file,
                "report": report_writer is not None,
            }
        )
    except ValueError as exc:
        raise ConfigError(f"suite grid {grid.name}: {exc}", "Check the grid's specs.") from None


def write_suite_files(result: SuiteResult, sets: Sequence[SuiteSet], grid: Grid) -> None:
    """``suite.json`` and ``combined.csv`` for the sets that ran."""
    entries: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    labels: dict[str, dict[str, str]] = {
        scope: {str(RETRIEVAL.resolve(s.spec(scope))): s.label for s in grid.settings}
        for scope in ("corpus", "document")
    }
    for one in sets:
        ran = result.results.get(one.name)
        if ran is None:
            continue
        scope = result.scopes[one.name]
        dataset = load_dataset(one.folder)
        entries.append(
            {
                "name": one.name,
                "folder": one.name,
                "scope": scope,
                "dataset": str(one.folder),
                "documents": len(dataset.documents),
                "questions": len(dataset.questions),
            }
        )
        for row in ran.summary:
            label = labels[scope].get(str(row.get("retrieval")))
            rows.append({"set": one.name, "setting": label, **row})
    document = {
        "format": FORMAT,
        "grid": grid.name,
        "sets": entries,
        "failures": result.failures,
        "settings": [s.as_json() for s in grid.settings],
        "chunkers": _canonical_list(result, "chunkers"),
        "embedders": _canonical_list(result, "embedders"),
    }
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    write_bytes_atomic(result.out / SUITE_FILE, text.encode("utf-8"))
    write_bytes_atomic(result.out / COMBINED_FILE, _csv(rows).encode("utf-8"))


def _canonical_list(result: SuiteResult, key: Literal["chunkers", "embedders"]) -> list[str]:
    for ran in result.results.values():
        return list(getattr(ran.config, key))
    return []


def _csv(rows: list[dict[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
