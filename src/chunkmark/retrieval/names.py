"""Retrieval settings by name: a setting's name and parameters read from its spec, their display
order, and which of a run's settings a spec a user typed names (:func:`match_retrieval`). Below
the runner and the report, which both read settings by name."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from chunkmark.errors import ChunkmarkError, ConfigError
from chunkmark.specs import Registry, canonical_or_none, parse_spec

_ORDER = ("top_k", "token_budget", "threshold", "bm25", "hybrid", "rerank")


def name_of(spec: str) -> str:
    """The setting's name (``top_k``), or the text before its parenthesis."""
    return spec.split("(", 1)[0].strip()


def params_of(spec: str) -> dict[str, Any] | None:
    """The setting's keyword parameters in written order; None when it does not parse or has
    positional arguments."""
    try:
        _, args, kwargs = parse_spec(spec)
    except ChunkmarkError:
        return None
    return None if args else kwargs


def _sort_value(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, math.inf, repr(value))


def order_key(spec: str) -> tuple[Any, ...]:
    """Settings in display order: top_k, token_budget, threshold, bm25, hybrid, rerank, then the
    others by name; within a name by their parameters (numbers first, in order)."""
    name = name_of(spec)
    rank = _ORDER.index(name) if name in _ORDER else len(_ORDER)
    params = params_of(spec) or {}
    return (rank, name, tuple(_sort_value(v) for v in params.values()), spec)


def ordered(specs: Iterable[str]) -> list[str]:
    return sorted(set(specs), key=order_key)


def settings_registry() -> Registry[Any] | None:
    """The registry of retrieval settings (``chunkmark.retrieval.RETRIEVAL``), when this
    version of chunkmark has one."""
    try:
        from chunkmark.retrieval import RETRIEVAL  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return None
    return RETRIEVAL if isinstance(RETRIEVAL, Registry) else None


def _normalised(spec: str) -> str | None:
    if settings_registry() is None:
        return None
    return canonical_or_none("retrieval", spec)  # the form the runs' settings hold


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return bool(a == b)


def _matches(asked: str, spec: str) -> bool:
    """Whether every parameter written in ``asked`` (positional ones in ``spec``'s order) has
    ``spec``'s value, with the same name."""
    try:
        name, args, kwargs = parse_spec(asked)
    except ChunkmarkError:
        return False
    params = params_of(spec)
    if params is None or name != name_of(spec) or len(args) > len(params):
        return False
    given = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        if key in given:
            return False
        given[key] = value
    return all(key in params and _same(value, params[key]) for key, value in given.items())


def match_retrieval(
    asked: str, available: Sequence[str], error: type[ChunkmarkError] = ConfigError
) -> str:
    """The setting of ``available`` that ``asked`` names: the same string, else the same
    canonical spec (through the retrieval registry: parameters left out take their defaults),
    else the one setting whose parameters agree with every parameter ``asked`` writes
    (positional ones in order; those left out match any value)."""
    if asked in available:
        return asked
    canonical = _normalised(asked)
    if canonical is not None and canonical in available:
        return canonical
    found = [s for s in available if _matches(asked, s)]
    if len(found) == 1:
        return found[0]
    listing = ", ".join(ordered(available)) or "none"
    if not found:
        raise error(f"The retrieval setting {asked} is not in the runs.", f"Use one of: {listing}.")
    raise error(
        f"The retrieval setting {asked} matches {len(found)} settings of the runs: "
        f"{', '.join(ordered(found))}.",
        "Write the parameters that tell them apart.",
    )
