"""Shared fixtures. Benchmark data is read from ``../shared`` beside the project root, or from
the folder named by ``CHUNKMARK_SHARED_DIR``; it is never copied into the repository.

With ``CHUNKMARK_REQUIRE_ALL=1`` (as ``.ci/run`` sets it) a test that skips fails instead: CI
has every component the tests need (the shared data, MiniLM, Ray, faiss, Chromium, ...), so a
skip there would be a regression passing silently. An ``xfail`` (failing or passing) counts as a
skip. The only skips allowed are for hardware the machine does not have; such a skip's reason
starts with ``skipping.HARDWARE``. The run ends with
the count of tests that ran and that skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from skipping import HARDWARE, REQUIRE_ALL, require_all

if TYPE_CHECKING:
    from chunkmark.llm.local import LocalServer

ROOT = Path(__file__).resolve().parent.parent


def _fail_unless_hardware(report: pytest.TestReport | pytest.CollectReport, nodeid: str) -> None:
    """Under CHUNKMARK_REQUIRE_ALL=1, turn a skip into a failure unless it is for hardware. An
    expected failure (``xfail``, marked or called) counts as a skip, since it hides whatever
    goes wrong in the test, and so does an ``xfail`` test that passes (``xpass``): the mark is
    stale."""
    if not require_all():
        return
    expected = getattr(report, "wasxfail", None)
    if expected is not None:
        reason = str(expected)
        kind = "passed while marked xfail" if report.passed else "was an expected failure"
        if report.passed and isinstance(report, pytest.TestReport) and report.when != "call":
            return  # xpass is judged on the test's call, not its setup or teardown
    elif report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        kind = "skipped"
    else:
        return
    for prefix in ("Skipped: ", "reason: "):
        if reason.startswith(prefix):
            reason = reason[len(prefix) :]
    if reason.startswith(HARDWARE):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"{REQUIRE_ALL}=1: {nodeid} {kind} ({reason}), but this run must have every "
        "component the tests need and every test passing. Fix: install or provide what it "
        "needs (see .ci/run) or fix the failure and drop the xfail, or mark a skip for missing "
        f"hardware with a reason starting {HARDWARE!r}."
    )
    if expected is not None:
        del report.wasxfail  # else pytest's summary would still report it as xfailed/xpassed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    _fail_unless_hardware(outcome.get_result(), item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    # A module that skips while it is imported (a module-level importorskip) skips every test in
    # it at collection, which the hook above never sees.
    outcome = yield
    _fail_unless_hardware(outcome.get_result(), collector.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    stats = terminalreporter.stats
    ran = len(
        {
            r.nodeid
            for key in ("passed", "failed", "error", "xfailed", "xpassed")
            for r in stats.get(key, [])
        }
    )
    skipped = len(stats.get("skipped", []))
    mode = f" ({REQUIRE_ALL}=1: only hardware skips allowed)" if require_all() else ""
    terminalreporter.write_line(f"chunkmark: {ran} tests ran, {skipped} skipped{mode}")


def shared_dir() -> Path:
    return Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def chroma_general_dir() -> Path:
    path = shared_dir() / "datasets" / "chroma_general"
    if not (path / "questions_df.csv").exists():
        pytest.skip(f"benchmark data not found at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    path = shared_dir() / "datasets" / "chroma_general_golden"
    if not path.exists():
        pytest.skip(f"golden metrics not found at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


@pytest.fixture(autouse=True, scope="session")
def _offline_env() -> None:
    # Tests never reach a model hub; tiktoken reads its ranks from the shared cache when present.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    cache = shared_dir() / "tiktoken_cache"
    if cache.exists():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))


LOCAL_MODEL_ENV = "CHUNKMARK_LOCAL_LLM"  # which installed model the local server runs


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalServer]:
    """llama.cpp's ``llama-server`` on 127.0.0.1 with the smallest local model (or the one
    ``$CHUNKMARK_LOCAL_LLM`` names), started once per session; installed by ``.ci/run`` with
    ``python -m chunkmark.llm.local install``. Missing, the tests skip (a failure in CI)."""
    from chunkmark.llm import local

    name = os.environ.get(LOCAL_MODEL_ENV, local.SMALLEST)
    for path in (local.server_path(), local.model_path(name)):
        if not path.exists():
            pytest.skip(
                f"{path} is not installed (python -m chunkmark.llm.local install --model {name})"
            )
    with local.start(name, threads=local.DEFAULT_THREADS) as server:
        yield server
