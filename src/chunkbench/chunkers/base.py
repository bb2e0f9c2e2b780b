"""The chunker contract and registry.

A chunker is built by a registered factory from a spec string and is a callable
``str -> Sequence[Span | Chunk]``. Spans index the text that was passed in; ``Chunk.embed_text``
lets a chunker embed more than its span (e.g. a heading) while metrics still count the span.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chunkbench.errors import ChunkingError
from chunkbench.spans import Span
from chunkbench.specs import Registry


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk of one document: a span plus, optionally, the text to embed for it."""

    doc_id: str
    start: int
    end: int
    embed_text: str | None = None

    def text(self, document_text: str) -> str:
        """The text the embedder sees: ``embed_text`` if set, else the span's text."""
        return (
            self.embed_text if self.embed_text is not None else document_text[self.start : self.end]
        )


ChunkerFn = Callable[[str], Sequence[Span | Chunk]]

CHUNKERS: Registry[ChunkerFn] = Registry("chunker")


def chunk_document(chunker: ChunkerFn, doc_id: str, text: str) -> list[Chunk]:
    """Run a chunker on one document and check its output: every span within the text, non-empty."""
    out: list[Chunk] = []
    for i, piece in enumerate(chunker(text)):
        if isinstance(piece, Span):
            chunk = Chunk(doc_id, piece.start, piece.end)
        else:
            chunk = Chunk(doc_id, piece.start, piece.end, piece.embed_text)
        if not 0 <= chunk.start < chunk.end <= len(text):
            raise ChunkingError(
                f"Chunker returned an invalid span [{chunk.start}, {chunk.end}) as chunk {i} of "
                f"document {doc_id!r} (length {len(text)}).",
                "Chunkers must return non-empty spans inside the document.",
            )
        out.append(chunk)
    return out
