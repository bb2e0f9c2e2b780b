"""``chunkmark synth``: generate, filter, inspect and check question sets for your own
documents."""

from __future__ import annotations

import typer

SYNTH_HELP = (
    "Generate question sets with exact excerpts from your own documents, filter them, "
    "inspect them, and check them against real questions."
)


def register(app: typer.Typer) -> None:
    """Add the ``synth`` command group (generate, filter, inspect, check) to the app."""
    from chunkmark.cli import synth_check, synth_filter, synth_generate

    synth_app = typer.Typer(
        name="synth", help=SYNTH_HELP, no_args_is_help=True, add_completion=False
    )

    synth_generate.register(synth_app)
    synth_filter.register(synth_app)
    synth_check.register(synth_app)
    app.add_typer(synth_app, name="synth")
