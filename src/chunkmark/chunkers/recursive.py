"""Recursive separator splitting (Chroma's ``RecursiveTokenChunker``).

Same chunk boundaries as LangChain's ``RecursiveCharacterTextSplitter`` with
``keep_separator=True`` and ``strip_whitespace=True``, computed on offsets:

1. Split a piece of text before every occurrence of the first separator it contains (the
   separator starts the following piece; ``""`` splits into characters).
2. A piece whose length is ``>= size`` is split again with the remaining separators, or kept
   whole when none remain; shorter consecutive pieces are merged.
3. Merging adds whole pieces while the *sum of their lengths* stays ``<= size``; after each
   chunk, pieces are dropped from its front until at most ``overlap`` remains (and the next
   piece fits). A chunk is its pieces' span with surrounding whitespace removed; chunks that
   are only whitespace are dropped.

Lengths are token counts of each piece on its own (``length="tokens"``) or characters.
Token counts are computed level by level in batches, once per distinct piece.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

from chunkmark.chunkers.base import CHUNKERS, overlap_fraction, trimmed, whole_overlap
from chunkmark.chunkers.tokens import check_window
from chunkmark.spans import Span
from chunkmark.tokenizers import check_encoding_name, count_tokens, get_encoding

Measure = Callable[[str, list[tuple[int, int]]], list[int]]

DEFAULT_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]


@dataclass
class _Node:
    """One piece of text being split: its pieces, their lengths, and the pieces split further."""

    start: int
    end: int
    first_separator: int
    pieces: list[tuple[int, int]] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    next_separator: int | None = None  # separators left for pieces that are too long
    children: dict[int, _Node] = field(default_factory=dict)  # piece index -> its split


@CHUNKERS.register("recursive", canonical=overlap_fraction("size"))
def recursive(
    size: int = 400,
    overlap: int | float = 0,
    separators: list[str] = DEFAULT_SEPARATORS,  # never mutated
    length: Literal["tokens", "chars"] = "tokens",
    encoding: str = "cl100k_base",
) -> Callable[[str], list[Span]]:
    """Split at separators, split long pieces again, merge up to size (RecursiveTokenChunker).

    Args:
        size: maximum summed length of the pieces of a chunk.
        overlap: length carried over from one chunk into the next (``0 <= overlap < size``);
            a value below 1 is a fraction of size.
        separators: tried in order; ``""`` splits into characters.
        length: measure pieces in ``"tokens"`` or ``"chars"``.
        encoding: tiktoken encoding name (for ``length="tokens"``).
    """
    overlap = whole_overlap(overlap, size)
    check_window(size, overlap, length)
    if not separators:
        raise ValueError("separators must not be empty")
    seps = tuple(separators)
    if length == "tokens":
        check_encoding_name(encoding)

        def measure(text: str, pieces: list[tuple[int, int]]) -> list[int]:
            enc = get_encoding(encoding)  # loaded on first use, then cached
            return _token_lengths(text, pieces, lambda texts: count_tokens(texts, enc))

    else:

        def measure(text: str, pieces: list[tuple[int, int]]) -> list[int]:
            return [e - s for s, e in pieces]

    def chunk(text: str) -> list[Span]:
        return recursive_spans(text, size, overlap, seps, measure)

    return chunk


def recursive_spans(
    text: str, size: int, overlap: int, separators: Sequence[str], measure: Measure
) -> list[Span]:
    """Spans of the recursive splitter on ``text`` with a piece-length function ``measure``."""
    if not text:
        return []
    root = _Node(0, len(text), 0)
    level = [root]
    while level:
        for node in level:
            _split(text, node, separators)
        flat = [piece for node in level for piece in node.pieces]
        lengths = iter(measure(text, flat))
        next_level: list[_Node] = []
        for node in level:
            node.lengths = [next(lengths) for _ in node.pieces]
            if node.next_separator is None:
                continue
            for i, ((s, e), n) in enumerate(zip(node.pieces, node.lengths, strict=True)):
                if n >= size:
                    child = node.children[i] = _Node(s, e, node.next_separator)
                    next_level.append(child)
        level = next_level
    out: list[Span] = []
    _assemble(text, root, size, overlap, out)
    return out


def _split(text: str, node: _Node, separators: Sequence[str]) -> None:
    """Choose the node's separator and cut it into pieces, each starting with the separator."""
    start, end = node.start, node.end
    separator = separators[-1]
    node.next_separator = None
    for i in range(node.first_separator, len(separators)):
        candidate = separators[i]
        if candidate == "":
            separator = candidate
            break
        if text.find(candidate, start, end) != -1:
            separator = candidate
            node.next_separator = i + 1 if i + 1 < len(separators) else None
            break
    if separator == "":
        node.pieces = [(k, k + 1) for k in range(start, end)]
        return
    cuts = [start]
    pos = text.find(separator, start, end)
    while pos != -1:
        cuts.append(pos)
        pos = text.find(separator, pos + len(separator), end)
    cuts.append(end)
    node.pieces = [(a, b) for a, b in pairwise(cuts) if b > a]


def _assemble(text: str, node: _Node, size: int, overlap: int, out: list[Span]) -> None:
    """Depth-first: merge runs of short pieces, recurse into split pieces, keep the rest whole."""
    good: list[tuple[int, int, int]] = []
    for i, ((s, e), n) in enumerate(zip(node.pieces, node.lengths, strict=True)):
        if n < size:
            good.append((s, e, n))
            continue
        if good:
            _merge(text, good, size, overlap, out)
            good = []
        child = node.children.get(i)
        if child is None:
            out.append(Span(s, e))
        else:
            _assemble(text, child, size, overlap, out)
    if good:
        _merge(text, good, size, overlap, out)


def _merge(
    text: str, pieces: list[tuple[int, int, int]], size: int, overlap: int, out: list[Span]
) -> None:
    """Merge consecutive pieces ``(start, end, length)`` into chunks of summed length <= size."""
    current: deque[tuple[int, int, int]] = deque()
    total = 0
    for piece in pieces:
        n = piece[2]
        if total + n > size and current:
            _emit(text, current[0][0], current[-1][1], out)
            while total > overlap or (total + n > size and total > 0):
                total -= current.popleft()[2]
        current.append(piece)
        total += n
    if current:
        _emit(text, current[0][0], current[-1][1], out)


def _emit(text: str, start: int, end: int, out: list[Span]) -> None:
    """Append ``[start, end)`` without surrounding whitespace, unless nothing is left."""
    span = trimmed(text, start, end)
    if span is not None:
        out.append(span)


def _token_lengths(
    text: str, pieces: list[tuple[int, int]], count: Callable[[list[str]], list[int]]
) -> list[int]:
    """Token count of each piece, counting each distinct piece text once."""
    texts = [text[s:e] for s, e in pieces]
    distinct = list(dict.fromkeys(texts))
    counted = dict(zip(distinct, count(distinct), strict=True))
    return [counted[t] for t in texts]
