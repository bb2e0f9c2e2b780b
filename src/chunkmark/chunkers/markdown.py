"""Markdown block structure as spans, and the one rule for splitting it to a size limit.

A line-based reading of the parts of CommonMark/GFM that decide where a chunk may end:

- **Lines** end at ``"\\n"`` (a ``"\\r"`` before it is whitespace); a *blank* line holds only
  whitespace.
- **ATX headings**: 1 to 6 ``#`` after at most 3 spaces, then whitespace or the end of the line
  (``#tag`` is text). Setext (underlined) headings are read as text.
- **Fenced code**: a line that starts, after any indentation, with 3 or more backticks (and no
  backtick after them) or tildes opens a fence; a line of at least as many of the same
  character, and nothing but whitespace, closes it; an unclosed fence runs to the end of the
  text. Nothing inside a fence is a heading, a table or a paragraph break.
- **Tables**: a run of lines starting with ``|``, or a line containing ``|`` followed by a
  delimiter row (``|---|:--:|``, ``--- | ---``); the table goes on over the following non-blank
  lines that contain ``|`` and open no heading or fence.
- **Text**: every other run of non-blank lines (lists and quotes included).

Every block's span runs from its first to its last non-whitespace character. A *paragraph* is a
run of blocks with no blank line between them; a heading is always a paragraph of its own.

The structure rule shared by the size-limited chunkers is :func:`split_to_fit`: code blocks and
tables stay whole unless they alone exceed the limit, and are then split at line/row boundaries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers.sentences import sentence_spans, word_bounds
from chunkmark.chunkers.tokens import char_offsets, encodable
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens, encode_array, token_byte_lengths

if TYPE_CHECKING:
    from chunkmark.tokenizers import Encoding

BlockKind = Literal["heading", "text", "code", "table"]
PieceKind = Literal["section", "paragraph", "heading", "text", "code", "table", "line", "word"]
IntArray = npt.NDArray[np.int64]

_HEADING = re.compile(r" {0,3}(#{1,6})(?=\s|$)")
_FENCE_OPEN = re.compile(r"[ \t]*(?:(`{3,})[^`]*|(~{3,}).*)$")
_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})\s*$")
_PIPE_FIRST = re.compile(r"[ \t]*\|")
_DELIMITER_CELL = re.compile(r":?-+:?")
_NON_SPACE = re.compile(r"\S")
_CONTENT_LINE = re.compile(r"\S(?:[^\n]*\S)?")


@dataclass(frozen=True, slots=True)
class Block:
    """One markdown block: its kind, span, heading level (0 if not a heading), and whether it
    follows the previous block with no blank line between (same paragraph)."""

    kind: BlockKind
    start: int
    end: int
    level: int = 0
    joined: bool = False


def parse_blocks(text: str) -> list[Block]:
    """The blocks of ``text`` in order (see the module docstring for what each kind is)."""
    lines = _line_bounds(text)
    blocks: list[Block] = []
    i, blank_before = 0, True
    while i < len(lines):
        s, e = lines[i]
        if _NON_SPACE.search(text, s, e) is None:
            i, blank_before = i + 1, True
            continue
        kind, level, stop = _block_at(text, lines, i)
        joined = not blank_before and kind != "heading" and blocks[-1].kind != "heading"
        start, end = strip(text, s, lines[stop - 1][1])
        blocks.append(Block(kind, start, end, level, joined))
        i, blank_before = stop, False
    return blocks


def _line_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, without its ``"\\n"``."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for line in text.split("\n"):
        bounds.append((start, start + len(line)))
        start += len(line) + 1
    return bounds


def _block_at(text: str, lines: list[tuple[int, int]], i: int) -> tuple[BlockKind, int, int]:
    """Kind, heading level and end line (exclusive) of the block starting at non-blank line i."""
    s, e = lines[i]
    heading = _HEADING.match(text, s, e)
    if heading is not None:
        return "heading", len(heading.group(1)), i + 1
    fence = _FENCE_OPEN.match(text, s, e)
    if fence is not None:
        return "code", 0, _fence_end(text, lines, i, fence.group(1) or fence.group(2))
    if _starts_table(text, lines, i):
        stop = i + 1
        while stop < len(lines) and _continues_table(text, *lines[stop]):
            stop += 1
        return "table", 0, stop
    stop = i + 1
    while stop < len(lines) and not _ends_text(text, lines, stop):
        stop += 1
    return "text", 0, stop


def _fence_end(text: str, lines: list[tuple[int, int]], i: int, fence: str) -> int:
    """One past the line that closes the fence opened on line i (or the number of lines)."""
    for j in range(i + 1, len(lines)):
        close = _FENCE_CLOSE.match(text, *lines[j])
        if (
            close is not None
            and close.group(1)[0] == fence[0]
            and len(close.group(1)) >= len(fence)
        ):
            return j + 1
    return len(lines)


def _starts_table(text: str, lines: list[tuple[int, int]], i: int) -> bool:
    s, e = lines[i]
    if _PIPE_FIRST.match(text, s, e):
        return True
    return (
        text.find("|", s, e) != -1 and i + 1 < len(lines) and _is_delimiter_row(text, *lines[i + 1])
    )


def _is_delimiter_row(text: str, start: int, end: int) -> bool:
    row = text[start:end].strip()
    if "|" not in row:
        return False
    cells = row.removeprefix("|").removesuffix("|").split("|")
    return all(_DELIMITER_CELL.fullmatch(cell.strip()) for cell in cells)


def _opens_block(text: str, start: int, end: int) -> bool:
    return bool(_HEADING.match(text, start, end) or _FENCE_OPEN.match(text, start, end))


def _continues_table(text: str, start: int, end: int) -> bool:
    return text.find("|", start, end) != -1 and not _opens_block(text, start, end)


def _ends_text(text: str, lines: list[tuple[int, int]], i: int) -> bool:
    """Whether line i ends a run of text lines: blank, or the start of another block."""
    s, e = lines[i]
    if _NON_SPACE.search(text, s, e) is None:
        return True
    return _opens_block(text, s, e) or _starts_table(text, lines, i)


def strip(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without surrounding whitespace (``start == end`` if nothing is left)."""
    first = _NON_SPACE.search(text, start, end)
    if first is None:
        return start, start
    while text[end - 1].isspace():
        end -= 1
    return first.start(), end


