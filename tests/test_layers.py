"""The package's import layering: no upward imports and no import loops in ``src/chunkmark``.

Every ``.py`` file under ``src/chunkmark`` is parsed with :mod:`ast` (nothing is imported), and
every ``import chunkmark...``, ``from chunkmark... import ...`` and relative import is collected
wherever it is written: at module level, inside functions (a lazy import is still a
dependency) and under ``if TYPE_CHECKING:``.

``from chunkmark.pkg import name`` counts as importing ``chunkmark.pkg.name`` when that is a
module, else ``chunkmark.pkg``. Importing a submodule is not counted as importing its parent
packages, so a package's ``__init__`` that imports its own submodules is fine; a submodule that
imports the package back (``from chunkmark.chunkers import X`` inside ``chunkers/foo.py``) is a
real edge and closes a loop with the ``__init__`` that imports it.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

ROOT = "chunkmark"
SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE_DIR = SRC / ROOT
FACE = ""  # the name LAYERS uses for the package's own chunkmark/__init__.py

# The layers, bottom up: each entry names a layer and the parts of the package in it (a part is
# the name right after "chunkmark.": a subpackage or a single module at the package top). A
# module may import from lower layers, and from its own layer where no loop results; never from
# a higher layer. A single module at the package top that is not listed counts as a leaf
# (layer 0) as long as it imports only leaves; a subpackage that is not listed fails the tests.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "leaves",
        frozenset(
            {
                "counters",
                "errors",
                "files",
                "paths",
                "remote",
                "retry",
                "spans",
                "specs",
                "sqlite_db",
                "timing",
                "version",
            }
        ),
    ),
    (
        "costs, data, tokens, metrics, retrieval",
        frozenset({"costs", "datasets", "metrics", "retrieval", "tokenizers"}),
    ),
    ("models", frozenset({"embedders", "llm"})),
    ("chunkers", frozenset({"chunkers"})),
    # The runner takes its report writer and every analysis from above (chunkmark.evaluate,
    # the command line, relations, audit): experiments imports no analysis, no report and no
    # relations.
    ("experiments and synth", frozenset({"experiments", "synth"})),
    # Answer scoring is an analysis handed to the runner when the config has answers:.
    ("answers", frozenset({"answers"})),
    ("report, relations and the labeler", frozenset({"label", "relations", "report"})),
    ("audit", frozenset({"audit"})),
    ("the suite", frozenset({"suite"})),
    # What the command line and the MCP server both call (catalog, runs, replies, caches).
    ("service", frozenset({"service"})),
    ("command line", frozenset({"cli"})),
    ("package face", frozenset({FACE, "__main__"})),
)

# Known edges that break the rules in code being reworked elsewhere, as
# (importing module, imported module): the tests let exactly these through. Each one should go
# as its fix lands; test_pending_edges_still_exist fails once an entry is no longer needed, so
# the list only shrinks. Nothing else may be added here.
# Known violations being removed; each must still exist (see test_pending_edges_still_exist).
PENDING: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Edge:
    """One import of a chunkmark module by another, where it is written."""

    source: str
    target: str
    file: Path
    line: int
    statement: str

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(SRC.parent).as_posix()}:{self.line}"

    def __str__(self) -> str:
        return f"{self.where} `{self.statement}` ({self.source} -> {self.target})"


def module_name(path: Path) -> str:
    """The dotted module name of a file under src/ (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def module_files() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def resolve(name: str) -> str:
    """The module ``name`` stands for: itself, or its longest prefix that is a module."""
    modules = module_files()
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def base_of(node: ast.ImportFrom, source: str, path: Path) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def is_ours(name: str) -> bool:
    return name == ROOT or name.startswith(ROOT + ".")


def targets(node: ast.Import | ast.ImportFrom, source: str, path: Path) -> Iterator[str]:
    """The written names of the chunkmark modules one import statement imports."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if is_ours(alias.name))
        return
    base = base_of(node, source, path)
    if not is_ours(base):
        return
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in module_files() else base


def edges_of(path: Path) -> Iterator[tuple[Edge, str]]:
    """Each import in ``path`` as an edge, with the name as written (to spot missing modules)."""
    source = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        statement = " ".join(ast.unparse(node).split())
        for written in dict.fromkeys(targets(node, source, path)):
            target = resolve(written)
            if target != source:
                yield Edge(source, target, path, node.lineno, statement), written


@cache
def all_edges() -> tuple[Edge, ...]:
    """Every import edge in the package, in file and line order."""
    found = [edge for path in module_files().values() for edge, _ in edges_of(path)]
    return tuple(sorted(found, key=lambda e: (e.where, e.target)))


def part_of(module: str) -> str:
    """The part of the package a module belongs to: the name after ``chunkmark.``."""
    return module.split(".")[1] if "." in module else FACE


def layer_of(module: str) -> int | None:
    """The layer of ``module``; a single top-level module not in LAYERS is a leaf; else None."""
    part = part_of(module)
    for number, (_, parts) in enumerate(LAYERS):
        if part in parts:
            return number
    if (PACKAGE_DIR / f"{part}.py").is_file():
        return 0
    return None


def is_listed(module: str) -> bool:
    return any(part_of(module) in parts for _, parts in LAYERS)


def describe(module: str) -> str:
    layer = layer_of(module)
    if layer is None:
        return f"{module} (no layer)"
    listed = "" if is_listed(module) else ", not in LAYERS"
    return f"{module} (layer {layer}: {LAYERS[layer][0]}{listed})"


def upward_problem(edge: Edge) -> str | None:
    """Why ``edge`` breaks the layering, or None when it does not."""
    source, target = layer_of(edge.source), layer_of(edge.target)
    if source is None or target is None or target <= source:
        return None
    why = f"{edge}: {describe(edge.source)} imports {describe(edge.target)}, a higher layer"
    if not is_listed(edge.source):
        return (
            f"{why}. {edge.source} is a single module at the package top that is not in "
            f"LAYERS, so it counts as a leaf only while it imports leaves alone: add "
            f"{part_of(edge.source)!r} to LAYERS in tests/test_layers.py at the layer it "
            "belongs to."
        )
    return (
        f"{why}. A module may import only from its own layer or below: move what it needs "
        "down, or invert the dependency (pass it in)."
    )


def graph(edges: tuple[Edge, ...]) -> dict[str, dict[str, list[Edge]]]:
    """source -> target -> the edges (import statements) between them."""
    out: dict[str, dict[str, list[Edge]]] = {}
    for edge in edges:
        out.setdefault(edge.source, {}).setdefault(edge.target, []).append(edge)
    return out


def shortest_path(adjacency: dict[str, dict[str, list[Edge]]], start: str, goal: str) -> list[str]:
    """The shortest module path from ``start`` to ``goal``; empty when there is none."""
    before: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while (previous := before[path[-1]]) is not None:
                path.append(previous)
            return path[::-1]
        for nxt in adjacency.get(node, {}):
            if nxt not in before:
                before[nxt] = node
                queue.append(nxt)
    return []


def find_cycles(edges: tuple[Edge, ...]) -> list[list[str]]:
    """One shortest loop through each edge that lies on a loop, without repeats."""
    adjacency = graph(edges)
    cycles: dict[tuple[str, ...], list[str]] = {}
    for source, outgoing in adjacency.items():
        for target in outgoing:
            back = shortest_path(adjacency, target, source)
            if back:
                loop = [source, *back]
                first = loop.index(min(loop[:-1]))
                canonical = tuple(loop[first:-1] + loop[:first])
                cycles.setdefault(canonical, [*canonical, canonical[0]])
    return list(cycles.values())


def cycle_message(cycle: list[str], edges: tuple[Edge, ...]) -> str:
    """The loop as a path, with every import statement that makes each step."""
    adjacency = graph(edges)
    lines = [f"import loop: {' -> '.join(cycle)}"]
    for source, target in pairwise(cycle):
        lines += [f"    {edge}" for edge in adjacency[source][target]]
    lines.append(
        "  Break it: move what both sides need into a module below them; a package's "
        "submodules must not import the package's own __init__ when it imports them."
    )
    return "\n".join(lines)


def checked_edges() -> tuple[Edge, ...]:
    """Every edge except the PENDING ones."""
    return tuple(e for e in all_edges() if (e.source, e.target) not in PENDING)


def test_the_package_has_modules_and_imports() -> None:
    """Guard against the checks passing vacuously (wrong folder, parser finding nothing)."""
    assert "chunkmark.datasets.validate" in module_files()
    assert any(e.target == "chunkmark.errors" for e in all_edges())


def test_every_module_has_a_layer() -> None:
    """A subpackage missing from LAYERS fails: every module needs a place in the table."""
    missing = sorted(
        f"{path.relative_to(SRC.parent).as_posix()}: {name} is in no layer: add "
        f"{part_of(name)!r} to LAYERS in tests/test_layers.py at the layer it belongs to."
        for name, path in module_files().items()
        if layer_of(name) is None
    )
    assert not missing, "\n".join(missing)


def test_every_import_names_a_module() -> None:
    """An import of a chunkmark module that does not exist is reported, not silently mapped."""
    missing = []
    for path in module_files().values():
        for edge, written in edges_of(path):
            if written not in module_files():
                missing.append(f"{edge}: there is no module {written}")
    assert not missing, "\n".join(missing)


def test_no_module_imports_a_higher_layer() -> None:
    """(a) Imports point down the layers or within one layer, never up."""
    problems = [p for p in map(upward_problem, checked_edges()) if p is not None]
    assert not problems, "upward imports:\n" + "\n".join(problems)


def test_no_import_loops() -> None:
    """(b) The module import graph has no cycles."""
    edges = checked_edges()
    cycles = find_cycles(edges)
    assert not cycles, "\n".join(cycle_message(cycle, edges) for cycle in cycles)


def test_pending_edges_still_exist() -> None:
    """PENDING only shrinks: an entry whose import is gone must be removed from it."""
    present = {(e.source, e.target) for e in all_edges()}
    stale = sorted(f"{source} -> {target}" for source, target in PENDING - present)
    assert not stale, (
        "these PENDING edges no longer exist; remove them from PENDING in "
        "tests/test_layers.py:\n" + "\n".join(stale)
    )


def test_the_checker_finds_a_loop_and_an_upward_import() -> None:
    """The checks themselves: a made-up loop and upward import are reported with their lines."""
    here = PACKAGE_DIR / "datasets" / "validate.py"
    up = Edge("chunkmark.datasets.validate", "chunkmark.cli.app", here, 3, "import x")
    back = Edge("chunkmark.cli.app", "chunkmark.datasets.validate", here, 4, "import y")
    problem = upward_problem(up)
    assert problem is not None
    assert "src/chunkmark/datasets/validate.py:3" in problem
    assert f"layer {len(LAYERS) - 2}" in problem  # the command line, below the face
    assert upward_problem(back) is None
    # the arrow that once ran back up: the runner building the answers analysis itself
    runner = PACKAGE_DIR / "experiments" / "runner.py"
    answers = Edge("chunkmark.experiments.runner", "chunkmark.answers.analysis", runner, 5, "x")
    problem = upward_problem(answers)
    assert problem is not None and "(layer 5: answers)" in problem
    for upper in ("chunkmark.audit.collection", "chunkmark.suite.run"):
        edge = Edge("chunkmark.report.gate", upper, here, 6, "import z")
        assert upward_problem(edge) is not None, upper
    cycles = find_cycles((up, back))
    assert cycles == [["chunkmark.cli.app", "chunkmark.datasets.validate", "chunkmark.cli.app"]]
    assert "validate.py:4 `import y`" in cycle_message(cycles[0], (up, back))
