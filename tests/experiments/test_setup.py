"""An embedder that must be built before it runs: ``plan`` names it and builds nothing, a run
says so before it builds it (any embedder with a ``setup_needed()`` method)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chunkmark
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.experiments.config import make_config
from chunkmark.experiments.plan import plan_grid

NEEDED = "its vocabulary must be built first (about a minute)"
BUILT: list[str] = []


class BuiltOnFirstUse(FakeEmbedder):
    """A fake whose identity needs a model that is built the first time it is asked for."""

    def setup_needed(self) -> str | None:
        return None if BUILT else NEEDED

    def identity(self) -> dict[str, Any]:
        if not BUILT:
            BUILT.append("built")
        return {**super().identity(), "embedder": "built_on_first_use"}


@pytest.fixture
def registered() -> Iterator[None]:
    BUILT.clear()
    EMBEDDERS.register("built_on_first_use")(lambda: BuiltOnFirstUse(dimension=16))
    try:
        yield
    finally:
        EMBEDDERS.unregister("built_on_first_use")


def test_plan_names_the_build_and_the_run_says_it_before_building(
    registered: None, tmp_path: Path
) -> None:
    grid = {
        "datasets": ["demo"],
        "chunkers": ["fixed_tokens(size=200)"],
        "embedders": ["built_on_first_use()"],
        "cache_dir": tmp_path / "cache",
    }
    plan = plan_grid(make_config(grid))
    assert [(s.component, s.needed) for s in plan.setup] == [("built_on_first_use()", NEEDED)]
    assert BUILT == []  # the plan built nothing
    heard: list[str] = []
    chunkmark.evaluate(**grid, k=[1], out=tmp_path / "run", report=False, progress=heard.append)
    assert BUILT == ["built"]
    assert [line for line in heard if line.startswith("set-up")] == [
        f"set-up   built_on_first_use(): {NEEDED}"
    ]
    assert plan_grid(make_config(grid)).setup == []  # built: nothing left to set up
