"""The report's optional sections in the browser: Relations and Answers, each with its link in
the navigation, shown only when the run has that part (report.js ``optionalSection``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import chunkmark
from relations.run_helpers import run_args, write_tiny_set

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is not installed"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def relations_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``chunkmark relations run`` on the tiny relation set, the report left on."""
    from chunkmark.cli.relations_run import add_commands

    root = tmp_path_factory.mktemp("sections")
    app, group = typer.Typer(), typer.Typer()
    app.add_typer(group, name="relations")
    add_commands(group)
    done = CliRunner().invoke(app, run_args(write_tiny_set(root / "tiny"), root / "out"))
    assert done.exit_code == 0, done.output
    return root / "out" / "report.html"


@pytest.fixture(scope="module")
def plain_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the demo set with neither relations nor answers."""
    out = tmp_path_factory.mktemp("plain") / "run"
    results = chunkmark.evaluate(
        dataset="demo", chunkers=["sentences(n=3)"], embedders=["fake()"], out=out, no_cache=True
    )
    path: Path = results.files["report"]
    return path


def shown(browser: Any, report: Path) -> dict[str, Any]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.resolve().as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    out = {
        "errors": errors,
        **{s: page.locator(f"#{s}").is_visible() for s in ("relations", "answers")},
        **{f"nav-{s}": page.locator(f"#nav-{s}").is_visible() for s in ("relations", "answers")},
        "relation groups": page.locator("#relations-body .relation-group").count(),
    }
    page.close()
    return out


def test_a_run_with_relations_shows_their_section_and_link_only(
    browser: Any, relations_report: Path
) -> None:
    got = shown(browser, relations_report)
    assert got["errors"] == []
    assert got["relations"] and got["nav-relations"]
    assert got["relation groups"] >= 1
    assert not got["answers"] and not got["nav-answers"]


def test_a_plain_run_shows_neither_section(browser: Any, plain_report: Path) -> None:
    got = shown(browser, plain_report)
    assert got["errors"] == []
    assert not got["relations"] and not got["nav-relations"]
    assert not got["answers"] and not got["nav-answers"]
    assert got["relation groups"] == 0
