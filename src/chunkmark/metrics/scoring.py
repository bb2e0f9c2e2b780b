"""Named scoring options: which text answers a question, what a span is measured in, and what
precision divides by. The defaults are the reference's definitions (``span_metrics``).

One call scores one (retrieval, scoring) pair::

    scoring = Scoring(excerpts="text", unit="tokens")
    copies = find_excerpt_copies(texts, questions)          # once per dataset
    units = TokenUnits.from_texts(texts)                    # once per dataset
    omega = score_chunking_with(scoring, questions, chunks, copies=copies, units=units)
    scores = score_retrieval_with(
        scoring, questions, chunks, ranking, depth, omega.n_relevant, copies=copies, units=units
    )

The tables, copies and ``last_end`` go in characters; the ``*_with`` functions convert them to
the scoring's unit. Inputs a scoring does not use are ignored, so a caller may always pass both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import numpy as np

from chunkmark.metrics.span_metrics import (
    BoolArray,
    ChunkTable,
    ExcerptCopies,
    OmegaScores,
    QuestionTable,
    RetrievalScores,
    score_chunking,
    score_retrieval,
)
from chunkmark.spans import IntArray
from chunkmark.tokenizers import encode_array, resolve_encoding, token_byte_lengths

if TYPE_CHECKING:
    from chunkmark.tokenizers import Encoding

ExcerptMatch = Literal["position", "text"]
Unit = Literal["chars", "tokens"]
Denominator = Literal["sum", "union"]
TOKEN_ENCODING = "cl100k_base"


@dataclass(frozen=True, order=True)
class Scoring:
    """How retrieved chunks are scored against a question's excerpts.

    ``excerpts``
        ``"position"`` (the reference): a chunk covers the characters of an excerpt it overlaps
        at the excerpt's own position, and nothing else. ``"text"``: besides, an excerpt counts
        as wholly covered when a counted chunk of its document holds, wholly, an identical copy
        of the excerpt's text at another position (overlapping the excerpt's own span or not;
        see :func:`find_excerpt_copies`). The covered excerpt's own span then joins the
        retrieved spans for the overlap |∪E ∩ ∪R| and the missed part of IoU, adding nothing to
        the retrieved lengths, and the chunk holding the copy is relevant for hit, MRR and nDCG
        (and in ``n_relevant``, nDCG's ideal). Precision Ω stays positional. When one
        question's excerpts share text (a copy of one lies inside another), the same retrieved
        characters can answer both and precision or IoU can pass 1; no question of the Chroma
        general benchmark has such excerpts.
    ``unit``
        ``"chars"`` (the reference): lengths in characters. ``"tokens"``: every span (excerpts,
        chunks, copies, a cut last chunk) becomes the run of cl100k_base tokens it touches,
        as :class:`TokenUnits` maps positions, and every metric, precision Ω included, counts
        tokens. A token split between two spans counts in both.
    ``denominator``
        ``"sum"`` (the reference): precision = overlap / Σ|r| and IoU = overlap /
        (Σ|r| + Σ_e |e \\ ∪R'|), so overlapping retrieved chunks count twice. ``"union"``:
        precision = overlap / |∪R| and IoU = overlap / (|∪R| + |∪E| - overlap) = |∪E ∩ ∪R| /
        |∪E ∪ ∪R|, with ∪R the union of the counted chunks, each document apart. Recall, hit,
        MRR, nDCG and precision Ω do not depend on it.

    Unknown values raise :class:`ValueError`. ``Scoring(**s.columns())`` gives ``s`` back. The
    run writes the three options as columns of every row; the report and ``compare`` read them
    back (:meth:`from_row`) and name them (:attr:`key`, :attr:`label`). Scorings sort by
    (excerpts, unit, denominator).
    """

    excerpts: ExcerptMatch = "position"
    unit: Unit = "chars"
    denominator: Denominator = "sum"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("excerpts", get_args(ExcerptMatch)),
            ("unit", get_args(Unit)),
            ("denominator", get_args(Denominator)),
        ):
            value = getattr(self, name)
            if value not in allowed:
                choices = ", ".join(repr(a) for a in allowed)
                raise ValueError(f"Scoring {name}={value!r} is unknown: use one of {choices}.")

    def columns(self) -> dict[str, str]:
        """The three options by name, for result rows."""
        return {f.name: str(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def of(cls, excerpts: str, unit: str, denominator: str) -> Scoring:
        """A scoring from option values read as text (ValueError for unknown ones)."""
        return cls(cast(ExcerptMatch, excerpts), cast(Unit, unit), cast(Denominator, denominator))

    @classmethod
    def from_key(cls, key: str) -> Scoring:
        """The scoring of a :attr:`key` (``position/chars/sum``)."""
        excerpts, unit, denominator = key.split("/")
        return cls.of(excerpts, unit, denominator)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Scoring:
        """The scoring of a summary or results row; missing or empty fields are the defaults
        (folders written before the columns existed)."""
        default = cls()
        return cls.of(
            str(row.get("excerpts") or default.excerpts),
            str(row.get("unit") or default.unit),
            str(row.get("denominator") or default.denominator),
        )

    @property
    def key(self) -> str:
        """``excerpts/unit/denominator``, e.g. ``position/chars/sum``."""
        return f"{self.excerpts}/{self.unit}/{self.denominator}"

    @property
    def label(self) -> str:
        return f"excerpts={self.excerpts}, unit={self.unit}, denominator={self.denominator}"

    @property
    def is_default(self) -> bool:
        """Whether it is the reference's scoring (every option at its default)."""
        return self == Scoring()

    @property
    def uses_copies(self) -> bool:
        return self.excerpts == "text"

    @property
    def uses_tokens(self) -> bool:
        return self.unit == "tokens"


# --- excerpt copies ----------------------------------------------------------------------------


def find_excerpt_copies(texts: Sequence[str], questions: QuestionTable) -> ExcerptCopies:
    """Every other occurrence of each excerpt's exact text in its question's document.

    ``texts[d]`` is document ``d``'s text and ``questions`` is in characters. Occurrences are
    found with a ``str.find`` loop advancing one character at a time, so overlapping
    occurrences all count, including ones overlapping the excerpt itself; only the excerpt's
    own start is skipped. Empty excerpts have no copies. One loop over questions and excerpts,
    once per dataset; the same text in the same document is searched once.
    """
    found: dict[tuple[int, str], list[int]] = {}
    rows: list[list[tuple[int, int, int]]] = []
    for q in range(len(questions)):
        d = int(questions.doc[q])
        row: list[tuple[int, int, int]] = []
        for j in np.flatnonzero(questions.mask[q]):
            start, end = (int(x) for x in questions.excerpts[q, j])
            if end <= start:
                continue
            needle = texts[d][start:end]
            places = found.get((d, needle))
            if places is None:
                places = found[(d, needle)] = _occurrences(texts[d], needle)
            row.extend((p, p + len(needle), int(j)) for p in places if p != start)
        rows.append(row)
    return ExcerptCopies.from_lists(rows)


def _occurrences(text: str, needle: str) -> list[int]:
    out = []
    at = text.find(needle)
    while at != -1:
        out.append(at)
        at = text.find(needle, at + 1)
    return out


def count_duplicated_excerpts(copies: ExcerptCopies) -> IntArray:
    """Per question, how many of its excerpts have at least one copy elsewhere."""
    qi, ci = np.nonzero(copies.mask)
    owner = copies.owner[qi, ci]
    width = int(owner.max(initial=0)) + 1
    distinct = np.unique(qi * width + owner)
    return np.bincount(distinct // width, minlength=len(copies)).astype(np.int64)


# --- token units -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenUnits:
    """Where every token of every document starts, to turn character positions into token
    positions. Built once per dataset by :meth:`from_texts`.

    Documents are laid end to end: document ``d`` holds characters ``char_offset[d]`` to
    ``char_offset[d + 1]`` and tokens ``token_offset[d]`` to ``token_offset[d + 1]``.
    ``token_char[t]`` is the character holding token ``t``'s first byte, in that joined
    coordinate; ``at_boundary[t]`` says that byte is the character's first. Byte-level BPE
    splits multi-byte characters, so several tokens may start in one character.

    Mapping a character position ``p`` of document ``d`` (``0 <= p <= len(text)``):

    - as a start: the index of the token holding the first byte of character ``p`` (the
      document's token count when ``p`` is its end);
    - as an end: the number of tokens starting before ``p``, that is, holding a byte of a
      character before ``p``.

    So a non-empty span becomes the run of tokens it touches, at least one token; spans that
    meet inside a token both get that token; an empty span ``[p, p)`` stays empty (both ends
    map as a start, in :meth:`convert_spans`).
    """

    encoding: str
    char_offset: IntArray  # (n_docs + 1,)
    token_offset: IntArray  # (n_docs + 1,)
    token_char: IntArray  # (n_tokens,)
    at_boundary: BoolArray  # (n_tokens,)

    @classmethod
    def from_texts(
        cls, texts: Sequence[str], encoding: str | Encoding = TOKEN_ENCODING
    ) -> TokenUnits:
        """Token starts of each text (special-token text is read as ordinary text)."""
        enc = resolve_encoding(encoding)
        byte_lengths = token_byte_lengths(enc)
        chars, bounds = [], []
        for text in texts:
            raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            lead = (raw & 0xC0) != 0x80  # a character's first byte
            lengths = byte_lengths[encode_array(text, enc)]
            if int(lengths.sum()) != len(raw):
                raise ValueError("the tokens do not add up to the text's UTF-8 bytes")
            first_byte = np.cumsum(lengths) - lengths
            chars.append((np.cumsum(lead) - 1)[first_byte])
            bounds.append(lead[first_byte])
        n_chars = np.array([len(t) for t in texts], dtype=np.int64)
        char_offset = np.concatenate([[0], np.cumsum(n_chars)]).astype(np.int64)
        n_tokens = np.array([len(c) for c in chars], dtype=np.int64)
        token_offset = np.concatenate([[0], np.cumsum(n_tokens)]).astype(np.int64)
        doc_of_token = np.repeat(np.arange(len(texts)), n_tokens)
        token_char = np.concatenate([np.zeros(0, np.int64), *chars]).astype(np.int64)
        at_boundary = np.concatenate([np.zeros(0, bool), *bounds])
        return cls(
            enc.name, char_offset, token_offset, token_char + char_offset[doc_of_token], at_boundary
        )

    @property
    def n_tokens(self) -> IntArray:
        """Tokens per document."""
        return np.diff(self.token_offset)

    def convert(self, doc_index: IntArray, positions: IntArray, *, end: bool) -> IntArray:
        """Character positions (any shape, with matching document indices) as token positions,
        mapped as ends when ``end`` else as starts (see the class docstring)."""
        doc = np.asarray(doc_index, dtype=np.int64)
        pos = np.asarray(positions, dtype=np.int64)
        doc, pos = np.broadcast_arrays(doc, pos)
        n_docs = len(self.char_offset) - 1
        if np.any((doc < 0) | (doc >= n_docs)):
            raise ValueError(f"a document index is outside [0, {n_docs}).")
        length = self.char_offset[doc + 1] - self.char_offset[doc]
        if np.any((pos < 0) | (pos > length)):
            raise ValueError("a position is outside its document: spans must be in characters.")
        if len(self.token_char) == 0:  # only empty documents: every position is 0
            return np.zeros(pos.shape, dtype=np.int64)
        joined = self.char_offset[doc] + pos
        before = np.searchsorted(self.token_char, joined, side="left")  # tokens before p
        if not end:
            at = np.minimum(before, len(self.token_char) - 1)
            starts_here = (
                (before < len(self.token_char))
                & (self.token_char[at] == joined)
                & self.at_boundary[at]
            )
            before = np.where((pos == length) | starts_here, before, before - 1)
        return np.asarray(before - self.token_offset[doc], dtype=np.int64)

    def convert_spans(self, doc_index: IntArray, spans: IntArray) -> IntArray:
        """Spans ``(..., 2)`` in characters as token spans; empty spans stay empty."""
        start = self.convert(doc_index, spans[..., 0], end=False)
        end = self.convert(doc_index, spans[..., 1], end=True)
        end = np.where(spans[..., 1] > spans[..., 0], end, start)
        return np.stack([start, end], axis=-1)

    def convert_questions(self, questions: QuestionTable) -> QuestionTable:
        """The question table in tokens, each question's excerpts merged anew."""
        excerpts = self._convert_masked(questions.doc, questions.excerpts, questions.mask)
        return QuestionTable.from_padded(questions.doc, excerpts, questions.mask.copy())

    def convert_chunks(self, chunks: ChunkTable) -> ChunkTable:
        """The chunk table in tokens."""
        spans = self.convert_spans(chunks.doc, np.stack([chunks.start, chunks.end], axis=-1))
        return ChunkTable(chunks.doc.copy(), spans[:, 0].copy(), spans[:, 1].copy())

    def convert_copies(self, copies: ExcerptCopies, doc: IntArray) -> ExcerptCopies:
        """Excerpt copies in tokens; ``doc`` is the questions' document indices."""
        spans = self._convert_masked(doc, copies.spans, copies.mask)
        return ExcerptCopies(spans, copies.owner.copy(), copies.mask.copy())

    def _convert_masked(self, doc: IntArray, spans: IntArray, mask: BoolArray) -> IntArray:
        """Padded ``(n, m, 2)`` spans of row documents ``doc``: valid ones converted, the rest 0."""
        out = np.zeros_like(spans)
        rows = np.broadcast_to(np.asarray(doc)[:, None], mask.shape)
        out[mask] = self.convert_spans(rows[mask], spans[mask])
        return out


# --- scoring with options ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Tables:
    questions: QuestionTable
    chunks: ChunkTable
    copies: ExcerptCopies | None


def _tables(
    scoring: Scoring,
    questions: QuestionTable,
    chunks: ChunkTable,
    copies: ExcerptCopies | None,
    units: TokenUnits | None,
) -> _Tables:
    if scoring.uses_copies and copies is None:
        raise ValueError(
            'Scoring excerpts="text" needs the excerpt copies: pass '
            "copies=find_excerpt_copies(texts, questions)."
        )
    used = copies if scoring.uses_copies else None
    if not scoring.uses_tokens:
        return _Tables(questions, chunks, used)
    if units is None:
        raise ValueError(
            'Scoring unit="tokens" needs the token positions: pass '
            "units=TokenUnits.from_texts(texts)."
        )
    return _Tables(
        units.convert_questions(questions),
        units.convert_chunks(chunks),
        None if used is None else units.convert_copies(used, questions.doc),
    )


def score_chunking_with(
    scoring: Scoring,
    questions: QuestionTable,
    chunks: ChunkTable,
    *,
    copies: ExcerptCopies | None = None,
    units: TokenUnits | None = None,
) -> OmegaScores:
    """:func:`score_chunking` under ``scoring``: precision Ω and the chunk counts in its unit,
    ``n_relevant`` by its relevance rule (pass it to :func:`score_retrieval_with`).

    ``questions``, ``chunks`` and ``copies`` are in characters. In tokens, ``n_touching``
    counts the chunks touching an excerpt in tokens; a retrieval depth such as the reference's
    ``retrieve=-1`` should come from the character counts, which pick the chunks retrieved.
    """
    t = _tables(scoring, questions, chunks, copies, units)
    return score_chunking(t.questions, t.chunks, copies=t.copies)


def score_retrieval_with(
    scoring: Scoring,
    questions: QuestionTable,
    chunks: ChunkTable,
    ranking: IntArray,
    depth: int | IntArray,
    n_relevant: IntArray | None = None,
    *,
    last_end: IntArray | None = None,
    copies: ExcerptCopies | None = None,
    units: TokenUnits | None = None,
) -> RetrievalScores:
    """:func:`score_retrieval` under ``scoring``.

    ``questions``, ``chunks``, ``copies`` and ``last_end`` (the cut end of each question's last
    counted chunk) are in characters; ``n_relevant`` comes from :func:`score_chunking_with`
    under the same scoring. ``copies`` is needed for ``excerpts="text"`` and ``units`` for
    ``unit="tokens"``; otherwise they are ignored.
    """
    t = _tables(scoring, questions, chunks, copies, units)
    if last_end is not None and scoring.uses_tokens and units is not None:
        last_end = _last_end_in_tokens(units, chunks, ranking, depth, last_end)
    return score_retrieval(
        t.questions,
        t.chunks,
        ranking,
        depth,
        n_relevant,
        last_end=last_end,
        copies=t.copies,
        union=scoring.denominator == "union",
    )


def _last_end_in_tokens(
    units: TokenUnits,
    chunks: ChunkTable,
    ranking: IntArray,
    depth: int | IntArray,
    last_end: IntArray,
) -> IntArray:
    """Each question's cut end (in characters) as a token end, so that the cut chunk is the
    token span of its character prefix (an empty prefix stays empty); 0 where no chunk counts."""
    n_q, width = ranking.shape
    ks = np.broadcast_to(np.minimum(np.asarray(depth, dtype=np.int64), width), (n_q,))
    ends = np.asarray(last_end, dtype=np.int64)
    if ends.shape != (n_q,):
        raise ValueError(f"last_end has shape {ends.shape}; it needs one end per question.")
    rows = np.flatnonzero(ks > 0)
    out = np.zeros(n_q, dtype=np.int64)
    last = ranking[rows, ks[rows] - 1]
    doc, start, cut = chunks.doc[last], chunks.start[last], ends[rows]
    if np.any((cut < start) | (cut > chunks.end[last])):
        raise ValueError("a last_end is outside its last counted chunk: a cut may only shorten it.")
    as_end = units.convert(doc, cut, end=True)
    out[rows] = np.where(cut > start, as_end, units.convert(doc, start, end=False))
    return out
