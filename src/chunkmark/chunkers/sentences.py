"""Windows of sentences or of words.

Sentences come from a small rule-based segmenter that returns spans:

- every line break ends a sentence (so blank lines, headings and list items do too);
- within a line, a sentence ends after ``。``, ``！`` or ``？``, and after ``.``, ``!``, ``?``
  or ``…`` (possibly repeated and followed by closing quotes or brackets) when whitespace
  follows, except:
  - after ``.`` or ``…`` when the next word starts with a lowercase letter ("e.g. the", "...and");
  - after a title or Latin abbreviation ("Dr.", "Mr.", "e.g.", "i.e.", "et al.", "vs.");
  - after a single-letter initial ("J. Smith", "P. falciparum");
  - after an abbreviation that precedes a number ("No. 5", "Fig. 2", "Jan. 12").

Decimals ("3.14") never end a sentence since no whitespace follows the point. A sentence span
runs from its first to its last non-whitespace character.

Words are maximal runs of non-whitespace characters (``str.isspace``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers.base import CHUNKERS, overlap_fraction, whole_overlap
from chunkmark.chunkers.tokens import check_window, window_bounds
from chunkmark.spans import Span

IntArray = npt.NDArray[np.int64]

# A line from its first to its last non-whitespace character.
_LINE = re.compile(r"\S(?:[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]*\S)?")
# Sentence-final punctuation and closing quotes/brackets: Latin marks need whitespace after,
# CJK full-width marks do not.
_END = re.compile(r"([.!?…]+)[\"'”’»)\]]*(?=\s)|([。！？]+)[」』）\"'”’]*")
_NON_SPACE = re.compile(r"\S")

# Never end a sentence after these (lowercase, without the final period).
_ALWAYS_ABBREVIATIONS = frozenset(
    {
        *("mr", "mrs", "ms", "mx", "dr", "prof", "sr", "jr", "st", "mt", "rev", "hon"),
        *("gen", "col", "lt", "sgt", "capt", "cmdr", "gov", "sen", "rep", "pres", "messrs"),
        *("mme", "mlle", "e.g", "i.e", "cf", "viz", "vs", "al", "approx", "ca"),
    }
)
# Do not end a sentence after these when a number follows.
_NUMBER_ABBREVIATIONS = frozenset(
    {
        *("no", "nos", "nr", "fig", "figs", "eq", "eqs", "vol", "vols", "p", "pp", "ch"),
        *("chap", "sec", "art", "ref", "refs", "tab", "jan", "feb", "mar", "apr", "jun"),
        *("jul", "aug", "sep", "sept", "oct", "nov", "dec"),
    }
)
_LONGEST_ABBREVIATION = max(map(len, _ALWAYS_ABBREVIATIONS | _NUMBER_ABBREVIATIONS))
_OPENERS = "\"'“‘«([{"

# Every character for which str.isspace() is true (the same set regex \s matches).
_WHITESPACE = np.array(
    [
        *(*range(0x09, 0x0E), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680),
        *(*range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000),
    ],
    dtype=np.uint32,
)


def sentence_spans(text: str) -> list[Span]:
    """Sentences of ``text`` as spans, in order, without surrounding whitespace."""
    out: list[Span] = []
    for line in _LINE.finditer(text):
        start = line.start()
        for end, next_start in _sentence_breaks(text, line.start(), line.end()):
            out.append(Span(start, end))
            start = next_start
        out.append(Span(start, line.end()))
    return out


def _sentence_breaks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(end of a sentence, start of the next) pairs inside the line ``[start, end)``."""
    breaks: list[tuple[int, int]] = []
    for match in _END.finditer(text, start, end):
        nxt = _NON_SPACE.search(text, match.end(), end)
        if nxt is None:
            break
        if match.group(2) or _ends_sentence(
            text, start, match.start(1), match.group(1), text[nxt.start()]
        ):
            breaks.append((match.end(), nxt.start()))
    return breaks


def _ends_sentence(text: str, line_start: int, mark: int, marks: str, next_char: str) -> bool:
    """Whether punctuation ``marks`` at offset ``mark`` ends a sentence, given the next char."""
    if "!" in marks or "?" in marks:
        return True
    if next_char.islower():
        return False
    if marks != ".":
        return True
    word_start = max(
        line_start, text.rfind(" ", line_start, mark) + 1, text.rfind("\t", line_start, mark) + 1
    )
    if mark - word_start > _LONGEST_ABBREVIATION + 1:
        return True
    word = text[word_start:mark].lstrip(_OPENERS).lower()
    if word in _ALWAYS_ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha():
        return False
    return not (word in _NUMBER_ABBREVIATIONS and next_char.isdigit())


def word_bounds(text: str) -> tuple[IntArray, IntArray]:
    """Start and end offsets of the maximal runs of non-whitespace characters."""
    if not text:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    is_word = ~np.isin(codes, _WHITESPACE)
    edges = np.diff(is_word.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1).astype(np.int64)
    ends = np.flatnonzero(edges == -1).astype(np.int64)
    return starts, ends


def _windows(starts: IntArray, ends: IntArray, n: int, overlap: int) -> list[Span]:
    first, last = window_bounds(len(starts), n, n - overlap)
    if len(first) == 0:
        return []
    return [
        Span(s, e) for s, e in zip(starts[first].tolist(), ends[last - 1].tolist(), strict=True)
    ]


@CHUNKERS.register("sentences", canonical=overlap_fraction("n"))
def sentences(n: int = 5, overlap: int | float = 0) -> Callable[[str], list[Span]]:
    """Windows of n sentences, a new one every n - overlap sentences (rule-based segmenter).

    Args:
        n: sentences per chunk.
        overlap: sentences shared by consecutive chunks (``0 <= overlap < n``); a value below 1
            is a fraction of n.
    """
    overlap = whole_overlap(overlap, n)
    check_window(n, overlap, "sentences")

    def chunk(text: str) -> list[Span]:
        spans = sentence_spans(text)
        starts = np.array([s.start for s in spans], dtype=np.int64)
        ends = np.array([s.end for s in spans], dtype=np.int64)
        return _windows(starts, ends, n, overlap)

    return chunk


@CHUNKERS.register("words", canonical=overlap_fraction("n"))
def words(n: int = 100, overlap: int | float = 0) -> Callable[[str], list[Span]]:
    """Windows of n whitespace-separated words, a new one every n - overlap words.

    Args:
        n: words per chunk.
        overlap: words shared by consecutive chunks (``0 <= overlap < n``); a value below 1 is
            a fraction of n.
    """
    overlap = whole_overlap(overlap, n)
    check_window(n, overlap, "words")

    def chunk(text: str) -> list[Span]:
        starts, ends = word_bounds(text)
        return _windows(starts, ends, n, overlap)

    return chunk
