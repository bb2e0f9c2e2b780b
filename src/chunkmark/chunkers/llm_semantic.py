"""LLM semantic chunking: an LLM decides where the topic changes (Chroma's LLMSemanticChunker).

1. The text is cut into small pieces by the recursive splitter (``recursive(size=chunk_size,
   overlap=0)``, lengths in ``cl100k_base`` tokens).
2. From the first piece not yet decided, pieces are added to a window until it holds more than
   ``window_tokens`` tokens (the piece that crosses the limit is included). The window is shown to
   the LLM with every piece wrapped in numbered tags (numbers count from 1 over the whole text).
3. The LLM answers ``split_after: 3, 7``: the pieces after which a new chunk starts, in
   increasing order, at least one, all inside the window. The next window starts after the last
   of them. An answer that cannot be read or breaks these rules is asked again once, with a
   message saying what was wrong; if the second answer is no better, the window is not split
   (its pieces stay with the chunk that follows), the next window starts after it, and the
   window is counted in ``stats().fallbacks`` (with one warning per chunker).
4. A chunk is the span from the start of its first piece to the end of its last piece; the text
   is never searched again.

As in the reference, no window starts within the last four pieces: they join the chunk before
them, and a text of at most four pieces is one chunk and costs no call. Unlike the reference, a
window that already reaches the end of the text is the last one (asking again about pieces the
LLM has seen with nothing new after them would only force extra cuts). Answers come through the
chunker context's LLM client, so they are cached and seeded; errors of the LLM client (missing
key, endpoint down) are raised, not hidden. The windows of a text are asked one after the other,
whatever the client's ``concurrency``: each starts after the previous answer's last cut, so the
next request is not known until the previous answer is read.

Before asking, :func:`estimate_splits` says what it would take (the chunker is a
:class:`~chunkmark.chunkers.base.RequestEstimator`): cached answers replayed, then the
fewest calls (windows that tile the pieces) and the most (a window from every piece, each asked
twice).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from chunkmark.chunkers.base import CHUNKERS, Chunk, ChunkerContext, ChunkerFn, llm_identity
from chunkmark.chunkers.recursive import recursive
from chunkmark.costs.meter import MESSAGE_TOKENS
from chunkmark.counters import ChunkerStats
from chunkmark.llm.estimate import (
    ENCODING,
    REASON_TOKENS,
    SHOWN_ANSWER_TOKENS,
    Asking,
    LLMUsage,
    Replay,
)
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens

if TYPE_CHECKING:
    from chunkmark.llm import LLM

ANSWER_TOKENS = 200  # the answer is one short line
UNASKED_TAIL = 4  # no window starts within the last pieces of a text

SYSTEM_PROMPT = (
    "You divide documents into passages that each stay on one topic. The document has been cut "
    "into small numbered pieces; each piece is wrapped in <piece N> and </piece N> tags. Decide "
    "after which pieces the subject changes, so that consecutive pieces about the same thing "
    "stay together. Reply with a single line of the form 'split_after: N, M' listing piece "
    "numbers in increasing order, and nothing else."
)

_MARKER = re.compile(r"split[\s_-]*after\s*[:=]", re.IGNORECASE)
_BARE_LIST = re.compile(r"^[\[(]?\s*\d+(?:\s*(?:,|;|and|\s)\s*\d+)*\s*[\])]?\.?$", re.IGNORECASE)


class LLMAnswerWarning(UserWarning):
    """An LLM gave answers that could not be used, so part of a text was not split by it."""


def parse_answer(answer: str, first: int, last: int) -> tuple[list[int] | None, str]:
    """The piece numbers in an answer, if they are valid for a window of pieces first..last.

    Returns ``(numbers, "")`` with increasing, distinct numbers, or ``(None, reason)``.
    Accepts ``split_after: 3, 5`` anywhere in the answer (the last such line wins; the numbers
    may be on the following line), or an answer that is only a list of numbers.
    """
    found = _numbers(answer)
    if found is None:
        return None, "it has no line starting with 'split_after:'"
    if not found:
        return None, "it lists no piece number"
    outside = [n for n in found if not first <= n <= last]
    if outside:
        return None, f"{outside[0]} is not a piece of this window ({first} to {last})"
    if any(b < a for a, b in pairwise(found)):
        return None, "the numbers are not in increasing order"
    return sorted(set(found)), ""


def _numbers(answer: str) -> list[int] | None:
    lines = answer.strip().splitlines()
    for i in reversed(range(len(lines))):
        match = _MARKER.search(lines[i])
        if match is None:
            continue
        rest = lines[i][match.end() :]
        if not re.search(r"\d", rest):
            following = [line for line in lines[i + 1 :] if line.strip()]
            rest = following[0] if following else ""
        return [int(n) for n in re.findall(r"\d+", rest)]
    text = answer.strip().strip("`").strip()
    if _BARE_LIST.match(text):
        return [int(n) for n in re.findall(r"\d+", text)]
    return None


@dataclass
class _Counts:
    texts: int = 0
    pieces: int = 0
    windows: int = 0
    corrections: int = 0
    fallback_windows: int = 0


@dataclass(eq=False, repr=False)
class LLMSplitter:
    """Pieces of a text and the LLM's cuts between them; shared by the LLM-based chunkers."""

    llm: LLM
    chunk_size: int = 50
    window_tokens: int = 800
    encoding: str = "cl100k_base"
    _: KW_ONLY
    owner: str = "llm_semantic"
    _pieces: ChunkerFn = field(init=False)
    _counts: _Counts = field(default_factory=_Counts, init=False)
    _warned: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError(
                f"chunk_size must be a positive number of tokens, got {self.chunk_size}"
            )
        if self.window_tokens < 1:
            raise ValueError(f"window_tokens must be positive, got {self.window_tokens}")
        self._pieces = recursive(size=self.chunk_size, overlap=0, encoding=self.encoding)

    def pieces(self, text: str) -> list[Span]:
        """The text's small pieces (the recursive splitter's), before any LLM cut."""
        return [Span(p.start, p.end) for p in self._pieces(text)]

    def groups(self, text: str) -> list[list[Span]]:
        """The text's pieces, grouped into chunks by the LLM's cuts (in order, none empty)."""
        pieces = self.pieces(text)
        self._counts.texts += 1
        self._counts.pieces += len(pieces)
        cuts = self.cuts(text, pieces)
        groups: list[list[Span]] = []
        current: list[Span] = []
        for i, piece in enumerate(pieces):
            current.append(piece)
            if i in cuts:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        return groups

    def cuts(self, text: str, pieces: list[Span]) -> set[int]:
        """Indices (0-based) of the pieces after which a chunk ends."""
        texts = [text[p.start : p.end] for p in pieces]
        tokens = count_tokens(texts, self.encoding)
        n = len(pieces)
        cuts: set[int] = set()
        start = 0  # the first piece not yet decided
        while start < n - UNASKED_TAIL:
            end = start  # the window is pieces[start:end]
            total = 0
            while end < n and total <= self.window_tokens:
                total += tokens[end]
                end += 1
            numbers = self._ask(texts, start, end)
            if numbers is None:
                start = end
            else:
                cuts.update(k - 1 for k in numbers)
                start = numbers[-1]
            if end == n:
                break
        cuts.discard(n - 1)
        return cuts

    def counters(self) -> dict[str, int]:
        """``texts`` and ``pieces`` seen, ``windows`` asked, ``corrections`` (second asks),
        ``fallback_windows`` (left unsplit after two unusable answers)."""
        return asdict(self._counts)

    def _ask(self, texts: list[str], start: int, end: int) -> list[int] | None:
        """The LLM's cuts for pieces[start:end] as 1-based numbers, or None after two misses."""
        from chunkmark.llm import EmptyAnswerError

        first, last = start + 1, end
        prompt = _window_prompt(texts, first, last)
        self._counts.windows += 1
        user = prompt
        for attempt in range(2):
            try:
                answer = self.llm.complete(SYSTEM_PROMPT, user, max_tokens=ANSWER_TOKENS)
            except EmptyAnswerError:
                answer, (numbers, reason) = "", (None, "it is empty")
            else:
                numbers, reason = parse_answer(answer, first, last)
            if numbers is not None:
                return numbers
            if attempt == 0:
                self._counts.corrections += 1
                user = _correction_prompt(prompt, answer, reason, first, last)
        self._counts.fallback_windows += 1
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"{self.owner}: the LLM {self.llm.name!r} gave no usable answer for pieces "
                f"{first} to {last} ({reason}), even when told what was wrong; those pieces "
                "were not split. Later such windows are only counted, in "
                "stats().fallbacks.",
                LLMAnswerWarning,
                stacklevel=2,
            )
        return None


