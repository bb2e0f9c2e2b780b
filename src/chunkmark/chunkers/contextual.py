"""Contextual chunks: another chunker's spans, each embedded with a context that situates it.

``contextual(chunker=SPEC, method=...)`` runs the wrapped chunker and keeps its spans exactly;
only what is embedded changes. A chunk's embed text is its context, a blank line, then the
chunk's own text (the wrapped chunker's embed text when it set one, else its span's text), so
metrics still count the span and the embedding cost grows by the context. The context comes
from one of three methods:

- ``llm``: an LLM writes one to three sentences situating the chunk within the whole document
  (the contextual retrieval recipe). One call per chunk, through the chunker context's LLM
  client, so answers are cached and seeded; the calls of one document are sent concurrently, up
  to the client's ``concurrency`` (the contexts are the same whatever it is). The prompt (``prompts/contextual_<version>_*.txt``,
  ``prompt='v1'``) puts the document in the system message and the chunk in the user message:
  every call for one document starts with the same long prefix, asked with
  ``cache_system=True``: OpenAI caches it by itself and Anthropic's client marks it for the
  prompt cache (see ``docs/chunkers.md``); the client's stats count the cached tokens. A
  chunk whose answer is empty gets no context (counted in ``stats().fallbacks``); other LLM
  errors are raised.
- ``headings``: the document's title (its first markdown heading) and the path of headings
  that enclose the chunk's start, joined by ``" > "``; headings inside the chunk (it starts
  with them) are left out, being in its text already. Headings are read by
  :func:`chunkmark.chunkers.markdown.parse_blocks` (ATX headings, outside code fences). A chunk
  before the first heading, or in a text without headings, gets no context.
- ``neighbours``: the text before the chunk back to a sentence start, and after it up to a
  sentence end, each side as much as fits in ``neighbour_tokens`` tokens (``encoding``); a
  side whose nearest sentence does not fit is cut at a word boundary instead. The context is
  ``before … after`` (``…`` stands for the chunk).

A chunk with no context keeps what the wrapped chunker gave it. ``stats()`` counts the contexts
added: ``context_chars`` and ``context_tokens`` (the embed texts' growth, in characters and
``encoding`` tokens: the extra embedding cost), ``llm_calls``, and the prompt prefix tokens
that provider prompt caching can serve. With ``method='llm'`` the chunker is a
:class:`~chunkmark.chunkers.base.RequestEstimator`: its requests (one per chunk of the
wrapped chunker) are known before asking.
"""

from __future__ import annotations

import re
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from chunkmark.chunkers.base import CHUNKERS, Chunk, ChunkerContext, ChunkerFn, llm_identity
from chunkmark.chunkers.markdown import Block, parse_blocks, sections
from chunkmark.chunkers.sentences import sentence_spans, word_bounds
from chunkmark.counters import ChunkerStats
from chunkmark.errors import SpecError
from chunkmark.files import shipped_prompt
from chunkmark.llm.estimate import Asking, LLMUsage, Request, count_requests
from chunkmark.spans import Span
from chunkmark.specs import Canonicalise, Traits
from chunkmark.tokenizers import count_tokens, token_counter

if TYPE_CHECKING:
    from chunkmark.llm import LLM

Method = Literal["llm", "headings", "neighbours"]
PromptVersion = Literal["v1"]

DEFAULT_LLM = "openai(model='gpt-4o-mini')"
DEFAULT_CHUNKER = "recursive(size=400, overlap=0)"
SEPARATOR = "\n\n"  # between a chunk's context and its text
ELLIPSIS = "…"  # where the chunk sits between its neighbours
NEIGHBOUR_TOKENS = 50
CONTEXT_ANSWER_TOKENS = 150

_FIELD = re.compile(r"\{(\w+)\}")
_HEADING_MARKS = re.compile(r"^\s*#{1,6}\s*|\s+#+\s*$|^#+$")


# --- shared with the propositions chunker --------------------------------------------------------


