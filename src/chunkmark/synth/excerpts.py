"""Turning an LLM's answer into exact excerpts: character spans of the document, never guesses.

Two ways to get there, one per excerpt mode of ``chunkmark synth generate``:

- **exact** (:func:`locate`): the LLM copies the passages that answer its question; each one is
  searched in the text, inside its window first, then in the whole document; exactly first,
  then after normalising whitespace and typography (:class:`NormalisedText`: runs of whitespace
  become one space; curly quotes, apostrophes and dashes become ASCII; zero-width characters
  and soft hyphens are dropped). A normalised match is mapped back to the exact offsets of the
  original text. A passage found more than once is kept at its window's occurrence and flagged
  ambiguous; anything else is rejected with a reason (``empty``, ``too_short``, ``not_found``).
- **approximate** (:func:`cut_pieces`, :func:`span_of_range`): the window is cut into numbered
  pieces of about 100 characters on word boundaries, the LLM cites ranges of piece numbers, and
  each excerpt is the span from the start of the range's first piece to the end of its last
  (trailing whitespace left out). Every range is resolved on its own pieces, so the second and
  later references of a question get their own offsets.

The checks shared by both modes: :func:`collapses` (several excerpts that overlap or touch are
one passage, not several) and :func:`copied_run` (a paraphrased question must not copy four or
more consecutive words of its passage).

Every function here is pure: text in, spans out; nothing reads files or calls a model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from chunkmark import placement
from chunkmark.placement import find_all
from chunkmark.spans import Span

EXACT = "exact"
NORMALISED = "normalised"
PIECES = "pieces"
GIVEN = "given"  # the passage was chosen first and the question written for it

# Rejection reasons of single excerpts.
EMPTY = "empty"
TOO_SHORT = "too_short"
NOT_FOUND = "not_found"
BAD_RANGE = "bad_range"

PIECE_CHARS = 100  # the approximate mode's piece length (characters, cut on word boundaries)
COPIED_WORDS = 4  # a paraphrased question may share at most 3 consecutive words with a passage

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ExcerptMatch:
    """Where a passage is: its ``span`` in the document and how it was found (``method``:
    ``exact``, ``normalised`` or ``pieces``), whether the text occurs more than once
    (``ambiguous``), or, when it could not be placed, ``span`` None and the ``problem``."""

    span: Span | None
    method: str | None = None
    ambiguous: bool = False
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the passage was placed."""
        return self.span is not None


def rejected(problem: str) -> ExcerptMatch:
    """A match that failed for ``problem``."""
    return ExcerptMatch(None, problem=problem)


class NormalisedText(placement.NormalisedText):
    """A text with whitespace and typography normalised, and the way back to the original
    (:class:`chunkmark.placement.NormalisedText` with ``typography`` on)."""

    def __init__(self, original: str) -> None:
        super().__init__(original, typography=True)


def normalise(text: str) -> str:
    """``text`` normalised as :class:`NormalisedText` does, without its outer spaces."""
    return NormalisedText(text).text.strip(" ")


def locate(
    text: str,
    passage: str,
    window: Span,
    *,
    min_chars: int = 1,
    normalised: NormalisedText | None = None,
) -> ExcerptMatch:
    """Where ``passage`` (without its outer whitespace) is in ``text``.

    Tried in order: exactly inside ``window``, normalised inside ``window``, exactly anywhere,
    normalised anywhere; the first occurrence that qualifies wins. ``ambiguous`` is set when
    the passage occurs more than once in the document (counted normalised). A passage that is
    blank is ``empty``; one shorter than ``min_chars`` characters (whitespace runs counted as
    one) is ``too_short``; one found nowhere is ``not_found``. ``normalised`` may pass the
    document's :class:`NormalisedText` to save recomputing it for every passage.
    """
    stripped = passage.strip()
    wanted = normalise(stripped)
    if not wanted:
        return rejected(EMPTY)
    if len(wanted) < min_chars:
        return rejected(TOO_SHORT)
    norm = normalised
    if norm is None or norm.original != text:
        norm = NormalisedText(text)
    exact = [Span(i, i + len(stripped)) for i in find_all(text, stripped)]
    loose = [norm.span(i, i + len(wanted)) for i in find_all(norm.text, wanted)]
    ambiguous = max(len(exact), len(loose)) > 1
    for spans, method in ((exact, EXACT), (loose, NORMALISED)):
        inside = [s for s in spans if window.start <= s.start and s.end <= window.end]
        if inside:
            return ExcerptMatch(inside[0], method, ambiguous)
    for spans, method in ((exact, EXACT), (loose, NORMALISED)):
        if spans:
            return ExcerptMatch(spans[0], method, ambiguous)
    return rejected(NOT_FOUND)