def _window_prompt(texts: list[str], first: int, last: int) -> str:
    body = "\n".join(f"<piece {i}>{texts[i - 1]}</piece {i}>" for i in range(first, last + 1))
    return (
        f"Pieces {first} to {last} of the document:\n\n{body}\n\n"
        "After which of these pieces does a new topic begin? Answer with one line, "
        f"'split_after:' followed by piece numbers from {first} to {last} in increasing order. "
        f"Give at least one number; if all these pieces belong together, give {last}."
    )


def _correction_prompt(prompt: str, answer: str, reason: str, first: int, last: int) -> str:
    shown = " ".join(answer.split())[:200] or "(nothing)"
    return (
        f"{prompt}\n\nYour previous answer was: {shown}\nIt cannot be used: {reason}. "
        f"Answer again with exactly one line, 'split_after:' followed by increasing piece "
        f"numbers between {first} and {last}."
    )


# --- the estimate: calls and tokens without asking ----------------------------------------------


def estimate_splits(splitter: LLMSplitter, text: str, asking: Asking) -> LLMUsage:
    """The calls and tokens of :meth:`LLMSplitter.groups` on ``text``, without asking.

    The pieces and the first window are known; later windows start where the answers say.
    Answers in the cache are replayed as the splitter reads them (a correction too); from the
    first window not in the cache, the fewest calls are windows that tile the pieces, each
    answered right at once, and the most a window from every piece up to the first window
    reaching the end, each asked twice (the correction quotes the answer and the reason).
    """
    pieces = splitter.pieces(text)
    texts = [text[p.start : p.end] for p in pieces]
    tokens = count_tokens(texts, splitter.encoding)
    n = len(texts)
    system_tokens = count_tokens([SYSTEM_PROMPT], ENCODING)[0] + MESSAGE_TOKENS
    correction = _correction_prompt("", "", "", n, n)  # its own words, besides the prompt
    correction_tokens = count_tokens([correction], ENCODING)[0] + SHOWN_ANSWER_TOKENS
    ends: dict[int, int] = {}

    def window_end(start: int) -> int:
        if start not in ends:
            end, total = start, 0
            while end < n and total <= splitter.window_tokens:
                total += tokens[end]
                end += 1
            ends[start] = end
        return ends[start]

    def prompt_tokens(start: int, end: int) -> int:
        user = _window_prompt(texts, start + 1, end)
        return system_tokens + count_tokens([user], ENCODING)[0]

    # For the many windows of the most-calls bound: each tagged piece counted once, plus the
    # prompt's own words (with the widest piece numbers), instead of every window's prompt.
    tagged = [f"<piece {i}>{t}</piece {i}>\n" for i, t in enumerate(texts, start=1)]
    prefix = np.concatenate([[0], np.cumsum(count_tokens(tagged, ENCODING))])
    empty_window, empty_piece = count_tokens(
        [_window_prompt([""] * n, n, n), f"<piece {n}></piece {n}>"], ENCODING
    )
    words = system_tokens + empty_window - empty_piece

    def prompt_bound(start: int, end: int) -> int:
        return words + int(prefix[end] - prefix[start])

    usage = LLMUsage()
    start = 0
    while start < n - UNASKED_TAIL:
        end = window_end(start)
        replayed = _replayed(asking.replay, texts, start, end)
        if replayed is None:
            rest = _Windows(n, window_end, prompt_tokens, prompt_bound, correction_tokens)
            _estimate_rest(usage, start, rest)
            return usage
        asks, numbers = replayed
        usage.cached += asks
        if end == n:
            break
        start = end if numbers is None else numbers[-1]
    return usage


