"""Bayesian search over chunker parameters: ``chunkmark tune``.

An experiment's chunker specs may hold search ranges, ``fixed_tokens(size=range(100, 1000, 50),
overlap=range(0, 0.5))``, and lists, ``recursive(size=[200, 400])``. :func:`tune` asks Optuna's
TPE sampler (seeded) for one setting per trial, runs it as an ordinary cell of the experiment
(:meth:`~chunkmark.experiments.runner.Session.run_cells`, into the same results folder) and
tells the sampler how well it retrieved.

Search space (:func:`search_space`):

- an integer range (every bound an integer) is ``suggest_int``, on its step when one is given;
  a range with a float bound is ``suggest_float``, continuous, or on its step when one is given
  (a stepped range ends at its last step at or below ``high``, as ``Range.values()`` does);
- a list is ``suggest_categorical`` (values other than None, bools, numbers and strings are
  offered by their ``repr`` and mapped back);
- fixed values stay fixed; ``zip(...)`` is refused (tune searches each parameter on its own);
- several chunker specs are tuned jointly: the trial first picks one of them (a categorical
  parameter ``chunker``, labelled by the chunker's name, ``name#2`` when a name repeats), then
  that spec's parameters, known to the sampler as ``<label>.<param>``. A spec without ranges or
  lists is a choice with nothing further to pick. One embedder per tune.

Objective: ``metric`` (default IoU) of one retrieval setting of the experiment (default
``top_k(k=5)``) under the default scoring (excerpts by position, characters, sum denominator),
the mean over questions as in ``summary.csv`` (scope ``all``), then the mean over datasets, each
dataset weighing the same. A trial whose recall (same setting, same averaging) is below
``recall_floor`` (default 0.5: at least half of the text the questions need is retrieved) is
*infeasible*: it is reported with its metric, and the sampler is told ``recall - recall_floor``
instead, a negative number, so every feasible trial (metrics lie in [0, 1]) ranks above every
infeasible one, and among infeasible ones the closer to the floor ranks higher. ``recall_floor=0``
turns the floor off. A failed cell, or parameters the chunker rejects (an overlap not below the
size), is a failed trial (``TrialState.FAIL``): recorded, the search goes on.

Two trials whose parameters resolve to the same canonical spec (``overlap=0.25`` of ``size=400``
is ``overlap=100``) are one cell, computed once. Rerunning with the same seed and ``out`` replays
the same trials, every cell resumed from ``OUT/cells/``. With ``max_cost``, each new cell's
cost is estimated before it runs (:func:`chunkmark.experiments.plan.plan_grid`) and the search
stops, keeping what it has, when the running estimate would pass the budget.

At the end :meth:`Session.finish` writes the usual files for every distinct cell (one
``summary.csv``, the report) and ``OUT/tune.json`` holds the settings, the search space, the
objective and the trial history.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, field_validator

from chunkmark.errors import ChunkmarkError, ConfigError, SpecError
from chunkmark.experiments.config import MaxCost, make_config, read_experiment
from chunkmark.experiments.grid import GridSpec, Range, parse_grid
from chunkmark.optional import import_optional

if TYPE_CHECKING:
    import optuna

    from chunkmark.experiments.analysis import Analysis
    from chunkmark.experiments.config import ExperimentConfig
    from chunkmark.experiments.outcome import CellOutcome
    from chunkmark.experiments.runner import ReportWriter, Results, Session

DEFAULT_METRIC = "iou"
DEFAULT_RETRIEVAL = "top_k(k=5)"
DEFAULT_RECALL_FLOOR = 0.5
FAMILY_PARAM = "chunker"  # the sampler's name for the choice between chunker specs
TUNE_FILE = "tune.json"
Progress = Callable[[str], None]
EmbedProgress = Callable[[str, int, int], None]
TrialState = Literal["complete", "infeasible", "failed"]


def import_optuna() -> Any:
    """The ``optuna`` module, or a MissingDependencyError naming ``pip install 'chunkmark[tune]'``."""
    return import_optional("optuna", "optuna", "tune", "chunkmark tune")


# --- settings -------------------------------------------------------------------------------


class TuneSettings(BaseModel):
    """What a tune searches for (validated; recorded in ``tune.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trials: int
    metric: str = DEFAULT_METRIC
    retrieval: str = DEFAULT_RETRIEVAL
    recall_floor: float = DEFAULT_RECALL_FLOOR
    seed: int = 0
    max_cost: MaxCost = None

    @field_validator("trials")
    @classmethod
    def _trials(cls, value: int) -> int:
        if value < 1:
            raise ValueError("give at least one trial")
        return value

    @field_validator("metric")
    @classmethod
    def _metric(cls, value: str) -> str:
        from chunkmark.metrics import METRICS

        if value not in METRICS.names():
            raise ValueError(f"unknown metric {value!r}; use one of {', '.join(METRICS.names())}")
        return value

    @field_validator("recall_floor")
    @classmethod
    def _floor(cls, value: float) -> float:
        if not 0 <= value <= 1:
            raise ValueError("the recall floor is a fraction between 0 and 1")
        return value


# --- search space ---------------------------------------------------------------------------

_PRIMITIVE = (type(None), bool, int, float, str)


@dataclass(frozen=True)
class Param:
    """One searched parameter of a chunker spec; ``key`` is the sampler's name for it."""

    name: str
    key: str
    kind: Literal["int", "float", "categorical"]
    low: float = 0.0
    high: float = 0.0  # the last value the sampler may give (a stepped range's last step)
    step: float | None = None
    choices: tuple[Any, ...] = ()

    @classmethod
    def from_range(cls, name: str, key: str, r: Range) -> Param:
        high = r.high
        if r.step is not None:  # end on the last step at or below high, as Range.values()
            n = int((r.high - r.low) / r.step + 1e-9)
            high = r.low + n * r.step if r.integer else round(r.low + n * r.step, 12)
        return cls(name, key, "int" if r.integer else "float", r.low, high, r.step)

    def suggest(self, trial: optuna.Trial) -> Any:
        """The value the trial picks."""
        if self.kind == "int":
            step = int(self.step) if self.step is not None else 1
            return trial.suggest_int(self.key, int(self.low), int(self.high), step=step)
        if self.kind == "float":
            value = trial.suggest_float(self.key, self.low, self.high, step=self.step)
            return value if self.step is None else round(value, 12)
        if all(isinstance(c, _PRIMITIVE) for c in self.choices):
            picked: Any = trial.suggest_categorical(self.key, list(self.choices))
            return picked
        labels = [repr(c) for c in self.choices]
        return self.choices[labels.index(trial.suggest_categorical(self.key, labels))]

    def values(self) -> list[Any]:
        """Every value, for an exhaustive grid; a SpecError for a continuous range."""
        if self.kind == "categorical":
            return list(self.choices)
        return list(Range(self.low, self.high, self.step, self.kind == "int").values())

    def describe(self) -> dict[str, Any]:
        if self.kind == "categorical":
            return {"name": self.name, "kind": self.kind, "choices": list(self.choices)}
        return {
            "name": self.name,
            "kind": self.kind,
            "low": int(self.low) if self.kind == "int" else self.low,
            "high": int(self.high) if self.kind == "int" else self.high,
            "step": self.step if self.kind == "float" or self.step is None else int(self.step),
        }


@dataclass(frozen=True)
class Family:
    """One chunker spec of the experiment: its fixed values and its searched parameters."""

    label: str
    grid: GridSpec
    params: tuple[Param, ...]

    def spec(self, values: Mapping[str, Any]) -> str:
        """The canonical spec for the searched ``values``; a SpecError when the chunker
        rejects them."""
        from chunkmark.chunkers import CHUNKERS
        from chunkmark.specs import Spec

        return str(CHUNKERS.resolve(Spec.of(self.grid.name, **dict(self.grid.fixed), **values)))

    def grid_text(self) -> str:
        """The exhaustive grid of this spec for ``chunkmark run``: every range listed by its
        values (a SpecError for a continuous range)."""
        from chunkmark.specs import Spec

        values = {**dict(self.grid.fixed), **{p.name: p.values() for p in self.params}}
        return str(Spec.of(self.grid.name, **values))

    def describe(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "spec": self.grid.text,
            "params": [p.describe() for p in self.params],
        }


@dataclass(frozen=True)
class SearchSpace:
    """The chunker specs a tune chooses from and the parameters of each."""

    families: tuple[Family, ...]

    def sample(self, trial: optuna.Trial) -> tuple[Family, dict[str, Any]]:
        """The trial's chunker spec and its parameter values."""
        family = self.families[0]
        if len(self.families) > 1:
            labels = [f.label for f in self.families]
            family = self.families[labels.index(trial.suggest_categorical(FAMILY_PARAM, labels))]
        return family, {p.name: p.suggest(trial) for p in family.params}

    def grid_texts(self) -> list[str]:
        """The exhaustive grid over the same (stepped) ranges, one spec string per family."""
        return [f.grid_text() for f in self.families]

    def describe(self) -> list[dict[str, Any]]:
        return [f.describe() for f in self.families]


def search_space(chunkers: Sequence[str]) -> SearchSpace:
    """The search space of an experiment's chunker spec strings (see the module docstring)."""
    from chunkmark.chunkers import CHUNKERS

    if not chunkers:
        raise ConfigError("The experiment names no chunkers to tune.", _RANGE_HINT)
    grids = [parse_grid(text, CHUNKERS) for text in chunkers]
    for g in grids:
        if g.zipped:
            raise ConfigError(
                f"{g.text!r}: zip(...) pairs lists for `chunkmark run`; tune searches each "
                "parameter on its own.",
                "Drop zip(...), or give ranges, e.g. size=range(100, 1000, 50).",
            )
    if not any(g.axes or g.ranges for g in grids):
        raise ConfigError(
            "Nothing to tune: no chunker spec of the experiment holds a range or a list.",
            _RANGE_HINT,
        )
    names = [g.name for g in grids]
    joint = len(grids) > 1
    families = []
    for i, g in enumerate(grids):
        label = g.name if names.count(g.name) == 1 else f"{g.name}#{names[: i + 1].count(g.name)}"
        prefix = f"{label}." if joint else ""
        params = [Param.from_range(n, prefix + n, r) for n, r in g.ranges]
        params += [Param(n, prefix + n, "categorical", choices=v) for n, v in g.axes]
        families.append(Family(label, g, tuple(params)))
    return SearchSpace(tuple(families))


_RANGE_HINT = (
    "Give a chunker parameter a search range or a list, e.g. "
    "chunkers: ['fixed_tokens(size=range(100, 1000, 50), overlap=range(0, 0.5))']."
)


# --- results --------------------------------------------------------------------------------


@dataclass
class TrialRecord:
    """One trial: what it tried, how it scored, and where its cells are.

    ``value`` and ``recall`` are means over questions, then datasets (None when it failed);
    ``objective`` is what the sampler was told (``value``, or ``recall - recall_floor`` when
    infeasible; None when failed). ``computed`` counts the cells it computed; the others were
    read from ``OUT/cells`` or, with ``repeat_of``, are those of an earlier trial of the same
    canonical spec.
    """

    number: int
    params: dict[str, Any]
    chunker: str | None
    state: TrialState
    value: float | None = None
    recall: float | None = None
    objective: float | None = None
    cells: list[str] = field(default_factory=list)
    computed: int = 0
    repeat_of: int | None = None
    error: str | None = None

    @property
    def feasible(self) -> bool:
        return self.state == "complete"

    @property
    def resumed(self) -> bool:
        """Whether its cells were all there already (on disk, or from an earlier trial)."""
        return bool(self.cells) and self.computed == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "params": self.params,
            "chunker": self.chunker,
            "state": self.state,
            "value": self.value,
            "recall": self.recall,
            "feasible": self.feasible,
            "objective": self.objective,
            "cells": self.cells,
            "computed": self.computed,
            "resumed": self.resumed,
            "repeat_of": self.repeat_of,
            "error": self.error,
        }


