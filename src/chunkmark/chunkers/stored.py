"""``stored(store=..., collection=...)``: the name results give the chunks of a vector-store
collection that ``chunkmark audit`` read and placed in their documents.

Those chunks were made by someone else's pipeline and are read from the store, so this spec
only names them (in ``results.parquet``, the summary, the report); it cannot chunk a document.
Built and called in a run, it raises with a line saying to audit the collection instead.
"""

from __future__ import annotations

from chunkmark.chunkers.base import CHUNKERS, ChunkerFn
from chunkmark.errors import ChunkingError
from chunkmark.spans import Span


@CHUNKERS.register("stored", deterministic=False)
def stored(store: str = "chroma", collection: str = "") -> ChunkerFn:
    """The chunks a vector-store collection holds, as `chunkmark audit` reads them.

    Names an audited collection in results; it cannot chunk anything itself (the chunks come
    from the store), so a run with it fails with a pointer at ``chunkmark audit``.

    Args:
        store: the kind of store (chroma, qdrant, lancedb, pgvector).
        collection: the collection (or table) audited.
    """

    def chunk(text: str) -> list[Span]:
        raise ChunkingError(
            f"stored(store={store!r}, collection={collection!r}) names chunks read from a "
            "vector store; it cannot chunk a document.",
            "Audit the collection with `chunkmark audit STORE_URI --dataset ...` instead of "
            "running this chunker.",
        )

    return chunk
