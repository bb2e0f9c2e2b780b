"""Propositions: each chunk of another chunker rewritten by an LLM into atomic facts, each fact a
chunk of its own, placed on the source text it came from.

``propositions(llm=SPEC, chunker=SPEC)`` (the Dense X Retrieval idea):

1. The wrapped chunker cuts the text; every chunk is shown to the LLM, which answers a JSON list
   of propositions (``{"propositions": [...]}``; prompt ``prompts/propositions_<version>_*.txt``,
   ``prompt='v1'``; the JSON schema goes to providers that take one). An answer that cannot be
   read is asked again once, saying what was wrong; if the second is no better, the chunk is
   kept as the wrapped chunker made it and counted in ``stats().fallbacks``. The chunks of a
   text are asked concurrently, up to the client's ``concurrency`` (a chunk's correction after
   its first answer); the chunks come out the same whatever it is.
2. Each proposition is aligned to the chunk's text with rapidfuzz's
   ``fuzz.partial_ratio_alignment`` (both lower-cased where that keeps their lengths): the
   window of the source that best matches the proposition, and its score (0 to 100).
   **Alignment rule**: the best-scoring window; when several windows score the same, the
   earliest (the one starting first in the chunk), and the proposition is counted as
   ``ambiguous``. A chunk is one contiguous span, so a proposition is never given the union of
   two places. The window is widened to whole words (it never ends inside a word), then trimmed
   of whitespace.
3. A proposition scoring at least ``min_score`` becomes ``Chunk(span of its window, embed_text=
   the proposition)``; one below it (or aligned to nothing but whitespace) is counted as
   ``dropped`` and left out, never placed elsewhere. Chunks come in the wrapped chunker's
   order, and within a chunk in the LLM's order; their spans may overlap.

Every placement (kept or dropped) is kept in :attr:`PropositionsChunker.placements`;
``stats()`` counts propositions, aligned, dropped, ambiguous, the score distribution in bins of
ten (``score_60_70`` holds scores from 60 up to 70; 100 is in ``score_90_100``), LLM calls and
corrections. rapidfuzz is an optional dependency: ``pip install 'chunkmark[propositions]'``.
The chunker is a :class:`~chunkmark.chunkers.base.RequestEstimator`: its first requests (one
per chunk of the wrapped chunker) are known before asking, a correction at most one more each.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from chunkmark.chunkers.base import Chunk, ChunkerContext, ChunkerFn
from chunkmark.chunkers.contextual import (
    DEFAULT_LLM,
    AnswerFallbackWarning,
    PromptVersion,
    Wrapper,
    build_inner,
    check_llm_spec,
    fill,
    inner_chunks_many,
    inner_spec,
    inner_stats,
    merged_counters,
    prompt_text,
    register_wrapper,
)
from chunkmark.counters import ChunkerStats
from chunkmark.llm.estimate import (
    REASON_TOKENS,
    SHOWN_ANSWER_TOKENS,
    Asking,
    LLMUsage,
    Request,
    framed_tokens,
)
from chunkmark.optional import import_optional

if TYPE_CHECKING:
    from chunkmark.llm import LLM

DEFAULT_CHUNKER = "recursive(size=200, overlap=0)"
MIN_SCORE = 60.0
ANSWER_TOKENS = 1024
TIE = 1e-9  # scores this close are the same score
BINS = 10

SCHEMA: dict[str, Any] = {
    "title": "propositions",
    "type": "object",
    "properties": {"propositions": {"type": "array", "items": {"type": "string"}}},
    "required": ["propositions"],
    "additionalProperties": False,
}

_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


def rapidfuzz_fuzz() -> Any:
    """rapidfuzz's ``fuzz`` module, or :class:`MissingDependencyError` naming the extra."""
    purpose = "The propositions chunker (aligning propositions)"
    return import_optional("rapidfuzz", "rapidfuzz", "propositions", purpose).fuzz


# --- reading the answer --------------------------------------------------------------------------


def parse_propositions(answer: str) -> tuple[list[str] | None, str]:
    """The propositions in an answer, or ``(None, reason)``.

    Accepts ``{"propositions": [...]}`` or a bare JSON list of strings, inside a code fence or
    after some words; blank propositions are left out, whitespace runs made single spaces, and
    a proposition written again (the same words) is kept once. An answer cut off inside its
    list (a model repeating one proposition until ``max_tokens``) gives the propositions
    written in full before the cut.
    """
    text = answer.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    data = _json(text)
    if data is None:
        data = _cut_off_list(text)
    if data is None:
        return None, "it is not JSON"
    if isinstance(data, dict):
        if "propositions" not in data:
            return None, "it has no 'propositions' key"
        data = data["propositions"]
    if not isinstance(data, list):
        return None, "'propositions' is not a list"
    if not all(isinstance(p, str) for p in data):
        return None, "not every proposition is a string"
    found = [" ".join(p.split()) for p in data if p.strip()]
    return list(dict.fromkeys(found)), ""


