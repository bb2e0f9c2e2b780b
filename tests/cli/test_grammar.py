"""One command-line grammar: every shared option declared once, one listing shape for every
catalog, and one spelling of each option (the old ones are gone)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
import typer.main
from typer.models import ArgumentInfo, OptionInfo
from typer.testing import CliRunner, Result

import chunkmark
from chunkmark.chunkers import CHUNKERS
from chunkmark.cli import listing, options
from chunkmark.cli.app import _register_commands, app
from chunkmark.datasets import download as downloads
from chunkmark.datasets.demo import DEMO_NAME
from chunkmark.embedders import EMBEDDERS
from chunkmark.llm import LLMS
from chunkmark.metrics import METRICS
from chunkmark.plugins import Plugin
from chunkmark.relations.extract import EXTRACTORS
from chunkmark.relations.metrics import RELATION_METRICS
from chunkmark.retrieval import RETRIEVAL, RETRIEVERS
from chunkmark.service import catalog
from chunkmark.specs import Entry, Registry
from chunkmark.suite.sets import names as suite_names
from relations.run_helpers import write_tiny_set

# Each shared option: its declaration in chunkmark.cli.options, and the spellings it owns.
SHARED = {
    "--max-cost": options.MaxCost,
    "--cache-dir": options.CacheDir,
    "--no-cache": options.NoCache,
    "--json": options.Json,
    "--quiet": options.Quiet,
    "-q": options.Quiet,
    "--prices": options.Prices,
    "--permutations": options.Permutations,
    "--pick-k": options.PickK,
    "--pick-dataset": options.PickDataset,
    "--from": options.FromDir,
}


def root() -> Any:
    """The click command tree of ``chunkmark`` (typer's own click types)."""
    _register_commands()
    return typer.main.get_command(app)


def is_option(param: Any) -> bool:
    return bool(param.param_type_name == "option")


def is_argument(param: Any) -> bool:
    return bool(param.param_type_name == "argument")


def commands(group: Any, path: str = "chunkmark") -> Iterator[tuple[str, Any]]:
    """Every command and group below ``group``, with its command line."""
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from commands(sub, f"{path} {name}")


def callbacks() -> Iterator[tuple[str, Any]]:
    """Every command function typer was given (groups' callbacks included)."""

    def walk(typer_app: typer.Typer, path: str) -> Iterator[tuple[str, Any]]:
        if typer_app.registered_callback is not None:
            yield path, typer_app.registered_callback.callback
        for command in typer_app.registered_commands:
            yield f"{path} {command.name}", command.callback
        for group in typer_app.registered_groups:
            yield from walk(group.typer_instance, f"{path} {group.name}")

    _register_commands()
    yield from walk(app, "chunkmark")


def declarations(function: Any) -> Iterator[OptionInfo | ArgumentInfo]:
    for hint in get_type_hints(function, include_extras=True).values():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, OptionInfo | ArgumentInfo):
                yield meta


def shared_declaration(option: Any) -> OptionInfo:
    (info,) = [m for m in get_args(option)[1:] if isinstance(m, OptionInfo)]
    return info


def test_every_shared_option_is_the_one_declaration_of_options_py() -> None:
    seen: dict[str, list[str]] = {flag: [] for flag in SHARED}
    for path, function in callbacks():
        for info in declarations(function):
            if not isinstance(info, OptionInfo):
                continue
            spellings = [*(info.param_decls or ()), info.default]  # typer keeps the first here
            for flag in spellings:
                if flag in SHARED:
                    assert info is shared_declaration(SHARED[flag]), (
                        f"`{path}` declares {flag} itself; use chunkmark.cli.options"
                    )
                    seen[flag].append(path)
    for flag, where in seen.items():
        assert where, f"no command takes {flag}"
    assert sorted(seen["--max-cost"]) == [
        "chunkmark plan",
        "chunkmark relations prepare",
        "chunkmark relations run",
        "chunkmark run",
        "chunkmark suite run",
        "chunkmark synth generate",
        "chunkmark tune",
    ]
    assert len(seen["--no-cache"]) >= 6


def test_every_shared_option_has_one_help_text_and_one_spelling() -> None:
    found: dict[str, set[tuple[Any, ...]]] = {}
    for _path, command in commands(root()):
        for param in command.params:
            if not is_option(param):
                continue
            for flag in param.opts:
                if flag in SHARED:
                    found.setdefault(flag, set()).add((tuple(param.opts), param.help))
    assert set(found) == set(SHARED)
    for flag, forms in found.items():
        assert len(forms) == 1, f"{flag} is declared {len(forms)} ways: {forms}"


def test_the_experiment_file_is_the_first_argument_everywhere() -> None:
    takes = {}
    for path, command in commands(root()):
        arguments = [p for p in command.params if is_argument(p) and not p.hidden]
        if arguments and "EXPERIMENT" in (arguments[0].metavar or ""):
            takes[path] = arguments
        for param in command.params:
            assert "--config" not in getattr(param, "opts", ()) or param.hidden, path
    assert set(takes) == {
        f"chunkmark {name}"
        for name in ("run", "plan", "tune", "chunkers diagnose", "relations run")
    }
    assert all(len(arguments) == 1 for arguments in takes.values())


def test_no_selecting_command_shows_a_grid_flag() -> None:
    grid = {"-c", "--chunker", "-e", "--embedder", "-r", "--retrieval", "--k", "-d", "--dataset"}
    grid |= {"--excerpts", "--unit", "--denominator"}
    for name in ("compare", "gate", "report", "tune"):
        command = root().commands[name]
        shown = {o for p in command.params if not getattr(p, "hidden", False) for o in p.opts}
        assert not (shown & grid) - ({"-d", "--dataset"} if name == "tune" else set()), name