@dataclass
class TuneResult:
    """What a tune found: the best feasible trial (None when no trial met the recall floor),
    every trial, and the run's files (``results`` is None when no cell ran)."""

    settings: TuneSettings
    space: SearchSpace
    retrieval: str
    embedder: str
    datasets: list[str]
    out: Path
    trials: list[TrialRecord]
    results: Results | None
    stopped: str | None = None
    estimated_usd: float | None = None
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def best(self) -> TrialRecord | None:
        """The feasible trial of highest value; the earliest on a tie."""
        feasible = [t for t in self.trials if t.feasible and t.value is not None]
        return max(feasible, key=lambda t: (t.value, -t.number), default=None)

    @property
    def cells_computed(self) -> int:
        """Cells computed by this tune (failed ones included)."""
        return sum(t.computed for t in self.trials)

    @property
    def cells_resumed(self) -> int:
        """Distinct cells read from ``OUT/cells`` instead."""
        return sum(len(t.cells) - t.computed for t in self.trials if t.repeat_of is None)

    def to_dict(self) -> dict[str, Any]:
        """The content of ``tune.json``."""
        from chunkmark.version import __version__

        best = self.best
        s = self.settings
        return {
            "chunkmark": __version__,
            "optuna": _optuna_version(),
            "settings": {
                **s.model_dump(mode="json"),
                "retrieval": self.retrieval,
                "sampler": f"TPESampler(seed={s.seed})",
                "embedder": self.embedder,
                "datasets": self.datasets,
                "out": str(self.out),
            },
            "search_space": self.space.describe(),
            "objective": {
                "metric": s.metric,
                "retrieval": self.retrieval,
                "scoring": _default_scoring(),
                "direction": "maximize",
                "aggregate": "mean over questions (summary.csv, scope all), then over datasets",
                "recall_floor": s.recall_floor,
                "infeasible": "recall below the floor: the sampler is told recall - recall_floor",
            },
            "best": None if best is None else best.to_dict(),
            "stopped": self.stopped,
            "estimated_usd": self.estimated_usd,
            "cells_computed": self.cells_computed,
            "cells_resumed": self.cells_resumed,
            "trials": [t.to_dict() for t in self.trials],
        }


