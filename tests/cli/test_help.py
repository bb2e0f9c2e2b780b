"""``chunkmark --help``: commands in four panels, in order, and every help paragraph wrapped by
the terminal, never broken mid-sentence by the source's line breaks."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main

from chunkmark.cli.app import PANELS, _register_commands, app
from cli.app_runner import invoke


def panel_titles(text: str) -> list[str]:
    return re.findall(r"╭─ (\w+) ─", text)


def test_commands_are_grouped_in_panels_in_order() -> None:
    result = invoke("--help", columns=120)
    assert result.exit_code == 0, result.output
    assert panel_titles(result.stdout) == [
        "Options",
        "Evaluate",
        "Data",
        "Components",
        "Maintenance",
        "Agents",
    ]
    listed = re.findall(r"^│ (\w+) ", result.stdout, flags=re.MULTILINE)
    assert listed == [name for names in PANELS.values() for name in names]


def test_every_registered_command_has_a_panel() -> None:
    _register_commands()
    names = {str(c.name) for c in app.registered_commands}
    names |= {str(g.name) for g in app.registered_groups}
    assert names == {name for names in PANELS.values() for name in names}


def _help_texts(command: Any, path: str) -> list[tuple[str, str]]:
    texts = [(path, command.help or "")]
    texts += [(f"{path} {p.name}", getattr(p, "help", None) or "") for p in command.params]
    for name, sub in getattr(command, "commands", {}).items():
        texts += _help_texts(sub, f"{path} {name}")
    return texts


def test_no_help_paragraph_has_a_line_break() -> None:
    _register_commands()
    root = typer.main.get_command(app)
    broken = [
        (where, paragraph)
        for where, text in _help_texts(root, "chunkmark")
        for paragraph in text.split("\n\n")
        if "\n" in paragraph
    ]
    assert broken == []


def test_help_paragraphs_rewrap_with_the_terminal_width() -> None:
    first = (
        "Chunk, embed, retrieve and score: one cell per (dataset, chunker, embedder), every "
        "retrieval setting and scoring option from one search per ranker."
    )
    wide = invoke("run", "--help", columns=200).stdout
    narrow = invoke("run", "--help", columns=60).stdout
    assert f" {first} " in wide
    assert first not in narrow
    assert " ".join(narrow.split()).count(first) == 1  # the same words, wrapped
    assert max(len(line) for line in narrow.splitlines()) <= 60


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if not getattr(sub, "hidden", False):
            paths += _command_paths(sub, (*path, name))
    return paths


# What help must never show: typer's type names (``<bool>`` after a flag, ``<list[str]>``,
# ``<path>``), reStructuredText/markdown markup left from a docstring, an argument in brackets
# twice, and an argument name in lower case (the usage line writes every other one upper case).
RAW = re.compile(r"<(bool|str|int|float|path|list\[[^>]*\])[^>]*>|``|:(func|class|mod|meth):`|\[\[")


def test_no_help_shows_type_names_markup_or_unmatched_argument_names() -> None:
    _register_commands()
    root = typer.main.get_command(app)
    paths = _command_paths(root)
    assert len(paths) >= 40  # every command and group, not just the root
    bad: dict[str, list[str]] = {}
    for path in paths:
        result = invoke(*path, "--help", columns=100)
        assert result.exit_code == 0, (path, result.output)
        found = [m.group(0) for m in RAW.finditer(result.stdout)]
        (usage,) = [line for line in result.stdout.splitlines() if "Usage:" in line]
        found += re.findall(r"[{\[]([a-z][a-z_]*)[}\]]", usage.split("[OPTIONS]")[-1])
        if found:
            bad[" ".join(("chunkmark", *path))] = sorted(set(found))
    assert bad == {}


@pytest.mark.parametrize(
    "listing", ["chunkers", "embedders", "retrieval", "llms", "extractors", "metrics"]
)
def test_component_listings_show_no_docstring_markup(listing: str) -> None:
    """The summaries come from docstrings: ``code``, :func:`name` and the like are read as
    plain words (model2vec's showed ``model2vec(model=FOLDER)`` and ``__init__``)."""
    for args in ((listing,), (listing, "--json")):
        result = invoke(*args, columns=250)
        assert result.exit_code == 0, result.output
        assert [m.group(0) for m in RAW.finditer(result.stdout)] == [], args
