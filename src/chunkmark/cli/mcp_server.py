"""``chunkmark mcp``: a Model Context Protocol server (the official ``mcp`` SDK) whose tools let
an agent list components, preview a chunking, plan a grid's cost, run it under a cost cap and
poll it, read the recommendation with its intervals, compare two cells and find the report.

The tools answer with the library functions the command line calls too
(:mod:`chunkmark.service`); this module is the SDK's side: each answer is sent as structured
content and as its JSON text, at most :data:`~chunkmark.service.replies.REPLY_LIMIT` bytes in
all; a ChunkmarkError is a structured
error reply (``isError``) with its one line and fix, and the server goes on serving. Blocking
work runs in worker threads; a run runs in a background thread of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from chunkmark.cli.options import help_text
from chunkmark.errors import ChunkmarkError
from chunkmark.report.compare import compare_cells as paired_comparison  # a tool has its name
from chunkmark.service import catalog, reading
from chunkmark.service.replies import Payload, dumps, error_payload, fit, jsonable
from chunkmark.service.runs import WAIT_LIMIT, Grid, Runs, plan

INSTRUCTIONS = """chunkmark measures which chunking strategy and embedding model retrieve the text
a set of questions needs, with 95% intervals and paired tests, and what each costs.

A dataset is a built-in name (demo) or a folder of documents and questions with exact answer
excerpts (JSONL or Chroma layout). The usual path: plan_grid (cells and dollars, nothing
spent) -> start_run with a max_cost (wait_seconds to wait for it) -> run_status until done ->
recommend (the best cell, its interval, cells tied with it, cost) -> compare_cells or
report_path. list_components names the chunkers, embedders, retrieval settings and metrics;
preview_chunks shows one chunker on one file. Specs are strings like
'fixed_tokens(size=[200, 400], overlap=0)' (a list is a grid). Errors come back as
{"error": {"kind", "message", "problem", "fix"}}."""

Datasets = Annotated[
    list[str] | None,
    Field(description="Datasets: built-in names (demo) or dataset folders. Default: demo."),
]
Chunkers = Annotated[
    list[str] | None,
    Field(
        description="Chunker specs; a list inside a spec is a grid, e.g. "
        "'fixed_tokens(size=[200, 400], overlap=0)'. Default: five fixed, recursive and "
        "sentence chunkers."
    ),
]
Embedders = Annotated[
    list[str] | None,
    Field(
        description="Embedder specs, e.g. 'sentence_transformers(model=\"all-MiniLM-L6-v2\")' "
        "(the default, local and free) or 'openai(model=\"text-embedding-3-small\")'."
    ),
]
Retrieval = Annotated[
    list[str] | None,
    Field(
        description="Retrieval setting specs, e.g. 'top_k(k=[1, 5])', 'bm25(k=5)', "
        "'token_budget(tokens=1024)'. Default: top_k at every k."
    ),
]
Depths = Annotated[
    str | None,
    Field(
        description="Depths of the default top_k retrieval, e.g. '1,5,min' (not with retrieval)."
    ),
]
Experiment = Annotated[
    str | None,
    Field(description="An experiment YAML file; the other grid arguments override its keys."),
]
Run = Annotated[str, Field(description="A run_id from start_run, or the path of a results folder.")]
Metric = Annotated[str, Field(description="The metric (see list_components(kind='metrics')).")]
PickRetrieval = Annotated[
    str | None,
    Field(
        description="The retrieval setting read, e.g. 'top_k(k=10)' or 'bm25(k=5)'. Default: "
        "top_k(k=5), else the first top_k setting."
    ),
]
PickK = Annotated[str | None, Field(description="Short for retrieval='top_k(k=K)'.")]

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def reply(payload: Payload) -> CallToolResult:
    """``payload`` as a tool result (structured, and as JSON text), cut to fit the limit."""
    fitted = fit(jsonable(payload), reply_size)
    return _result(fitted)


def _result(payload: Payload, is_error: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=dumps(payload))],
        structured_content=payload,
        is_error=is_error,
    )


def reply_size(payload: Payload) -> int:
    """Bytes of ``payload``'s tool result as JSON, the way it travels."""
    return len(_result(payload).model_dump_json(by_alias=True, exclude_none=True).encode())


def error_reply(exc: BaseException) -> CallToolResult:
    """A structured error reply (``isError``): see
    :func:`~chunkmark.service.replies.error_payload`."""
    payload = fit(jsonable(error_payload(exc)), reply_size)
    return _result(payload, is_error=True)


