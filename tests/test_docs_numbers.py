"""Every measured table in README.md and docs/ names the command that produces it.

A table is *measured* when one of its body cells starts with a number (after dropping inline
code and emphasis): a count, a mean, a timing, a ratio. Such a table, or a run of tables with
only blank lines between them, must have a command within WINDOW lines above or below it, in
the same section: an inline code span that starts with ``benchmarks/...py``, ``chunkmark
<command>``, ``pytest`` or ``tests/...py``, or such a line in a fenced code block. Tables whose
numbers are defaults or definitions are listed in NOT_MEASURED with the reason.

Every command the docs name must exist: each ``benchmarks/`` and ``tests/`` path, each
``tests/...py::test_name``, and each ``chunkmark`` command and subcommand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
WINDOW = 10

# (file, header row) -> why its numbers are not measurements.
NOT_MEASURED = {
    ("docs/synth.md", "| option | default | meaning |"): "option defaults",
    ("docs/metrics.md", "| name | label | definition |"): "definitions (hit@k is 1 or 0)",
}

# Paths the docs name as examples of files a reader would create, not as existing commands.
EXAMPLE_PATHS = {
    "tests/chunkers/test_halves.py": "contributing.md: where the example chunker's test would go",
    "tests/embedders/test_letters.py": "contributing.md: where the example embedder's test would go",
    "tests/retrieval/test_shortest.py": "contributing.md: where the example ranker's test would go",
    "tests/llm/test_echo_llm.py": "contributing.md: where the example provider's test would go",
    "tests/cli/test_hello.py": "contributing.md: where the example command's test would go",
}

CODE_SPAN = re.compile(r"`([^`]+)`")
NUMBER_START = re.compile(r"^(?:about |~|≈|\$|[<>≤≥]\s*)?[-+−]?\d")
COMMAND = re.compile(
    r"^(?:\$ )?(?:flock \S+ )?(?:\.venv/bin/)?(?:python3? )?"
    r"(?:benchmarks/[\w/.-]+\.py|chunkmark [a-z]|pytest\b|tests/[\w/.-]+\.py)"
)
BENCH_PATH = re.compile(r"(?<![\w/.])benchmarks/[\w/.-]*\w\.(?:py|yaml)")
TEST_PATH = re.compile(r"(?<![\w/.])tests/[\w/.-]*\w\.py(?:::\w+)?")
CHUNKMARK_COMMAND = re.compile(
    r"^(?:\$ )?(?:flock \S+ )?(?:\.venv/bin/)?chunkmark ((?:[a-z][\w-]*)(?: [a-z][\w-]*)?)"
)


@dataclass
class Table:
    first: int  # index of the header row
    last: int  # index of the last row
    header: str
    cells: list[str]  # body cells


@dataclass
class Doc:
    name: str
    lines: list[str]
    fence: list[int | None]  # per line: the index of its fenced block's opening line, or None
    headings: set[int]


def parse(name: str, text: str) -> Doc:
    lines = text.splitlines()
    fence: list[int | None] = []
    headings: set[int] = set()
    opened: int | None = None
    marker = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if opened is None and stripped[:3] in ("```", "~~~"):
            opened, marker = i, stripped[:3]
            fence.append(i)
        elif opened is not None:
            fence.append(opened)
            if stripped.startswith(marker) and stripped.strip(marker[0]) == "":
                opened = None
        else:
            fence.append(None)
            if re.match(r"#{1,6} ", stripped):
                headings.add(i)
    return Doc(name, lines, fence, headings)


def tables(doc: Doc) -> list[Table]:
    """Markdown tables outside code fences (indented ones too), adjacent ones merged."""
    found: list[Table] = []
    i = 0
    lines = doc.lines
    while i < len(lines):
        if doc.fence[i] is None and lines[i].strip().startswith("|"):
            first = i
            while i < len(lines) and doc.fence[i] is None and lines[i].strip().startswith("|"):
                i += 1
            rows = [lines[j].strip() for j in range(first, i)]
            if len(rows) >= 2 and re.fullmatch(r"\|[\s:|-]+\|?", rows[1]):
                cells = [c for row in rows[2:] for c in split_row(row)]
                previous = found[-1] if found else None
                between = lines[previous.last + 1 : first] if previous else []
                if previous and all(not line.strip() for line in between):
                    found[-1] = Table(
                        previous.first, i - 1, previous.header, previous.cells + cells
                    )
                else:
                    found.append(Table(first, i - 1, rows[0], cells))
        else:
            i += 1
    return found


def split_row(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def measured(table: Table) -> bool:
    for cell in table.cells:
        text = CODE_SPAN.sub("", cell).replace("**", "").strip()
        if NUMBER_START.match(text):
            return True
    return False


def is_command_line(doc: Doc, i: int) -> bool:
    line = doc.lines[i]
    if doc.fence[i] is not None:
        return bool(COMMAND.match(line.strip()))
    return any(COMMAND.match(span.strip()) for span in CODE_SPAN.findall(line))


def cited(doc: Doc, table: Table) -> bool:
    """A command within WINDOW lines above or below the table, not past a heading."""
    near: set[int] = set()
    for step, start in ((-1, table.first - 1), (1, table.last + 1)):
        i = start
        while 0 <= i < len(doc.lines) and abs(i - start) < WINDOW and i not in doc.headings:
            near.add(i)
            i += step
    blocks = {doc.fence[i] for i in near} - {None}
    near |= {i for i, opened in enumerate(doc.fence) if opened in blocks}
    return any(is_command_line(doc, i) for i in near)


def uncited_tables(doc: Doc) -> list[str]:
    return [
        f"{doc.name}:{table.first + 1}: {table.header}"
        for table in tables(doc)
        if measured(table)
        and (doc.name, table.header) not in NOT_MEASURED
        and not cited(doc, table)
    ]


def named_commands(doc: Doc) -> list[str]:
    """The code spans and fenced lines of a document: where commands are named."""
    named: list[str] = []
    for i, line in enumerate(doc.lines):
        named += [line.strip()] if doc.fence[i] is not None else CODE_SPAN.findall(line)
    return named


def missing_commands(doc: Doc, root: Path, cli: dict[str, set[str]]) -> list[str]:
    missing: list[str] = []
    for text in named_commands(doc):
        for path in BENCH_PATH.findall(text):
            if not (root / path).is_file():
                missing.append(path)
        for ref in TEST_PATH.findall(text):
            path, _, test = ref.partition("::")
            file = root / path
            if path in EXAMPLE_PATHS:
                continue
            defined = rf"^\s*(?:async )?def {test}\("
            if not file.is_file() or (test and not re.search(defined, file.read_text(), re.M)):
                missing.append(ref)
        match = CHUNKMARK_COMMAND.match(text.strip())
        if match:
            command, _, sub = match.group(1).partition(" ")
            if command not in cli or (cli[command] and sub and sub not in cli[command]):
                missing.append(f"chunkmark {match.group(1)}")
    return [f"{doc.name}: {m}" for m in missing]


def cli_commands() -> dict[str, set[str]]:
    """Each ``chunkmark`` command, with its subcommands (empty for a plain command)."""
    import typer.main

    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    group = typer.main.get_command(app)
    return {
        name: set(getattr(command, "commands", {}))
        for name, command in getattr(group, "commands", {}).items()
    }


def load(path: Path) -> Doc:
    return parse(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))


# --- the docs -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_measured_tables_name_their_command(path: Path) -> None:
    assert uncited_tables(load(path)) == []


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_named_commands_exist(path: Path) -> None:
    assert missing_commands(load(path), ROOT, cli_commands()) == []


def test_allow_list_entries_are_tables_that_exist() -> None:
    headers = {(doc.name, t.header) for doc in map(load, DOC_FILES) for t in tables(doc)}
    assert set(NOT_MEASURED) <= headers


def test_the_docs_have_measured_tables() -> None:
    # The check above would pass vacuously if the table reader found nothing.
    counted = sum(measured(t) for doc in map(load, DOC_FILES) for t in tables(doc))
    assert counted >= 15


# --- the checker on small documents ---------------------------------------------------------

MEASURED_TABLE = "| chunker | recall |\n|---|---|\n| `fixed_tokens(size=200)` | 77.2 |\n"
DEFINITION_TABLE = "| name | meaning |\n|---|---|\n| `recall` | share of excerpt characters |\n"


def check(text: str) -> list[str]:
    return uncited_tables(parse("x.md", text))


def test_a_measured_table_without_a_command_fails() -> None:
    assert check("Some numbers:\n\n" + MEASURED_TABLE) == ["x.md:3: | chunker | recall |"]


def test_a_command_next_to_the_table_passes() -> None:
    assert check("Measured with `benchmarks/semantic.py`:\n\n" + MEASURED_TABLE) == []
    assert (
        check(MEASURED_TABLE + "\n`chunkmark chunkers diagnose -c paragraphs` prints it.\n") == []
    )
    assert check("```\n.venv/bin/python benchmarks/scale.py\n```\n\n" + MEASURED_TABLE) == []
    assert (
        check("See `tests/relations/test_prepare.py::test_full_split_counts`.\n" + MEASURED_TABLE)
        == []
    )


def test_a_command_too_far_or_past_a_heading_does_not_count() -> None:
    far = "`benchmarks/semantic.py`\n" + "text\n" * WINDOW + MEASURED_TABLE
    assert check(far) != []
    assert check("`benchmarks/semantic.py`\n## Other\n" + MEASURED_TABLE) != []
    # a path or a word in backticks is not a command
    assert check("`results/semantic.csv` and `chunkmark`\n" + MEASURED_TABLE) != []


def test_a_long_code_block_counts_as_a_whole() -> None:
    block = "```\nchunkmark run grid.yaml\n" + "# output\n" * (2 * WINDOW) + "```\n"
    assert check(block + MEASURED_TABLE) == []


def test_adjacent_tables_share_a_command() -> None:
    second = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    cited_first = "`benchmarks/semantic.py`\n\n" + MEASURED_TABLE
    assert check(cited_first + "\n" + second) == []
    # with prose between them, the second table is on its own
    assert check(cited_first + "\nProse.\n" + "text\n" * WINDOW + second) != []


def test_definitions_and_fenced_tables_are_not_measured() -> None:
    assert check(DEFINITION_TABLE) == []
    assert check("```\n" + MEASURED_TABLE + "```\n") == []


def test_commands_that_do_not_exist_are_reported(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "real.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_there() -> None:\n    pass\n")
    text = (
        "`benchmarks/real.py` and `benchmarks/gone.py --cells 8`\n"
        "`tests/test_a.py::test_there`, `tests/test_a.py::test_gone`, `tests/test_b.py`\n"
        "```\nchunkmark run x.yaml\nchunkmark chunkers diagnose -c x\nchunkmark frobnicate\n"
        "chunkmark synth polish DIR\n.venv/bin/python benchmarks/grids/none.yaml\n```\n"
    )
    cli = {"run": set(), "chunkers": {"diagnose"}, "synth": {"generate"}}
    assert missing_commands(parse("x.md", text), tmp_path, cli) == [
        "x.md: benchmarks/gone.py",
        "x.md: tests/test_a.py::test_gone",
        "x.md: tests/test_b.py",
        "x.md: chunkmark frobnicate",
        "x.md: chunkmark synth polish",
        "x.md: benchmarks/grids/none.yaml",
    ]
