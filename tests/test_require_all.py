"""CI's rule (``CHUNKMARK_REQUIRE_ALL=1``): a skip fails the run unless it is for hardware, whether
a test skips while it runs or a whole module skips while it is imported. Checked by running
pytest itself, with this project's conftest as a plugin, on throwaway test files: its exit
status and report are the judge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skipping import HARDWARE

TESTS = Path(__file__).resolve().parent

FILES = {
    "test_module_skip.py": (
        "import pytest\n"
        "pytest.importorskip('no_such_module_for_chunkmark')\n"
        "def test_never_runs() -> None:\n"
        "    assert False\n"
    ),
    "test_test_skip.py": (
        "import pytest\ndef test_skips() -> None:\n    pytest.skip('no server here')\n"
    ),
    "test_hardware_skip.py": (
        f"import pytest\ndef test_needs_a_gpu() -> None:\n    pytest.skip({HARDWARE!r} + 'a GPU')\n"
    ),
    "test_marked_xfail.py": (
        "import pytest\n"
        "@pytest.mark.xfail(reason='a known bug')\n"
        "def test_fails() -> None:\n"
        "    assert 1 + 1 == 3\n"
    ),
    "test_called_xfail.py": (
        "import pytest\ndef test_gives_up() -> None:\n    pytest.xfail('not working yet')\n"
    ),
    "test_xpass.py": (
        "import pytest\n"
        "@pytest.mark.xfail(reason='was broken once')\n"
        "def test_passes() -> None:\n"
        "    assert 1 + 1 == 2\n"
    ),
    "test_hardware_xfail.py": (
        "import pytest\n"
        f"@pytest.mark.xfail(reason={HARDWARE!r} + 'AVX-512')\n"
        "def test_fails_without_it() -> None:\n"
        "    assert False\n"
    ),
}


def run(folder: Path, name: str, require_all: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHUNKMARK_REQUIRE_ALL": require_all, "PYTHONPATH": str(TESTS)}
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
        "--rootdir", str(folder), "-p", "conftest", name,
    ]  # fmt: skip
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("name", "fails"),
    [("test_module_skip.py", True), ("test_test_skip.py", True), ("test_hardware_skip.py", False)],
)
def test_a_skip_fails_under_require_all_unless_for_hardware(
    tmp_path: Path, name: str, fails: bool
) -> None:
    (tmp_path / name).write_text(FILES[name], encoding="utf-8")
    strict = run(tmp_path, name, "1")
    # 1: a test failed, 2: collection was interrupted by an error (5, nothing collected, is a pass)
    assert (strict.returncode in (1, 2)) == fails, strict.stdout + strict.stderr
    assert ("but this run must have every component" in strict.stdout) == fails
    relaxed = run(tmp_path, name, "0")
    # 5: pytest collected no test (the module skipped whole); no failure either way
    assert relaxed.returncode in (0, 5), relaxed.stdout + relaxed.stderr
    assert "1 skipped" in relaxed.stdout


@pytest.mark.parametrize(
    ("name", "fails", "relaxed_outcome"),
    [
        ("test_marked_xfail.py", True, "1 xfailed"),
        ("test_called_xfail.py", True, "1 xfailed"),
        ("test_xpass.py", True, "1 xpassed"),
        ("test_hardware_xfail.py", False, "1 xfailed"),
    ],
)
def test_an_xfail_counts_as_a_skip(
    tmp_path: Path, name: str, fails: bool, relaxed_outcome: str
) -> None:
    """An expected failure hides a failure as a skip hides a missing component, and an xfail
    that passes is a stale mark: both fail under the rule, as a skip does, unless for hardware."""
    (tmp_path / name).write_text(FILES[name], encoding="utf-8")
    strict = run(tmp_path, name, "1")
    assert strict.returncode == (1 if fails else 0), strict.stdout + strict.stderr
    assert ("but this run must have every component" in strict.stdout) == fails
    assert ("1 failed" in strict.stdout) == fails
    assert ("xfailed" in strict.stdout or "xpassed" in strict.stdout) != fails, strict.stdout
    relaxed = run(tmp_path, name, "0")
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert relaxed_outcome in relaxed.stdout