def _replayed(
    replay: Replay, texts: list[str], start: int, end: int
) -> tuple[int, list[int] | None] | None:
    """(asks, cuts) for a window answered in the cache, as the splitter reads it; None when
    an answer it needs is not there."""
    first, last = start + 1, end
    prompt = _window_prompt(texts, first, last)
    answer = replay.answer(SYSTEM_PROMPT, prompt, ANSWER_TOKENS)
    if answer is None:
        return None
    numbers, reason = parse_answer(answer, first, last)
    if numbers is not None:
        return 1, numbers
    correction = _correction_prompt(prompt, answer, reason, first, last)
    second = replay.answer(SYSTEM_PROMPT, correction, ANSWER_TOKENS)
    if second is None:
        return None
    return 2, parse_answer(second, first, last)[0]


@dataclass(frozen=True)
class _Windows:
    """A text's windows: ``end(start)``, a window's exact prompt tokens, a cheaper close bound of
    them, and what a correction adds to a prompt."""

    n: int
    end: Callable[[int], int]
    exact: Callable[[int, int], int]
    bound: Callable[[int, int], int]
    correction_tokens: int


def _estimate_rest(usage: LLMUsage, start: int, w: _Windows) -> None:
    """Fewest calls from ``start``: windows that tile the pieces, each answered right at once.
    Most: a window from every start up to the first that reaches the end, each asked twice
    (the correction repeats the prompt with the answer quoted and the reason). Every call may
    answer up to ``max_tokens``."""
    s = start
    while s < w.n - UNASKED_TAIL:
        e = w.end(s)
        usage.calls += 1
        usage.input_tokens += w.exact(s, e)
        usage.output_tokens += ANSWER_TOKENS
        if e == w.n:
            break
        s = e
    for s in range(start, w.n - UNASKED_TAIL):
        e = w.end(s)
        once = w.bound(s, e)
        usage.calls_max += 2
        usage.input_tokens_max += 2 * once + w.correction_tokens + REASON_TOKENS
        usage.output_tokens_max += 2 * ANSWER_TOKENS
        if e == w.n:
            break