def _optuna_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("optuna")
    except metadata.PackageNotFoundError:
        return None


def _default_scoring() -> dict[str, str]:
    from chunkmark.metrics import Scoring

    columns: dict[str, str] = Scoring().columns()
    return columns


# --- the search -----------------------------------------------------------------------------


def tune(
    experiment: str | Path | Mapping[str, Any],
    trials: int,
    *,
    metric: str = DEFAULT_METRIC,
    retrieval: str = DEFAULT_RETRIEVAL,
    recall_floor: float = DEFAULT_RECALL_FLOOR,
    seed: int = 0,
    max_cost: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    embed_progress: EmbedProgress | None = None,
    report_writer: ReportWriter | None = None,
    analyses_for: Callable[[ExperimentConfig], Sequence[Analysis]] | None = None,
) -> TuneResult:
    """Search the experiment's chunker ranges for the best ``metric`` (see the module docstring).

    ``experiment`` is an experiment YAML file or its mapping (``{"dataset": "demo", "chunkers":
    ["fixed_tokens(size=range(50, 400, 10))"], "embedders": ["fake()"], "out": ...}``);
    ``overrides`` (``out``, ``datasets``, ``no_cache``, ``report``, ...) win over it. ``max_cost``
    defaults to the experiment's. Writes the run's usual files and ``OUT/tune.json``;
    ``report.html`` too when given ``report_writer`` (the command line passes the report's).
    ``analyses_for(config)`` gives the analyses the run carries and the budget prices (the
    command line passes :func:`chunkmark.answers.analysis.answer_analyses`).
    """
    optuna = import_optuna()
    say = progress or (lambda _msg: None)
    raw, source, lines = _raw_experiment(experiment, overrides or {})
    space = search_space(_chunker_texts(raw))
    base = make_config(
        {k: v for k, v in raw.items() if k != "chunkers"}, source=source, lines=lines
    )
    settings = _settings(
        trials=trials,
        metric=metric,
        retrieval=retrieval,
        recall_floor=recall_floor,
        seed=seed,
        max_cost=base.max_cost if max_cost is None else max_cost,
    )
    canonical = _check_retrieval(settings.retrieval, base)
    _check_scoring(base)
    if len(base.embedders) != 1:
        raise ConfigError(
            f"tune searches chunker settings for one embedder; the experiment gives "
            f"{len(base.embedders)}.",
            "Keep one embedder in the experiment (run tune once per embedder).",
        )
    from chunkmark.experiments.store import prepare_out_dir, write_json

    out = base.out or Path("results") / datetime.now().strftime("tune-%Y%m%d-%H%M%S")
    base = base.model_copy(update={"out": out, "max_cost": None})
    prepare_out_dir(out)
    search = _Search(optuna, settings, space, base, canonical, say, embed_progress)
    search.report_writer = report_writer
    search.analyses = tuple(analyses_for(base)) if analyses_for is not None else ()
    search.run()
    result = TuneResult(
        settings=settings,
        space=space,
        retrieval=canonical,
        embedder=base.embedders[0],
        datasets=list(base.datasets),
        out=out,
        trials=search.records,
        results=search.finish(),
        stopped=search.stopped,
        estimated_usd=search.spent if settings.max_cost is not None else None,
    )
    if result.results is not None:
        result.files.update(result.results.files)
    result.files["tune"] = out / TUNE_FILE
    write_json(result.files["tune"], result.to_dict())
    return result