def prompt_text(name: str) -> str:
    """The text of the prompt file ``chunkers/prompts/<name>.txt`` shipped in the package."""
    return shipped_prompt("chunkers", f"{name}.txt")


def fill(template: str, **values: str) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced, in one pass (a value that
    contains ``{name}`` is never filled again); other braces are left as they are."""
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def inner_spec(spec: str) -> str:
    """The canonical (short) spec of a wrapped chunker; ValueError when it is not valid."""
    try:
        return CHUNKERS.short(spec)
    except SpecError as exc:
        raise ValueError(f"the wrapped chunker {spec!r} is not valid: {exc.problem}") from None


def check_llm_spec(spec: str) -> None:
    """ValueError when ``spec`` names no valid LLM client."""
    from chunkmark.llm import LLMS

    try:
        LLMS.resolve(spec)
    except SpecError as exc:
        raise ValueError(f"llm {spec!r} is not valid: {exc.problem}") from None


def build_inner(spec: str, context: ChunkerContext) -> ChunkerFn:
    """The wrapped chunker, built with the wrapper's context (its LLM clients and embedder)."""
    chunker, _ = CHUNKERS.build(spec, context=context)
    return chunker


def _as_chunks(pieces: Sequence[Span | Chunk]) -> list[Chunk]:
    """A chunker's output as chunks (document id left empty)."""
    return [
        Chunk("", p.start, p.end)
        if isinstance(p, Span)
        else Chunk("", p.start, p.end, p.embed_text)
        for p in pieces
    ]


def inner_chunks(chunker: ChunkerFn, text: str) -> list[Chunk]:
    """The wrapped chunker's output on ``text`` as chunks (document id left empty)."""
    return _as_chunks(chunker(text))


def inner_chunks_many(chunker: ChunkerFn, texts: Sequence[str]) -> list[list[Chunk]]:
    """The wrapped chunker's output on each text (its ``chunk_texts`` when it has one, which
    may ask an LLM about all of them at once)."""
    batch = getattr(chunker, "chunk_texts", None)
    if batch is None:
        return [inner_chunks(chunker, text) for text in texts]
    return [_as_chunks(pieces) for pieces in batch(texts)]


def inner_stats(chunker: ChunkerFn) -> ChunkerStats | None:
    """The wrapped chunker's stats, when it reports any."""
    report = getattr(chunker, "stats", None)
    stats = report() if report is not None else None
    return stats if isinstance(stats, ChunkerStats) else None


def merged_counters(own: dict[str, int], inner: ChunkerStats | None) -> dict[str, int]:
    """A wrapper's counters, then the wrapped chunker's under ``inner.<name>``."""
    if inner is None:
        return own
    return {**own, **{f"inner.{k}": v for k, v in inner.counters.items()}}


class Wrapper:
    """What a chunker that wraps another shares (``contextual``, ``propositions``): the
    wrapped chunker and its spec, one text chunked as part of a batch, and the wrapped chunks
    its requests are about."""

    inner: ChunkerFn
    inner_spec: str | None  # the wrapped chunker's spec, when built from one

    def __call__(self, text: str) -> list[Chunk]:
        return self.chunk_texts([text])[0]

    def chunk_texts(self, texts: Sequence[str]) -> list[list[Chunk]]:
        raise NotImplementedError

    def estimate_wraps(self) -> str | None:
        """The wrapped chunker's spec: its chunks are what the LLM is asked about."""
        return self.inner_spec

    def wrapped(self, text: str, chunks: Sequence[Chunk] | None) -> Sequence[Chunk]:
        """``chunks``, the wrapped chunker's of ``text``; found by running it when None."""
        return inner_chunks(self.inner, text) if chunks is None else chunks


class AnswerFallbackWarning(UserWarning):
    """An LLM answer could not be used, so a chunk was left as its wrapped chunker made it."""


# --- the three ways to situate a chunk --------------------------------------------------------


class Situate(Protocol):
    def contexts(self, text: str, chunks: Sequence[Chunk]) -> list[str]:
        """One context per chunk ("" for none)."""
        ...


