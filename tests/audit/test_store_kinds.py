"""What each kind of store declares in ``STORES`` is what the rest of the package relies on: its
extra exists in pyproject.toml and installs its client, the ``audit`` extra installs them all,
``chunkmark audit --help`` shows its URIs, and a missing client is one error naming the pip
install."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from chunkmark.audit.stores import STORES, StoreKind, open_store
from chunkmark.audit.stores.chroma import ChromaStore, ChromaWriter
from chunkmark.errors import MissingDependencyError
from conftest import ROOT


def extras() -> dict[str, list[str]]:
    """pyproject.toml's extras, each written on one line as ``name = [...]``."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    lines = re.findall(r"^([\w-]+) = (\[.*\])$", section, re.M)
    return {name: ast.literal_eval(value) for name, value in lines}


def requirement_name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert found, requirement
    return found.group(0).lower()


@pytest.mark.parametrize("kind", list(STORES))
def test_a_stores_extra_installs_its_client(kind: str) -> None:
    module, package, extra = STORES[kind].client
    required = {requirement_name(r) for r in extras()[extra]}
    assert package.lower() in required, (kind, extra, required)
    assert module.split(".")[0] in sys.modules or __import__(module)  # the dev extras have it
    all_stores = extras()["audit"][0]
    assert extra in re.findall(r"[\w-]+", all_stores.split("[", 1)[1]), all_stores


def test_audit_help_shows_every_stores_uris() -> None:
    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    result = CliRunner().invoke(app, ["audit", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    shown = " ".join(result.stdout.replace("│", " ").split())
    for kind in STORES.values():
        for uri, what in kind.forms:
            assert (f"{uri} ({what})" if what else uri) in shown, (uri, shown)


@pytest.fixture
def missing_client() -> Iterator[str]:
    STORES.add(
        StoreKind(
            name="absent",
            title="Absent",
            schemes=("absent",),
            options=frozenset(),
            forms=(("absent:FOLDER?collection=NAME", ""),),
            client=("chunkmark_no_such_client", "no-such-client", "audit-absent"),
            opens=(ChromaStore, ChromaWriter),
        )
    )
    try:
        yield "absent"
    finally:
        STORES.unregister("absent")


def test_a_missing_client_names_the_package_and_the_extra(missing_client: str) -> None:
    with pytest.raises(MissingDependencyError) as raised:
        open_store(f"{missing_client}:./db?collection=docs")
    assert str(raised.value) == (
        "The absent store needs the 'no-such-client' package, which is not installed. "
        "Fix: pip install 'chunkmark[audit-absent]'"
    )
