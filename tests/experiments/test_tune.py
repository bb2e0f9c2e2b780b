"""``tune``: the search space, the objective and its recall floor, failed trials, replay without
recompute, the budget, and the search against an exhaustive grid (fake embedder, demo data)."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import optuna
import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.errors import ConfigError, MissingDependencyError, SpecError
from chunkmark.experiments.config import read_experiment
from chunkmark.experiments.grid import expand_specs, parse_grid
from chunkmark.experiments.tune import (
    FAMILY_PARAM,
    TuneResult,
    search_space,
    tune,
)
from chunkmark.spans import Span

SIZES = "fixed_tokens(size=range(20, 200, 30), overlap=[0, 0.25])"


def experiment(tmp_path: Path, *chunkers: str, **extra: Any) -> dict[str, Any]:
    """A small experiment on the demo data with the fake embedder."""
    return {
        "dataset": "demo",
        "chunkers": list(chunkers) or [SIZES],
        "embedders": ["fake()"],
        "out": tmp_path / "out",
        "no_cache": True,
        "report": False,
        **extra,
    }


def sampled(text: str, n: int = 60, seed: int = 0) -> list[dict[str, Any]]:
    """What ``n`` random trials pick from the search space of ``text``."""
    space = search_space([text])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    picks = []
    for _ in range(n):
        trial = study.ask()
        picks.append(space.sample(trial)[1])
        study.tell(trial, 0.0)
    return picks


# --- search space ---------------------------------------------------------------------------


def test_integer_range_with_a_step_is_suggest_int_on_the_step() -> None:
    (family,) = search_space(["fixed_tokens(size=range(100, 990, 50))"]).families
    (size,) = family.params
    assert (size.kind, size.low, size.high, size.step) == ("int", 100, 950, 50)
    values = {p["size"] for p in sampled("fixed_tokens(size=range(100, 990, 50))")}
    assert values <= set(range(100, 951, 50))
    assert all(isinstance(v, int) for v in values)
    assert len(values) > 5


def test_integer_range_without_a_step_takes_every_integer() -> None:
    values = [p["n"] for p in sampled("sentences(n=range(1, 4))")]
    assert set(values) == {1, 2, 3, 4}


def test_float_range_is_continuous_and_a_stepped_one_lands_on_its_steps() -> None:
    (family,) = search_space(["fixed_tokens(size=400, overlap=range(0, 0.5))"]).families
    (overlap,) = family.params
    assert (overlap.kind, overlap.step) == ("float", None)
    free = [p["overlap"] for p in sampled("fixed_tokens(size=400, overlap=range(0, 0.5))")]
    assert all(0 <= v <= 0.5 for v in free)
    assert len(set(free)) == len(free)  # continuous: no two alike
    stepped = {p["overlap"] for p in sampled("fixed_tokens(size=400, overlap=range(0, 0.5, 0.2))")}
    assert stepped == {0.0, 0.2, 0.4}  # ends at the last step below high, rounded like the grid


def test_a_list_is_categorical_and_fixed_values_stay() -> None:
    (family,) = search_space(["recursive(size=[200, 400], length='chars')"]).families
    (size,) = family.params
    assert (size.kind, size.choices) == ("categorical", (200, 400))
    spec = family.spec({"size": 200})
    assert spec == str(CHUNKERS.resolve("recursive(size=200, length='chars')"))


def test_list_values_that_are_lists_are_offered_by_repr_and_mapped_back() -> None:
    text = 'recursive(size=200, separators=[["\\n\\n"], [" "]])'
    picks = sampled(text, n=20)
    assert {tuple(p["separators"]) for p in picks} == {("\n\n",), (" ",)}


def test_a_trial_resolves_to_the_canonical_spec() -> None:
    (family,) = search_space([SIZES]).families
    trial = optuna.trial.FixedTrial({"size": 80, "overlap": 0.25})
    values = search_space([SIZES]).sample(trial)[1]
    assert values == {"size": 80, "overlap": 0.25}
    assert family.spec(values) == str(CHUNKERS.resolve("fixed_tokens(size=80, overlap=20)"))


def test_several_chunker_specs_are_one_joint_search_with_a_choice_of_spec() -> None:
    space = search_space(
        [
            "fixed_tokens(size=range(100, 400, 100))",
            "recursive(size=[200, 400])",
            "sentences(n=3)",
            "fixed_tokens(size=[64], overlap=range(0, 0.5))",
        ]
    )
    labels = [f.label for f in space.families]
    assert labels == ["fixed_tokens#1", "recursive", "sentences", "fixed_tokens#2"]
    assert [p.key for p in space.families[1].params] == ["recursive.size"]
    trial = optuna.trial.FixedTrial({FAMILY_PARAM: "recursive", "recursive.size": 400})
    family, values = space.sample(trial)
    assert (family.label, values) == ("recursive", {"size": 400})
    family, values = space.sample(optuna.trial.FixedTrial({FAMILY_PARAM: "sentences"}))
    assert (family.label, values) == ("sentences", {})


def test_grid_texts_list_every_value_of_the_stepped_ranges() -> None:
    space = search_space(["fixed_tokens(size=range(20, 200, 30), overlap=range(0, 0.5, 0.25))"])
    (text,) = space.grid_texts()
    grid = parse_grid(text, CHUNKERS)
    assert dict(grid.axes) == {"size": (20, 50, 80, 110, 140, 170, 200), "overlap": (0, 0.25, 0.5)}
    assert len(expand_specs([text], CHUNKERS)) == 21
    with pytest.raises(SpecError, match="continuous"):
        search_space(["fixed_tokens(size=range(20, 200), overlap=range(0, 0.5))"]).grid_texts()


@pytest.mark.parametrize(
    ("chunkers", "message"),
    [
        (["fixed_tokens(size=200)", "recursive(size=400)"], "Nothing to tune"),
        (["zip(fixed_tokens(size=[200, 400], overlap=[0, 100]))"], "zip"),
        ([], "no chunkers"),
    ],
)
def test_a_space_with_nothing_to_search_is_refused(chunkers: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        search_space(chunkers)


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trials": 0}, "at least one trial"),
        ({"metric": "iuo"}, "unknown metric 'iuo'"),
        ({"recall_floor": 1.5}, "between 0 and 1"),
        ({"max_cost": -1.0}, "zero or more"),
        ({"retrieval": "top_k(k=7)"}, "not one of the experiment's: top_k\\(k=1\\)"),
        ({"retrieval": "top_k(k="}, "Invalid --pick-retrieval"),
    ],
)
def test_bad_settings_are_one_clear_error_before_any_cell(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    options = {"trials": 3, **options}
    with pytest.raises(ConfigError, match=message):
        tune(experiment(tmp_path), **options)
    assert not (tmp_path / "out" / "cells").exists()


def test_a_retrieval_setting_of_the_experiment_is_accepted_in_any_spelling(
    tmp_path: Path,
) -> None:
    exp = experiment(tmp_path, "fixed_tokens(size=[60, 120])", retrieval=["top_k(k=[2, 4])"])
    result = tune(exp, 2, retrieval="top_k(4)")
    assert result.retrieval == "top_k(k=4)"
    with pytest.raises(ConfigError, match="top_k\\(k=2\\), top_k\\(k=4\\)"):
        tune(exp, 2)  # the default top_k(k=5) is not one of them


def test_several_embedders_are_refused(tmp_path: Path) -> None:
    exp = experiment(tmp_path, embedders=["fake()", "fake(seed=1)"])
    with pytest.raises(ConfigError, match="one embedder"):
        tune(exp, 2)


def test_scoring_without_the_default_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="default scoring"):
        tune(experiment(tmp_path, scoring={"unit": "tokens"}), 2)


def test_missing_optuna_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'chunkmark\[tune\]'") as err:
        tune(experiment(tmp_path), 3)
    assert err.value.extra == "tune"


# --- the search -----------------------------------------------------------------------------


def summary_iou(out: Path, chunker: str, retrieval: str = "top_k(k=5)") -> tuple[float, float]:
    """IoU and recall of a cell's summary row (scope all, default scoring)."""
    want = (chunker, retrieval, "all", "position", "chars", "sum")
    keys = ("chunker", "retrieval", "scope", "excerpts", "unit", "denominator")
    with (out / "summary.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if tuple(row[k] for k in keys) == want:
                return float(row["iou_mean"]), float(row["recall_mean"])
    raise AssertionError(f"no summary row for {chunker}")


def test_tune_writes_the_run_files_and_tune_json(tmp_path: Path) -> None:
    messages: list[str] = []
    result = tune(experiment(tmp_path), 6, recall_floor=0.0, progress=messages.append)
    out = tmp_path / "out"
    assert len(result.trials) == 6
    assert {"results", "summary", "manifest", "tune"} <= set(result.files)
    data = json.loads((out / "tune.json").read_text(encoding="utf-8"))
    assert data == json.loads(json.dumps(result.to_dict(), default=str))
    assert data["settings"]["metric"] == "iou"
    assert data["settings"]["retrieval"] == "top_k(k=5)"
    assert data["search_space"][0]["params"][0] == {
        "name": "size",
        "kind": "int",
        "low": 20,
        "high": 200,
        "step": 30,
    }
    specs = {t["chunker"] for t in data["trials"]}
    assert len(specs) == result.cells_computed
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["chunkers"]) == specs  # one summary for every distinct trial
    for t in data["trials"]:
        assert set(t) >= {"number", "params", "chunker", "value", "recall", "feasible", "cells"}
        assert t["state"] == "complete" and t["feasible"]
        iou, recall = summary_iou(out, t["chunker"])
        assert t["value"] == pytest.approx(iou, abs=1e-12)  # the objective is summary.csv's
        assert t["recall"] == pytest.approx(recall, abs=1e-12)
        assert t["objective"] == t["value"]
    best = max(data["trials"], key=lambda t: t["value"])
    assert data["best"]["chunker"] == best["chunker"] == result.best.chunker  # type: ignore[union-attr]
    assert any(m.startswith("trial 1/6: fixed_tokens(") for m in messages)