# --- the chunker ---------------------------------------------------------------------------------


class LLMSemanticChunker:
    """Chunks are runs of consecutive pieces between the LLM's cuts (see the module docs)."""

    def __init__(self, splitter: LLMSplitter) -> None:
        self.splitter = splitter

    def __call__(self, text: str) -> list[Span]:
        return [Span(g[0].start, g[-1].end) for g in self.splitter.groups(text)]

    def estimate_llm(self) -> LLM:
        """The LLM it asks (see :mod:`chunkmark.llm.estimate`)."""
        return self.splitter.llm

    def estimate_wraps(self) -> None:
        """It reads the text itself."""
        return None

    def estimate_requests(
        self, text: str, chunks: Sequence[Chunk] | None, asking: Asking
    ) -> LLMUsage:
        """The calls and tokens of chunking ``text`` (:func:`estimate_splits`)."""
        return estimate_splits(self.splitter, text, asking)

    def stats(self) -> ChunkerStats:
        """The splitter's counters; ``fallbacks`` are the windows left unsplit after two
        unusable answers; ``llm`` the client's requests, cache hits and tokens."""
        counters = self.splitter.counters()
        return ChunkerStats(
            fallbacks=counters["fallback_windows"], counters=counters, llm=self.splitter.llm.stats()
        )


@CHUNKERS.register("llm_semantic", calls_llm=True, needs=("context",), identity=llm_identity)
def llm_semantic(
    llm: str = "openai(model='gpt-4o-mini')",
    chunk_size: int = 50,
    window_tokens: int = 800,
    encoding: str = "cl100k_base",
    *,
    context: ChunkerContext | None = None,
) -> LLMSemanticChunker:
    """An LLM picks topic boundaries between small recursive pieces (LLMSemanticChunker).

    Args:
        llm: the LLM spec (see ``chunkmark.llm``), e.g. ``anthropic(model='...')``.
        chunk_size: piece size in tokens (the recursive splitter's ``size``).
        window_tokens: about how many tokens of pieces the LLM sees per question.
        encoding: tiktoken encoding that measures pieces and windows.
    """
    ctx = context if context is not None else ChunkerContext()
    client: LLM = ctx.llm(llm)
    return LLMSemanticChunker(LLMSplitter(client, chunk_size, window_tokens, encoding))
