"""The ``chunkmark mcp`` command: start the Model Context Protocol server
(:mod:`chunkmark.cli.mcp_server`), which needs the ``mcp`` extra."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chunkmark.cli import options

MCP_HELP = """Serve chunkmark to an agent over the Model Context Protocol (stdio by default).

Tools: list_components, preview_chunks, plan_grid, start_run (under a max_cost, in the
background), run_status, recommend, compare_cells and report_path; each replies with small
JSON (at most 8 KB), and a bad spec is an error reply with its fix, not the end of the server.
Add it to an MCP client as the command `chunkmark` with the arguments ["mcp"] (docs/mcp.md).
With --http it serves streamable HTTP on 127.0.0.1:PORT/mcp instead. Needs
the mcp extra: `pip install 'chunkmark\\[mcp]'`.
"""


def register(app: typer.Typer) -> None:
    app.command("mcp", help=MCP_HELP)(mcp)


def mcp(
    runs_dir: Annotated[
        Path,
        typer.Option(
            "--runs-dir",
            help="Where start_run writes results folders that a call does not name.",
        ),
    ] = Path("results"),
    cache_dir: options.CacheDir = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
    ] = False,
    port: Annotated[int, typer.Option(help="The port of --http.", min=1, max=65535)] = 8765,
) -> None:
    from chunkmark.optional import import_optional

    import_optional("mcp", "mcp", "mcp", "The MCP server")
    from chunkmark.cli.mcp_server import serve

    serve(runs_dir.expanduser().resolve(), cache_dir, http=http, port=port)
