"""Drive ``chunkmark mcp`` through the MCP SDK's client over stdio and print the session as
markdown: each tool call, its reply's size in bytes and the reply (the transcript in
docs/mcp.md).

    python scripts/mcp_transcript.py [FOLDER] [--embedder SPEC]

FOLDER (default: a new temporary folder) receives a copy of the demo documents and questions
(``my-docs/``), the runs and the cache. The default embedder is the local all-MiniLM-L6-v2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

import chunkmark


async def session(folder: Path, embedder: str | None) -> None:
    docs = folder / "my-docs"
    if not docs.exists():
        shutil.copytree(Path(chunkmark.__file__).parent / "datasets" / "demo_data", docs)
    grid: dict[str, Any] = {
        "datasets": [str(docs)],
        "chunkers": ["fixed_tokens(size=[128, 256])", "recursive(size=200)"],
        "k": "1,5",
    }
    if embedder:
        grid["embedders"] = [embedder]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chunkmark", "mcp", "--runs-dir", str(folder / "runs")],
        env={**os.environ, "CHUNKMARK_CACHE_DIR": str(folder / "cache")},
        cwd=str(folder),
    )
    run_id = ""

    async def call(tool: str, **args: Any) -> dict[str, Any]:
        nonlocal run_id
        result = await client.call_tool(tool, args, read_timeout_seconds=900)
        size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
        reply = result.structured_content or {"text": result.content[0].text}  # type: ignore[union-attr]
        run_id = reply.get("run_id", run_id)
        error = ", isError" if result.is_error else ""
        print(f"\n### {tool}\n\n```json\n{json.dumps(args, indent=2)}\n```\n")
        print(f"Reply ({size:,} bytes{error}):\n\n```json\n{json.dumps(reply, indent=2)}\n```")
        return reply

    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        info = await client.initialize()
        tools = (await client.list_tools()).tools
        print(f"Server {info.server_info.name} {info.server_info.version}; tools: ")
        print(", ".join(t.name for t in tools))
        await call("list_components")
        await call(
            "preview_chunks",
            file=str(docs / "documents" / "tidewell-manual.md"),
            chunker="recursive(size=200)",
            show=2,
        )
        await call("plan_grid", chunkers=["recursive(sise=200)"])
        await call("plan_grid", max_cost=0, **grid)
        await call("start_run", max_cost=0, wait_seconds=5, **grid)
        await call("run_status", run_id=run_id, wait_seconds=600)
        await call("recommend", run=run_id)
        await call("compare_cells", run=run_id, a="recursive(size=200)", b="fixed_tokens(size=256)")
        await call("report_path", run=run_id)
        await call(
            "start_run",
            embedders=['openai(model="text-embedding-3-large")'],
            datasets=[str(docs)],
            max_cost=0.0001,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--embedder", help="an embedder spec (default: the server's default)")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="chunkmark-mcp-"))
    folder.mkdir(parents=True, exist_ok=True)
    anyio.run(session, folder.resolve(), args.embedder)


if __name__ == "__main__":
    main()
