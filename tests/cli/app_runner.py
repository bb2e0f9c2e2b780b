"""The ``chunkmark`` app under typer's CliRunner, and the one line it prints for an error."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from chunkmark.cli.app import _one_line, _register_commands, app
from chunkmark.errors import ChunkmarkError


def invoke(*args: str, columns: int = 200) -> Result:
    """``chunkmark ARGS`` in this process, every command registered as ``main`` registers them."""
    _register_commands()
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})


def error_line(result: Result) -> str:
    """The line ``chunkmark`` prints on stderr for the ChunkmarkError the command raised."""
    assert isinstance(result.exception, ChunkmarkError), (result.exception, result.output)
    return f"error: {_one_line(str(result.exception))}"
