"""Every measured figure in README.md and docs/ names the command that produced it.

The convention (docs/contributing.md, "Numbers in the docs"):

- A **measured block** is a markdown table one of whose body cells starts with a number (after
  dropping inline code and emphasis), a fenced block that is not code or configuration (no
  ``yaml``, ``python``, ``toml``, ``json`` ... info string) holding a figure, or a paragraph
  (a list item counts as one) holding a figure. A *figure* is a number with a unit of time,
  size or rate, a percentage, a ratio written ``1.23x`` or ``ratio 0.61``, or ``N / M``
  outside a table; numbers inside inline code are options, not figures.
- Its **source** is a paragraph that starts with ``Measured with`` and names, in inline code
  (or in a fenced block right after a paragraph ending with ``:``), the commands that produced
  it: ``python benchmarks/SCRIPT.py ...``, ``chunkmark COMMAND ...``, ``python -m
  chunkmark.MODULE ...`` (a module of chunkmark with a command line of its own, such as
  ``chunkmark.llm.local``), ``pytest tests/...`` or ``tests/...py``. A source covers the measured blocks after it up to the next heading or the
  next source, and the block right before it (only blank lines between).
- A **before/after** figure (one whose block says ``before the change``, ``before that
  change``, ``the previous commit`` ...) needs ``against commit `SHA` `` in its source; the
  commit, and any ``--ref SHA`` a source's command names, must exist in the repository.
- Every command a source names must exist: the script or module, the ``chunkmark`` command
  and subcommand, and each ``--option`` it passes (a string literal of the script or module,
  or an option of the ``chunkmark`` command).
- **Definitional numbers** are not figures: a number right after ``default``, ``limit``,
  ``target``, ``at most``, ``up to``, ``timeout``, ``budget`` or ``threshold`` (a setting, not a
  measurement), numbers in inline code, and the tables listed in NOT_MEASURED with their
  reason; docs/plan.md (targets) and docs/literature.md (other authors' figures, each with its
  citation) are not checked for figures.

Every command the docs name anywhere must exist too: each ``benchmarks/`` and ``tests/`` path,
each ``tests/...py::test_name``, each ``python -m chunkmark.MODULE`` and each ``chunkmark``
command and subcommand.
"""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Documents whose figures are not ours to measure: (file) -> why.
NOT_CHECKED = {
    "docs/plan.md": "the plan: targets and estimates, not measurements",
    "docs/literature.md": "other authors' figures, each next to its citation",
}

