"""Option groups (``chunkmark.cli.options.grouped``): a command's group parameter stands for
the group's options in its place, and the command receives the group built from them."""

from __future__ import annotations

from pathlib import Path

import typer
import typer.main
from typer.testing import CliRunner

from chunkmark.cli import options
from chunkmark.cli.app import _register_commands, app


def test_a_group_stands_in_its_place_and_arrives_built() -> None:
    received: list[tuple[str, options.CacheFlags, options.SpendFlags, int]] = []

    def command(
        *,
        name: str = "x",
        caches: options.CacheFlags,
        spend: options.SpendFlags,
        count: int = 1,
    ) -> None:
        received.append((name, caches, spend, count))

    toy = typer.Typer(add_completion=False)
    toy.command()(options.grouped(command))
    params = [p.name for p in typer.main.get_command(toy).params]
    assert params == ["name", "cache_dir", "no_cache", "max_cost", "price_file", "count"]

    argv = ["--name", "y", "--no-cache", "--max-cost", "2.5", "--prices", "p.yaml"]
    result = CliRunner().invoke(toy, [*argv, "--count", "3"])
    assert result.exit_code == 0, result.output
    expected_spend = options.SpendFlags(max_cost=2.5, price_file=Path("p.yaml"))
    assert received == [("y", options.CacheFlags(None, True), expected_spend, 3)]
    assert expected_spend.settings() == {"max_cost": 2.5, "price_file": Path("p.yaml")}


def test_grouped_commands_keep_their_options_in_order() -> None:
    """The order each command listed its options in before they were grouped, written out
    here, not read from the groups (--prices is the spend group's ``price_file``)."""
    _register_commands()
    root = typer.main.get_command(app)
    commands = root.commands  # type: ignore[attr-defined]
    grid = ["config_file", "dataset", "chunker", "embedder", "k", "retrieval"]
    expected = {
        "plan": [*grid, "cache_dir", "no_cache", "max_cost", "price_file", "as_json"],
        "run": [
            *grid,
            *("excerpts", "unit", "denominator", "max_cost", "price_file", "out"),
            *("cache_dir", "no_cache", "no_report", "seed", "executor", "address"),
            *("metric", "pick_retrieval", "min_p_best", "quiet"),
        ],
        "tune": [
            *("config_file", "trials", "metric", "retrieval", "recall_floor", "seed"),
            *("max_cost", "price_file", "out", "dataset", "cache_dir", "no_cache"),
            *("no_report", "as_json", "quiet"),
        ],
    }
    for name, order in expected.items():
        assert [p.name for p in commands[name].params] == order, name
