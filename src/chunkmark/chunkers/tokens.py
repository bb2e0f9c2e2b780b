"""Fixed-size token windows (Chroma's ``FixedTokenChunker``, LangChain's ``TokenTextSplitter``).

The whole text is encoded once; windows of ``size`` tokens start every ``size - overlap``
tokens and stop after the first window that reaches the last token. Each window becomes a
character span: token byte lengths give UTF-8 byte offsets, which map to character offsets.

When a token boundary falls inside a multi-byte character (byte-level BPE can split one), the
span's start rounds *down* and its end rounds *up* to whole characters, so the span covers
every character any of its tokens touches. Where no boundary splits a character, the span's
text is exactly the decoded window.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers.base import CHUNKERS, overlap_fraction, whole_overlap
from chunkmark.spans import Span
from chunkmark.tokenizers import (
    check_encoding_name,
    encode_array,
    get_encoding,
    token_byte_lengths,
)

IntArray = npt.NDArray[np.int64]

_SURROGATE = re.compile("[\ud800-\udfff]")


def check_window(size: int, overlap: int, unit: str) -> None:
    """Raise ValueError unless ``size > 0`` and ``0 <= overlap < size``."""
    if size <= 0:
        raise ValueError(f"size must be a positive number of {unit}, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be >= 0 and smaller than size ({size}), got {overlap}")


def window_bounds(count: int, size: int, step: int) -> tuple[IntArray, IntArray]:
    """Item ranges ``[starts[i], ends[i])`` of windows of ``size`` items taken every ``step``.

    Windows start at 0, step, 2*step, ... and stop after the first one that reaches the last
    item; no items, no windows.
    """
    if count <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    n_windows = 1 + max(0, -(-(count - size) // step))
    starts = np.arange(n_windows, dtype=np.int64) * step
    ends = np.minimum(starts + size, count)
    return starts, ends


def encodable(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (same length, same UTF-8 byte sizes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def char_offsets(text: str, byte_offsets: IntArray, *, round_up: bool) -> IntArray:
    """Character offsets of UTF-8 byte offsets into ``text`` (which must be UTF-8 encodable).

    An offset inside a multi-byte character rounds down to that character's start, or up to
    the next character's start with ``round_up``.
    """
    raw = text.encode("utf-8")
    if len(raw) == len(text):  # ASCII: bytes are characters
        return byte_offsets
    data = np.frombuffer(raw, dtype=np.uint8)
    is_start = (data & 0xC0) != 0x80
    starts_before = np.zeros(len(data) + 1, dtype=np.int64)  # char starts in data[:b]
    np.cumsum(is_start, out=starts_before[1:])
    if round_up:
        return starts_before[byte_offsets]
    # Round down: the character containing byte b is the last one starting at or before b.
    at_end = byte_offsets >= len(data)
    inside = np.minimum(byte_offsets + 1, len(data))
    return np.where(at_end, len(text), starts_before[inside] - 1)


@CHUNKERS.register("fixed_tokens", canonical=overlap_fraction("size"))
def fixed_tokens(
    size: int = 400, overlap: int | float = 0, encoding: str = "cl100k_base"
) -> Callable[[str], list[Span]]:
    """Windows of size tokens, a new one every size - overlap tokens (FixedTokenChunker).

    Args:
        size: tokens per chunk.
        overlap: tokens shared by consecutive chunks (``0 <= overlap < size``); a value
            below 1 is a fraction of size (``0.25`` of 400 is 100).
        encoding: tiktoken encoding name.
    """
    overlap = whole_overlap(overlap, size)
    check_window(size, overlap, "tokens")
    check_encoding_name(encoding)
    step = size - overlap

    def chunk(text: str) -> list[Span]:
        enc = get_encoding(encoding)  # loaded on first use, then cached
        byte_lengths = token_byte_lengths(enc)
        clean = encodable(text)
        ids = encode_array(clean, enc)
        sizes = byte_lengths[ids]
        token_ends = np.cumsum(sizes)
        token_starts = token_ends - sizes
        first, last = window_bounds(len(ids), size, step)
        if len(first) == 0:
            return []
        starts = char_offsets(clean, token_starts[first], round_up=False)
        ends = char_offsets(clean, token_ends[last - 1], round_up=True)
        return [Span(s, e) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]

    return chunk