# (file, header row) -> why its numbers are not measurements.
NOT_MEASURED = {
    ("docs/synth.md", "| option | default | meaning |"): "option defaults",
    ("docs/metrics.md", "| name | label | definition |"): "definitions (hit@k is 1 or 0)",
    ("docs/gpu.md", "| device | fp32 | fp16 | bf16 |"): "the default batch sizes the code sets",
    ("docs/gate.md", "| status | meaning |"): "the exit codes the gate defines (EXIT_CODES)",
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
# What may run a command: a prompt, variables, time, nice, flock.
WRAPPERS = r"^(?:\$ )?(?:(?:[A-Z_]+=\S+|/usr/bin/time(?: -v)?|nice(?: -n \d+)?|flock \S+) )*"
COMMAND = re.compile(
    WRAPPERS + r"(?:\.venv/bin/)?"
    r"(?:python3? (?:-m (?=chunkmark ))?)?"
    r"(?:(?:benchmarks|scripts)/[\w/.-]+\.py|chunkmark [a-z]|pytest\b|tests/[\w/.-]+\.py"
    r"|python3? -m chunkmark(?:\.\w+)+\b)"
)
# A module of chunkmark run as a program: ``python -m chunkmark.llm.local serve``.
MODULE = re.compile(r"(?<![\w.])-m (chunkmark(?:\.\w+)+)\b")
SCRIPT = re.compile(r"(?<![\w/.])(?:benchmarks|scripts)/[\w/.-]*\w\.py")
BENCH_PATH = re.compile(r"(?<![\w/.])benchmarks/[\w/.-]*\w\.(?:py|yaml)")
TEST_PATH = re.compile(r"(?<![\w/.])tests/[\w/.-]*\w\.py(?:::\w+)?")
CHUNKMARK_COMMAND = re.compile(
    WRAPPERS + r"(?:\.venv/bin/)?"
    r"(?:python3? -m )?chunkmark ((?:[a-z][\w-]*)(?: [a-z][\w-]*)?)"
)
UNIT = (
    r"%|x\b|×|ms\b|s\b|seconds?\b|CPU-seconds\b|min\b|minutes?\b|h\b|hours?\b"
    r"|[KMGT]i?B\b|bytes\b|points?\b|[A-Za-z]+/s\b"
)
FIGURE = re.compile(
    rf"(?<![\w.=/,-])[-+−]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?\s?(?:{UNIT})(?! ?\d)"
    r"|\bratio (?:of )?\d|(?<![\w.])\d+ / \d+\b"
)
DEFINITIONAL = re.compile(
    r"\b(?:defaults?(?: to| of| is)?|limit(?: of| is)?|target(?: of| is)?|at most|up to|timeout"
    r"(?: of)?|budget(?: of)?|threshold(?: of)?)\s+(?:about |~)?$"
)
# A level, not a result: "95% interval", "a 95% bootstrap interval", "80% power".
LEVEL = re.compile(r"^\s+(?:[\w-]+\s+){0,2}(?:intervals?|CI|confidence|power)\b")
# A constant of a format, not a result: "4 bytes a value", "1.5 KB per vector".
PER_UNIT = re.compile(r"^\s+(?:a|per|each)\s+(?:value|vector|float|token|character)\b")
CODE_FENCES = {"yaml", "yml", "python", "py", "toml", "json", "jsonl", "ini", "sql", "html"}
SOURCE = re.compile(r"^(?:[-*+] )?[*_]*(?:Measured with|Computed from)\b")
SOURCE_FILE = re.compile(r"^src/chunkmark/[\w/]+\.py$")  # what "Computed from" names
INLINE_SOURCE = re.compile(r"\bmeasured\s+with\s+`", re.I)
BEFORE_AFTER = re.compile(
    r"\bbefore (?:the|that|this|its|their) (?:change|fix|refactor\w*|commit)s?\b"
    r"|\bthe previous commit\b|\bbefore and after (?:the|that|this) (?:change|commit)\b"
    r"|\bbefore\s*;",
    re.I,
)
AGAINST_COMMIT = re.compile(r"against commit\s+`([0-9a-f]{7,40})`")
REF_OPTION = re.compile(r"--ref[ =]([0-9a-f]{7,40})\b")
OPTION = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


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


def figures(text: str) -> list[str]:
    """The figures of a line of prose or output: not in inline code, not definitional."""
    plain = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    return [
        m.group(0)
        for m in FIGURE.finditer(plain)
        if not DEFINITIONAL.search(plain[: m.start()])
        and not (m.group(0).endswith("%") and LEVEL.match(plain[m.end() :]))
        and not PER_UNIT.match(plain[m.end() :])
    ]


@dataclass
class Block:
    kind: str  # "table", "fence", "paragraph"
    first: int
    last: int
    text: str
    commands: list[str] = field(default_factory=list)  # a source's commands
    source: bool = False


def blocks(doc: Doc) -> list[Block]:
    """The document as tables, fenced blocks and paragraphs (list items apart), in order."""
    lines = doc.lines
    found: list[Block] = []
    table_at = {t.first: t for t in tables(doc)}
    i = 0
    while i < len(lines):
        if i in doc.headings or not lines[i].strip():
            i += 1
        elif doc.fence[i] is not None:
            j = i
            while j + 1 < len(lines) and doc.fence[j + 1] == i:
                j += 1
            found.append(Block("fence", i, j, "\n".join(lines[i : j + 1])))
            i = j + 1
        elif i in table_at:
            t = table_at[i]
            found.append(Block("table", t.first, t.last, "\n".join(lines[t.first : t.last + 1])))
            i = t.last + 1
        elif lines[i].strip().startswith("|"):
            i += 1  # a row of no table
        else:
            j = i
            while (
                j + 1 < len(lines)
                and lines[j + 1].strip()
                and doc.fence[j + 1] is None
                and j + 1 not in doc.headings
                and not lines[j + 1].strip().startswith("|")
                and not re.match(r"\s*(?:[-*+]|\d+\.) ", lines[j + 1])
            ):
                j += 1
            text = "\n".join(lines[i : j + 1])
            block = Block("paragraph", i, j, text)
            if SOURCE.match(lines[i].strip()):
                block.source = True
                block.commands = [
                    c
                    for c in CODE_SPAN.findall(text)
                    if COMMAND.match(c.strip())
                    or (text.lstrip("-*+ _").startswith("Computed") and SOURCE_FILE.match(c))
                ]
            elif INLINE_SOURCE.search(text):  # "... (measured with `COMMAND`)": itself only
                rest = text[INLINE_SOURCE.search(text).start() :]  # type: ignore[union-attr]
                block.commands = [c for c in CODE_SPAN.findall(rest) if COMMAND.match(c.strip())]
            found.append(block)
            i = j + 1
    # a source ending with ":" takes the commands of the fenced block right after it
    for k, block in enumerate(found[:-1]):
        after = found[k + 1]
        if block.source and block.text.rstrip().endswith(":") and after.kind == "fence":
            joined = re.sub(r"\\\n\s*", " ", after.text)  # continued lines are one command
            block.commands += [
                line.strip() for line in joined.splitlines() if COMMAND.match(line.strip())
            ]
            after.kind = "source-commands"
    return found


def is_measured(doc: Doc, block: Block) -> bool:
    if block.source or block.kind == "source-commands" or doc.name in NOT_CHECKED:
        return False
    if block.kind == "table":
        table = next(t for t in tables(doc) if t.first == block.first)
        return measured(table) and (doc.name, table.header) not in NOT_MEASURED
    if block.kind == "fence":
        opening = block.text.splitlines()[0].strip().strip("`~").strip().lower()
        if opening.split(" ")[0] in CODE_FENCES:
            return False
        body = block.text.splitlines()[1:]
        return any(figures(line) for line in body if not COMMAND.match(line.strip()))
    return bool(figures(block.text))


def level(doc: Doc, i: int) -> int:
    return len(doc.lines[i].strip()) - len(doc.lines[i].strip().lstrip("#"))


def sources(doc: Doc) -> dict[int, Block | None]:
    """Each measured block (by first line) -> the source that covers it, or None.

    A source covers the prose after it up to the next heading of its own section's level or
    higher, but a table or an output block only when no other table or output lies between
    them (each table names its own source); a source also covers the block right before it,
    and a paragraph that names its own source (``measured with `COMMAND```) and ends with ``:``
    the block right after it."""
    found = blocks(doc)
    covered: dict[int, Block | None] = {}
    current: Block | None = None
    section = 0  # the level of the heading above the current source
    heading = 0  # the level of the last heading
    previous_line = -1
    leading: Block | None = None
    for k, block in enumerate(found):
        for i in range(previous_line + 1, block.first):
            if i in doc.headings:
                heading = level(doc, i)
                if heading <= section:
                    current, section = None, 0
                leading = None
        previous_line = block.last
        if block.source:
            current, section = block, heading or 6  # before any heading: any heading ends it
            continue
        led, leading = leading, None
        if block.commands and block.text.rstrip().endswith(":"):
            leading = block
        if not is_measured(doc, block):
            continue
        if block.commands:  # its own source
            covered[block.first] = block
            continue
        if led is not None:
            covered[block.first] = led
            continue
        after = found[k + 1] if k + 1 < len(found) else None
        if after is not None and after.source and not heading_between(doc, block, after):
            covered[block.first] = after
        elif block.kind in ("table", "fence"):
            covered[block.first] = own_source(doc, found, k)
        else:
            covered[block.first] = current
    return covered


def heading_between(doc: Doc, a: Block, b: Block) -> bool:
    return any(i in doc.headings for i in range(a.last + 1, b.first))


def own_source(doc: Doc, found: list[Block], k: int) -> Block | None:
    """A table's or output's source: one since the previous table or output of its section,
    not the source right after that one (which is that one's)."""
    for j in range(k - 1, -1, -1):
        if heading_between(doc, found[j], found[j + 1]):
            return None
        block = found[j]
        if block.kind in ("table", "fence") and is_measured(doc, block):
            return None
        if block.source:
            before = found[j - 1] if j > 0 else None
            owned = (  # a source introducing what follows ends with ":"
                not block.text.rstrip().endswith(":")
                and before is not None
                and before.kind in ("table", "fence")
                and is_measured(doc, before)
                and not heading_between(doc, before, block)
            )
            return None if owned else block
    return None


def uncited(doc: Doc) -> list[str]:
    """Measured blocks without a source, and before/after figures whose source names no
    commit."""
    problems: list[str] = []
    text_at = {b.first: b for b in blocks(doc)}
    for first, source in sources(doc).items():
        block = text_at[first]
        where = f"{doc.name}:{first + 1}: {doc.lines[first].strip()[:60]}"
        if source is None or not source.commands:
            problems.append(f"{where}: no 'Measured with' source")
        elif BEFORE_AFTER.search(block.text) and not AGAINST_COMMIT.search(source.text):
            problems.append(f"{where}: a before/after figure without 'against commit `SHA`'")
    return problems


def source_problems(doc: Doc, root: Path, cli: dict[str, dict[str, set[str]]]) -> list[str]:
    """A source's commands that do not exist, options they do not take, commits not in git."""
    problems: list[str] = []
    for block in blocks(doc):
        if not block.commands:
            continue
        where = f"{doc.name}:{block.first + 1}"
        for command in block.commands:
            problems += [f"{where}: {p}" for p in command_problems(command, root, cli)]
        commits = AGAINST_COMMIT.findall(block.text)
        commits += [c for command in block.commands for c in REF_OPTION.findall(command)]
        for sha in commits:
            if not commit_exists(root, sha):
                problems.append(f"{where}: commit {sha} is not in the repository")
    return problems


def command_problems(command: str, root: Path, cli: dict[str, dict[str, set[str]]]) -> list[str]:
    if SOURCE_FILE.match(command):
        return [] if (root / command).is_file() else [f"{command} does not exist"]
    options = set(OPTION.findall(command))
    script = SCRIPT.search(command)
    module = MODULE.search(command)
    match = CHUNKMARK_COMMAND.match(command.strip())
    if module and not script:
        path = module_file(root, module.group(1))
        if path is None:
            return [f"python -m {module.group(1)} does not exist"]
        known = script_options(path)
        return [f"python -m {module.group(1)} takes no {o}" for o in sorted(options - known)]
    if script:
        path = root / script.group(0)
        if not path.is_file():
            return [f"{script.group(0)} does not exist"]
        known = script_options(path)
        return [f"{script.group(0)} takes no {o}" for o in sorted(options - known)]
    if match:
        name, _, sub = match.group(1).partition(" ")
        key = f"{name} {sub}".strip() if f"{name} {sub}".strip() in cli else name
        if key not in cli or (key == name and sub and cli[name]["subcommands"]):
            return [f"chunkmark {match.group(1)} does not exist"]
        return [f"chunkmark {key} takes no {o}" for o in sorted(options - cli[key]["options"])]
    return []


def module_file(root: Path, dotted: str) -> Path | None:
    """The file ``python -m DOTTED`` runs from the source tree: a module, or a package's
    ``__main__.py``."""
    base = root / "src" / Path(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__main__.py"):
        if path.is_file():
            return path
    return None


def script_options(path: Path) -> set[str]:
    """The ``--options`` a script defines: its string literals that start with ``--``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"--[a-z][\w-]*", node.value)
    } | {"--help"}


def commit_exists(root: Path, sha: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(root), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True
    )
    return done.returncode == 0


def named_commands(doc: Doc) -> list[str]:
    """The code spans and fenced lines of a document: where commands are named."""
    named: list[str] = []
    for i, line in enumerate(doc.lines):
        named += [line.strip()] if doc.fence[i] is not None else CODE_SPAN.findall(line)
    return named


Cli = dict[str, dict[str, set[str]]]


def missing_commands(doc: Doc, root: Path, cli: Cli) -> list[str]:
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
        for dotted in MODULE.findall(text):
            if module_file(root, dotted) is None:
                missing.append(f"python -m {dotted}")
        match = CHUNKMARK_COMMAND.match(text.strip())
        if match:
            command, _, sub = match.group(1).partition(" ")
            subs = cli[command]["subcommands"] if command in cli else set()
            if command not in cli or (subs and sub and sub not in subs):
                missing.append(f"chunkmark {match.group(1)}")
    return [f"{doc.name}: {m}" for m in missing]


def cli_commands() -> Cli:
    """Each ``chunkmark`` command and ``command subcommand``: its subcommands and options."""
    import click
    import typer.main

    from chunkmark.cli.app import _register_commands, app

    _register_commands()
    group = typer.main.get_command(app)

    def entry(command: click.Command) -> dict[str, set[str]]:
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        return {
            "subcommands": set(getattr(command, "commands", {})),
            "options": {o for o in options if o.startswith("--")} | {"--help"},
        }

    found: Cli = {}
    for name, command in getattr(group, "commands", {}).items():
        found[name] = entry(command)
        for sub, inner in getattr(command, "commands", {}).items():
            found[f"{name} {sub}"] = entry(inner)
    return found


def load(path: Path) -> Doc:
    return parse(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))


# --- the docs -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_measured_figures_name_their_command(path: Path) -> None:
    assert uncited(load(path)) == []


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_sources_name_commands_options_and_commits_that_exist(path: Path) -> None:
    assert source_problems(load(path), ROOT, cli_commands()) == []


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_named_commands_exist(path: Path) -> None:
    assert missing_commands(load(path), ROOT, cli_commands()) == []


def test_allow_list_entries_exist() -> None:
    headers = {(doc.name, t.header) for doc in map(load, DOC_FILES) for t in tables(doc)}
    assert set(NOT_MEASURED) <= headers
    assert {(ROOT / name).is_file() for name in NOT_CHECKED} == {True}


def test_the_docs_have_measured_blocks_and_sources() -> None:
    # The checks above would pass vacuously if the reader found nothing.
    docs = list(map(load, DOC_FILES))
    assert sum(measured(t) for doc in docs for t in tables(doc)) >= 15
    kinds = [b.kind for doc in docs for b in blocks(doc) if is_measured(doc, b)]
    assert kinds.count("paragraph") >= 30 and kinds.count("fence") >= 5
    assert sum(b.source for doc in docs for b in blocks(doc)) >= 20


# --- the checker on small documents ---------------------------------------------------------

MEASURED_TABLE = "| chunker | recall |\n|---|---|\n| `fixed_tokens(size=200)` | 77.2 |\n"
DEFINITION_TABLE = "| name | meaning |\n|---|---|\n| `recall` | share of excerpt characters |\n"
SOURCE_LINE = "Measured with `python benchmarks/semantic.py --data DIR`.\n\n"


def check(text: str) -> list[str]:
    return uncited(parse("x.md", text))


def test_a_measured_table_without_a_source_fails() -> None:
    assert check("Some numbers:\n\n" + MEASURED_TABLE) == [
        "x.md:3: | chunker | recall |: no 'Measured with' source"
    ]


def test_a_command_named_in_passing_is_not_a_source() -> None:
    # the old check took any `chunkmark <command>` within ten lines as the table's source
    assert check("The `chunkmark gate` command gates runs.\n\n" + MEASURED_TABLE) != []
    assert check("From `python benchmarks/semantic.py`:\n\n" + MEASURED_TABLE) != []
    # a source line without a command does not count either
    assert check("Measured with the script above.\n\n" + MEASURED_TABLE) != []


def test_a_source_covers_its_section_after_it_and_the_block_right_before() -> None:
    assert check(SOURCE_LINE + "Prose.\n\n" + MEASURED_TABLE) == []
    assert check(MEASURED_TABLE + "\n" + SOURCE_LINE) == []
    # a heading ends its reach; so does a block between the table and a source after it
    assert check(SOURCE_LINE + "## Other\n\n" + MEASURED_TABLE) != []
    assert check(MEASURED_TABLE + "\nProse.\n\n" + SOURCE_LINE) != []
    # each table names its own: a source does not reach past another table to the next one,
    # and a source right after a table is that table's
    second = "| setting | seconds |\n|---|---|\n| top_k | 3.2 |\n"
    assert check(SOURCE_LINE + MEASURED_TABLE + "\nProse.\n\n" + second) != []
    assert check(MEASURED_TABLE + "\n" + SOURCE_LINE + "Prose.\n\n" + second) != []
    assert check(SOURCE_LINE + MEASURED_TABLE + "\nProse.\n\n" + SOURCE_LINE + second) == []
    # a source ending with ":" takes its commands from the fenced block after it
    fenced = "Measured with:\n\n```\npython benchmarks/scale.py --size 1\n```\n\n"
    assert check(fenced + MEASURED_TABLE) == []
    # a module of chunkmark run as a program is a command; any other module is not
    module = "Measured with `python -m chunkmark.llm.local serve --model m`.\n\n"
    assert check(module + MEASURED_TABLE) == []
    assert check("Measured with `python -m json.tool x`.\n\n" + MEASURED_TABLE) != []


def test_prose_and_fenced_figures_are_measured() -> None:
    assert check("It took 13.86 s of wall time against 22.74 s.\n") != []
    assert check("- a list item: 4.05x faster\n") != []
    assert check("The store holds 99.58% of the exact top 5.\n") != []
    assert check("Caught in 98 / 100 trials.\n") != []
    assert check("```\ntotal    3.2 s\n```\n") != []
    assert check(SOURCE_LINE + "It took 13.86 s of wall time.\n") == []


def test_definitional_numbers_are_not_figures() -> None:
    assert check("The limit is 10 s; requests time out after a timeout of 60 s.\n") == []
    assert check("It waits `--latency 0.2` seconds, by default 0.2 s, at most 5 s.\n") == []
    assert check("```yaml\nlatency: 0.2 s\n```\n") == []
    assert check("```\nchunkmark run grid.yaml --max-cost 5\n```\n") == []
    assert check(DEFINITION_TABLE) == []
    assert check("```\n" + MEASURED_TABLE + "```\n") == []  # numbers, no unit: not a figure
    # a definitional word elsewhere in the line does not exempt a measured figure
    assert check("By default it runs; it took 3.1 s.\n") != []


def test_a_before_after_figure_needs_the_commit() -> None:
    text = "Timed against the code before that change: 13.86 s against 22.74 s.\n"
    (problem,) = check(SOURCE_LINE + text)
    assert problem.startswith("x.md:3: Timed against the code before that change")
    assert problem.endswith(": a before/after figure without 'against commit `SHA`'")
    against = "Measured with `chunkmark suite run --grid fast` against commit `8b469f5`.\n\n"
    assert check(against + text) == []


def test_sources_are_checked_against_scripts_commands_and_git(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "real.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data')\n"
    )
    (tmp_path / "src" / "chunkmark").mkdir(parents=True)
    (tmp_path / "src" / "chunkmark" / "tool.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--model')\n"
    )
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(tmp_path), *env, "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), *env, "commit", "-qm", "one"], check=True, capture_output=True
    )
    sha = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    cli = {
        "gate": {"subcommands": set(), "options": {"--baseline", "--help"}},
        "suite": {"subcommands": {"run"}, "options": {"--help"}},
        "suite run": {"subcommands": set(), "options": {"--grid", "--help"}},
    }
    text = (
        "Measured with `python benchmarks/real.py --data D`, `python benchmarks/real.py --sample 3`"
        ", `python benchmarks/gone.py`.\n\n"
        "Measured with `chunkmark gate RUN --baseline B --json` and `chunkmark suite run --grid x`"
        " and `chunkmark suite frob`.\n\n"
        f"Measured with `chunkmark suite run --grid fast` against commit `{sha[:10]}`.\n\n"
        "Measured with `chunkmark gate RUN` against commit `deadbeef00`.\n\n"
        "Measured with `python -m chunkmark.tool serve --model M --port 1` and"
        " `python -m chunkmark.gone install`.\n"
    )
    assert source_problems(parse("x.md", text), tmp_path, cli) == [
        "x.md:1: benchmarks/real.py takes no --sample",
        "x.md:1: benchmarks/gone.py does not exist",
        "x.md:3: chunkmark gate takes no --json",
        "x.md:3: chunkmark suite frob does not exist",
        "x.md:7: commit deadbeef00 is not in the repository",
        "x.md:9: python -m chunkmark.tool takes no --port",
        "x.md:9: python -m chunkmark.gone does not exist",
    ]


def test_commands_that_do_not_exist_are_reported(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "real.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_there() -> None:\n    pass\n")
    text = (
        "`benchmarks/real.py` and `benchmarks/gone.py --cells 8`\n"
        "`tests/test_a.py::test_there`, `tests/test_a.py::test_gone`, `tests/test_b.py`\n"
        "```\nchunkmark run x.yaml\nchunkmark chunkers diagnose -c x\nchunkmark frobnicate\n"
        "chunkmark synth polish DIR\n.venv/bin/python benchmarks/grids/none.yaml\n"
        "python -m chunkmark.gone serve\n```\n"
    )
    plain = {"subcommands": set[str](), "options": {"--help"}}
    cli = {
        "run": plain,
        "chunkers": {"subcommands": {"diagnose"}, "options": set()},
        "synth": {"subcommands": {"generate"}, "options": set()},
    }
    assert missing_commands(parse("x.md", text), tmp_path, cli) == [
        "x.md: benchmarks/gone.py",
        "x.md: tests/test_a.py::test_gone",
        "x.md: tests/test_b.py",
        "x.md: chunkmark frobnicate",
        "x.md: chunkmark synth polish",
        "x.md: benchmarks/grids/none.yaml",
        "x.md: python -m chunkmark.gone",
    ]
