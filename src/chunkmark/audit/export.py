"""``chunkmark export``: write one finished cell of a run into a new vector-store collection.

The cell's chunks are read from ``OUT/cells/<id>.chunks.parquet`` (document, span, embedded
text), their texts from the run's dataset (its fingerprint must be the run's), and their
vectors from the embedding cache the run filled, under the run's embedder identity: nothing is
embedded again, so the collection holds exactly the vectors the run searched. Each chunk is
stored with its span text and chunkmark's offsets in its metadata (``chunkmark_doc_id``,
``chunkmark_start``, ``chunkmark_end``; ``chunkmark_embed_text`` when the chunker embedded
more than the span), so ``chunkmark audit`` places it by offsets and gives the run's numbers
back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from chunkmark.audit.stores import StoredChunks, create_collection, parse_address
from chunkmark.chunkers import CHUNKERS
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders.cache import EmbeddingCache
from chunkmark.errors import ConfigError, DatasetError
from chunkmark.paths import resolve_cache_dir
from chunkmark.specs import canonical_or_none

BATCH = 1000
BEST = "best"


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the collection, the cell it came from and how many chunks."""

    address: str
    cell_id: str
    dataset: str
    chunker: str
    embedder: str
    chunks: int
    dimension: int


def export(run_dir: Path, cell: str, store: str, cache_dir: Path | None = None) -> Exported:
    """Write the cell ``cell`` of the run in ``run_dir`` (a cell id or its prefix, a chunker
    spec, or ``best``: the cell the run's report recommends) into the new collection
    ``store`` (a store URI)."""
    address = parse_address(store)
    manifest = _manifest(run_dir)
    facts = select_cell(run_dir, manifest, cell)
    dataset = _dataset(manifest, facts)
    table = pq.read_table(run_dir / "cells" / f"{facts['id']}.chunks.parquet").to_pydict()
    docs = dataset.by_id
    spans = list(zip(table["doc_id"], table["start"], table["end"], strict=True))
    texts = [docs[d].text[s:e] for d, s, e in spans]
    embedded = [
        t if t is not None else span for t, span in zip(table["embed_text"], texts, strict=True)
    ]
    vectors = _vectors(run_dir, manifest, facts, embedded, cache_dir)
    metadata: list[dict[str, Any]] = []
    for (doc_id, start, end), text, embed in zip(spans, texts, embedded, strict=True):
        meta: dict[str, Any] = {
            "chunkmark_doc_id": doc_id,
            "chunkmark_start": int(start),
            "chunkmark_end": int(end),
        }
        if embed != text:
            meta["chunkmark_embed_text"] = embed
        metadata.append(meta)
    ids = [f"chunk-{i}" for i in range(len(spans))]
    writer = create_collection(address, int(vectors.shape[1]))
    try:
        for lo in range(0, len(ids), BATCH):
            hi = lo + BATCH
            batch = StoredChunks(ids[lo:hi], list(texts[lo:hi]), metadata[lo:hi], vectors[lo:hi])
            writer.add(batch)
    finally:
        writer.close()
    return Exported(
        address.label(),
        facts["id"],
        dataset.name,
        facts["chunker"],
        facts["embedder"],
        len(ids),
        int(vectors.shape[1]),
    )


def _manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        raise ConfigError(
            f"{run_dir} is not a finished run: {path} is missing or unreadable.",
            "Pass the --out folder of a finished `chunkmark run`.",
        ) from None
    return manifest


