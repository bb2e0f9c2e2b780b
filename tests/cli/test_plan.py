"""``chunkmark plan``: the plan on screen and as JSON, and --max-cost as one clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from chunkmark.chunkers import CHUNKERS, chunk_document
from chunkmark.costs.budget import usd
from chunkmark.datasets import load_dataset

# The app as `chunkmark` runs it, with the plan command registered if cli/app.py does not yet.
MAIN = (
    "import sys\n"
    "from chunkmark.cli import app, plan\n"
    "app._register_commands()\n"
    "if not any(c.name == 'plan' for c in app.app.registered_commands):\n"
    "    plan.register(app.app)\n"
    "app.main()\n"
)
CLOSED_PORT = "http://127.0.0.1:9/v1"  # nothing listens: a request would fail the command


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def write_experiment(
    folder: Path, model: str = "text-embedding-3-small", url: str = CLOSED_PORT
) -> Path:
    path = folder / "exp.yaml"
    path.write_text(
        "datasets: [demo]\n"
        'chunkers: ["fixed_tokens(size=200)"]\n'
        f"embedders: [\"openai(model='{model}', base_url='{url}')\"]\n"
        f"cache_dir: {folder / 'cache'}\n",
        encoding="utf-8",
    )
    return path


def expected_tokens() -> int:
    demo = load_dataset("demo")
    chunker, _ = CHUNKERS.build("fixed_tokens(size=200)")
    texts = {c.text(d.text) for d in demo.documents for c in chunk_document(chunker, d.id, d.text)}
    texts |= {q.text for q in demo.questions}
    enc = tiktoken.get_encoding("cl100k_base")
    return sum(len(enc.encode_ordinary(t)) for t in texts)


def test_plan_prints_cells_tokens_and_dollars(tmp_path: Path) -> None:
    result = cli("plan", str(write_experiment(tmp_path)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tokens = expected_tokens()
    out = result.stdout
    assert "1 cell = 1 dataset x 1 chunker x 1 embedder; each scored at 5 retrieval settings" in out
    assert "fixed_tokens(size=200, overlap=0, encoding='cl100k_base')" in out  # expanded spec
    assert f"{tokens:,}" in out
    assert f"Estimated cost: {usd(tokens * 0.02 / 1e6)}." in out
    assert not (tmp_path / "cache").exists()


def test_plan_json_parses_and_overrides_apply(tmp_path: Path) -> None:
    exp = write_experiment(tmp_path)
    result = cli(
        "plan", str(exp), "--json", "--chunker", "fixed_tokens(size=[100, 200])", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["n_cells"] == 2
    assert [c["chunker"] for c in data["cells"]] == [
        "fixed_tokens(size=100, overlap=0, encoding='cl100k_base')",
        "fixed_tokens(size=200, overlap=0, encoding='cl100k_base')",
    ]
    (embedding,) = data["embedding"]
    assert embedding["usd"] == data["total_usd"] > 0
    assert embedding["cached_texts"] == 0


def test_max_cost_fails_in_one_line_and_unknown_prices_name_the_fix(tmp_path: Path) -> None:
    exp = write_experiment(tmp_path)
    over = cli("plan", str(exp), "--max-cost", "0.000001", cwd=tmp_path)
    assert over.returncode == 2
    lines = over.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Estimated cost $")
    assert "exceeds --max-cost $0.000001" in lines[0]
    assert cli("plan", str(exp), "--max-cost", "5", cwd=tmp_path).returncode == 0

    api = "https://api.acme.example/v1"  # not this machine; nothing is sent
    unknown = cli(
        "plan", str(write_experiment(tmp_path, "acme-embed", api)), "--max-cost", "5", cwd=tmp_path
    )
    assert unknown.returncode == 2
    assert "acme-embed" in unknown.stderr and "prices:" in unknown.stderr
    assert "Estimated cost: unknown" in unknown.stdout

    # --prices FILE gives the price on the command line (per 1,000 tokens here: per is read).
    prices = tmp_path / "prices.yaml"
    prices.write_text("per: 1000\nmodels: {acme-embed: 0.5}\n", encoding="utf-8")
    exp = write_experiment(tmp_path, "acme-embed", api)
    given = cli(
        "plan", str(exp), "--prices", str(prices), "--json", "--max-cost", "5", cwd=tmp_path
    )
    assert given.returncode == 0, given.stderr
    (embedding,) = json.loads(given.stdout)["embedding"]
    assert embedding["usd_per_million"] == 500.0 and embedding["price_source"] == str(prices)
    assert embedding["usd"] == pytest.approx(embedding["tokens_to_embed"] * 500.0 / 1e6)
    too_little = cli("plan", str(exp), "--prices", str(prices), "--max-cost", "0.01", cwd=tmp_path)
    assert too_little.returncode == 2 and "exceeds --max-cost $0.01" in too_little.stderr
