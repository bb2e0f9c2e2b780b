"""Every way the CLI can fail ends in a short message and an exit status, never a traceback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from chunkmark.errors import ConfigError
from chunkmark.experiments.store import prepare_out_dir

HELP_HINT = re.compile(r"^Run '.*chunkmark(?P<command> \S+)? --help' for usage\.$")
FAKE_RUN = ("--embedder", "fake()", "--dataset", "demo", "--quiet")


def cli(
    *args: str, cwd: Path, log_dir: Path | None = None, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["CHUNKMARK_LOG_DIR"] = str(log_dir or cwd / "logs")
    return subprocess.run(
        [*prefix, sys.executable, "-m", "chunkmark", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def stderr_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The non-blank lines on stderr, after checking that none of it is a traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.strip()]


def assert_usage_error(
    done: subprocess.CompletedProcess[str], message: str, command: str | None
) -> None:
    """Exit status 2, the message on one line, then one line pointing at the right --help."""
    assert done.returncode == 2, done.stderr
    lines = stderr_lines(done)
    assert len(lines) == 2, lines
    assert lines[0] == message
    hint = HELP_HINT.match(lines[1])
    assert hint is not None, lines[1]
    assert hint.group("command") == (None if command is None else f" {command}")


def assert_one_line_error(done: subprocess.CompletedProcess[str], pattern: str) -> str:
    """Exit status 2 and exactly one ``error: ...`` line matching ``pattern``."""
    assert done.returncode == 2, done.stderr
    lines = stderr_lines(done)
    assert len(lines) == 1, lines
    assert re.fullmatch(pattern, lines[0]), lines[0]
    return lines[0]


# --- usage mistakes ---------------------------------------------------------------------


def test_unknown_command_names_the_nearest_one(tmp_path: Path) -> None:
    done = cli("rnu", cwd=tmp_path)
    assert_usage_error(done, "error: no such command 'rnu'. Did you mean 'run'?", None)


def test_unknown_command_without_a_near_one(tmp_path: Path) -> None:
    done = cli("nosuchcmd", cwd=tmp_path)
    assert_usage_error(done, "error: no such command 'nosuchcmd'.", None)


def test_unknown_subcommand_names_the_nearest_one(tmp_path: Path) -> None:
    done = cli("datasets", "valdate", "demo", cwd=tmp_path)
    assert_usage_error(
        done, "error: no such command 'valdate'. Did you mean 'validate'?", "datasets"
    )


def test_unknown_option_names_the_nearest_one(tmp_path: Path) -> None:
    done = cli("run", "--chunkr", "x", cwd=tmp_path)
    assert_usage_error(done, "error: no such option --chunkr. Did you mean --chunker?", "run")


def test_unknown_option_without_a_near_one(tmp_path: Path) -> None:
    done = cli("run", "--nosuchflag", cwd=tmp_path)
    assert_usage_error(done, "error: no such option --nosuchflag.", "run")


def test_option_without_its_value(tmp_path: Path) -> None:
    done = cli("run", "--k", cwd=tmp_path)
    assert_usage_error(done, "error: option --k needs a value.", "run")


def test_option_value_of_the_wrong_type(tmp_path: Path) -> None:
    done = cli("run", "--seed", "abc", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = stderr_lines(done)
    assert len(lines) == 2, lines
    assert lines[0].startswith("error: invalid value for '--seed': ")
    assert HELP_HINT.match(lines[1])


def test_missing_argument(tmp_path: Path) -> None:
    done = cli("chunk", cwd=tmp_path)
    assert_usage_error(done, "error: missing argument 'FILE'.", "chunk")


def test_unexpected_extra_argument(tmp_path: Path) -> None:
    done = cli("run", "a.yaml", "b.yaml", cwd=tmp_path)
    assert_usage_error(done, "error: got unexpected extra argument(s) (b.yaml)", "run")


@pytest.mark.parametrize("k", ["0", "abc"])
def test_bad_k_values(tmp_path: Path, k: str) -> None:
    done = cli("run", *FAKE_RUN, "--k", k, cwd=tmp_path)
    assert_one_line_error(done, rf"error: Invalid k value '{k}'\. Fix: .+")


def test_unknown_chunker_spec(tmp_path: Path) -> None:
    done = cli("run", *FAKE_RUN, "--chunker", "nosuch()", "--out", "res", cwd=tmp_path)
    line = assert_one_line_error(done, r"error: Unknown chunker 'nosuch'\. Fix: .+")
    assert "fixed_tokens" in line


def test_a_problem_ends_its_sentence_before_the_fix(tmp_path: Path) -> None:
    """A component's own ValueError ("... got 0") is the end of a sentence: it gets its full
    stop before " Fix:" (it ran on as "got 0 Fix: See ...")."""
    done = cli(
        "run",
        "-c",
        "fixed_tokens(size=64)",
        "-e",
        "fake(dimension=0)",
        "--dataset",
        "demo",
        "--out",
        str(tmp_path / "out"),
        "--quiet",
        cwd=tmp_path,
    )
    line = assert_one_line_error(done, r"error: Bad embedder spec fake\(dimension=0.*")
    assert "dimension must be at least 1, got 0. Fix: See `chunkmark embedders`" in line


@pytest.mark.parametrize(
    ("problem", "shown"),
    [
        ("got 128", "got 128."),
        ("(got 'x')", "(got 'x')."),
        ("It is missing.", "It is missing."),
        ("Which one?", "Which one?"),
        ("It is missing:", "It is missing:"),
    ],
)
def test_every_error_puts_a_stop_before_its_fix(problem: str, shown: str) -> None:
    from chunkmark.datasets.validate import Problem

    assert str(ConfigError(problem, "Do this.")) == f"{shown} Fix: Do this."
    assert str(ConfigError(problem)) == problem
    assert (
        str(Problem("q.jsonl", 3, problem, "Do this.")) == f"q.jsonl, line 3: {shown} Fix: Do this."
    )


def test_bare_group_shows_its_help(tmp_path: Path) -> None:
    done = cli("synth", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    shown = done.stdout + done.stderr
    assert "generate" in shown and "filter" in shown


# --- unusable results folders -----------------------------------------------------------


def test_out_is_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("not a folder", encoding="utf-8")
    done = cli("run", *FAKE_RUN, "--out", "taken", cwd=tmp_path)
    line = assert_one_line_error(
        done, r"error: The results path taken exists and is not a folder\. Fix: .+"
    )
    assert "--out" in line
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "not a folder"


def test_out_inside_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("not a folder", encoding="utf-8")
    done = cli("run", *FAKE_RUN, "--out", "taken/results", cwd=tmp_path)
    assert_one_line_error(
        done,
        r"error: Cannot create the results folder taken/results: .*taken is a file, "
        r"not a folder\. Fix: .+",
    )


def _read_only_folder(tmp_path: Path) -> tuple[Path, list[str]]:
    """A folder nobody may write in, and the command prefix under which this user obeys its
    mode: none for an ordinary user; for root (whom modes do not stop, as in CI), util-linux's
    ``setpriv`` dropping the two capabilities that bypass file modes."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").write_text("x", encoding="utf-8")
    except PermissionError:
        return folder, []
    (folder / "probe").unlink()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        folder.chmod(0o755)
        pytest.skip("root needs util-linux's setpriv to obey file modes")
    return folder, [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def test_out_inside_a_read_only_folder(tmp_path: Path) -> None:
    folder, prefix = _read_only_folder(tmp_path)
    try:
        done = cli("run", *FAKE_RUN, "--out", "locked/results", cwd=tmp_path, prefix=prefix)
    finally:
        folder.chmod(0o755)
    assert_one_line_error(
        done,
        r"error: Cannot write results in locked/results: permission denied\. Fix: .+",
    )


def test_out_is_a_read_only_folder(tmp_path: Path) -> None:
    folder, prefix = _read_only_folder(tmp_path)
    check = (
        "import sys\n"
        "from chunkmark.errors import ConfigError\n"
        "from chunkmark.experiments.store import prepare_out_dir\n"
        "try:\n"
        "    prepare_out_dir(__import__('pathlib').Path(sys.argv[1]))\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", check, str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        folder.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert re.match(r"Cannot write results in .*locked", done.stdout), done.stdout


def test_unwritable_out_folder_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The same check as above, for users (root) whom file modes do not stop.
    def refuse(*_args: object, **_kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("chunkmark.experiments.store.tempfile.mkstemp", refuse)
    with pytest.raises(ConfigError) as info:
        prepare_out_dir(tmp_path / "results")
    assert str(info.value).startswith(
        f"Cannot write results in {tmp_path / 'results'}: permission denied. Fix: "
    )


def test_prepare_out_dir_creates_the_folder_and_leaves_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    assert prepare_out_dir(out) == out
    assert out.is_dir()
    assert list(out.iterdir()) == []


# --- the last-resort handler ------------------------------------------------------------


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """Run the app in this process with ``args``; its exit status."""
    from chunkmark.cli.app import main

    monkeypatch.setattr(sys, "argv", ["chunkmark", *args])
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # typer replaces it
    with pytest.raises(SystemExit) as exit_info:
        main()
    code = exit_info.value.code
    assert isinstance(code, int)
    return code


def raise_in_chunkers_command(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make ``chunkmark chunkers`` raise ``exc``."""

    def broken(*_args: object) -> None:
        raise exc

    monkeypatch.setattr("chunkmark.cli.listing._table", broken)


def test_unexpected_error_is_one_line_and_a_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = "sk-proj-abcdef1234567890"
    monkeypatch.setenv("CHUNKMARK_LOG_DIR", str(tmp_path / "logs"))
    raise_in_chunkers_command(monkeypatch, RuntimeError(f"boom with {secret}"))
    code = run_main(monkeypatch, "chunkers")
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err and secret not in err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    found = re.fullmatch(
        r"error: unexpected RuntimeError: boom with \*\*\*\. The traceback is in (?P<path>\S+); "
        r"please include it when you report this\.",
        lines[0],
    )
    assert found is not None, lines[0]
    log = Path(found.group("path"))
    assert log.parent == tmp_path / "logs"
    assert re.fullmatch(r"chunkmark-\d{8}-\d{6}-\d+\.log", log.name)
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: boom with ***" in text
    assert "in broken" in text
    assert "command: chunkmark chunkers" in text
    assert secret not in text


def test_unexpected_error_without_a_writable_log_prints_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("CHUNKMARK_LOG_DIR", str(blocked / "logs"))
    raise_in_chunkers_command(monkeypatch, ValueError("bad state"))
    code = run_main(monkeypatch, "chunkers")
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback (most recent call last)" in err
    assert "ValueError: bad state" in err
    assert err.splitlines()[-1].startswith(
        "error: unexpected ValueError: bad state. The traceback above could not be saved"
    )


def test_interrupt_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("CHUNKMARK_LOG_DIR", str(tmp_path / "logs"))
    raise_in_chunkers_command(monkeypatch, KeyboardInterrupt())
    code = run_main(monkeypatch, "chunkers")
    assert code == 130
    assert capsys.readouterr().err.splitlines() == ["interrupted; finished cells are kept on disk"]
    assert not (tmp_path / "logs").exists()


def test_command_line_in_the_log_hides_keys() -> None:
    from chunkmark.crash import scrub_args

    argv = [
        "chunkmark",
        "run",
        "--api-key",
        "hunter2",
        "--token=abc",
        "--chunker",
        'llm_semantic(api_key="plain-secret", max_tokens=200)',
        "0123456789abcdef0123456789abcdef",
        "--embedder",
        "openai(key=sk-abcdef123)",
        "--out",
        "results/run-1",
    ]
    shown = scrub_args(argv)
    assert shown == [
        "chunkmark",
        "run",
        "--api-key",
        "***",
        "--token=***",
        "--chunker",
        "llm_semantic(api_key=***, max_tokens=200)",
        "***",
        "--embedder",
        "openai(key=***)",
        "--out",
        "results/run-1",
    ]
