"""Documentation chunking: markdown sections, long ones split by an LLM or by paragraphs.

1. The text is cut into sections at ``##`` and ``###`` heading lines (ATX headings, up to three
   spaces of indentation; ``#`` lines inside fenced code blocks are not headings). The text
   before the first such heading is a section too. Each section is trimmed of surrounding
   whitespace; empty sections are dropped.
2. A section shorter than ``short_section`` characters is one chunk.
3. A longer section is split by the LLM semantic splitter (``llm_semantic``'s logic: 50-token
   pieces, 800-token windows, the LLM's cuts) when ``llm`` names an LLM. Chunks that would be
   longer than ``max_length`` characters are cut at piece boundaries (a single piece longer
   than that is cut like any over-long chunk, see 5).
4. Without an LLM, or once an LLM call has failed (:class:`~chunkmark.errors.LLMError`, a
   connection error or a timeout), long sections go to the fallback: ``"paragraphs"`` applies
   the ``paragraphs`` chunker to the section (``max_tokens = max_length // 5``, about
   ``max_length`` characters of English, ``min_tokens = min(50, max_tokens)``, heading
   context on); ``"none"`` keeps the section as one chunk. After the first failure the LLM is
   not asked again by this chunker (a down endpoint costs one round of retries, not one per
   section); a warning (:class:`LLMFallbackWarning`) says so once, and ``stats()`` counts every
   section that fell back.
5. ``max_length`` is a hard limit on every chunk, in every path, including ``fallback="none"``:
   a longer chunk is cut by the recursive splitter counting characters
   (``recursive(size=max_length, length='chars')``), and the parts lose any heading context.

With an LLM, the chunker is a :class:`~chunkmark.chunkers.base.RequestEstimator`: its
estimate is the LLM splitter's on every section of at least ``short_section`` characters.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from chunkmark.chunkers.base import (
    CHUNKERS,
    Chunk,
    ChunkerContext,
    ChunkerFn,
    llm_identity,
    trimmed,
)
from chunkmark.chunkers.llm_semantic import LLMSplitter, estimate_splits
from chunkmark.chunkers.recursive import recursive
from chunkmark.counters import ChunkerStats
from chunkmark.errors import LLMError
from chunkmark.llm.estimate import Asking, LLMUsage
from chunkmark.spans import Span

if TYPE_CHECKING:
    from chunkmark.llm import LLM

_HEADING = re.compile(r" {0,3}#{2,3}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_CLOSING = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_LLM_FAILURES = (LLMError, ConnectionError, TimeoutError)


class LLMFallbackWarning(UserWarning):
    """An LLM call failed, so sections are split by the fallback instead."""


def section_spans(text: str) -> list[Span]:
    """Sections of a markdown text at ``##``/``###`` heading lines outside fenced code,
    trimmed of surrounding whitespace, empty ones dropped."""
    starts = [0]
    fence: str | None = None  # the opening fence while inside a code block
    pos = 0
    for line in text.split("\n"):
        body = line.removesuffix("\r")
        if fence is None:
            opening = _FENCE.fullmatch(body)
            if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
                fence = opening.group(1)
            elif _HEADING.match(body) and pos > 0:
                starts.append(pos)
        else:
            closing = _CLOSING.fullmatch(body)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
        pos += len(line) + 1
    out = []
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        span = trimmed(text, start, end)
        if span is not None:
            out.append(span)
    return out


@dataclass
class _Counts:
    sections: int = 0
    short_sections: int = 0
    llm_sections: int = 0
    paragraph_sections: int = 0
    whole_sections: int = 0
    llm_fallback_sections: int = 0
    capped_chunks: int = 0


class DocumentationChunker:
    """Sections, split by an LLM or a fallback when long, every chunk within ``max_length``."""

    def __init__(
        self,
        max_length: int,
        short_section: int,
        splitter: LLMSplitter | None,
        fallback: Literal["paragraphs", "none"],
    ) -> None:
        self.max_length = max_length
        self.short_section = short_section
        self.splitter = splitter
        self.fallback = fallback
        self._cap_splitter: ChunkerFn = recursive(size=max_length, overlap=0, length="chars")
        self._paragraphs: ChunkerFn | None = None
        if fallback == "paragraphs":
            self._paragraphs = _paragraphs_for(max_length)
        self._counts = _Counts()
        self.llm_error: str | None = None  # the first LLM failure, once there was one

    def __call__(self, text: str) -> list[Span | Chunk]:
        out: list[Span | Chunk] = []
        for section in section_spans(text):
            self._counts.sections += 1
            if section.end - section.start < self.short_section:
                self._counts.short_sections += 1
                out.append(section)
                continue
            out.extend(self._split(text, section))
        return out

    def estimate_llm(self) -> LLM | None:
        """The LLM that splits long sections; None without one (see
        :mod:`chunkmark.llm.estimate`)."""
        return None if self.splitter is None else self.splitter.llm

    def estimate_wraps(self) -> None:
        """It reads the text itself."""
        return None

    def estimate_requests(
        self, text: str, chunks: Sequence[Chunk] | None, asking: Asking
    ) -> LLMUsage:
        """The calls and tokens of chunking ``text``: the LLM splitter's on every section of at
        least ``short_section`` characters (none without an LLM)."""
        usage = LLMUsage()
        if self.splitter is None:
            return usage
        for section in section_spans(text):
            if section.end - section.start >= self.short_section:
                body = text[section.start : section.end]
                usage.add(estimate_splits(self.splitter, body, asking))
        return usage

    def stats(self) -> ChunkerStats:
        """Counters: ``sections``, ``short_sections`` (kept whole), ``llm_sections`` (split by
        the LLM), ``paragraph_sections`` and ``whole_sections`` (the fallbacks),
        ``llm_fallback_sections`` (sections the LLM should have split but could not: also
        ``fallbacks``), ``capped_chunks`` (chunks cut at max_length), and the LLM splitter's
        counters prefixed ``llm_semantic.``; ``error`` is the first LLM failure, ``llm`` the
        client's work."""
        counters = asdict(self._counts)
        llm = None
        if self.splitter is not None:
            for name, value in self.splitter.counters().items():
                counters[f"llm_semantic.{name}"] = value
            llm = self.splitter.llm.stats()
        return ChunkerStats(
            fallbacks=self._counts.llm_fallback_sections,
            counters=counters,
            llm=llm,
            error=self.llm_error,
        )

    def _split(self, text: str, section: Span) -> list[Span | Chunk]:
        body = text[section.start : section.end]
        if self.splitter is not None:
            if self.llm_error is None:
                try:
                    groups = self.splitter.groups(body)
                except _LLM_FAILURES as exc:
                    self._llm_failed(exc)
                else:
                    self._counts.llm_sections += 1
                    return [
                        span for group in groups for span in self._pack(text, section.start, group)
                    ]
            self._counts.llm_fallback_sections += 1
        if self._paragraphs is None:
            self._counts.whole_sections += 1
            return list(self._cap(text, section))
        self._counts.paragraph_sections += 1
        out: list[Span | Chunk] = []
        for piece in self._paragraphs(body):
            start, end = section.start + piece.start, section.start + piece.end
            if end - start > self.max_length:
                out.extend(self._cap(text, Span(start, end)))
            elif isinstance(piece, Chunk):
                out.append(Chunk(piece.doc_id, start, end, piece.embed_text))
            else:
                out.append(Span(start, end))
        return out

    def _pack(self, text: str, offset: int, group: list[Span]) -> list[Span]:
        """The group's span, or runs of its pieces within ``max_length`` if it is longer."""
        first, last = group[0], group[-1]
        if last.end - first.start <= self.max_length:
            return [Span(offset + first.start, offset + last.end)]
        out: list[Span] = []
        run: list[Span] = []
        for piece in group:
            if run and piece.end - run[0].start > self.max_length:
                out.append(Span(offset + run[0].start, offset + run[-1].end))
                run = []
            if piece.end - piece.start > self.max_length:
                out.extend(self._cap(text, Span(offset + piece.start, offset + piece.end)))
            else:
                run.append(piece)
        if run:
            out.append(Span(offset + run[0].start, offset + run[-1].end))
        self._counts.capped_chunks += 1
        return out

    def _cap(self, text: str, span: Span) -> list[Span]:
        """``span``, or its parts of at most ``max_length`` characters if it is longer."""
        if span.end - span.start <= self.max_length:
            return [span]
        self._counts.capped_chunks += 1
        parts = self._cap_splitter(text[span.start : span.end])
        return [Span(span.start + p.start, span.start + p.end) for p in parts]

    def _llm_failed(self, exc: BaseException) -> None:
        self.llm_error = f"{type(exc).__name__}: {exc}"
        instead = (
            "split by paragraphs"
            if self.fallback == "paragraphs"
            else "kept whole (up to max_length)"
        )
        warnings.warn(
            f"documentation: the LLM failed ({self.llm_error}). This section and every later "
            f"long section are {instead}; stats().fallbacks counts them.",
            LLMFallbackWarning,
            stacklevel=3,
        )


