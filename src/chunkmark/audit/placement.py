"""Placing stored chunks in their documents: from a chunk's text (and offsets, when its metadata
has them) to a span of a dataset document.

A chunk read from a vector store is a string; chunkmark scores spans. :func:`place_chunks` finds
each chunk's span, trying in order:

1. ``offsets``: a start (and end) stored in the chunk's metadata (LangChain's ``start_index``,
   LlamaIndex's ``start_char_idx``/``end_char_idx``, chunkmark's ``chunkmark_start``/
   ``chunkmark_end``), kept only when the document holds the chunk's text there;
2. ``exact``: the text found in the document as it is (with its surrounding whitespace
   stripped when that is what the document holds); a text found several times takes its
   occurrences in turn, one per chunk with that text;
3. ``normalised``: the text found once every run of whitespace is one space on both sides, the
   match mapped back to exact offsets of the document;
4. ``fuzzy``: the best partial alignment by rapidfuzz scoring at least ``fuzzy_threshold``
   (0-100); such chunks are flagged, their spans are approximations.

A chunk none of these places is ``unplaced``. The document is the one its metadata names (the
caller resolves it), else found by content: the first document of the dataset that holds the
text by the first way that works.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from chunkmark.placement import NormalisedText, nearest_match
from chunkmark.placement import normalise_space as normalise

Method = Literal["offsets", "exact", "normalised", "fuzzy", "unplaced"]
METHODS: tuple[Method, ...] = ("offsets", "exact", "normalised", "fuzzy", "unplaced")
DEFAULT_FUZZY_THRESHOLD = 90.0


@dataclass(frozen=True)
class Placement:
    """Where one chunk lies: its document and span, how it was found, and the fuzzy score
    (100 for the other ways; 0 when unplaced)."""

    doc_id: str | None
    start: int
    end: int
    method: Method
    score: float = 100.0


@dataclass(frozen=True)
class StoredChunk:
    """What placement needs of a stored chunk: its text, the document its metadata names (None
    when it names none), and the offsets its metadata holds."""

    text: str
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None


@dataclass
class Placer:
    """Places chunks in ``documents`` (id -> text), remembering the occurrences handed out."""

    documents: Mapping[str, str]
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD
    _normal: dict[str, NormalisedText] = field(default_factory=dict)
    _next: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def place(self, chunk: StoredChunk) -> Placement:
        """The chunk's placement (see the module docstring)."""
        docs = [chunk.doc_id] if chunk.doc_id is not None else list(self.documents)
        if chunk.doc_id is not None and chunk.start is not None:
            found = self._at_offsets(chunk)
            if found is not None:
                return found
        text = chunk.text
        if not text.strip():
            return Placement(chunk.doc_id, 0, 0, "unplaced", 0.0)
        for way in (self._exact, self._normalised_match):
            for doc_id in docs:
                placed = way(doc_id, text)
                if placed is not None:
                    return placed
        best: Placement | None = None
        for doc_id in docs:
            placed = self._fuzzy(doc_id, text)
            if placed is not None and (best is None or placed.score > best.score):
                best = placed
        return best or Placement(chunk.doc_id, 0, 0, "unplaced", 0.0)

    def _at_offsets(self, chunk: StoredChunk) -> Placement | None:
        assert chunk.doc_id is not None and chunk.start is not None
        doc = self.documents[chunk.doc_id]
        start = chunk.start
        if start < 0:
            return None
        end = chunk.end if chunk.end is not None else start + len(chunk.text)
        if doc[start:end] == chunk.text:
            return Placement(chunk.doc_id, start, end, "offsets")
        core = chunk.text.strip()
        if core and chunk.end is None and doc.startswith(core, start):
            return Placement(chunk.doc_id, start, start + len(core), "offsets")
        return None

    def _exact(self, doc_id: str, text: str) -> Placement | None:
        doc = self.documents[doc_id]
        for piece in dict.fromkeys((text, text.strip())):
            key = ("exact", doc_id, piece)
            at = doc.find(piece, self._next.get(key, 0))
            if at == -1 and key in self._next:  # more chunks than occurrences: reuse the first
                at = doc.find(piece)
            if at != -1:
                self._next[key] = at + 1
                return Placement(doc_id, at, at + len(piece), "exact")
        return None

    def _normalised_match(self, doc_id: str, text: str) -> Placement | None:
        needle = normalise(text)
        if not needle:
            return None
        norm = self._normal.get(doc_id)
        if norm is None:
            norm = self._normal[doc_id] = NormalisedText(self.documents[doc_id])
        key = ("normalised", doc_id, needle)
        at = norm.text.find(needle, self._next.get(key, 0))
        if at == -1 and key in self._next:
            at = norm.text.find(needle)
        if at == -1:
            return None
        self._next[key] = at + 1
        span = norm.span(at, at + len(needle))
        return Placement(doc_id, span.start, span.end, "normalised")

    def _fuzzy(self, doc_id: str, text: str) -> Placement | None:
        from chunkmark.optional import import_optional

        fuzz = import_optional("rapidfuzz.fuzz", "rapidfuzz", "audit", "Fuzzy placement of chunks")
        found = nearest_match(fuzz, self.documents[doc_id], text, self.fuzzy_threshold)
        if found is None:
            return None
        return Placement(doc_id, found.span.start, found.span.end, "fuzzy", found.score)


def place_chunks(
    chunks: Sequence[StoredChunk],
    documents: Mapping[str, str],
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
) -> list[Placement]:
    """Each chunk's placement in ``documents`` (id -> text), in the chunks' order; a chunk's
    ``doc_id``, when set, must be a key of ``documents``."""
    placer = Placer(documents, fuzzy_threshold)
    order = sorted(range(len(chunks)), key=lambda i: _order_key(chunks[i]))
    out: list[Placement | None] = [None] * len(chunks)
    for i in order:  # stored offsets first, then store order: occurrences go in document order
        out[i] = placer.place(chunks[i])
    return [p for p in out if p is not None]


def _order_key(chunk: StoredChunk) -> tuple[int, int]:
    return (0, chunk.start) if chunk.start is not None else (1, 0)


def counts(placements: Sequence[Placement]) -> dict[str, int]:
    """How many chunks each way placed (every way listed, zeros included)."""
    out: dict[str, int] = dict.fromkeys(METHODS, 0)
    for p in placements:
        out[p.method] += 1
    return out
