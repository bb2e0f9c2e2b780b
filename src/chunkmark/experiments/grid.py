"""Grids inside a spec: a list where a parameter takes one value expands into one spec per value.

``fixed_tokens(size=[200, 400, 800], overlap=[0, 0.25])`` is the product, six specs (the first
parameter varies slowest); ``zip(fixed_tokens(size=[200, 400], overlap=[0, 100]))`` pairs the
lists instead, two specs. A list is a grid only where the parameter does not itself take a list:
``recursive(separators=["\\n\\n", " "])`` is one spec, and ``recursive(separators=[["\\n\\n"],
[" "]])`` is two. ``range(low, high[, step])`` marks a search range for ``chunkmark tune`` (both
ends included; float bounds make it continuous); ``chunkmark run`` refuses it.

Every expanded spec is resolved by its registry (defaults filled in, values validated,
canonical spelling such as an overlap fraction turned into tokens); duplicates are dropped, first
one kept.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from chunkmark.errors import SpecError
from chunkmark.specs import Entry, Registry, Spec, literal, parse_spec

_HINT = (
    "Write name(param=value, ...); a list of values makes a grid, e.g. "
    "fixed_tokens(size=[200, 400], overlap=[0, 0.25]), and zip(...) pairs the lists."
)


@dataclass(frozen=True)
class Range:
    """A search range for ``chunkmark tune``: ``low <= value <= high``, integers unless a bound
    is a float, on a ``step`` grid when one is given."""

    low: float
    high: float
    step: float | None = None
    integer: bool = True

    def values(self) -> list[float] | list[int]:
        """Every value of a stepped (or integer) range, for an exhaustive grid."""
        step = self.step if self.step is not None else (1 if self.integer else None)
        if step is None:
            raise SpecError(
                f"range({self.low}, {self.high}) is continuous and has no finite set of values.",
                "Give it a step, e.g. range(0, 0.5, 0.1).",
            )
        n = int((self.high - self.low) / step + 1e-9) + 1
        if self.integer:
            return [int(self.low + i * step) for i in range(n)]
        return [round(self.low + i * step, 12) for i in range(n)]


@dataclass(frozen=True)
class GridSpec:
    """One spec as written, split into fixed values, lists to expand and search ranges."""

    text: str
    name: str
    fixed: tuple[tuple[str, Any], ...]
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    ranges: tuple[tuple[str, Range], ...]
    zipped: bool = False

    def combinations(self) -> list[dict[str, Any]]:
        """The parameter values of every expanded spec, in order (ranges not included)."""
        names = [n for n, _ in self.axes]
        lists = [values for _, values in self.axes]
        if self.zipped:
            lengths = {len(v) for v in lists}
            if len(lengths) > 1:
                sizes = ", ".join(f"{n}: {len(v)}" for n, v in self.axes)
                raise SpecError(
                    f"zip(...) in {self.text!r} pairs lists of different lengths ({sizes}).",
                    "Give every list the same number of values, or drop zip(...) for a product.",
                )
            rows: Iterable[tuple[Any, ...]] = zip(*lists, strict=True)
        else:
            rows = itertools.product(*lists)
        return [{**dict(self.fixed), **dict(zip(names, row, strict=True))} for row in rows]

    def expand(self, registry: Registry[Any]) -> list[Spec]:
        """The canonical specs of the grid; a SpecError when it holds a search range."""
        if self.ranges:
            names = ", ".join(n for n, _ in self.ranges)
            raise SpecError(
                f"{self.text!r} gives a search range for {names}: range(...) is for "
                "`chunkmark tune`.",
                "List the values to run instead, e.g. size=[200, 400, 800].",
            )
        return _unique(registry.resolve(Spec.of(self.name, **c)) for c in self.combinations())


def parse_grid(text: str, registry: Registry[Any]) -> GridSpec:
    """Split ``text`` into its fixed values, grid lists and ranges (see the module docstring)."""
    source = text.strip()
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        raise SpecError(f"Cannot parse spec {text!r}.", _HINT) from None
    zipped = _is_call(node, "zip")
    if zipped:
        assert isinstance(node, ast.Call)
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Call):
            raise SpecError(f"Cannot parse {text!r}: zip(...) takes one spec.", _HINT)
        node = node.args[0]
    if isinstance(node, ast.Name):
        return GridSpec(source, node.id, (), (), (), zipped)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        parse_spec(source)  # raises the spec parser's own error
        raise SpecError(f"Cannot parse spec {text!r}.", _HINT)
    entry = registry.entry(node.func.id)
    names = [p.name for p in entry.parameters()]
    if len(node.args) > len(names):
        raise SpecError(
            f"{text!r} gives {len(node.args)} positional values; {entry.name} takes {len(names)}.",
            f"Name the parameters: {', '.join(names)}.",
        )
    given: list[tuple[str, ast.expr]] = list(zip(names, node.args, strict=False))
    for kw in node.keywords:
        if kw.arg is None:
            raise SpecError(f"Spec {text!r} uses '**', which is not allowed.", _HINT)
        given.append((kw.arg, kw.value))
    fixed: list[tuple[str, Any]] = []
    axes: list[tuple[str, tuple[Any, ...]]] = []
    ranges: list[tuple[str, Range]] = []
    for name, value_node in given:
        if _is_call(value_node, "range"):
            ranges.append((name, _range(value_node, text)))
            continue
        value = _literal(value_node, text)
        if isinstance(value, list) and not _takes_value(entry, name, value):
            if not value:
                raise SpecError(f"{text!r}: the list for {name} is empty.", "Give it values.")
            axes.append((name, tuple(value)))
        else:
            fixed.append((name, value))
    if zipped and len(axes) < 2:
        raise SpecError(f"{text!r}: zip(...) needs at least two lists to pair.", _HINT)
    return GridSpec(source, entry.name, tuple(fixed), tuple(axes), tuple(ranges), zipped)


def expand_specs(texts: Sequence[str], registry: Registry[Any]) -> tuple[str, ...]:
    """Every spec of ``texts`` expanded and canonical, duplicates dropped, order kept."""
    specs = (s for text in texts for s in parse_grid(text, registry).expand(registry))
    return tuple(str(s) for s in _unique(specs))


def _unique(specs: Iterable[Spec]) -> list[Spec]:
    return list(dict.fromkeys(specs))


def _is_call(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _literal(node: ast.expr, text: str) -> Any:
    try:
        return literal(node)
    except ValueError:
        raise SpecError(
            f"Spec {text!r} has a parameter value that is not a literal.",
            "Use numbers, quoted strings, True/False/None, or lists or dicts of those.",
        ) from None


def _range(node: ast.expr, text: str) -> Range:
    assert isinstance(node, ast.Call)
    bounds = [_literal(a, text) for a in node.args]
    ok = 2 <= len(bounds) <= 3 and not node.keywords
    ok = ok and all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
    if not ok:
        raise SpecError(
            f"{text!r}: range(...) takes two or three numbers: low, high and an optional step.",
            "E.g. size=range(100, 1000, 50) or overlap=range(0, 0.5).",
        )
    low, high = float(bounds[0]), float(bounds[1])
    step = float(bounds[2]) if len(bounds) == 3 else None
    if high <= low or (step is not None and step <= 0):
        raise SpecError(
            f"{text!r}: range({', '.join(map(str, bounds))}) is empty.",
            "Give low < high and a positive step.",
        )
    integer = all(isinstance(b, int) for b in bounds)
    return Range(low, high, step, integer)


def _takes_value(entry: Entry[Any], name: str, value: list[Any]) -> bool:
    """Whether ``value`` (a list) is a valid value of the parameter itself, not a grid."""
    params = {p.name: p for p in entry.parameters()}
    param = params.get(name)
    if param is None or param.annotation is param.empty:
        return True  # unknown parameters are reported by the registry; untyped take anything
    try:
        pydantic.TypeAdapter(param.annotation).validate_python(value)
    except pydantic.ValidationError:
        return False
    except (TypeError, pydantic.PydanticSchemaGenerationError):
        return True
    return True