def paragraph_groups(blocks: Sequence[Block], first: int, stop: int) -> list[tuple[int, int]]:
    """Block index ranges ``[i, j)`` of the paragraphs among ``blocks[first:stop]``."""
    groups: list[tuple[int, int]] = []
    start = first
    for i in range(first + 1, stop):
        if not blocks[i].joined:
            groups.append((start, i))
            start = i
    if stop > first:
        groups.append((start, stop))
    return groups


@dataclass(frozen=True, slots=True)
class Section:
    """Blocks ``[first, stop)`` from one heading to the next, and the heading tree around them.

    ``path`` holds the enclosing headings, outermost first, ending with the section's own
    heading (empty for text before the first heading). ``parent`` is the index of the section of
    ``path[-2]`` (-1 if none); ``subtree_stop`` is one past the last block of the section
    together with its sub-sections.
    """

    first: int
    stop: int
    path: tuple[Block, ...]
    parent: int
    subtree_stop: int


def sections(blocks: Sequence[Block], max_level: int) -> list[Section]:
    """Sections starting at every heading of level ``<= max_level`` (and one before the first)."""
    starts = [i for i, b in enumerate(blocks) if b.kind == "heading" and b.level <= max_level]
    bounds = [*starts, len(blocks)]
    if blocks and (not starts or starts[0] > 0):
        bounds.insert(0, 0)
    out: list[Section] = []
    stack: list[int] = []  # sections whose subtree is still open
    subtree_stop = [len(blocks)] * (len(bounds) - 1)
    for k in range(len(bounds) - 1):
        first = bounds[k]
        heading = blocks[first] if blocks[first].kind == "heading" else None
        if heading is None or heading.level > max_level:
            out.append(Section(first, bounds[k + 1], (), -1, bounds[k + 1]))
            continue
        while stack and out[stack[-1]].path[-1].level >= heading.level:
            subtree_stop[stack.pop()] = first
        parent = stack[-1] if stack else -1
        path = (*out[parent].path, heading) if parent >= 0 else (heading,)
        out.append(Section(first, bounds[k + 1], path, parent, len(blocks)))
        stack.append(k)
    return [
        Section(s.first, s.stop, s.path, s.parent, subtree_stop[k] if s.path else s.stop)
        for k, s in enumerate(out)
    ]


# --- the structure rule: split a piece that is over a size limit --------------------------------


@dataclass(frozen=True, slots=True)
class Piece:
    """A span to fit under a limit, with how to split it: its known parts (a section's
    paragraphs, a paragraph's blocks) or, when empty, parts derived from its kind."""

    start: int
    end: int
    kind: PieceKind
    parts: tuple[Piece, ...] = ()


def paragraph_piece(blocks: Sequence[Block], first: int, stop: int) -> Piece:
    parts = tuple(Piece(b.start, b.end, b.kind) for b in blocks[first:stop])
    return Piece(blocks[first].start, blocks[stop - 1].end, "paragraph", parts)