def snap_window(text: str, start: int, end: int, reach: int = 200) -> Span:
    """``[start, end)`` moved onto word boundaries: a start inside a word moves forward to the
    next word, an end inside a word moves back to the end of the previous one (each by at most
    ``reach`` characters, else it stays). The result is never empty when the input is not."""
    n = len(text)
    start, end = max(0, min(start, n)), max(0, min(end, n))
    new_start, new_end = start, end
    if 0 < start < n and not text[start - 1].isspace():
        nxt = _next_word_start(text, start, min(n, start + reach))
        if nxt is not None:
            new_start = nxt
    if 0 < end < n and not text[end].isspace() and not text[end - 1].isspace():
        prev = _previous_word_end(text, max(new_start, end - reach), end)
        if prev is not None:
            new_end = prev
    if new_end <= new_start:
        return Span(start, end)
    return Span(new_start, new_end)


def _next_word_start(text: str, start: int, limit: int) -> int | None:
    """The first position in ``[start, limit)`` where a word starts after whitespace."""
    for i in range(start, limit):
        if text[i].isspace():
            j = i
            while j < len(text) and text[j].isspace():
                j += 1
            return j if j < len(text) else None
    return None


def _previous_word_end(text: str, floor: int, end: int) -> int | None:
    """The last position in ``(floor, end]`` that ends a word (whitespace follows it)."""
    for i in range(end - 1, floor, -1):
        if text[i].isspace():
            j = i
            while j > floor and text[j - 1].isspace():
                j -= 1
            return j if j > floor else None
    return None


def cut_pieces(text: str, window: Span, size: int = PIECE_CHARS) -> list[Span]:
    """The window cut into consecutive pieces of about ``size`` characters on word boundaries.

    The pieces tile the window exactly (no gap, no overlap, none empty). A piece ends after the
    whitespace that follows its last word, at the first such place at least ``size``
    characters from its start; when there is none within twice ``size``, at the last word
    start in the second half of its first ``size`` characters, else (one very long word) at
    twice ``size``.
    """
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    pieces: list[Span] = []
    pos = window.start
    while pos < window.end:
        cut = _piece_end(text, pos, window.end, size)
        pieces.append(Span(pos, cut))
        pos = cut
    return pieces


def _piece_end(text: str, pos: int, end: int, size: int) -> int:
    """Where the piece starting at ``pos`` ends (see :func:`cut_pieces`)."""
    if end - pos <= size:
        return end
    limit = min(end, pos + 2 * size)
    i = pos + size
    while i < limit and not text[i].isspace():
        i += 1
    if i >= limit:
        # No space in reach: the last space in the second half before the target, else a
        # hard cut.
        back = pos + size
        floor = pos + size // 2
        while back > floor and not text[back - 1].isspace():
            back -= 1
        return back if back > floor else limit
    while i < end and text[i].isspace():
        i += 1
    return i


def number_pieces(text: str, pieces: Sequence[Span]) -> str:
    """The window as the LLM sees it in the approximate mode: each piece preceded by its
    1-based number in double brackets, ``[[1]]``."""
    return "".join(f"[[{i}]]{text[p.start : p.end]}" for i, p in enumerate(pieces, start=1))


def span_of_range(
    text: str, pieces: Sequence[Span], first: int, last: int, *, min_chars: int = 1
) -> ExcerptMatch:
    """The excerpt citing pieces ``first`` to ``last`` (1-based, inclusive): from the start of
    piece ``first`` to the end of piece ``last``, its trailing whitespace left out.

    A range outside ``1..len(pieces)`` or backwards is ``bad_range``; a span holding only
    whitespace is ``empty``; one shorter than ``min_chars`` is ``too_short``.
    """
    if not 1 <= first <= last <= len(pieces):
        return rejected(BAD_RANGE)
    start, end = pieces[first - 1].start, pieces[last - 1].end
    while end > start and text[end - 1].isspace():
        end -= 1
    while start < end and text[start].isspace():
        start += 1
    if end <= start:
        return rejected(EMPTY)
    if len(normalise(text[start:end])) < min_chars:
        return rejected(TOO_SHORT)
    return ExcerptMatch(Span(start, end), PIECES)


def collapses(text: str, spans: Sequence[Span]) -> bool:
    """Whether two of the spans overlap or touch (only whitespace between them), so that
    together they read as one passage rather than several."""
    # Sorted by start, a span overlapping any earlier one overlaps the one just before it.
    ordered = sorted(spans)
    return any(
        nxt.start <= prev.end or not text[prev.end : nxt.start].strip()
        for prev, nxt in pairwise(ordered)
    )


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased (runs of letters, digits and underscores)."""
    return [w.lower() for w in _WORD.findall(text)]


def copied_run(question: str, passage: str, n: int = COPIED_WORDS) -> str | None:
    """The first run of ``n`` consecutive words that ``question`` shares with ``passage``
    (lower-cased, joined by spaces), or None when there is none."""
    theirs = words(passage)
    runs = {tuple(theirs[i : i + n]) for i in range(len(theirs) - n + 1)}
    mine = words(question)
    for i in range(len(mine) - n + 1):
        run = tuple(mine[i : i + n])
        if run in runs:
            return " ".join(run)
    return None
