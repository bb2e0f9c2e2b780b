"""The ``chunkmark`` command-line app."""

from __future__ import annotations

import sys

import click
import typer

from chunkmark.errors import ChunkmarkError

app = typer.Typer(
    name="chunkmark",
    help="Which chunking strategy and embedding model retrieve the text your questions need.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from chunkmark import __version__

        typer.echo(f"chunkmark {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Which chunking strategy and embedding model retrieve the text your questions need."""


def main() -> None:
    """Entry point: run the app; a ChunkmarkError becomes one line on stderr and exit code 2."""
    _register_commands()
    try:
        code = app(standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ChunkmarkError as exc:
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
    from chunkmark.cli import chunkers, datasets, run

    chunkers.register(app)
    datasets.register(app)
    run.register(app)
