"""The ``chunkbench`` command-line app."""

from __future__ import annotations

import sys

import click
import typer

from chunkbench.errors import ChunkbenchError

app = typer.Typer(
    name="chunkbench",
    help="Which chunking strategy and embedding model retrieve the text your questions need.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    """Entry point: run the app; a ChunkbenchError becomes one line on stderr and exit code 2."""
    _register_commands()
    try:
        code = app(standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ChunkbenchError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        typer.echo("interrupted; finished cells are kept on disk", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


_registered = False


def _register_commands() -> None:
    """Attach every command group to ``app`` (once)."""
    global _registered
    if _registered:
        return
    _registered = True
    from chunkbench.cli import chunkers, datasets, run

    chunkers.register(app)
    datasets.register(app)
    run.register(app)
