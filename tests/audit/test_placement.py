"""Placing stored chunk texts in documents: small hand-computed cases, and a property: any span
of a document, whitespace rewritten, is placed by normalisation at a span whose normalised
text is the chunk's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkmark.audit.placement import StoredChunk, counts, normalise, place_chunks
from chunkmark.audit.stores.base import StoreError, parse_address

DOC = "Alpha beta.\n\nGamma  delta epsilon.\nZeta eta theta. Alpha beta."


def test_stored_offsets_are_used_when_the_document_holds_the_text_there() -> None:
    at = DOC.rfind("Alpha beta.")
    placed = place_chunks([StoredChunk("Alpha beta.", "d", at)], {"d": DOC})
    assert (placed[0].start, placed[0].end, placed[0].method) == (at, at + 11, "offsets")
    # a wrong offset is not trusted: the text is searched for instead
    wrong = place_chunks([StoredChunk("Alpha beta.", "d", 3)], {"d": DOC})
    assert (wrong[0].start, wrong[0].method) == (0, "exact")


def test_repeated_texts_take_their_occurrences_in_turn() -> None:
    placed = place_chunks([StoredChunk("Alpha beta."), StoredChunk("Alpha beta.")], {"d": DOC})
    assert [p.start for p in placed] == [0, DOC.rfind("Alpha beta.")]


def test_rewritten_whitespace_maps_back_to_exact_offsets() -> None:
    chunk = "Gamma delta epsilon. Zeta eta"  # the document has two spaces and a newline here
    placed = place_chunks([StoredChunk(chunk)], {"other": "nothing", "d": DOC})[0]
    assert placed.method == "normalised" and placed.doc_id == "d"
    assert DOC[placed.start : placed.end] == "Gamma  delta epsilon.\nZeta eta"


def test_fuzzy_placement_is_flagged_and_unplaceable_text_is_counted() -> None:
    chunks = [StoredChunk("Gamma delta epsilom. Zeta eta theta"), StoredChunk("Quite different.")]
    placed = place_chunks(chunks, {"d": DOC}, fuzzy_threshold=85)
    assert placed[0].method == "fuzzy" and 85 <= placed[0].score < 100
    assert DOC[placed[0].start : placed[0].end].startswith("Gamma")
    assert placed[1].method == "unplaced"
    assert counts(placed) == {"offsets": 0, "exact": 0, "normalised": 0, "fuzzy": 1, "unplaced": 1}


@given(
    st.lists(st.sampled_from(["ab", "cd", "e", "fgh"]), min_size=1, max_size=30),
    st.lists(st.sampled_from([" ", "\n", "  ", "\t", " \n "]), min_size=30, max_size=30),
    st.data(),
)
def test_any_span_with_whitespace_rewritten_is_placed(
    words: list[str], spaces: list[str], data: st.DataObject
) -> None:
    doc = "".join(w + s for w, s in zip(words, spaces, strict=False))
    lo = data.draw(st.integers(0, len(words) - 1))
    hi = data.draw(st.integers(lo + 1, len(words)))
    chunk = " ".join(words[lo:hi])
    placed = place_chunks([StoredChunk(chunk)], {"d": doc})[0]
    assert placed.method in ("exact", "normalised")
    assert normalise(doc[placed.start : placed.end]) == chunk


def test_store_addresses() -> None:
    chroma = parse_address("chroma:./db?collection=docs")
    assert (chroma.kind, chroma.location, chroma.collection, chroma.remote) == (
        "chroma",
        "./db",
        "docs",
        False,
    )
    assert parse_address("chroma:///srv/db?collection=docs").location == "/srv/db"
    server = parse_address("qdrant+https://example.org:6333?collection=docs&vector=dense")
    assert (server.location, server.options) == ("https://example.org:6333", {"vector": "dense"})
    pg = parse_address(
        "postgresql://me:pw@db:5432/rag?table=langchain_pg_embedding&collection=docs&sslmode=require"
    )
    assert pg.location == "postgresql://me:pw@db:5432/rag?sslmode=require"
    assert pg.options == {"collection": "docs"} and pg.collection == "langchain_pg_embedding"
    assert "pw" not in pg.label()
    for bad in ("chroma:./db", "redis://x?collection=a", "lancedb:./x?table=t&vector_size=3"):
        with pytest.raises(StoreError, match="Fix:"):
            parse_address(bad)
