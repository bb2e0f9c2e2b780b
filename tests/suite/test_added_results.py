"""A closed model's results on the board: `chunkmark suite run -e "openai(...)"` over the board's
sets, against a loopback server speaking OpenAI's embeddings wire format, merged into the board
with `chunkmark suite leaderboard --add`, with its model, versions and cost; and another sample
refused in one line."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

import chunkmark
from chunkmark.datasets import load_demo, write_jsonl
from chunkmark.datasets.stitch import stitch, write_stitched
from chunkmark.suite.leaderboard import build_leaderboard
from chunkmark.suite.render import to_markdown
from cli.app_runner import error_line, invoke
from embedding_server import serve_embeddings

CHUNKERS = ("fixed_tokens(size=64, overlap=0)", "sentences(n=3)")
MODEL = "text-embedding-3-small"
PRICES = Path(chunkmark.__file__).parent / "costs" / "embedding_prices.yaml"
FAST = ["--budget", "1024", "--resamples", "100", "--permutations", "1000"]


def _suite_run(sets: list[Path], out: Path, embedder: str, cache: Path) -> None:
    args = ["suite", "run", *(a for s in sets for a in ("-d", str(s)))]
    args += [a for c in CHUNKERS for a in ("-c", c)]
    args += ["-e", embedder, "--out", str(out), "--cache-dir", str(cache), "--quiet"]
    ran = invoke(*args)
    assert ran.exit_code == 0, ran.output


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    data = tmp_path_factory.mktemp("data")
    write_jsonl(load_demo(), data / "demo")
    stitched = stitch([load_demo()], docs_per_file=4, files=4, segment_chars=(300, 900), seed=0)
    write_stitched(stitched, data / "stitched", layout="jsonl")
    return [data / "demo", data / "stitched"]


@pytest.fixture(scope="module")
def suites(sets: list[Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The board's suite (a local fake embedder) and a closed model's over the same sets."""
    root = tmp_path_factory.mktemp("suites")
    _suite_run(sets, root / "board", "fake()", root / "cache")
    with serve_embeddings() as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test")
        spec = f"openai(model='{MODEL}', base_url='{server.url}', max_retries=1)"
        _suite_run(sets, root / "closed", spec, root / "cache")
    return {"root": root, "board": root / "board", "closed": root / "closed", "server": server}


def server_url(suites: dict[str, Any]) -> str:
    return str(suites["server"].url)


@pytest.mark.integration
def test_a_closed_models_cells_join_the_board_with_model_versions_and_cost(
    suites: dict[str, Any],
) -> None:
    server = suites["server"]
    assert server.requests and {r["model"] for r in server.requests} == {MODEL}
    board = build_leaderboard(
        suites["board"], budget=1024, resamples=100, permutations=200, add=[suites["closed"]]
    )
    closed = [b for b in board.sets[0].cells if b.embedder.startswith("openai(")]
    embedder = closed[0].embedder
    # every closed-model cell of every set is ranked beside the board's own
    ranked = {r.key for r in board.ranking}
    for set_board in board.sets:
        keys = {c.key for c in set_board.cells if c.embedder == embedder and c.tokens == 1024}
        assert len(keys) == len(CHUNKERS) * 2  # dense and hybrid at 1,024 tokens (BM25: no vectors)
        assert keys <= ranked
        # the values are the closed run's own, read here from its results.parquet
        table = pq.read_table(suites["closed"] / set_board.name / "results.parquet").to_pylist()
        for cell in (c for c in set_board.cells if c.embedder == embedder):
            rows = sorted(
                (
                    r
                    for r in table
                    if r["embedder"] == embedder
                    and r["chunker"] == cell.chunker
                    and r["retrieval"] == cell.retrieval
                    and (r["excerpts"], r["unit"]) == ("position", "chars")
                ),
                key=lambda r: r["question_id"],
            )
            recall = [r["recall"] for r in rows]
            assert cell.metrics["recall"].value == pytest.approx(sum(recall) / len(recall))
            assert cell.source == str(suites["closed"])
    # provenance: the model as the run recorded it, its versions and what embedding cost
    (added,) = board.added
    assert added.embedder == embedder and added.identity["name"] == MODEL
    assert added.identity["base_url"] in server.url
    assert added.sets == ("demo", "stitched") and added.chunkers == len(CHUNKERS)
    assert added.versions["openai"] == importlib.metadata.version("openai")
    assert added.versions["chunkmark"] == chunkmark.__version__
    tokens = 0
    for name in added.sets:
        manifest = json.loads((suites["closed"] / name / "manifest.json").read_text())
        if name == added.sets[0]:
            assert added.created == manifest["created"]
        tokens += sum(c["chunk_tokens"] for c in manifest["cells"] if c["embedder"] == embedder)
    price = yaml.safe_load(PRICES.read_text())["models"][MODEL]
    assert added.tokens_embedded == tokens > 0
    assert added.price_per_million == price
    assert added.cost == pytest.approx(tokens * price / 1_000_000)
    markdown = to_markdown(board)
    assert "## Added results" in markdown
    line = next(x for x in markdown.splitlines() if x.startswith(f"| openai(model='{MODEL}'"))
    assert f"| {tokens:,} | {price:g} | {tokens * price / 1_000_000:.4f} |" in line
    assert f"chunkmark {chunkmark.__version__}, openai {added.versions['openai']}" in line
    assert f"--add {suites['closed']}" in markdown


