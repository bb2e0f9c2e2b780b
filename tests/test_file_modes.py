"""Every file chunkmark writes gets the mode the user's umask gives a new file (0o666 & ~umask),
like any other program's: a run's results, its report, an imported corpus. Atomic writes go
through a temporary file; its private mode must not be what the user ends up with."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chunkmark.files import write_bytes_atomic


def _chunkmark(umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkmark", *args],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(umask),  # the child sets its umask, nothing else
    )


def _modes(root: Path) -> dict[str, int]:
    """Every file and folder below ``root`` (relative path -> permission bits)."""
    return {
        str(p.relative_to(root)) + ("/" if p.is_dir() else ""): stat.S_IMODE(p.stat().st_mode)
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_import_run_and_report_write_files_with_the_umasks_mode(tmp_path: Path, umask: int) -> None:
    sources = tmp_path / "docs"
    sources.mkdir()
    (sources / "greek.md").write_text("# Greek\n\nAlpha beta gamma delta.\n" * 20)
    (sources / "latin.txt").write_text("Lorem ipsum dolor sit amet.\n" * 20)
    corpus, out, page = tmp_path / "corpus", tmp_path / "run", tmp_path / "page"
    steps = [
        ["datasets", "import", str(sources), "--out", str(corpus)],
        [
            "run",
            "-d",
            "demo",
            "-c",
            "fixed_tokens(size=64)",
            "-e",
            "fake()",
            "--k",
            "1,3",
            "--out",
            str(out),
            "--no-cache",
        ],
        ["report", str(out), "--out", str(page)],
    ]
    for args in steps:
        done = _chunkmark(umask, *args)
        assert done.returncode == 0, (args, done.stderr)

    file_mode, folder_mode = 0o666 & ~umask, 0o777 & ~umask
    written = {**_modes(corpus), **_modes(out), **_modes(page)}
    for must in ("manifest.json", "results.parquet", "summary.csv", "report.html"):
        assert any(name.endswith(must) for name in written), must
    assert any(name.startswith("corpora/") for name in _modes(corpus))
    wrong = {
        name: oct(mode)
        for name, mode in written.items()
        if mode != (folder_mode if name.endswith("/") else file_mode)
    }
    assert wrong == {}, f"umask {oct(umask)}"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_follows_the_umask_and_leaves_no_temporary(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        write_bytes_atomic(tmp_path / "sub" / "a.bin", b"one")
        write_bytes_atomic(tmp_path / "sub" / "a.bin", b"two")  # replaces an existing file
    finally:
        os.umask(old)
    assert (tmp_path / "sub" / "a.bin").read_bytes() == b"two"
    assert _modes(tmp_path) == {"sub/": 0o777 & ~umask, "sub/a.bin": 0o666 & ~umask}
