"""The command-line app itself: its name, its version and its entry points."""

from __future__ import annotations

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