@pytest.mark.integration
def test_the_command_merges_and_another_sample_is_refused_in_one_line(
    suites: dict[str, Any], sets: list[Path]
) -> None:
    root = suites["root"]
    made = invoke(
        "suite", "leaderboard", str(suites["board"]), "--add", str(suites["closed"]),
        "--out", str(root / "page"), *FAST, "--json",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    (added,) = json.loads(made.stdout)["added"]
    assert (added["model"], added["sets"]) == (MODEL, ["demo", "stitched"])
    assert added["cost"] == pytest.approx(
        added["tokens_embedded"] * added["price_per_million"] / 1e6
    )
    said = invoke(
        "suite", "leaderboard", str(suites["board"]), "--add", str(suites["closed"]),
        "--out", str(root / "page"), *FAST, "--quiet",
    )  # fmt: skip
    assert said.exit_code == 0, said.output
    line = next(x for x in said.stdout.splitlines() if x.startswith("added: "))
    assert line.startswith(f"added: openai(model='{MODEL}', base_url='{server_url(suites)}'")
    assert line.endswith(
        f") from {suites['closed']} on 2 sets, "
        f"{added['tokens_embedded']:,} tokens embedded, ${added['cost']:.4f}"
    )
    page = (root / "page" / "leaderboard.html").read_text(encoding="utf-8")
    assert "Added results" in page and MODEL in page
    # the demo with five questions fewer: another sample, under the same set name
    demo = load_demo()
    fewer = dataclasses.replace(demo, questions=demo.questions[:-5])
    write_jsonl(fewer, root / "other" / "demo")
    _suite_run([root / "other" / "demo"], root / "other-run", "fake(seed=1)", root / "cache")
    refused = invoke(
        "suite", "leaderboard", str(suites["board"]), "--add", str(root / "other-run"),
        "--out", str(root / "refused"), *FAST,
    )  # fmt: skip
    assert refused.exit_code != 0
    line = error_line(refused)
    assert "\n" not in line
    assert f"{root / 'other-run' / 'demo'}: the set demo was run on another sample" in line
    assert "59 questions" in line and "64 questions" in line and "--docs" in line
    assert not (root / "refused").exists()
    # a set the board does not have
    stray = root / "stray"
    stray.mkdir()
    suite = json.loads((root / "other-run" / "suite.json").read_text(encoding="utf-8"))
    suite["sets"][0]["name"] = "elsewhere"
    (stray / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    strayed = invoke("suite", "leaderboard", str(suites["board"]), "--add", str(stray), *FAST)
    assert "the set 'elsewhere' is not on the board" in error_line(strayed)
