"""The command-line app itself: its name, its version and its entry points."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import chunkmark


def test_version_is_the_installed_distributions() -> None:
    # One source: the package's __version__ is what the built metadata says.
    assert metadata.version("chunkmark") == chunkmark.__version__


def test_version_option_prints_name_and_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chunkmark", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"chunkmark {chunkmark.__version__}"


def test_console_script_points_at_the_app() -> None:
    scripts = {
        ep.name: ep.value
        for ep in metadata.distribution("chunkmark").entry_points
        if ep.group == "console_scripts"
    }
    assert scripts == {"chunkmark": "chunkmark.cli.app:main"}


def test_every_command_is_registered_by_the_module_the_lazy_map_names() -> None:
    # The map main() reads to import one command's module must agree with what each module
    # really registers: register each module alone into a fresh app and collect the names.
    import importlib

    import typer

    from chunkmark.cli.app import _HOMES, PANELS

    found: dict[str, str] = {}
    for home in sorted(set(_HOMES.values())):
        fresh = typer.Typer()
        importlib.import_module(f"chunkmark.cli.{home}").register(fresh)
        names = [c.name for c in fresh.registered_commands]
        names += [g.name for g in fresh.registered_groups]
        for name in names:
            assert name is not None
            found[name] = home
    assert found == _HOMES
    assert sorted(found) == sorted(n for names in PANELS.values() for n in names)


def test_a_command_line_imports_only_the_command_it_names() -> None:
    code = (
        "import runpy, sys\n"
        "sys.argv = ['chunkmark', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('chunkmark', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "import json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('chunkmark.cli.'))),"
        " file=sys.stderr)\n"
    )

    def modules(*args: str) -> tuple[str, list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
        )
        loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
        return done.stdout, loaded

    out, loaded = modules("--version")
    assert out.strip() == f"chunkmark {chunkmark.__version__}"
    assert not {"chunkmark.cli.run", "chunkmark.cli.audit", "chunkmark.cli.suite"} & set(loaded)
    out, loaded = modules("retrieval")
    assert "top_k" in out
    assert "chunkmark.cli.listing" in loaded
    assert not {"chunkmark.cli.run", "chunkmark.cli.audit", "chunkmark.cli.datasets"} & set(loaded)
    for root_help in (["--help"], ["--help", "run"]):  # the overview lists every command
        out, loaded = modules(*root_help)
        assert "chunkmark.cli.audit" in loaded and "chunkmark.cli.mcp_command" in loaded
        assert "suite" in out and "mcp" in out and "Evaluate" in out