def heading_name(text: str, block: Block) -> str:
    """A heading's text without its ``#`` marks (and closing ``#`` sequence)."""
    return _HEADING_MARKS.sub("", text[block.start : block.end]).strip()


class HeadingContexts:
    """The document's title and the headings enclosing each chunk (see the module docs)."""

    def contexts(self, text: str, chunks: Sequence[Chunk]) -> list[str]:
        blocks = parse_blocks(text)
        heads = [b for b in blocks if b.kind == "heading"]
        if not heads:
            return [""] * len(chunks)
        title = heads[0]
        secs = sections(blocks, 6)
        starts = [blocks[s.first].start for s in secs]
        out: list[str] = []
        for chunk in chunks:
            i = bisect_right(starts, chunk.start) - 1
            path = [h for h in (secs[i].path if i >= 0 else ()) if h.start < chunk.start]
            if title.start < chunk.start and title not in path:
                path.insert(0, title)
            names = [n for n in (heading_name(text, h) for h in path) if n]
            out.append(" > ".join(names))
        return out


@dataclass
class NeighbourContexts:
    """The text around each chunk, to sentence (else word) boundaries, within a token budget."""

    budget: int
    encoding: str
    _count: Callable[[str], int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._count = token_counter(self.encoding)

    def contexts(self, text: str, chunks: Sequence[Chunk]) -> list[str]:
        sents = sentence_spans(text)
        s_starts = [s.start for s in sents]
        s_ends = [s.end for s in sents]
        w_starts, w_ends = (a.tolist() for a in word_bounds(text))
        out: list[str] = []
        for chunk in chunks:
            before = self._before(text, chunk.start, s_starts, w_starts)
            after = self._after(text, chunk.end, s_ends, w_ends)
            if before and after:
                out.append(f"{before} {ELLIPSIS} {after}")
            elif before:
                out.append(f"{before} {ELLIPSIS}")
            elif after:
                out.append(f"{ELLIPSIS} {after}")
            else:
                out.append("")
        return out

    def _fits(self, piece: str) -> bool:
        return self._count(piece.strip()) <= self.budget

    def _before(self, text: str, pos: int, s_starts: list[int], w_starts: list[int]) -> str:
        """``text[b:pos]`` for the earliest sentence start ``b`` that fits, else word start."""
        k = bisect_left(s_starts, pos) - 1  # the nearest sentence starting before pos
        best: int | None = None
        for j in range(k, -1, -1):
            if not self._fits(text[s_starts[j] : pos]):
                break
            best = s_starts[j]
        if best is None:
            low = s_starts[k] if k >= 0 else 0
            words = w_starts[bisect_left(w_starts, low) : bisect_left(w_starts, pos)]
            best = _first_true(words, lambda w: self._fits(text[w:pos]))
        return "" if best is None else text[best:pos].strip()

    def _after(self, text: str, pos: int, s_ends: list[int], w_ends: list[int]) -> str:
        """``text[pos:e]`` for the latest sentence end ``e`` that fits, else word end."""
        k = bisect_right(s_ends, pos)  # the nearest sentence ending after pos
        best: int | None = None
        for j in range(k, len(s_ends)):
            if not self._fits(text[pos : s_ends[j]]):
                break
            best = s_ends[j]
        if best is None:
            high = s_ends[k] if k < len(s_ends) else len(text)
            words = w_ends[bisect_right(w_ends, pos) : bisect_right(w_ends, high)]
            reverse = words[::-1]
            best = _first_true(reverse, lambda e: self._fits(text[pos:e]))
        return "" if best is None else text[pos:best].strip()


def _first_true(items: Sequence[int], test: Callable[[int], bool]) -> int | None:
    """The first item passing ``test``, given that every item after a passing one passes."""
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi) // 2
        if test(items[mid]):
            hi = mid
        else:
            lo = mid + 1
    return items[lo] if lo < len(items) else None