def test_every_out_is_a_folder() -> None:
    for path, command in commands(root()):
        for param in command.params:
            if "--out" in getattr(param, "opts", ()):
                assert "folder" in (param.help or "").lower(), f"{path} --out: {param.help}"


# --- listings -----------------------------------------------------------------------------------


def listed(*args: str) -> list[dict[str, Any]]:
    _register_commands()
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def names(rows: list[dict[str, Any]], kind: str | None = None) -> list[str]:
    return [r["name"] for r in rows if kind is None or r["kind"] == kind]


@pytest.mark.parametrize(
    ("command", "registries"),
    [
        (("chunkers",), [CHUNKERS]),
        (("embedders",), [EMBEDDERS]),
        (("retrieval",), [RETRIEVAL, RETRIEVERS]),
        (("llms",), [LLMS]),
        (("extractors",), [EXTRACTORS]),
    ],
)
def test_every_registry_has_a_json_listing_of_its_names(
    command: tuple[str, ...], registries: list[Registry[Any]]
) -> None:
    rows = listed(*command)
    for registry in registries:
        assert names(rows, registry.kind) == [e.name for e in registry]
        assert registry.command == command[0]  # where its unknown-name error points
    assert sum(len(list(r)) for r in registries) == len(rows)
    first = rows[0]
    assert set(first) == {"kind", "name", "parameters", "summary", "traits", "needs", "origin"}


def test_the_catalogs_share_the_listing_shape() -> None:
    assert names(listed("metrics")) == [m.name for m in METRICS]
    assert names(listed("relations", "metrics")) == RELATION_METRICS.names()
    suite_sets = [n for n in suite_names() if n not in downloads.DOWNLOADABLE]
    expected = [DEMO_NAME, *suite_sets, *downloads.DOWNLOADABLE]
    assert names(listed("datasets")) == expected == names(listed("datasets", "list"))


def test_an_origin_column_appears_when_a_plugin_registered_an_entry() -> None:
    registry: Registry[int] = Registry("thing")

    @registry.register("ours")
    def ours() -> int:
        """Ours."""
        return 1

    plain = listing._table(catalog.registry_listing(registry, "Things"))
    assert [c.header for c in plain.columns] == ["name", "parameters", "summary"]
    entry = registry.entry("ours")
    plugged = Entry("theirs", entry.factory, "Theirs.", plugin=Plugin("p", "p_mod", "pkg-p"))
    registry._entries.add(plugged)
    found = catalog.registry_listing(registry, "Things")
    assert [r["origin"] for r in found.rows] == [None, "pkg-p"]
    table = listing._table(found)
    assert [c.header for c in table.columns][-1] == "origin"
    assert [str(cell) for cell in table.columns[-1].cells] == ["chunkmark", "pkg-p"]


def test_the_components_panel_holds_every_listing() -> None:
    from chunkmark.cli.app import PANELS

    for name in ("chunkers", "embedders", "retrieval", "llms", "extractors", "metrics"):
        assert name in PANELS["Components"]


# --- one spelling each --------------------------------------------------------------------------

SMALL = "fixed_tokens(size=40, overlap=0)"
LARGE = "fixed_tokens(size=400, overlap=0)"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grammar") / "run"
    chunkmark.evaluate(
        dataset="demo",
        chunkers=[SMALL, LARGE],
        embedders=["fake()"],
        k=[1, 5],
        out=out,
        no_cache=True,
        report=False,
    )
    return out


def invoke(*args: str) -> Result:
    _register_commands()
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_the_old_spellings_are_gone(run_dir: Path, tmp_path: Path) -> None:
    for old in (
        ["compare", str(run_dir), "--a", SMALL, "--b", LARGE, "--k", "1"],
        ["report", str(run_dir), "--retrieval", "top_k(k=1)"],
        ["chunkers", "diagnose", "--config", str(tmp_path / "exp.yaml")],
        ["tune", str(tmp_path / "exp.yaml"), "--retrieval", "top_k(k=7)"],
    ):
        done = invoke(*old)
        assert done.exit_code == 2, old
        assert "No such option" in done.output, done.output
    folder = write_tiny_set(tmp_path / "tiny")
    grid = ["-c", "sentences(n=1)", "-e", "fake()", "--no-cache", "--dry-run"]
    extra = invoke("relations", "run", "exp.yaml", str(folder), *grid)
    assert extra.exit_code == 2 and "Got unexpected extra argument" in extra.output


def test_report_out_is_a_folder(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pages.html"  # a folder, whatever its name ends with
    new = invoke("report", str(run_dir), "-o", str(folder), "--permutations", "1000")
    assert new.exit_code == 0, new.output
    assert (folder / "report.html").is_file() and "note:" not in new.stderr


def test_relations_run_takes_the_set_from_dataset(tmp_path: Path) -> None:
    folder = write_tiny_set(tmp_path / "tiny")
    grid = ["-c", "sentences(n=1)", "-e", "fake()", "--no-cache", "--dry-run"]
    new = invoke("relations", "run", "--dataset", str(folder), *grid)
    assert new.exit_code == 0, new.output
    assert "Dry run: no request was made" in new.stderr
    missing = invoke("relations", "run", *grid)
    assert "needs the relation set" in str(missing.exception)
    assert "--dataset RELATION_SET" in str(missing.exception)


def test_option_help_shows_its_written_default() -> None:
    shown = " ".join(invoke("compare", "--help").stdout.split())
    assert "excerpts matched by position or text. [default: position]" in shown
    assert "[default: top_k(k=5), else the first top_k setting]" in shown