def _paragraphs_for(max_length: int) -> ChunkerFn:
    max_tokens = max(1, max_length // 5)
    spec = f"paragraphs(min_tokens={min(50, max_tokens)}, max_tokens={max_tokens})"
    chunker, _ = CHUNKERS.build(spec)
    return chunker


@CHUNKERS.register("documentation", calls_llm=True, needs=("context",), identity=llm_identity)
def documentation(
    max_length: int = 1000,
    short_section: int = 200,
    llm: str | None = None,
    fallback: Literal["paragraphs", "none"] = "paragraphs",
    *,
    context: ChunkerContext | None = None,
) -> DocumentationChunker:
    """Markdown sections (## and ###); long ones split by an LLM, or by paragraphs.

    Args:
        max_length: maximum characters of every chunk.
        short_section: a section shorter than this (characters) is one chunk.
        llm: an LLM spec (see ``chunkmark.llm``) to split long sections by topic; None to
            split them with the fallback only.
        fallback: how long sections are split without a working LLM: ``"paragraphs"`` or
            ``"none"`` (kept whole, still cut at max_length).
    """
    if max_length < 1:
        raise ValueError(f"max_length must be a positive number of characters, got {max_length}")
    if not 0 <= short_section <= max_length:
        raise ValueError(
            f"short_section must be between 0 and max_length ({max_length}), got {short_section}"
        )
    splitter = None
    if llm is not None:
        ctx = context if context is not None else ChunkerContext()
        client: LLM = ctx.llm(llm)
        splitter = LLMSplitter(client, owner="documentation")
    return DocumentationChunker(max_length, short_section, splitter, fallback)
