"""Retrieval settings: how much of one ranking a question gets.

A *ranker* (a :data:`~chunkmark.retrieval.base.RETRIEVERS` entry: ``exact``, ``bm25``, ``hybrid``,
``rerank``) orders the chunks for each question. A *setting* (a :data:`RETRIEVAL` entry:
``top_k(k=5)``, ``token_budget(tokens=1024)``, ``threshold(min_similarity=0.5)``, ...) names
the ranking it reads (:attr:`RetrievalSetting.ranker`, a canonical ranker spec) and decides how
many of its leading chunks count for each question (:meth:`RetrievalSetting.select`). Settings
that read the same ranker share one search: the caller groups them by ``ranker``, ranks once at
the largest :meth:`RetrievalSetting.depth` of the group, and hands every setting that ranking.

Settings are single-valued specs (a grid such as ``top_k(k=[1, 3, 5])`` is expanded into one spec
per value before it reaches a factory here). A new setting is one factory registered in
:data:`RETRIEVAL` that returns an object with ``ranker``, ``k_label``, ``depth`` and ``select``.
A new ranker is one factory declared with :func:`ranker`: that registers it in
:data:`~chunkmark.retrieval.base.RETRIEVERS` and registers its top-k setting of the same name in
:data:`RETRIEVAL`, with ``k`` and the ranker's own parameters, generated from the factory's
signature and docstring (``bm25(k=5, method='lucene', k1=1.5, b=0.75)``).
``token_budget`` and ``threshold`` read the dense ranking unless given ``ranker=`` (any ranker
spec: ``token_budget(tokens=1024, ranker='bm25')``); a setting says which ranking it reads by its
``ranker``, and :func:`reads_dense` asks it.

Every selection is a prefix of the ranking, described by :class:`Selection`: how many chunks
count, how many characters of the last one are kept (a token budget may cut it) and how many
tokens were retrieved.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np

from chunkmark.errors import ChunkmarkError
from chunkmark.retrieval.base import RETRIEVERS, FloatArray, IntArray, Retriever
from chunkmark.specs import Canonicalise, ParamValue, Registry, Spec
from chunkmark.tokenizers import encode_array, token_byte_lengths

K = int | Literal["min"]
"""A top-k depth: a number of chunks, or ``"min"`` (per question, as many chunks as touch its
excerpts: the caller's ``RankContext.min_depth``)."""


@dataclass(frozen=True, eq=False)
class RankContext:
    """What settings need to know about the chunks of a cell, besides the ranking.

    ``chunk_tokens[i]`` must be the number of ``encoding`` tokens of ``span_texts[i]``, the text
    of chunk ``i``'s span (``doc.text[start:end]``, not its embedded text). ``min_depth`` is the
    per-question depth of ``k="min"`` (computed by the caller, at most the number of chunks).
    """

    chunk_tokens: IntArray
    span_texts: Sequence[str]
    min_depth: IntArray
    encoding: str = "cl100k_base"

    def __post_init__(self) -> None:
        if len(self.chunk_tokens) != len(self.span_texts):
            raise ValueError(
                f"RankContext has {len(self.chunk_tokens)} token counts for "
                f"{len(self.span_texts)} span texts: give one count per chunk."
            )

    @property
    def n_chunks(self) -> int:
        return len(self.span_texts)

    @cached_property
    def span_lengths(self) -> IntArray:
        """Characters of each chunk's span."""
        return np.fromiter(
            (len(t) for t in self.span_texts), dtype=np.int64, count=len(self.span_texts)
        )


@dataclass(frozen=True, eq=False)
class Selection:
    """Which leading entries of a ranking count for each question.

    - ``depth[q]``: how many leading entries count for question ``q``;
    - ``last_chars[q]``: characters kept of the last counted chunk, from its span's start (its
      full span length unless a token budget cut it; 0 when ``depth[q]`` is 0);
    - ``tokens[q]``: tokens retrieved (the counted chunks' token counts, a cut chunk counted by
      the tokens it keeps).
    """

    depth: IntArray
    last_chars: IntArray
    tokens: IntArray


@runtime_checkable
class RetrievalSetting(Protocol):
    """What every built retrieval setting provides."""

    @property
    def ranker(self) -> Spec:
        """Canonical :data:`~chunkmark.retrieval.base.RETRIEVERS` spec of the ranking it reads."""
        ...

    @property
    def k_label(self) -> str:
        """``"5"`` for a fixed k, ``"min"``, or ``""`` for settings without a fixed k."""
        ...

    def depth(self, ctx: RankContext) -> int:
        """How deep a ranking :meth:`select` needs: the most it can count for any question (an
        upper bound where that depends on the ranking), at most the number of chunks."""
        ...

    def select(self, ranking: IntArray, scores: FloatArray, ctx: RankContext) -> Selection:
        """The leading entries that count, per question, of a ranking at least
        :meth:`depth` deep (``ranking`` and ``scores``: ``(questions, depth)``)."""
        ...


RETRIEVAL: Registry[RetrievalSetting] = Registry("retrieval", command="retrieval")


def dense_ranker() -> Spec:
    """The canonical spec of the default ranking: exact cosine search (``exact()``)."""
    return RETRIEVERS.resolve("exact()")


def reads_dense(setting: str | Spec) -> bool:
    """Whether a retrieval setting reads the dense ranking (exact cosine search, the ranking a
    results folder stores for the report), asked of the setting itself through its ``ranker``;
    False for a spec this version of chunkmark cannot build."""
    try:
        built, _ = RETRIEVAL.build(setting)
    except ChunkmarkError:
        return False
    return built.ranker.name == dense_ranker().name


def ranker_spec(ranker: str) -> Spec:
    """The canonical spec of a setting's ``ranker`` parameter (ValueError if it names none)."""
    try:
        return RETRIEVERS.resolve(ranker)
    except ChunkmarkError as exc:
        raise ValueError(
            f"ranker={ranker!r} is not a ranker spec ({exc.problem.rstrip('.')}); name one of "
            "`chunkmark retrieval`'s rankers, e.g. 'bm25' or 'hybrid(fusion=\"convex\")'"
        ) from None


def omit_dense_ranker(values: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """Canonical parameters of a setting with ``ranker=``: the ranker as its canonical spec,
    left out when it is the dense ranking (so ``token_budget(tokens=1024)`` prints as it always
    has, and ``in_document()`` reads as the dense search filtered by document)."""
    ranker = ranker_spec(str(values["ranker"]))
    out = {k: v for k, v in values.items() if k != "ranker"}
    if ranker != dense_ranker():
        out["ranker"] = str(ranker)
    return out


R = TypeVar("R", bound=Retriever)

_K_DOC = "k: chunks per question (at least 1{cap}), or ``'min'``."


def ranker(
    name: str,
    setting: str,
    canonical: Canonicalise | None = None,
    nested: dict[str, Registry[Any]] | None = None,
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Declare a ranker once: its factory is registered in
    :data:`~chunkmark.retrieval.base.RETRIEVERS` as ``name``, and a setting of the same name,
    the top k chunks of its ranking, in :data:`RETRIEVAL`.

    The setting's parameters are ``k`` (an int or ``'min'``, default 5) followed by the
    factory's own, with their types, defaults and docstring lines; ``setting`` is its summary.
    Building the setting calls the factory (so its checks are the ranker's) and, when the ranker
    has a ``candidates`` parameter, refuses a ``k`` above it. ``canonical`` (as
    :meth:`~chunkmark.specs.Registry.register` takes it) maps the ranker's parameters to their
    canonical values, in both registrations; ``nested`` names its parameters that hold another
    registry's spec (:meth:`~chunkmark.specs.Registry.register`).
    """

    def declare(factory: Callable[..., R]) -> Callable[..., R]:
        RETRIEVERS.register(name, canonical=canonical, nested=nested)(factory)
        params = list(inspect.signature(factory, eval_str=True).parameters.values())
        k_param = inspect.Parameter(
            "k", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=5, annotation=K
        )
        capped = any(p.name == "candidates" for p in params)

        def build_setting(k: K = 5, **values: Any) -> TopK:
            check_k(k)
            factory(**values)  # the ranker's own checks
            if capped and k != "min" and k > values["candidates"]:
                raise ValueError(
                    f"k={k} is more than candidates={values['candidates']}: raise candidates to k"
                )
            return TopK(RETRIEVERS.resolve(Spec.of(name, **values)), k)

        build_setting.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [k_param, *params], return_annotation=TopK
        )
        build_setting.__name__ = build_setting.__qualname__ = f"{name}_setting"
        build_setting.__module__ = factory.__module__
        build_setting.__doc__ = _setting_doc(setting, inspect.getdoc(factory) or "", capped)
        RETRIEVAL.register(name, canonical=_with_k(canonical), nested=nested)(build_setting)
        return factory

    return declare


def _with_k(canonical: Canonicalise | None) -> Canonicalise | None:
    """A ranker's canonical mapping applied to its top-k setting's parameters (``k`` kept)."""
    if canonical is None:
        return None
    rank_canonical = canonical

    def mapped(values: dict[str, ParamValue]) -> dict[str, ParamValue]:
        rest = rank_canonical({key: v for key, v in values.items() if key != "k"})
        return {"k": values["k"], **rest}

    return mapped


def _setting_doc(summary: str, ranker_doc: str, capped: bool) -> str:
    """A generated setting's docstring: its summary, then ``k`` and the ranker's ``Args``."""
    args = ranker_doc.split("Args:\n", 1)[1] if "Args:\n" in ranker_doc else ""
    k_doc = _K_DOC.format(cap=", at most ``candidates``" if capped else "")
    return f"{summary}\n\nArgs:\n    {k_doc}\n{args}"


def check_k(k: K) -> None:
    """Raise ValueError unless ``k`` is a positive int or ``"min"``."""
    if k == "min":
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number of chunks (at least 1) or 'min', got {k!r}")


def check_ranking(ranking: IntArray, scores: FloatArray, need: int) -> None:
    """Raise ValueError unless ``ranking`` and ``scores`` are ``(questions, width)`` arrays at
    least ``need`` deep."""
    if ranking.ndim != 2 or ranking.shape != scores.shape:
        raise ValueError(
            f"ranking {ranking.shape} and scores {scores.shape} must be 2-D arrays of one "
            "shape, (questions, depth)"
        )
    if ranking.shape[1] < need:
        raise ValueError(
            f"the ranking is {ranking.shape[1]} deep but this setting needs {need}: rank once "
            "at the largest depth() of the settings that share a ranker"
        )


def valid_depth(ranking: IntArray) -> IntArray:
    """Per question, how many leading entries of ``ranking`` are chunks: a ranking scoped to a
    question's document (:mod:`~chunkmark.retrieval.scoped`) ends in ``-1`` entries where the
    document has no more chunks; no setting counts them."""
    valid = ranking >= 0
    return np.asarray(np.cumprod(valid, axis=1).sum(axis=1), dtype=np.int64)


def top_k_selection(ranking: IntArray, depth: IntArray | int, ctx: RankContext) -> Selection:
    """The selection of the first ``depth[q]`` entries (capped at the ranking's width and at
    its valid entries, :func:`valid_depth`) of each row, every counted chunk whole."""
    n_q, width = ranking.shape
    counted = np.minimum(np.broadcast_to(np.asarray(depth, dtype=np.int64), (n_q,)), width)
    counted = np.minimum(counted, valid_depth(ranking))
    if width == 0:
        zeros = np.zeros(n_q, dtype=np.int64)
        return Selection(counted.copy(), zeros, zeros.copy())
    mask = np.arange(width)[None, :] < counted[:, None]
    tokens = np.where(mask, ctx.chunk_tokens[np.maximum(ranking, 0)], 0).sum(axis=1)
    tokens = tokens.astype(np.int64)
    last = ranking[np.arange(n_q), np.maximum(counted - 1, 0)]
    last_chars = np.where(counted > 0, ctx.span_lengths[last], 0).astype(np.int64)
    return Selection(counted.astype(np.int64), last_chars, tokens)


@dataclass(frozen=True)
class TopK:
    """The first k chunks of a ranking (``k="min"``: per question, ``RankContext.min_depth``)."""

    ranker: Spec
    k: K

    @property
    def k_label(self) -> str:
        return str(self.k)

    def depth(self, ctx: RankContext) -> int:
        if self.k == "min":
            return min(int(ctx.min_depth.max(initial=0)), ctx.n_chunks)
        return min(self.k, ctx.n_chunks)

    def select(self, ranking: IntArray, scores: FloatArray, ctx: RankContext) -> Selection:
        check_ranking(ranking, scores, self.depth(ctx))
        if self.k != "min":
            return top_k_selection(ranking, self.k, ctx)
        if len(ctx.min_depth) != len(ranking):
            raise ValueError(
                f"RankContext.min_depth has {len(ctx.min_depth)} entries for "
                f"{len(ranking)} questions: give one per question"
            )
        return top_k_selection(ranking, ctx.min_depth, ctx)


@dataclass(frozen=True)
class TokenBudget:
    """Chunks in rank order until ``tokens`` tokens are retrieved; the last may be cut to fit.

    A chunk is added while some budget remains: whole when it fits, else cut to its first
    ``remaining`` tokens (its kept characters are those whose UTF-8 bytes those tokens cover,
    a split multi-byte character rounded down; it counts ``remaining`` tokens). A cut that would
    keep no whole character adds nothing. Zero-token chunks are added while budget remains.
    """

    ranker: Spec
    tokens: int

    k_label: ClassVar[str] = ""  # no fixed k

    def depth(self, ctx: RankContext) -> int:
        # Every chunk added but the last leaves budget unspent, so the chunks before the last
        # hold fewer than `tokens` tokens; so do the same number of the smallest chunks.
        sizes = np.sort(np.asarray(ctx.chunk_tokens, dtype=np.int64))
        fewer = int(np.searchsorted(np.cumsum(sizes), self.tokens, side="left"))
        return min(fewer + 1, ctx.n_chunks)

    def select(self, ranking: IntArray, scores: FloatArray, ctx: RankContext) -> Selection:
        check_ranking(ranking, scores, self.depth(ctx))
        n_q, width = ranking.shape
        if width == 0:
            zeros = np.zeros(n_q, dtype=np.int64)
            return Selection(zeros, zeros.copy(), zeros.copy())
        sizes = ctx.chunk_tokens[np.maximum(ranking, 0)].astype(np.int64)
        # an entry past the question's own chunks never fits: it is as large as the budget + 1
        sizes = np.where(ranking >= 0, sizes, self.tokens + 1)
        after = np.cumsum(sizes, axis=1)
        before = after - sizes
        whole = (before < self.tokens) & (after <= self.tokens)  # a prefix of each row
        full = whole.sum(axis=1)
        selection = top_k_selection(ranking, full, ctx)
        depth, last_chars, tokens = (
            selection.depth.copy(),
            selection.last_chars.copy(),
            selection.tokens.copy(),
        )
        rows = np.arange(n_q)
        nxt = np.minimum(full, width - 1)
        cut = (full < width) & (before[rows, nxt] < self.tokens) & (ranking[rows, nxt] >= 0)
        for q in np.flatnonzero(cut):
            chunk = int(ranking[q, full[q]])
            remaining = self.tokens - int(tokens[q])
            chars = kept_characters(ctx.span_texts[chunk], remaining, ctx.encoding)
            if chars > 0:
                depth[q] += 1
                last_chars[q] = chars
                tokens[q] += remaining
        return Selection(depth, last_chars, tokens)


def kept_characters(text: str, tokens: int, encoding: str) -> int:
    """Characters of ``text`` covered by its first ``tokens`` tokens (a multi-byte character
    split between tokens is not counted)."""
    ids = encode_array(text, encoding)[:tokens]
    n_bytes = int(token_byte_lengths(encoding)[ids].sum())
    return len(text.encode("utf-8")[:n_bytes].decode("utf-8", errors="ignore"))


@dataclass(frozen=True)
class Threshold:
    """The leading chunks scoring at least ``min_similarity``, at most ``max_k``."""

    ranker: Spec
    min_similarity: float
    max_k: int

    k_label: ClassVar[str] = ""  # no fixed k

    def depth(self, ctx: RankContext) -> int:
        return min(self.max_k, ctx.n_chunks)

    def select(self, ranking: IntArray, scores: FloatArray, ctx: RankContext) -> Selection:
        need = self.depth(ctx)
        check_ranking(ranking, scores, need)
        passing = scores[:, :need] >= self.min_similarity
        leading = np.cumprod(passing, axis=1).sum(axis=1).astype(np.int64)
        return top_k_selection(ranking, leading, ctx)


@RETRIEVAL.register("top_k")
def top_k(k: int | Literal["min"] = 5) -> TopK:
    """The top k chunks by exact cosine similarity (``k='min'``: per question, as many as
    chunks touch its excerpts).

    Args:
        k: chunks per question (at least 1), or ``'min'``.
    """
    check_k(k)
    return TopK(dense_ranker(), k)


DENSE = "exact()"
"""The ``ranker`` of a setting that reads the dense ranking (left out of canonical specs)."""


@RETRIEVAL.register("token_budget", canonical=omit_dense_ranker, nested={"ranker": RETRIEVERS})
def token_budget(tokens: int = 1024, ranker: str = DENSE) -> TokenBudget:
    """Chunks by exact cosine similarity (or ``ranker``'s ranking) until a budget of cl100k
    tokens is full; the last chunk is cut to fit.

    Args:
        tokens: the budget per question, in cl100k_base tokens of the chunks' span text.
        ranker: the ranking read, a ranker spec (``'bm25'``, ``'hybrid(fusion="convex")'``);
            the dense exact ranking by default, then left out of the canonical spec.
    """
    if isinstance(tokens, bool) or tokens < 1:
        raise ValueError(f"tokens must be at least 1, got {tokens!r}")
    return TokenBudget(ranker_spec(ranker), tokens)


@RETRIEVAL.register("threshold", canonical=omit_dense_ranker, nested={"ranker": RETRIEVERS})
def threshold(min_similarity: float = 0.5, max_k: int = 20, ranker: str = DENSE) -> Threshold:
    """The leading chunks whose cosine similarity (or ``ranker``'s score) is at least
    ``min_similarity``, at most ``max_k`` (possibly none).

    Args:
        min_similarity: the lowest cosine similarity kept (between -1 and 1 for normalised
            vectors; with another ``ranker``, the lowest of its scores).
        max_k: the most chunks kept per question (at least 1).
        ranker: the ranking read, a ranker spec (``'bm25'``, ``'rerank(model="fake")'``);
            the dense exact ranking by default, then left out of the canonical spec.
    """
    if not math.isfinite(min_similarity):
        raise ValueError(f"min_similarity must be a finite number, got {min_similarity!r}")
    if isinstance(max_k, bool) or max_k < 1:
        raise ValueError(f"max_k must be at least 1, got {max_k!r}")
    return Threshold(ranker_spec(ranker), float(min_similarity), max_k)