@dataclass
class _LLMCounts:
    calls: int = 0
    sent: int = 0
    empty: int = 0
    prefix_tokens_sent: int = 0
    prefix_tokens_repeated: int = 0


class LLMContexts:
    """An LLM's context for each chunk, the whole document shown (see the module docs)."""

    def __init__(
        self, llm: LLM, prompt: str, max_tokens: int, encoding: str, *, owner: str = "contextual"
    ) -> None:
        self.llm = llm
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.encoding = encoding
        self.owner = owner
        self.counts = _LLMCounts()
        self.first_error: str | None = None

    def requests(self, text: str, chunks: Sequence[Chunk]) -> list[Request]:
        """The requests for ``text``'s chunks, without asking."""
        system = fill(prompt_text(f"contextual_{self.prompt}_system"), document=text)
        user = prompt_text(f"contextual_{self.prompt}_user")
        return [
            Request(system, fill(user, chunk=text[c.start : c.end]), self.max_tokens)
            for c in chunks
        ]

    def contexts(self, text: str, chunks: Sequence[Chunk]) -> list[str]:
        return self.contexts_many([(text, chunks)])[0]

    def contexts_many(self, texts: Sequence[tuple[str, Sequence[Chunk]]]) -> list[list[str]]:
        """One context per chunk of each text. The requests of every text are sent
        concurrently (up to the client's ``concurrency``; the same request twice, one after
        the other) and read in order, so the contexts and counts are those of asking them
        one by one."""
        from chunkmark.llm.pool import ordered, workers_for

        per_text = [self.requests(text, chunks) for text, chunks in texts]
        flat = [r for requests in per_text for r in requests]
        asked = ordered(
            self._ask, flat, workers=workers_for(self.llm), key=lambda r: (r[0], r[1], r[2])
        )
        out: list[list[str]] = []
        for requests in per_text:
            found: list[str] = []
            prefix_tokens: int | None = None
            sent_for_text = 0
            for system, _, _, _ in requests:
                answer, sent, empty = next(asked)
                self.counts.calls += 1
                if empty is not None:
                    self._fallback(empty)
                if sent:
                    self.counts.sent += 1
                    if prefix_tokens is None:
                        prefix_tokens = count_tokens([system], self.encoding)[0]
                    self.counts.prefix_tokens_sent += prefix_tokens
                    if sent_for_text:
                        self.counts.prefix_tokens_repeated += prefix_tokens
                    sent_for_text += 1
                found.append(answer.strip())
            out.append(found)
        return out

    def _ask(self, request: Request) -> tuple[str, bool, str | None]:
        """One context (in any thread): the answer ("" when empty), whether a request was sent
        (not answered by the cache), and the empty answer's error (None when not empty)."""
        from chunkmark.llm import EmptyAnswerError
        from chunkmark.llm.pool import thread_stats

        system, user, max_tokens, _ = request
        before = thread_stats(self.llm).requests
        try:
            answer = self.llm.complete(system, user, max_tokens=max_tokens, cache_system=True)
            empty = None
        except EmptyAnswerError as exc:
            answer, empty = "", str(exc)
        return answer, thread_stats(self.llm).requests > before, empty

    def _fallback(self, error: str) -> None:
        self.counts.empty += 1
        if self.first_error is None:
            self.first_error = error
            warnings.warn(
                f"{self.owner}: the LLM {self.llm.name!r} gave an empty context for a chunk; "
                "it is embedded without one. Later such chunks are only counted, in "
                "stats().fallbacks.",
                AnswerFallbackWarning,
                stacklevel=3,
            )

    def counters(self) -> dict[str, int]:
        c = self.counts
        return {
            "llm_calls": c.calls,
            "llm_requests": c.sent,
            "empty_answers": c.empty,
            "prompt_prefix_tokens": c.prefix_tokens_sent,
            "prompt_prefix_tokens_repeated": c.prefix_tokens_repeated,
        }


# --- the chunker --------------------------------------------------------------------------------


@dataclass
class _Counts:
    texts: int = 0
    chunks: int = 0
    with_context: int = 0
    context_chars: int = 0
    context_tokens: int = 0