def test_a_rerun_with_the_same_seed_replays_the_trials_computing_nothing(tmp_path: Path) -> None:
    first = tune(experiment(tmp_path), 8, seed=3)
    assert first.cells_computed > 1
    again = tune(experiment(tmp_path), 8, seed=3)
    assert again.cells_computed == 0
    assert again.results is not None and again.results.cells_computed == 0
    assert again.cells_resumed == first.cells_computed
    assert [t.params for t in again.trials] == [t.params for t in first.trials]
    assert [t.value for t in again.trials] == [t.value for t in first.trials]
    assert all(t.resumed for t in again.trials)


def test_trials_below_the_recall_floor_are_infeasible_and_penalised(tmp_path: Path) -> None:
    result = tune(experiment(tmp_path), 8, recall_floor=0.55)
    states = {t.state for t in result.trials}
    assert states == {"complete", "infeasible"}  # the range straddles the floor
    for t in result.trials:
        assert t.value is not None and t.recall is not None
        if t.recall >= 0.55:
            assert (t.state, t.feasible, t.objective) == ("complete", True, t.value)
        else:
            assert (t.state, t.feasible) == ("infeasible", False)
            assert t.objective == pytest.approx(t.recall - 0.55)
            assert t.objective is not None and t.objective < 0
    best = result.best
    assert best is not None and best.recall is not None and best.recall >= 0.55
    feasible_values = [t.value for t in result.trials if t.feasible and t.value is not None]
    assert best.value == max(feasible_values)


