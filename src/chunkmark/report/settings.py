"""Retrieval settings and scoring options as results folders name them.

A row of ``results.parquet`` and ``summary.csv`` says how the chunks were retrieved
(``retrieval``: a canonical single-setting spec such as ``top_k(k=5)``,
``token_budget(tokens=1024)`` or ``bm25(k=5, method='lucene', k1=1.5, b=0.75)``) and how the
question was scored (``excerpts``, ``unit``, ``denominator``). Folders written before those
columns existed are read as ``top_k(k=<k>)`` with the default scoring. This module orders and
shortens settings for display and finds the one a user asks for (``--pick-retrieval``, ``--pick-k``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chunkmark.errors import ChunkmarkError
from chunkmark.metrics.scoring import Scoring as Scoring  # the one Scoring, re-exported
from chunkmark.report.errors import ReportError
from chunkmark.specs import Registry, canonical_or_none, parse_spec

_ORDER = ("top_k", "token_budget", "threshold", "bm25", "hybrid", "rerank")
DENSE_RANKER = "exact"


DEFAULT_SCORING = Scoring()


def top_k(k: str) -> str:
    """The canonical ``top_k`` setting of a k value: ``top_k(k=5)``, ``top_k(k='min')``."""
    return f"top_k(k={k})" if k.isdigit() else f"top_k(k={k!r})"


def retrieval_of(row: Mapping[str, Any]) -> str:
    """A row's retrieval setting; rows of folders without the column are ``top_k(k=<k>)``."""
    value = row.get("retrieval")
    return str(value) if value else top_k(str(row["k"]))


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


@functools.lru_cache(maxsize=1024)
def is_dense(spec: str) -> bool:
    """Whether the setting reads the dense ranking (the one a results folder stores), as the
    setting itself declares it (:func:`chunkmark.retrieval.settings.reads_dense`: ``top_k``, and
    ``token_budget`` and ``threshold`` without another ``ranker``)."""
    from chunkmark.retrieval.settings import reads_dense

    return reads_dense(spec)


def is_dense_ranker(ranker: str | None) -> bool:
    """Whether a ranking file's ``ranker`` is the dense exact one (None: a file without the
    column, which only ever held the dense ranking)."""
    return ranker is None or name_of(ranker) == DENSE_RANKER


def fixed_depth(spec: str) -> int | None:
    """The number of chunks a ``top_k`` setting with a number retrieves, else None."""
    if name_of(spec) != "top_k":
        return None
    k = (params_of(spec) or {}).get("k")
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def budget_of(spec: str) -> float | None:
    """The tokens of a ``token_budget`` setting, else None."""
    if name_of(spec) != "token_budget":
        return None
    tokens = (params_of(spec) or {}).get("tokens")
    return float(tokens) if isinstance(tokens, (int, float)) else None


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


def short_forms(specs: Iterable[str]) -> dict[str, str]:
    """Each setting for display: its name, its first parameter and the parameters that tell it
    apart from the other settings of that name in ``specs`` (``bm25(k=5)`` when every bm25
    setting shares its other parameters)."""
    groups: dict[str, list[str]] = {}
    for spec in set(specs):
        groups.setdefault(name_of(spec), []).append(spec)
    out: dict[str, str] = {}
    for name, members in groups.items():
        parsed = {s: params_of(s) for s in members}
        keys: set[str] = set()
        values: dict[str, set[str]] = {}
        for params in parsed.values():
            for key, value in (params or {}).items():
                values.setdefault(key, set()).add(repr(value))
        for params in parsed.values():
            keys.update(k for k in (params or {}) if len(values[k]) > 1)
        for spec, params in parsed.items():
            if params is None:
                out[spec] = spec
                continue
            kept = [f"{k}={v!r}" for i, (k, v) in enumerate(params.items()) if i == 0 or k in keys]
            out[spec] = f"{name}({', '.join(kept)})"
    return out


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
    asked: str, available: Sequence[str], error: type[ChunkmarkError] = ReportError
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


def choose_retrieval(
    available: Sequence[str],
    retrieval: str | None,
    k: str | None,
    error: type[ChunkmarkError] = ReportError,
) -> str:
    """The setting analysed: ``retrieval`` when given, else ``top_k(k=<k>)`` when k is given,
    else ``top_k(k=5)`` when the runs hold it, else their first top_k setting, else their first
    setting."""
    if not available:
        raise error("The runs hold no scored rows.", "Rerun `chunkmark run`.")
    if retrieval is not None:
        return match_retrieval(retrieval, available, error)
    if k is not None:
        wanted = top_k(k)
        if wanted not in available:
            ks = [s for s in ordered(available) if name_of(s) == "top_k"]
            raise error(
                f"k={k} ({wanted}) is not in the runs.",
                f"Use --pick-retrieval with one of: {', '.join(ordered(available))}"
                + (f"; or --pick-k for one of: {', '.join(ks)}." if ks else "."),
            )
        return wanted
    if top_k("5") in available:
        return top_k("5")
    settings = ordered(available)
    return next((s for s in settings if name_of(s) == "top_k"), settings[0])


def choose_scoring(available: Iterable[Scoring]) -> Scoring:
    """The scoring analysed: the defaults when the runs hold them, else the first."""
    present = sorted(set(available))
    if not present or DEFAULT_SCORING in present:
        return DEFAULT_SCORING
    return present[0]