def section_piece(blocks: Sequence[Block], first: int, stop: int) -> Piece:
    groups = paragraph_groups(blocks, first, stop)
    parts = tuple(paragraph_piece(blocks, i, j) for i, j in groups)
    return Piece(blocks[first].start, blocks[stop - 1].end, "section", parts)


class TokenCounter:
    """Token counts of ranges of one text: exact (each range encoded on its own), or estimated
    from one encoding of an enclosing range (:meth:`token_ends`)."""

    def __init__(self, text: str, encoding: Encoding) -> None:
        self._clean = encodable(text)
        self._encoding = encoding
        self._byte_lengths = token_byte_lengths(encoding)

    def sizes(self, ranges: Sequence[tuple[int, int]]) -> list[int]:
        """Exact token count of every range, counting each distinct text once."""
        texts = [self._clean[s:e] for s, e in ranges]
        distinct = list(dict.fromkeys(texts))
        counted = dict(zip(distinct, count_tokens(distinct, self._encoding), strict=True))
        return [counted[t] for t in texts]

    def token_ends(self, start: int, end: int) -> IntArray:
        """Offsets where the tokens of ``[start, end)`` end (a split character rounds up)."""
        piece = self._clean[start:end]
        ids = encode_array(piece, self._encoding)
        byte_ends = np.cumsum(self._byte_lengths[ids])
        return char_offsets(piece, byte_ends, round_up=True) + start


def split_to_fit(text: str, piece: Piece, limit: int, counter: TokenCounter) -> list[Span]:
    """Spans covering ``piece`` (whitespace between them excepted), each of at most ``limit``
    tokens.

    The piece is split at its coarsest boundaries first: a section at paragraphs, a paragraph
    at blocks, text at sentences, a code block at lines, a table at rows, a heading, sentence
    or line at words, and a word, as a last resort, at characters. Consecutive parts are
    packed greedily into spans up to the limit; a part that does not fit alone is split further
    on its own, so chunk boundaries fall on both sides of it. Code blocks and tables are thus
    never split unless they alone exceed the limit. The only span that can exceed the limit is
    a single character whose tokens alone do (e.g. a 2-token emoji with ``limit=1``).

    Packing estimates sizes from one encoding of the piece, then counts every packed span
    exactly; a span over the limit is packed again by exact counts.
    """
    splitter = _Splitter(text, limit, counter, counter.token_ends(piece.start, piece.end))
    splitter.split(piece)
    return splitter.out


@dataclass(frozen=True, slots=True)
class _Parts:
    """The parts of a piece: their ranges, and their pieces (given, or all of one kind)."""

    starts: IntArray
    ends: IntArray
    kind: PieceKind
    pieces: tuple[Piece, ...] = ()

    def piece(self, k: int) -> Piece:
        if self.pieces:
            return self.pieces[k]
        return Piece(int(self.starts[k]), int(self.ends[k]), self.kind)

    def span(self, i: int, j: int) -> tuple[int, int]:
        """The range from part i to part j (inclusive)."""
        return int(self.starts[i]), int(self.ends[j])


@dataclass
class _Splitter:
    text: str
    limit: int
    counter: TokenCounter
    token_ends: IntArray  # of the piece being split, for estimates
    out: list[Span] = field(default_factory=list)

    def split(self, piece: Piece) -> None:
        parts = _parts(self.text, piece)
        if parts is None:
            self.out.extend(
                _split_characters(piece.start, piece.end, self.limit, self.counter, self.token_ends)
            )
            return
        groups = self._estimated_groups(parts)
        exact = self.counter.sizes([parts.span(i, j) for i, j in groups])
        for (i, j), n in zip(groups, exact, strict=True):
            if n <= self.limit:
                self.out.append(Span(*parts.span(i, j)))
            elif i == j:
                self.split(parts.piece(i))
            else:
                self._fit_exactly(parts, i, j)

    def _estimated_groups(self, parts: _Parts) -> list[tuple[int, int]]:
        """Greedy runs ``(i, j)`` of parts whose estimated tokens stay within the limit."""
        first = np.searchsorted(self.token_ends, parts.starts, side="right")
        last = np.searchsorted(self.token_ends, parts.ends, side="left")
        groups: list[tuple[int, int]] = []
        i = 0
        while i < len(first):
            j = int(np.searchsorted(last, first[i] + self.limit - 1, side="right")) - 1
            groups.append((i, max(i, j)))
            i = max(i, j) + 1
        return groups

    def _fit_exactly(self, parts: _Parts, i: int, j: int) -> None:
        """Parts i..j by exact counts: runs that fit are packed, the others split further."""
        sizes = self.counter.sizes([parts.span(k, k) for k in range(i, j + 1)])
        run: list[tuple[int, int]] = []
        for k, n in zip(range(i, j + 1), sizes, strict=True):
            if n <= self.limit:
                run.append(parts.span(k, k))
                continue
            self.out.extend(pack_exact(run, self.limit, self.counter))
            run = []
            self.split(parts.piece(k))
        self.out.extend(pack_exact(run, self.limit, self.counter))