class ContextualChunker(Wrapper):
    """The wrapped chunker's spans, each embedded after a context (see the module docs)."""

    def __init__(
        self, inner: ChunkerFn, situate: Situate, encoding: str, inner_spec: str | None = None
    ) -> None:
        self.inner = inner
        self.situate = situate
        self.encoding = encoding
        self.inner_spec = inner_spec  # the wrapped chunker's spec, when built from one
        self._counts = _Counts()

    def chunk_texts(self, texts: Sequence[str]) -> list[list[Chunk]]:
        """The chunks of each text, as calling the chunker on each in turn gives them; an LLM's
        contexts for all of them are asked concurrently (see :meth:`LLMContexts.contexts_many`)."""
        inner = inner_chunks_many(self.inner, texts)
        if isinstance(self.situate, LLMContexts):
            contexts = self.situate.contexts_many(list(zip(texts, inner, strict=True)))
        else:
            contexts = [self.situate.contexts(t, c) for t, c in zip(texts, inner, strict=True)]
        return [
            self._embedded(text, chunks, found)
            for text, chunks, found in zip(texts, inner, contexts, strict=True)
        ]

    def _embedded(self, text: str, chunks: list[Chunk], contexts: list[str]) -> list[Chunk]:
        """One text's chunks with their contexts, counted."""
        self._counts.texts += 1
        self._counts.chunks += len(chunks)
        out: list[Chunk] = []
        bodies: list[str] = []
        embeds: list[str] = []
        for chunk, context in zip(chunks, contexts, strict=True):
            if not context:
                out.append(chunk)
                continue
            body = chunk.text(text)
            embed = f"{context}{SEPARATOR}{body}"
            bodies.append(body)
            embeds.append(embed)
            self._counts.context_chars += len(embed) - len(body)
            out.append(Chunk("", chunk.start, chunk.end, embed))
        if embeds:
            grown = count_tokens(embeds, self.encoding)
            own = count_tokens(bodies, self.encoding)
            self._counts.context_tokens += sum(grown) - sum(own)
            self._counts.with_context += len(embeds)
        return out

    def requests(self, text: str, chunks: Sequence[Chunk] | None = None) -> list[Request]:
        """The LLM requests chunking ``text`` would make (none for headings and neighbours);
        ``chunks`` are the wrapped chunker's, found by running it when not given."""
        if not isinstance(self.situate, LLMContexts):
            return []
        return self.situate.requests(text, self.wrapped(text, chunks))

    def estimate_llm(self) -> LLM | None:
        """The LLM that writes the contexts; None for headings and neighbours (see
        :mod:`chunkmark.llm.estimate`)."""
        return self.situate.llm if isinstance(self.situate, LLMContexts) else None

    def estimate_requests(
        self, text: str, chunks: Sequence[Chunk] | None, asking: Asking
    ) -> LLMUsage:
        """One request per chunk, each asked once (an empty answer is not asked again),
        answers in the cache replayed. The requests of one document share the system prompt
        that holds it, offered to the provider's prompt cache: the first request sent writes
        it, the later ones read it, where the provider caches a prompt that long."""
        return count_requests(self.requests(text, chunks), asking, cache_system=True)

    def stats(self) -> ChunkerStats:
        """Counts of texts, chunks and contexts; ``context_chars``/``context_tokens`` are what
        the contexts add to the embedded text; the LLM's counters when it has one; the wrapped
        chunker's counters as ``inner.<name>``."""
        c = self._counts
        counters = {
            "texts": c.texts,
            "chunks": c.chunks,
            "chunks_with_context": c.with_context,
            "context_chars": c.context_chars,
            "context_tokens": c.context_tokens,
        }
        inner = inner_stats(self.inner)
        llm = inner.llm if inner is not None else None
        fallbacks = inner.fallbacks if inner is not None else 0
        error = inner.error if inner is not None else None
        if isinstance(self.situate, LLMContexts):
            counters.update(self.situate.counters())
            llm = self.situate.llm.stats()
            fallbacks += self.situate.counts.empty
            error = self.situate.first_error or error
        return ChunkerStats(
            fallbacks=fallbacks,
            counters=merged_counters(counters, inner),
            llm=llm,
            error=error,
        )