async def answer(work: Callable[[], Payload]) -> CallToolResult:
    """Run ``work`` in a worker thread and reply with its payload, or with its error."""
    try:
        payload = await anyio.to_thread.run_sync(work)
    except Exception as exc:  # every failure is a reply: the server keeps serving
        return error_reply(exc)
    return reply(payload)


def build_server(runs_dir: Path, cache_dir: Path | None = None) -> MCPServer[Any]:
    """The server and its tools; runs go under ``runs_dir`` unless a call names a folder."""
    from chunkmark.version import __version__

    runs = Runs(runs_dir, cache_dir)
    server: MCPServer[Any] = MCPServer(
        "chunkmark",
        title="chunkmark",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    tool = _described(server)
    _grid_tools(tool, runs)
    _run_tools(tool, runs)
    _reading_tools(tool, runs)
    return server


Tool = Callable[[ToolAnnotations], Callable[[Callable[..., Any]], Callable[..., Any]]]


def _described(server: MCPServer[Any]) -> Tool:
    """``server.tool`` described by the function's docstring, each paragraph on one line (the
    SDK passes the indented source lines on as they are)."""

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            described = server.tool(
                annotations=annotations, description=help_text(function.__doc__)
            )
            return described(function)

        return register

    return tool


def _grid_tools(tool: Tool, runs: Runs) -> None:
    """list_components, preview_chunks and plan_grid: what a grid can hold and would cost."""

    @tool(READ_ONLY)
    async def list_components(
        kind: Annotated[
            str | None,
            Field(
                description="One of chunkers, embedders, retrieval, rankers, metrics; "
                "none: every kind's names."
            ),
        ] = None,
        name: Annotated[str | None, Field(description="One entry of the kind, in full.")] = None,
    ) -> CallToolResult:
        """The components a grid can use: chunkers, embedders, retrieval settings, rankers and
        metrics. Without kind, their names; with kind, each one's summary; with kind and name,
        that one in full: its spec signature (parameters and defaults) and traits."""
        return await answer(partial(catalog.components, kind, name))

    @tool(READ_ONLY)
    async def preview_chunks(
        file: Annotated[str, Field(description="Path of a UTF-8 text file (absolute is safest).")],
        chunker: Annotated[str, Field(description="One chunker spec, e.g. 'recursive(size=400)'.")],
        embedder: Annotated[
            str, Field(description="Embedder for chunkers that embed (semantic); others ignore it.")
        ] = "sentence_transformers",
        show: Annotated[int, Field(ge=0, le=10, description="How many chunks to show.")] = 3,
        chars: Annotated[
            int, Field(ge=20, le=500, description="Each shown chunk's text is cut to this.")
        ] = 160,
    ) -> CallToolResult:
        """Chunk one file: the number of chunks, how much of the text they cover and overlap,
        their token counts (cl100k_base: total, min, median, mean, max) and the first few
        chunks with their character spans."""
        return await answer(
            partial(reading.preview, file, chunker, embedder, show, chars, runs.cache_dir)
        )

    @tool(READ_ONLY)
    async def plan_grid(
        datasets: Datasets = None,
        chunkers: Chunkers = None,
        embedders: Embedders = None,
        retrieval: Retrieval = None,
        k: Depths = None,
        experiment: Experiment = None,
        max_cost: Annotated[
            float | None, Field(ge=0, description="US dollars: say whether the estimate fits.")
        ] = None,
    ) -> CallToolResult:
        """What a run of this grid would do and cost, before anything is spent: cells
        (dataset x chunker x embedder), per embedder the texts and tokens to embed, the cached
        share and the dollars, per LLM chunker its calls and dollars, and the total."""
        grid = Grid(datasets, chunkers, embedders, retrieval, k, experiment)
        return await answer(partial(plan, grid, max_cost, runs.cache_dir))


def _run_tools(tool: Tool, runs: Runs) -> None:
    """start_run and run_status: a run in the background, polled by id."""

    @tool(ToolAnnotations(destructive_hint=False, open_world_hint=True))
    async def start_run(
        ctx: Context,
        datasets: Datasets = None,
        chunkers: Chunkers = None,
        embedders: Embedders = None,
        retrieval: Retrieval = None,
        k: Depths = None,
        experiment: Experiment = None,
        max_cost: Annotated[
            float,
            Field(
                ge=0,
                description="Spending cap in US dollars: the run is refused before any work "
                "when the estimate exceeds it or cannot be made (0: free work only).",
            ),
        ] = 0.0,
        out: Annotated[
            str | None,
            Field(description="Results folder (a rerun into it resumes). Default: a new one."),
        ] = None,
        wait_seconds: Annotated[
            float, Field(ge=0, le=WAIT_LIMIT, description="Wait this long for it to finish.")
        ] = 0.0,
    ) -> CallToolResult:
        """Run a grid (chunk, embed, retrieve, score, write the report) in the background,
        after checking its estimated cost against max_cost. Returns a run_id to poll with
        run_status; with wait_seconds, waits (reporting progress) up to that long first."""
        grid = Grid(datasets, chunkers, embedders, retrieval, k, experiment)
        try:
            job = await anyio.to_thread.run_sync(partial(runs.start, grid, max_cost, out))
        except Exception as exc:
            return error_reply(exc)
        await job.wait(wait_seconds, ctx.report_progress)
        return reply(job.status())

    @tool(READ_ONLY)
    async def run_status(
        ctx: Context,
        run_id: Annotated[str, Field(description="The run_id start_run returned.")],
        wait_seconds: Annotated[
            float, Field(ge=0, le=WAIT_LIMIT, description="Wait up to this long for it to end.")
        ] = 0.0,
    ) -> CallToolResult:
        """A run's state (running, done, failed), its cells started of the total, its last
        progress lines, and when done the report's path and what failed."""
        try:
            job = runs.get(run_id)
        except ChunkmarkError as exc:
            return error_reply(exc)
        await job.wait(wait_seconds, ctx.report_progress)
        return reply(job.status())


def _reading_tools(tool: Tool, runs: Runs) -> None:
    """recommend, compare_cells and report_path: what a finished run says."""

    @tool(READ_ONLY)
    async def recommend(
        run: Run,
        metric: Annotated[
            str | None,
            Field(
                description="The metric (see list_components(kind='metrics')). Default: recall "
                "at the run's first token_budget setting when it has one, else iou."
            ),
        ] = None,
        retrieval: PickRetrieval = None,
        k: PickK = None,
        max_context_tokens: Annotated[
            float,
            Field(
                gt=0,
                description="The most retrieved (context) tokens per question of the cells the "
                "'best recall within N context tokens' pick reads (not a token_budget setting).",
            ),
        ] = 1000.0,
    ) -> CallToolResult:
        """The report's recommendation per dataset: the best cell with its mean and 95%
        interval, its indexing cost, the runner-up's paired difference and Holm-adjusted
        p-value (or the cells tied with it), the cheapest tied cell and the best cell within
        a retrieved-token budget."""

        def work() -> Payload:
            return reading.recommendation(
                runs.folder(run), metric, retrieval, k, max_context_tokens
            )

        return await answer(work)

    @tool(READ_ONLY)
    async def compare_cells(
        run: Run,
        a: Annotated[str, Field(description="Cell A: a chunker or an embedder spec.")],
        b: Annotated[str, Field(description="Cell B, the same way.")],
        metric: Metric = "iou",
        retrieval: PickRetrieval = None,
        k: PickK = None,
        pick_chunker: Annotated[
            str | None, Field(description="Pin both cells' chunker (comparing embedders).")
        ] = None,
        pick_embedder: Annotated[
            str | None, Field(description="Pin both cells' embedder (comparing chunkers).")
        ] = None,
        dataset: Annotated[
            str | None, Field(description="The dataset, when the run holds several.")
        ] = None,
    ) -> CallToolResult:
        """Is cell A better than cell B? Their paired difference over the same questions, its
        95% interval, the sign-flip randomisation test's p-value (t-test and Wilcoxon beside
        it), wins/ties/losses and a verdict, as `chunkmark compare --json` gives them."""

        def work() -> Payload:
            pair = paired_comparison(
                [runs.folder(run)], a, b, metric=metric, retrieval=retrieval, k=k, dataset=dataset,
                chunker=pick_chunker, embedder=pick_embedder,
            )  # fmt: skip
            return pair.to_dict()

        return await answer(work)

    @tool(READ_ONLY)
    async def report_path(run: Run) -> CallToolResult:
        """The path of a run's report.html (every cell, plots, the inspector) and of its
        files; why there is no report when there is none."""
        return await answer(lambda: reading.report_files(runs.folder(run)))


def serve(
    runs_dir: Path, cache_dir: Path | None = None, http: bool = False, port: int = 8765
) -> None:
    """Serve over stdio, or over streamable HTTP on 127.0.0.1:``port`` (path ``/mcp``)."""
    server = build_server(runs_dir, cache_dir)
    if http:
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