def _parts(text: str, piece: Piece) -> _Parts | None:
    """The next finer parts of a piece (skipping levels that would not split it), or None."""
    while True:
        parts = _given_parts(piece) if piece.parts else _derived_parts(text, piece)
        if parts is None:
            return None
        if len(parts.starts) > 1 or parts.span(0, 0) != (piece.start, piece.end):
            return parts
        piece = parts.piece(0)


def _given_parts(piece: Piece) -> _Parts:
    starts = np.array([p.start for p in piece.parts], dtype=np.int64)
    ends = np.array([p.end for p in piece.parts], dtype=np.int64)
    return _Parts(starts, ends, piece.parts[0].kind, piece.parts)


def _derived_parts(text: str, piece: Piece) -> _Parts | None:
    s, e = piece.start, piece.end
    if piece.kind == "text":
        bounds = [(p.start, p.end) for p in sentence_spans(text[s:e])]
    elif piece.kind in ("code", "table"):
        bounds = [m.span() for m in _CONTENT_LINE.finditer(text[s:e])]
    elif piece.kind in ("heading", "line"):
        starts, ends = word_bounds(text[s:e])
        return _Parts(starts + s, ends + s, "word")
    else:
        return None
    arr = np.array(bounds, dtype=np.int64).reshape(-1, 2) + s
    return _Parts(arr[:, 0], arr[:, 1], "line")


def pack_exact(items: Sequence[tuple[int, int]], limit: int, counter: TokenCounter) -> list[Span]:
    """Consecutive ranges (each within the limit) packed into spans by exact counts: each span
    is the longest run from its first item found within the limit by binary search."""
    out: list[Span] = []
    i = 0
    while i < len(items):
        lo, hi = i, len(items) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if counter.sizes([(items[i][0], items[mid][1])])[0] <= limit:
                lo = mid
            else:
                hi = mid - 1
        out.append(Span(items[i][0], items[lo][1]))
        i = lo + 1
    return out


def _split_characters(
    start: int, end: int, limit: int, counter: TokenCounter, token_ends: IntArray
) -> list[Span]:
    """A word cut at characters into the longest pieces within the limit (a single character
    over the limit is kept as one piece)."""
    out: list[Span] = []
    i = start
    while i < end:
        lo, hi = _bracket(i, end, limit, counter, token_ends)
        while lo < hi:  # the longest prefix in [lo, hi], by characters
            mid = (lo + hi + 1) // 2
            if counter.sizes([(i, mid)])[0] <= limit:
                lo = mid
            else:
                hi = mid - 1
        out.append(Span(i, lo))
        i = lo
    return out


def _bracket(
    i: int, end: int, limit: int, counter: TokenCounter, token_ends: IntArray
) -> tuple[int, int]:
    """Bounds ``(lo, hi)`` of the end of the longest prefix of ``[i, end)`` within the limit
    (``lo`` is within it, or ``i + 1``). Probes start where the estimate puts the end of
    ``limit`` tokens and move by whole estimated tokens, in doubling steps."""
    k = int(np.searchsorted(token_ends, i, side="right"))  # the first token ending after i
    last = len(token_ends) - 1

    def boundary(n: int) -> int:  # the end of the n-th token from i, by the estimate
        return min(end, int(token_ends[min(k + n - 1, last)]))

    def fits(j: int) -> bool:
        return counter.sizes([(i, j)])[0] <= limit

    lo, hi, n, step = i + 1, end, limit, 1
    if boundary(n) <= lo or fits(boundary(n)):  # grow
        lo = max(lo, boundary(n))
        while lo < hi:
            n, step = n + step, step * 2
            probe = boundary(n)
            if probe > lo and not fits(probe):
                return lo, probe - 1
            lo = max(lo, probe)
        return lo, hi
    hi = boundary(n) - 1  # shrink
    while n - step >= 1:
        n, step = n - step, step * 2
        probe = boundary(n)
        if probe <= lo:
            break
        if probe <= hi and fits(probe):
            return probe, hi
        hi = min(hi, probe - 1)
    return lo, hi
