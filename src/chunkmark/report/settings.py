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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chunkmark.errors import ChunkmarkError
from chunkmark.metrics.scoring import Scoring as Scoring  # the one Scoring, re-exported
from chunkmark.report.errors import ReportError
from chunkmark.retrieval.names import (
    match_retrieval as _match_retrieval,
)
from chunkmark.retrieval.names import (  # re-exported: the report reads settings by name
    name_of as name_of,
)
from chunkmark.retrieval.names import (
    order_key as order_key,
)
from chunkmark.retrieval.names import (
    ordered as ordered,
)
from chunkmark.retrieval.names import (
    params_of as params_of,
)
from chunkmark.retrieval.names import (
    settings_registry as settings_registry,
)

DENSE_RANKER = "exact"


DEFAULT_SCORING = Scoring()


def top_k(k: str) -> str:
    """The canonical ``top_k`` setting of a k value: ``top_k(k=5)``, ``top_k(k='min')``."""
    return f"top_k(k={k})" if k.isdigit() else f"top_k(k={k!r})"


def retrieval_of(row: Mapping[str, Any]) -> str:
    """A row's retrieval setting; rows of folders without the column are ``top_k(k=<k>)``."""
    value = row.get("retrieval")
    return str(value) if value else top_k(str(row["k"]))


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


def match_retrieval(
    asked: str, available: Sequence[str], error: type[ChunkmarkError] = ReportError
) -> str:
    """:func:`chunkmark.retrieval.names.match_retrieval`, a ReportError by default."""
    return _match_retrieval(asked, available, error)


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
