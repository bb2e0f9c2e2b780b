"""Local means free on the command line: a model2vec grid runs under --max-cost, --prices means
the same on every command that estimates a cost, and the README's synth example (an Ollama
server on localhost) is priced at 0 in a dry run and fails at once when nothing listens."""

from __future__ import annotations

import json
import re
import shlex
import socket
from pathlib import Path

import pytest

from chunkmark.paths import CACHE_DIR_ENV
from chunkmark.report.data import load_runs
from cli.app_runner import error_line, invoke
from static_models import write_tiny_static_model

README = Path(__file__).resolve().parents[2] / "README.md"


def test_a_model2vec_grid_runs_under_max_cost(tmp_path: Path) -> None:
    folder, _ = write_tiny_static_model(tmp_path / "tiny")
    out = tmp_path / "run"
    result = invoke(
        "run",
        "-d",
        "demo",
        "-c",
        "fixed_tokens(size=333)",
        "-e",
        f"model2vec(model={str(folder)!r})",
        "--max-cost",
        "1",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-report",
        "--out",
        str(out),
        "-q",
    )
    assert result.exit_code == 0, result.output
    (cell,) = load_runs([out]).cells
    assert (cell.price_per_million, cell.cost) == (0.0, 0.0)  # the report's "local: free"


def test_every_command_that_limits_spending_takes_prices() -> None:
    from cli.test_grammar import commands, root

    limited = {
        path: {o for p in command.params for o in getattr(p, "opts", [])}
        for path, command in commands(root())
        if not hasattr(command, "commands")
    }
    spending = sorted(path for path, opts in limited.items() if "--max-cost" in opts)
    assert {"chunkmark run", "chunkmark plan", "chunkmark tune"} <= set(spending)
    assert [p for p in spending if "--prices" not in limited[p]] == []
    assert "--prices" in limited["chunkmark report"]


def readme_synth_commands() -> list[list[str]]:
    """The README's `chunkmark synth generate` commands, as argument lists (comments dropped,
    continued lines joined)."""
    text = README.read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n", " ", block)
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            if words[:3] == ["chunkmark", "synth", "generate"]:
                found.append(words[1:])
    return found


def readme_example(corpus: Path, out: Path, dry_run: bool) -> list[str]:
    (args,) = [a for a in readme_synth_commands() if ("--dry-run" in a) == dry_run][:1]
    llm = args[args.index("--llm") + 1]
    assert "base_url='http://localhost:" in llm and "llama3.1:8b" in llm
    if "--examples" in args:  # the README's labeled questions (here beside the corpus)
        at = args.index("--examples") + 1
        assert args[at] == f"{args[2]}/questions.jsonl"
        args[at] = str(corpus.parent / "questions.jsonl")
    args = [str(corpus) if a == args[2] else a for a in args]
    args[args.index("--out") + 1] = str(out)
    return args


def corpus(folder: Path) -> Path:
    folder.mkdir()
    for n in range(3):
        words = " ".join(f"Policy {n} clause {i} sets a limit of {i * 7} days." for i in range(40))
        (folder / f"policy{n}.md").write_text(f"# Policy {n}\n\n{words}\n", encoding="utf-8")
    asked = ["How many days does clause 3 of policy 0 allow?", "What limit does policy 2 set?"]
    lines = [json.dumps({"question": q}) + "\n" for q in asked]
    (folder.parent / "questions.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def test_the_readme_synth_example_dry_runs_at_no_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    args = readme_example(corpus(tmp_path / "policies-corpus"), tmp_path / "set", dry_run=True)
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "estimated cost: $0.0000, up to $0.0000" in result.output
    assert "llama3.1:8b is served from this machine" in result.output
    assert "No request was made" in result.output and not (tmp_path / "set").exists()


def test_the_readme_synth_example_without_a_server_fails_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    with socket.socket() as s:  # a port on this machine that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = readme_example(corpus(tmp_path / "policies-corpus"), tmp_path / "set", dry_run=False)
    at = args.index("--llm") + 1
    args[at] = re.sub(r"localhost:\d+", f"127.0.0.1:{port}", args[at])
    result = invoke(*args, "--questions", "2")
    line = error_line(result)
    assert line.startswith(f"error: Nothing is listening at http://127.0.0.1:{port}/v1")
    assert "Start the server" in line
    manifest = json.loads((tmp_path / "set" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "incomplete" and manifest["counts"]["answers"] == 0
    assert manifest["stopped"].startswith("Nothing is listening at")
