"""``chunkmark audit`` on Chroma's general benchmark: how many chunks of third-party splitters it
places exactly or by normalisation, and what a default HNSW index loses against exact search.

1. Placement. Every corpus of the benchmark is split by LangChain's
   RecursiveCharacterTextSplitter (``split_text``: strings only, no offsets, whitespace
   stripped) and by chonkie's TokenChunker, SentenceChunker and RecursiveChunker (their texts
   only); every chunk is placed by its text alone, its document found by content
   (:func:`chunkmark.audit.placement.place_chunks`, no metadata). Printed: the chunks placed by
   each way and the share placed exactly or by normalisation.
2. ANN vs exact. The RecursiveCharacterTextSplitter chunks (``--size`` characters,
   ``add_start_index=True``) go into a new persistent Chroma collection with its default HNSW
   settings and MiniLM vectors (embedded through chunkmark's cache under ``--cache-dir``), and
   ``chunkmark audit`` scores it with the benchmark's questions: per k, the share of the exact
   top k the store returns and the recall each search gives.

    .venv/bin/python benchmarks/audit_stores.py [--data ../shared/datasets/chroma_general]
        [--size 400] [--cache-dir DIR] [--skip-ann]

Needs the splitters and Chroma: pip install 'chunkmark[langchain,chonkie,audit-chroma,st]'.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--size", type=int, default=400, help="LangChain chunk_size, characters")
    parser.add_argument("--tokens", type=int, default=128, help="chonkie chunk_size, tokens")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--skip-ann", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="placement only, on the demo dataset: seconds"
    )
    args = parser.parse_args()
    if args.smoke:
        args.data, args.skip_ann = Path("demo"), True

    from chunkmark.datasets import load_dataset

    dataset = load_dataset(str(args.data))
    print(
        f"{dataset.name}: {len(dataset.documents)} documents, "
        f"{sum(len(d.text) for d in dataset.documents):,} characters, "
        f"{len(dataset.questions)} questions"
    )
    placement(dataset, args.size, args.tokens)
    if not args.skip_ann:
        ann(dataset, args.size, args.cache_dir)


def splitters(size: int, tokens: int) -> dict[str, Any]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from chunkmark.chunkers.adapters import chonkie

    out: dict[str, Any] = {
        f"LangChain RecursiveCharacterTextSplitter(chunk_size={size})": (
            RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0).split_text
        ),
        f"LangChain RecursiveCharacterTextSplitter(chunk_size={size}, chunk_overlap={size // 4})": (
            RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=size // 4).split_text
        ),
    }
    for name, overlap in (("TokenChunker", 0), ("SentenceChunker", 0), ("RecursiveChunker", None)):
        built = chonkie(name, chunk_size=tokens, chunk_overlap=overlap)
        inner = built.splitter  # type: ignore[attr-defined]
        out[f"chonkie {name}(chunk_size={tokens})"] = lambda text, c=inner: [
            chunk.text for chunk in c.chunk(text)
        ]
    return out


def placement(dataset: Any, size: int, tokens: int) -> None:
    from chunkmark.audit.placement import StoredChunk, counts, place_chunks

    documents = {d.id: d.text for d in dataset.documents}
    total: dict[str, int] = {}
    print("\nPlacement by text alone (no offsets, no document names):")
    for name, split in splitters(size, tokens).items():
        chunks = [StoredChunk(t) for d in dataset.documents for t in split(d.text) if t.strip()]
        found = counts(place_chunks(chunks, documents))
        for key, value in found.items():
            total[key] = total.get(key, 0) + value
        print(f"  {name}: {len(chunks)} chunks, " + _share(found))
    print(f"  all: {sum(total.values())} chunks, " + _share(total))


def _share(found: dict[str, int]) -> str:
    n = sum(found.values())
    good = found["offsets"] + found["exact"] + found["normalised"]
    parts = ", ".join(f"{k} {v}" for k, v in found.items())
    return f"{parts}; exactly or normalised: {100 * good / n:.2f}%"


def ann(dataset: Any, size: int, cache_dir: Path | None) -> None:
    import chromadb
    from chromadb.config import Settings
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from chunkmark.audit.collection import audit
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
    from chunkmark.paths import resolve_cache_dir

    cache = resolve_cache_dir(cache_dir)
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=0, add_start_index=True
    )
    docs = splitter.create_documents(
        [d.text for d in dataset.documents], metadatas=[{"source": d.id} for d in dataset.documents]
    )
    inner, _ = EMBEDDERS.build("sentence_transformers()")
    embedder = CachedEmbedder(inner, EmbeddingCache(cache))
    vectors = embedder.embed([d.page_content for d in docs], kind="document")
    with tempfile.TemporaryDirectory(prefix="chunkmark-audit-bench-") as folder:
        client = chromadb.PersistentClient(
            path=f"{folder}/chroma", settings=Settings(anonymized_telemetry=False)
        )
        collection = client.create_collection("general", embedding_function=None)
        for lo in range(0, len(docs), 1000):
            part = docs[lo : lo + 1000]
            collection.add(
                ids=[f"c{lo + i}" for i in range(len(part))],
                documents=[d.page_content for d in part],
                metadatas=[d.metadata for d in part],
                embeddings=vectors[lo : lo + 1000],
            )
        del collection, client
        done = audit(
            f"chroma:{folder}/chroma?collection=general",
            str(dataset.source or dataset.name),
            "sentence_transformers()",
            k=(1, 3, 5, 10),
            out=Path(folder) / "audit",
            doc_key="source",
            cache_dir=cache,
            report=False,
        )
    section = done.section
    print(f"\nANN vs exact: {len(docs)} chunks in a Chroma collection with default settings")
    print(f"  search: {json.dumps(section['search'])}")
    print(
        f"  placement: {section['placement']}; chunk embeddings computed by the audit: "
        f"{section['chunk_embeddings']['computed']}"
    )
    for row in section["ann"]:
        print(
            f"  k={row['k']}: store top k holds {100 * row['chunks_recall_vs_exact']:.2f}% of "
            f"the exact top k; recall {100 * row['recall_store']:.2f}% (store) vs "
            f"{100 * row['recall_exact']:.2f}% (exact), {100 * row['recall_lost']:.3f} points "
            f"lost; {row['questions_losing']} of {row['questions']} questions lose"
        )


if __name__ == "__main__":
    main()