@dataclass(eq=False)
class _Search:
    """The trial loop: ask, run the cell (or reuse it), score, tell."""

    optuna: Any
    settings: TuneSettings
    space: SearchSpace
    config: ExperimentConfig
    retrieval: str
    say: Progress
    embed_progress: EmbedProgress | None
    records: list[TrialRecord] = field(default_factory=list, init=False)
    stopped: str | None = field(default=None, init=False)
    spent: float = field(default=0.0, init=False)
    session: Session | None = field(default=None, init=False)
    report_writer: ReportWriter | None = field(default=None, init=False)
    analyses: tuple[Analysis, ...] = field(default=(), init=False)
    # canonical spec -> its cells, and the first trial of it
    outcomes: dict[str, list[CellOutcome]] = field(default_factory=dict, init=False)
    first: dict[str, TrialRecord] = field(default_factory=dict, init=False)

    def run(self) -> None:
        with _quiet_optuna(self.optuna):
            study = self.optuna.create_study(
                direction="maximize",
                sampler=self.optuna.samplers.TPESampler(seed=self.settings.seed),
            )
        for number in range(self.settings.trials):
            trial = study.ask()
            record = self._trial(number, trial)
            if record is None:  # the budget is spent
                return
            self.records.append(record)
            self._report(record)
            if record.objective is None:
                study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, record.objective)

    def finish(self) -> Results | None:
        """The run's files for every distinct cell, in trial order."""
        if self.session is None:
            return None
        outcomes = [o for cells in self.outcomes.values() for o in cells]
        return self.session.finish(outcomes)

    def _trial(self, number: int, trial: optuna.Trial) -> TrialRecord | None:
        family, values = self.space.sample(trial)
        params = {FAMILY_PARAM: family.label, **values} if len(self.space.families) > 1 else values
        try:
            spec = family.spec(values)
        except SpecError as exc:
            return TrialRecord(number, params, None, "failed", error=exc.problem)
        earlier = self.first.get(spec)
        if earlier is not None:
            record = self._score(number, params, spec, self.outcomes[spec])
            record.repeat_of = earlier.number
            return record
        if not self._affordable(spec):
            return None
        outcomes = self._session(spec).run_cells([spec])
        self.outcomes[spec] = outcomes
        record = self._score(number, params, spec, outcomes)
        record.computed = sum(not o.resumed for o in outcomes)
        self.first[spec] = record
        return record

    def _score(
        self, number: int, params: dict[str, Any], spec: str, outcomes: Sequence[CellOutcome]
    ) -> TrialRecord:
        record = TrialRecord(number, params, spec, "failed", cells=[o.id for o in outcomes])
        failed = [o for o in outcomes if o.failed]
        if failed:
            record.error = "; ".join(
                f"{o.dataset}: {o.facts.get('error', 'failed')}" for o in failed
            )
            return record
        value, recall = self._measure(outcomes)
        if math.isnan(value) or math.isnan(recall):
            record.error = f"{self.settings.metric} or recall is not a number (no questions?)"
            return record
        record.value, record.recall = value, recall
        floor = self.settings.recall_floor
        record.state = "complete" if recall >= floor else "infeasible"
        record.objective = penalised(value, recall, floor)
        return record

    def _measure(self, outcomes: Sequence[CellOutcome]) -> tuple[float, float]:
        """The metric and recall of the trial's cells: the summary's mean over questions
        (scope all, the tuned retrieval setting, default scoring), then the mean over
        datasets."""
        from chunkmark.experiments.runner import summary_rows

        scoring = _default_scoring()
        rows = [
            r
            for r in summary_rows(outcomes, self.config.seed)
            if r["scope"] == "all"
            and r["retrieval"] == self.retrieval
            and all(r[k] == v for k, v in scoring.items())
        ]
        if len(rows) != len(outcomes):
            raise ChunkmarkError(
                f"The cells of {outcomes[0].chunker} hold {len(rows)} summary rows for "
                f"{self.retrieval} with the default scoring; expected {len(outcomes)}.",
                "Rerun into an empty results folder (--out).",
            )
        metric = f"{self.settings.metric}_mean"
        value = sum(float(r[metric]) for r in rows) / len(rows)
        recall = sum(float(r["recall_mean"]) for r in rows) / len(rows)
        return value, recall

    def _session(self, first: str) -> Session:
        """The run's session, started at the first cell (its config names that cell's spec:
        a config holds no ranges; the manifest lists every trial's)."""
        if self.session is None:
            from chunkmark.experiments.runner import Session

            config = self.config.model_copy(update={"chunkers": (first,)})
            self.session = Session(
                config, self.say, self.embed_progress, self.analyses, self.report_writer
            )
        return self.session

    def _affordable(self, spec: str) -> bool:
        """Whether the trial's cells fit in what is left of ``max_cost`` (always, without one);
        counts their estimate as spent when they do."""
        budget = self.settings.max_cost
        if budget is None:
            return True
        from chunkmark.experiments.plan import check_budget, plan_grid

        plan = plan_grid(self.config.model_copy(update={"chunkers": (spec,)}), self.analyses)
        cost = plan.total_usd
        if cost is None:  # no estimate: the planner's own rule (it explains what is missing)
            check_budget(plan, budget - self.spent)
            return True
        if self.spent + cost > budget:
            self.stopped = (
                f"budget: the next trial ({spec}) is estimated at ${cost:.4f}, and "
                f"${self.spent:.4f} of the ${budget:.4f} budget (--max-cost) is spent"
            )
            self.say(f"stopped: {self.stopped}")
            return False
        self.spent += cost
        return True

    def _report(self, t: TrialRecord) -> None:
        from chunkmark.chunkers import CHUNKERS

        shown = CHUNKERS.short(t.chunker) if t.chunker else str(t.params)
        head = f"trial {t.number + 1}/{self.settings.trials}: {shown}"
        if t.value is None or t.recall is None:
            self.say(f"{head}: [red]failed[/]: {t.error}")
            return
        floor = self.settings.recall_floor
        tail = "" if t.feasible else f", [yellow]infeasible[/] (recall below {floor:g})"
        self.say(f"{head}: {self.settings.metric} {t.value:.4f}, recall {t.recall:.4f}{tail}")