def select_cell(run_dir: Path, manifest: dict[str, Any], cell: str) -> dict[str, Any]:
    """The facts of the run's cell ``cell``: an id or id prefix, a chunker spec (as written
    in the results or its short form), or ``best``."""
    cells: list[dict[str, Any]] = manifest.get("cells", [])
    if cell == BEST:
        return _best(run_dir, cells)
    found = [c for c in cells if c["id"].startswith(cell)]
    if not found:
        found = [c for c in cells if cell in (c["chunker"], _short(c["chunker"]))]
    asked = canonical_or_none("chunker", cell)
    if not found and asked is not None:  # another spelling of a cell's chunker
        found = [c for c in cells if canonical_or_none("chunker", c["chunker"]) == asked]
    if len(found) == 1:
        return found[0]
    listing = "; ".join(f"{c['id'][:8]} = {_short(c['chunker'])} x {c['embedder']}" for c in cells)
    what = "matches no cell" if not found else f"matches {len(found)} cells"
    raise ConfigError(
        f"--cell {cell!r} {what} of the run in {run_dir} (cells: {listing}).",
        "Pass a cell id (or its first characters), a chunker spec naming one cell, or 'best'.",
    )


def _short(spec: str) -> str:
    try:
        return CHUNKERS.short(spec)
    except Exception:  # a chunker this version cannot resolve is matched as written
        return spec


def _best(run_dir: Path, cells: list[dict[str, Any]]) -> dict[str, Any]:
    from chunkmark.report import ReportOptions
    from chunkmark.report.comparisons import analyse
    from chunkmark.report.data import load_runs

    data = load_runs([run_dir])
    recommendations, _ = analyse(data, ReportOptions().stats())
    for r in recommendations:
        if r.best is not None:
            chosen = data.cells[r.best.cell]
            for c in cells:
                if c["chunker"] == chosen.chunker and c["embedder"] == chosen.embedder:
                    return c
    raise ConfigError(
        f"The run in {run_dir} recommends no cell.", "Pass --cell with a cell id or chunker."
    )


def _dataset(manifest: dict[str, Any], facts: dict[str, Any]) -> Dataset:
    for entry in manifest.get("datasets", []):
        if entry["name"] != facts["dataset"] or entry["fingerprint"] != facts["fingerprint"]:
            continue
        dataset = load_dataset(entry["source"] or entry["name"])
        if dataset.fingerprint != entry["fingerprint"]:
            raise DatasetError(
                f"The dataset {entry['source'] or entry['name']} has changed since the run "
                f"(fingerprint {dataset.fingerprint}, the run's {entry['fingerprint']}).",
                "Export from a run of the dataset as it is now (run it again).",
            )
        return dataset
    raise DatasetError(
        f"The run's manifest does not list the dataset {facts['dataset']!r} of the cell.",
        "Pass the folder of a run written by this version of chunkmark.",
    )


def _vectors(
    run_dir: Path,
    manifest: dict[str, Any],
    facts: dict[str, Any],
    texts: list[str],
    cache_dir: Path | None,
) -> Any:
    """The cell's chunk vectors, from the embedding cache the run used."""
    entry = manifest.get("embedding", {}).get(facts["embedder"], {})
    identity = entry.get("identity") or {}
    if "unavailable" in identity or not identity:
        raise ConfigError(
            f"The run in {run_dir} did not record the identity of {facts['embedder']}.",
            "Run the cell again, then export it.",
        )
    if identity.get("late_chunking"):
        raise ConfigError(
            f"{facts['embedder']} embeds chunks inside their documents (late chunking): its "
            "vectors are cached per document span, not per chunk text.",
            "Export a cell of an embedder without late chunking.",
        )
    root = cache_dir or (Path(manifest["cache_dir"]) if manifest.get("cache_dir") else None)
    root = resolve_cache_dir(root)
    cache = EmbeddingCache(root)
    try:
        found, vectors = cache.get_many(identity, "document", texts)
    finally:
        cache.close()
    missing = int((~found).sum())
    if missing:
        raise ConfigError(
            f"{missing} of {len(texts)} chunk vectors of cell {facts['id'][:8]} are not in the "
            f"embedding cache at {root}.",
            "Pass --cache-dir naming the cache the run used (or run the cell again with it).",
        )
    return np.asarray(vectors, dtype=np.float32)