def _cut_off_list(text: str) -> list[str] | None:
    """The whole strings of a JSON list of strings that was cut off before its end (the list
    after ``"propositions":``, else the first list), or None when not one string is whole."""
    key = re.search(r'"propositions"\s*:\s*\[', text)
    at = key.end() if key else text.find("[") + 1
    if at <= 0:
        return None
    decoder = json.JSONDecoder()
    items: list[str] = []
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            item, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        if not isinstance(item, str):
            return None
        items.append(item)
    return items or None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    opens = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not opens:
        return None
    start = min(opens)
    end = max(text.rfind("}"), text.rfind("]"))
    try:
        return json.loads(text[start : end + 1]) if end > start else None
    except json.JSONDecodeError:
        return None


# --- alignment ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Alignment:
    """Where a proposition sits in its source: ``[start, end)`` of the source, its score
    (0 to 100), and whether another place scored the same."""

    score: float
    start: int
    end: int
    ambiguous: bool = False


def _folded(text: str) -> str:
    lower = text.lower()
    return lower if len(lower) == len(text) else text


def align(proposition: str, source: str, fuzz: Any) -> Alignment:
    """The proposition's place in ``source`` by the alignment rule (see the module docs)."""
    needle, hay = _folded(proposition), _folded(source)
    if not needle.strip() or not hay.strip():
        return Alignment(0.0, 0, 0)
    found = fuzz.partial_ratio_alignment(needle, hay)
    score, start, end = float(found.score), int(found.dest_start), int(found.dest_end)
    width = len(needle)
    ambiguous = False
    while end - 1 >= width:  # an earlier window as good? (ties go to the earliest)
        earlier = fuzz.partial_ratio_alignment(needle, hay[: end - 1])
        if earlier.score < score - TIE or earlier.dest_start >= start:
            break
        ambiguous = True
        score = max(score, float(earlier.score))
        start, end = int(earlier.dest_start), int(earlier.dest_end)
    if not ambiguous and len(hay) - end >= width:
        later = fuzz.partial_ratio_alignment(needle, hay[end:])
        ambiguous = later.score >= score - TIE
    start, end = _whole_words(source, start, end)
    return Alignment(score, start, end, ambiguous)


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` widened so that it cuts no word, then trimmed of whitespace."""
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# --- the chunker --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    """One proposition: its span in the text (if kept), score, and whether it was kept."""

    proposition: str
    start: int
    end: int
    score: float
    ambiguous: bool
    kept: bool


@dataclass(frozen=True)
class _Asked:
    """What asking about one chunk gave: its propositions (None: no usable answer), the calls
    it took (2 when the first answer needed a correction) and the last answer's problem."""

    found: list[str] | None
    calls: int
    reason: str


@dataclass
class _Counts:
    texts: int = 0
    chunks: int = 0
    llm_calls: int = 0
    corrections: int = 0
    fallback_chunks: int = 0
    chunks_without_propositions: int = 0
    propositions: int = 0
    aligned: int = 0
    dropped: int = 0
    ambiguous: int = 0
    bins: list[int] = field(default_factory=lambda: [0] * BINS)


class PropositionsChunker(Wrapper):
    """Propositions of the wrapped chunker's chunks, placed by fuzzy alignment (module docs)."""

    def __init__(
        self,
        inner: ChunkerFn,
        llm: LLM,
        fuzz: Any,
        min_score: float = MIN_SCORE,
        max_answer_tokens: int = ANSWER_TOKENS,
        prompt: str = "v1",
        inner_spec: str | None = None,
    ) -> None:
        self.inner = inner
        self.inner_spec = inner_spec  # the wrapped chunker's spec, when built from one
        self.llm = llm
        self.fuzz = fuzz
        self.min_score = min_score
        self.max_answer_tokens = max_answer_tokens
        self.prompt = prompt
        self.placements: list[Placement] = []
        self._counts = _Counts()
        self._error: str | None = None

    def chunk_texts(self, texts: Sequence[str]) -> list[list[Chunk]]:
        """The chunks of each text, as calling the chunker on each in turn gives them. The
        chunks' requests, over every text, go concurrently (up to the client's
        ``concurrency``; a chunk's correction after its first answer; the same chunk text
        twice, one after the other) and the answers are read in order."""
        from chunkmark.llm.pool import ordered, workers_for

        inner = inner_chunks_many(self.inner, texts)
        sources = [
            [text[c.start : c.end] for c in chunks]
            for text, chunks in zip(texts, inner, strict=True)
        ]
        flat = [source for found in sources for source in found]
        asked = ordered(self._ask, flat, workers=workers_for(self.llm), key=lambda t: t)
        out: list[list[Chunk]] = []
        for chunks, found_sources in zip(inner, sources, strict=True):
            self._counts.texts += 1
            chunked: list[Chunk] = []
            for chunk, source in zip(chunks, found_sources, strict=True):
                self._counts.chunks += 1
                found = self._counted(next(asked))
                if found is None:
                    chunked.append(chunk)
                    continue
                if not found:
                    self._counts.chunks_without_propositions += 1
                for proposition in found:
                    placed = self._place(proposition, source, chunk.start)
                    if placed is not None:
                        chunked.append(placed)
            out.append(chunked)
        return out

    def _place(self, proposition: str, source: str, offset: int) -> Chunk | None:
        a = align(proposition, source, self.fuzz)
        c = self._counts
        c.propositions += 1
        c.bins[min(int(a.score // (100 / BINS)), BINS - 1)] += 1
        kept = a.score >= self.min_score and a.end > a.start
        start, end = offset + a.start, offset + a.end
        self.placements.append(Placement(proposition, start, end, a.score, a.ambiguous, kept))
        if not kept:
            c.dropped += 1
            return None
        c.aligned += 1
        c.ambiguous += int(a.ambiguous)
        return Chunk("", start, end, proposition)

    def requests(self, text: str, chunks: Sequence[Chunk] | None = None) -> list[Request]:
        """The first request for each of ``text``'s chunks (corrections cannot be known);
        ``chunks`` are the wrapped chunker's, found by running it when not given."""
        system = prompt_text(f"propositions_{self.prompt}_system")
        return [
            Request(system, self._request(text[c.start : c.end]), self.max_answer_tokens, SCHEMA)
            for c in self.wrapped(text, chunks)
        ]

    def estimate_llm(self) -> LLM:
        """The LLM it asks (see :mod:`chunkmark.llm.estimate`)."""
        return self.llm

    def estimate_requests(
        self, text: str, chunks: Sequence[Chunk] | None, asking: Asking
    ) -> LLMUsage:
        """One request per chunk of the wrapped chunker, answers in the cache replayed (a
        cached answer that cannot be read leads to the correction asked next, replayed too
        when cached). Fewest calls: every answer usable; most: every chunk asked twice (the
        correction quotes the request, at most 200 characters of the answer and the
        reason)."""
        usage = LLMUsage()
        requests = self.requests(text, chunks)
        if not requests:
            return usage
        template = prompt_text(f"propositions_{self.prompt}_correction")
        asks: list[tuple[str, int, int]] = []  # (user prompt, max_tokens, times at the most)
        for system, user, max_tokens, schema in requests:
            answer = asking.replay.answer(system, user, max_tokens, schema)
            if answer is None:
                asks.append((user, max_tokens, 2))
                continue
            usage.cached += 1
            found, reason = parse_propositions(answer)
            if found is not None:
                continue
            shown = " ".join(answer.split())[:200] or "(nothing)"
            correction = fill(template, request=user, answer=shown, reason=reason)
            if asking.replay.answer(system, correction, max_tokens, schema) is not None:
                usage.cached += 1
            else:
                asks.append((correction, max_tokens, 1))
        if not asks:
            return usage
        words = fill(template, request="", answer="", reason="")
        system_tokens, totals = framed_tokens(requests[0].system, [u for u, _, _ in asks] + [words])
        # A correction repeats the request and adds its own words, the answer shown and the
        # reason.
        bare = totals.pop()
        extra = bare - system_tokens + SHOWN_ANSWER_TOKENS + REASON_TOKENS
        for (_, max_tokens, times), tokens in zip(asks, totals, strict=True):
            usage.ask(tokens, max_tokens, times, extra if times > 1 else 0)
        return usage

    def _request(self, source: str) -> str:
        return fill(prompt_text(f"propositions_{self.prompt}_user"), chunk=source)

    def _ask(self, source: str) -> _Asked:
        """The LLM's propositions for one chunk (in any thread; nothing counted here), or None
        after two unusable answers."""
        from chunkmark.llm import EmptyAnswerError

        system = prompt_text(f"propositions_{self.prompt}_system")
        request = user = self._request(source)
        reason = ""
        for attempt in range(2):
            try:
                answer = self.llm.complete(
                    system, user, max_tokens=self.max_answer_tokens, json_schema=SCHEMA
                )
            except EmptyAnswerError:
                answer, (found, reason) = "", (None, "it is empty")
            else:
                found, reason = parse_propositions(answer)
            if found is not None:
                return _Asked(found, attempt + 1, "")
            if attempt == 0:
                shown = " ".join(answer.split())[:200] or "(nothing)"
                template = prompt_text(f"propositions_{self.prompt}_correction")
                user = fill(template, request=request, answer=shown, reason=reason)
        return _Asked(None, 2, reason)

    def _counted(self, asked: _Asked) -> list[str] | None:
        """Count one chunk's calls, correction and fallback (in order, in the caller's
        thread); its propositions, or None when it is kept whole."""
        c = self._counts
        c.llm_calls += asked.calls
        c.corrections += int(asked.calls > 1)
        if asked.found is not None:
            return asked.found
        c.fallback_chunks += 1
        if self._error is None:
            self._error = f"unusable answer from {self.llm.name!r}: {asked.reason}"
            warnings.warn(
                f"propositions: the LLM {self.llm.name!r} gave no usable list of propositions "
                f"for a chunk ({asked.reason}), even when told what was wrong; the chunk is kept "
                "whole. Later such chunks are only counted, in stats().fallbacks.",
                AnswerFallbackWarning,
                stacklevel=3,
            )
        return None

    def stats(self) -> ChunkerStats:
        """Counts of chunks, propositions (``aligned``, ``dropped``, ``ambiguous``), the score
        bins, LLM calls and corrections; ``fallbacks`` are chunks kept whole after two unusable
        answers; the wrapped chunker's counters as ``inner.<name>``."""
        c = self._counts
        width = 100 // BINS
        counters = {k: v for k, v in asdict(c).items() if k != "bins"}
        counters.update({f"score_{b * width}_{(b + 1) * width}": n for b, n in enumerate(c.bins)})
        inner = inner_stats(self.inner)
        return ChunkerStats(
            fallbacks=c.fallback_chunks + (inner.fallbacks if inner is not None else 0),
            counters=merged_counters(counters, inner),
            llm=self.llm.stats(),
            error=self._error or (inner.error if inner is not None else None),
        )


def _canonical(values: dict[str, Any]) -> dict[str, Any]:
    """The wrapped chunker's short spec; the LLM spec checked."""
    check_llm_spec(values["llm"])
    return {**values, "chunker": inner_spec(values["chunker"])}


# An LLM rewrites every chunk; the wrapped chunker may embed too.
@register_wrapper("propositions", _canonical, lambda _values: True)
def propositions(
    llm: str = DEFAULT_LLM,
    chunker: str = DEFAULT_CHUNKER,
    min_score: float = MIN_SCORE,
    max_answer_tokens: int = ANSWER_TOKENS,
    prompt: PromptVersion = "v1",
    *,
    context: ChunkerContext | None = None,
) -> PropositionsChunker:
    """An LLM rewrites each chunk into atomic propositions; each is a chunk embedded as itself,
    its span the source text it aligns to (Dense X Retrieval).

    Args:
        llm: the LLM spec (see ``chunkmark.llm``).
        chunker: the wrapped chunker's spec, whose chunks are rewritten.
        min_score: the lowest alignment score (0 to 100, rapidfuzz partial ratio) of a kept
            proposition; those below are counted and dropped.
        max_answer_tokens: the longest answer asked for, per chunk.
        prompt: the prompt version shipped in the package.
    """
    if not 0 <= min_score <= 100:
        raise ValueError(f"min_score must be between 0 and 100, got {min_score}")
    if max_answer_tokens < 1:
        raise ValueError(f"max_answer_tokens must be positive, got {max_answer_tokens}")
    fuzz = rapidfuzz_fuzz()
    ctx = context if context is not None else ChunkerContext()
    inner = build_inner(chunker, ctx)
    client: LLM = ctx.llm(llm)
    return PropositionsChunker(
        inner, client, fuzz, min_score, max_answer_tokens, prompt, inner_spec=chunker
    )