def penalised(value: float, recall: float, floor: float) -> float:
    """What the sampler is told for a trial of ``value`` and ``recall``: the value when the
    recall reaches the floor, else ``recall - floor``, a negative number. Metrics lie in [0, 1],
    so every infeasible trial ranks below every feasible one, the nearer the floor the higher.

    (On the demo data with the fake embedder, telling ``value - (floor - recall)`` instead, so
    that near misses rank among feasible trials, found no better settings over ten seeds.)"""
    return value if recall >= floor else recall - floor


@contextmanager
def _quiet_optuna(optuna: Any) -> Iterator[None]:
    """Optuna's own INFO lines (a study created) stay out of chunkmark's output."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def _settings(**values: Any) -> TuneSettings:
    try:
        return TuneSettings(**values)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "tune"
        msg = err["msg"].removeprefix("Value error, ")
        raise ConfigError(
            f"Invalid tune setting {where!r}: {msg}.",
            "See `chunkmark tune --help` for the settings and their values.",
        ) from None


def _raw_experiment(
    experiment: str | Path | Mapping[str, Any], overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], str, dict[str, int] | None]:
    """The experiment's raw mapping (ranges still in its chunker strings), overrides applied,
    with where it came from for error messages."""
    if isinstance(experiment, Mapping):
        raw = dict(experiment)
        source, lines = "tune options", None
        for singular, plural in (("chunker", "chunkers"), ("embedder", "embedders")):
            if singular in raw and plural not in raw:
                raw[plural] = raw.pop(singular)
    else:
        path = Path(experiment)
        raw = read_experiment(path)
        source, lines = str(path), raw.pop("__lines__")
    overrides = dict(overrides)
    if "datasets" in overrides:
        raw.pop("dataset", None)
    raw.update(overrides)
    return raw, source, lines


def _chunker_texts(raw: Mapping[str, Any]) -> list[str]:
    value = raw.get("chunkers")
    items = [value] if isinstance(value, str) else list(value or [])
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ConfigError(
                f"Chunker {i + 1} of the experiment is a {type(item).__name__}, not a spec string.",
                "tune reads spec strings with ranges, e.g. 'fixed_tokens(size=range(100, 1000, 50))'"
                " (quote a spec that holds ': ' in YAML).",
            )
    return items


def _check_retrieval(text: str, config: ExperimentConfig) -> str:
    """The canonical spelling of the tuned retrieval setting; a ConfigError unless it is one of
    the experiment's settings."""
    from chunkmark.experiments.grid import expand_specs
    from chunkmark.retrieval import RETRIEVAL

    settings = config.retrieval_specs()
    try:
        specs = expand_specs([text], RETRIEVAL)
    except SpecError as exc:
        raise ConfigError(f"Invalid --pick-retrieval {text!r}: {exc.problem}", exc.fix) from None
    if len(specs) != 1 or specs[0] not in settings:
        raise ConfigError(
            f"The retrieval setting {text!r} is not one of the experiment's: "
            f"{', '.join(settings)}.",
            "Pick one of those with --pick-retrieval, or add it to the experiment's retrieval (or k).",
        )
    return specs[0]


def _check_scoring(config: ExperimentConfig) -> None:
    default = _default_scoring()
    if default not in config.scoring.combinations():
        raise ConfigError(
            "tune scores with the default scoring (excerpts: position, unit: chars, "
            "denominator: sum), which the experiment's scoring leaves out.",
            "Add those values to the experiment's scoring lists (or drop scoring:).",
        )