def test_no_feasible_trial_means_no_best(tmp_path: Path) -> None:
    result = tune(experiment(tmp_path), 3, recall_floor=1.0)
    assert result.best is None
    assert {t.state for t in result.trials} == {"infeasible"}
    assert json.loads((tmp_path / "out" / "tune.json").read_text())["best"] is None


def test_specs_with_one_canonical_form_are_one_cell(tmp_path: Path) -> None:
    result = tune(experiment(tmp_path, "fixed_tokens(size=100, overlap=[0.5, 50])"), 4)
    assert result.cells_computed == 1
    assert {t.chunker for t in result.trials} == {
        str(CHUNKERS.resolve("fixed_tokens(size=100, overlap=50)"))
    }
    assert [t.repeat_of for t in result.trials] == [None, 0, 0, 0]
    assert result.results is not None and len(result.results.manifest["chunkers"]) == 1


@pytest.fixture
def flaky_chunker() -> Iterator[str]:
    """A chunker of character windows whose size 300 raises while chunking."""

    @CHUNKERS.register("tune_test_flaky")
    def flaky(size: int = 200) -> Callable[[str], list[Span]]:
        """Fixed character windows; size 300 fails."""

        def chunk(text: str) -> list[Span]:
            if size == 300:
                raise RuntimeError("size 300 is broken")
            return [Span(i, min(i + size, len(text))) for i in range(0, len(text), size)]

        return chunk

    yield "tune_test_flaky"
    CHUNKERS.unregister("tune_test_flaky")