def _canonical(values: dict[str, Any]) -> dict[str, Any]:
    """The wrapped chunker's short spec; the LLM filled in for ``method='llm'`` (and refused
    for the others); parameters a method does not use at their defaults."""
    out = {**values, "chunker": inner_spec(values["chunker"])}
    method = values["method"]
    if method == "llm":
        out["llm"] = values["llm"] or DEFAULT_LLM
        check_llm_spec(out["llm"])
    else:
        if values["llm"] is not None:
            raise ValueError(f"llm is used only with method='llm', not method={method!r}")
        out["max_context_tokens"] = CONTEXT_ANSWER_TOKENS
        out["prompt"] = "v1"
    if method != "neighbours":
        out["neighbour_tokens"] = NEIGHBOUR_TOKENS
    return out


def register_wrapper(
    name: str, canonical: Canonicalise, asks: Callable[[dict[str, Any]], bool]
) -> Callable[[Callable[..., ChunkerFn]], Callable[..., ChunkerFn]]:
    """Register a chunker that wraps another (``chunker=``) and may call an LLM: built with the
    run's context, named by its LLM's identity, and as reusable as the chunker it wraps, plus
    an LLM when ``asks(values)``."""

    def traits(values: dict[str, Any]) -> Traits:
        inner = CHUNKERS.traits(values["chunker"])
        return Traits(inner.embeds, asks(values) or inner.calls_llm, inner.deterministic)

    return CHUNKERS.register(
        name,
        calls_llm=True,
        needs=("context",),
        canonical=canonical,
        traits_of=traits,
        identity=llm_identity,
    )


# Only method='llm' asks an LLM: the headings and neighbours contexts are as reusable as the
# chunker they wrap.
@register_wrapper("contextual", _canonical, lambda values: values["method"] == "llm")
def contextual(
    chunker: str = DEFAULT_CHUNKER,
    method: Method = "llm",
    llm: str | None = None,
    neighbour_tokens: int = NEIGHBOUR_TOKENS,
    max_context_tokens: int = CONTEXT_ANSWER_TOKENS,
    prompt: PromptVersion = "v1",
    encoding: str = "cl100k_base",
    *,
    context: ChunkerContext | None = None,
) -> ContextualChunker:
    """Another chunker's spans, each embedded after a context: an LLM's, its headings, or its
    neighbouring sentences.

    Args:
        chunker: the wrapped chunker's spec; its spans are kept exactly.
        method: ``llm`` (an LLM situates the chunk in the whole document), ``headings`` (the
            document title and the chunk's heading path) or ``neighbours`` (the text around
            the chunk).
        llm: the LLM spec for ``method='llm'`` (default ``openai(model='gpt-4o-mini')``).
        neighbour_tokens: for ``neighbours``, the tokens of context on each side.
        max_context_tokens: for ``llm``, the longest answer asked for.
        prompt: for ``llm``, the prompt version shipped in the package.
        encoding: tiktoken encoding that measures neighbours and the contexts' cost.
    """
    if neighbour_tokens < 1:
        raise ValueError(f"neighbour_tokens must be positive, got {neighbour_tokens}")
    if max_context_tokens < 1:
        raise ValueError(f"max_context_tokens must be positive, got {max_context_tokens}")
    ctx = context if context is not None else ChunkerContext()
    inner = build_inner(chunker, ctx)
    situate: Situate
    if method == "llm":
        client: LLM = ctx.llm(llm or DEFAULT_LLM)
        situate = LLMContexts(client, prompt, max_context_tokens, encoding)
    elif method == "headings":
        situate = HeadingContexts()
    else:
        situate = NeighbourContexts(neighbour_tokens, encoding)
    return ContextualChunker(inner, situate, encoding, chunker)