def test_a_failed_cell_is_a_failed_trial_and_the_search_goes_on(
    tmp_path: Path, flaky_chunker: str
) -> None:
    result = tune(experiment(tmp_path, f"{flaky_chunker}(size=[200, 300, 400])"), 8, recall_floor=0)
    failed = [t for t in result.trials if t.state == "failed"]
    assert failed and all("size 300 is broken" in (t.error or "") for t in failed)
    assert all(t.value is None and t.objective is None and t.cells for t in failed)
    assert {t.state for t in result.trials} == {"complete", "failed"}
    assert result.best is not None and "size=300" not in (result.best.chunker or "")
    assert result.results is not None and len(result.results.failures) == 1  # one cell, once


def test_parameters_the_chunker_rejects_are_failed_trials(tmp_path: Path) -> None:
    # overlap 2.5 is refused by the registry (no canonical spec); 30 by the chunker (not below
    # the size), which fails its cell
    result = tune(experiment(tmp_path, "fixed_tokens(size=20, overlap=[10, 30, 2.5])"), 8)
    by_overlap = {t.params["overlap"]: t for t in result.trials}
    assert set(by_overlap) == {10, 30, 2.5}
    rejected = by_overlap[2.5]
    assert (rejected.state, rejected.chunker, rejected.cells) == ("failed", None, [])
    assert rejected.error is not None and "whole number" in rejected.error
    too_wide = by_overlap[30]
    assert too_wide.state == "failed" and "smaller than size" in (too_wide.error or "")
    assert by_overlap[10].state in ("complete", "infeasible")


def test_max_cost_stops_the_search_before_the_budget_is_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkmark.experiments import plan

    planned: list[tuple[str, ...]] = []

    def fake_plan(config: Any, analyses: Any = ()) -> Any:
        assert analyses == ()  # the experiment has no answers: no analysis to price
        planned.append(config.chunkers)
        return SimpleNamespace(total_usd=0.4, unknown=[])

    monkeypatch.setattr(plan, "plan_grid", fake_plan)
    result = tune(experiment(tmp_path), 10, max_cost=1.0)
    distinct = {t.chunker for t in result.trials}
    assert len(distinct) == 2  # a third new cell would take the estimate to $1.20
    assert result.stopped is not None and "budget" in result.stopped
    assert result.estimated_usd == pytest.approx(0.8)
    assert len(planned) == 3 and all(len(c) == 1 for c in planned)  # one cell planned a trial


def test_an_experiment_file_with_ranges(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(
        "dataset: demo\n"
        "chunkers:\n  - fixed_tokens(size=range(40, 120, 40), overlap=range(0, 0.5))\n"
        "embedders: [fake()]\nno_cache: true\nreport: false\n",
        encoding="utf-8",
    )
    assert "range(" in read_experiment(path)["chunkers"][0]
    result = tune(path, 3, overrides={"out": tmp_path / "o"})
    assert isinstance(result, TuneResult)
    assert (tmp_path / "o" / "tune.json").is_file()
    assert all(t.params["size"] in (40, 80, 120) for t in result.trials)


# --- against an exhaustive grid ---------------------------------------------------------------


def test_tune_finds_the_best_of_an_exhaustive_grid_within_two_iou_points(tmp_path: Path) -> None:
    """The benchmark (benchmarks/tune_vs_grid.py) on a smaller range: 15 trials of a 24-cell
    grid, the same recall floor for both (they share an embedding cache, to be quick)."""
    from chunkmark.experiments.runner import evaluate

    text = "fixed_tokens(size=range(20, 160, 20), overlap=range(0, 0.5, 0.25))"
    floor = 0.5
    (grid_text,) = search_space([text]).grid_texts()
    cache = {"no_cache": False, "cache_dir": tmp_path / "cache"}
    grid = evaluate(
        datasets=["demo"],
        chunkers=[grid_text],
        embedders=["fake()"],
        out=tmp_path / "grid",
        report=False,
        **cache,
    )
    rows = [
        r
        for r in grid.overall()
        if r["retrieval"] == "top_k(k=5)"
        and (r["excerpts"], r["unit"], r["denominator"]) == ("position", "chars", "sum")
    ]
    assert len(rows) == 24
    grid_best = max(r["iou_mean"] for r in rows if r["recall_mean"] >= floor)
    result = tune(experiment(tmp_path, text, **cache), 15, recall_floor=floor)
    assert len({t.chunker for t in result.trials}) < 24
    assert result.best is not None and result.best.value is not None
    print(f"grid best {grid_best:.4f}, tune best {result.best.value:.4f} ({result.best.chunker})")
    assert result.best.value >= grid_best - 0.02
    assert result.best.value <= grid_best + 1e-12  # the grid holds every point tune can pick
