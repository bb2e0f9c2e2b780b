"""Chunkers on files and datasets without a model run: one file's chunks (``chunkmark chunk``
and the MCP tool preview_chunks) and what each chunker's boundaries do to a grid's datasets
(``chunkmark chunkers diagnose``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.chunkers.diagnostics import (
    BoundaryAgreement,
    ChunkingDiagnostics,
    boundary_agreement,
    diagnose,
)

if TYPE_CHECKING:
    from chunkmark.experiments.config import ExperimentConfig
    from chunkmark.specs import Spec


def chunker_context(
    embedder: str,
    cache_dir: Path | None,
    *,
    embeds: bool = True,
    no_cache: bool = False,
    seed: int = 0,
) -> ChunkerContext:
    """What chunkers need besides their spec: ``embedder`` (cached unless ``no_cache``; built
    only when a chunker ``embeds``), the cache folder and the seed."""
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache, resolve_cache_dir

    folder = resolve_cache_dir(cache_dir)
    built = None
    if embeds:
        inner, _ = EMBEDDERS.build(embedder)  # cheap: models load on first use
        built = CachedEmbedder(inner, None if no_cache else EmbeddingCache(folder))
    return ChunkerContext(embedder=built, cache_dir=folder, seed=seed)


def chunk_file(
    path: Path, chunker: str, embedder: str, cache_dir: Path | None = None
) -> tuple[str, Spec, list[Chunk]]:
    """One UTF-8 file's text, the chunker's resolved spec and its chunks."""
    from chunkmark.files import read_text

    text = read_text(path)
    embeds = CHUNKERS.traits(chunker).embeds  # only chunkers that embed build an embedder
    fn, spec = CHUNKERS.build(chunker, context=chunker_context(embedder, cache_dir, embeds=embeds))
    return text, spec, chunk_document(fn, path.name, text)


@dataclass
class DiagnosisRow:
    """One (dataset, chunker) row of ``chunkmark chunkers diagnose``."""

    dataset: str
    chunker: str
    label: str
    seconds: float
    diagnostics: ChunkingDiagnostics
    boundaries: BoundaryAgreement | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "chunker": self.chunker,
            "label": self.label,
            "chunk_seconds": round(self.seconds, 4),
            **self.diagnostics.to_dict(),
            "boundaries": None if self.boundaries is None else self.boundaries.to_dict(),
        }


def diagnose_grid(
    config: ExperimentConfig,
    boundaries: Path | None,
    tolerance: int,
    unit: int,
    note: Callable[[str], Any] = print,
) -> list[DiagnosisRow]:
    """Each chunker of ``config`` on each of its datasets (and the stitched ``boundaries``
    folder, compared with its true topic boundaries); ``note`` hears each as it is done."""
    from chunkmark.datasets import load_dataset
    from chunkmark.datasets.stitch import read_boundaries

    sources = list(config.datasets)
    if boundaries is not None and not any(_same_folder(s, boundaries) for s in sources):
        sources.append(str(boundaries))
    context = chunker_context(
        config.embedders[0], config.cache_dir, no_cache=config.no_cache, seed=config.seed
    )
    built = [CHUNKERS.build(spec, context=context) for spec in config.chunkers]
    rows: list[DiagnosisRow] = []
    for source in sources:
        data = load_dataset(source)
        truth = None
        if boundaries is not None and _same_folder(source, boundaries):
            truth = read_boundaries(boundaries, data)
        for fn, spec in built:
            started = time.perf_counter()
            chunks = [c for doc in data.documents for c in chunk_document(fn, doc.id, doc.text)]
            seconds = time.perf_counter() - started
            agreement = (
                None
                if truth is None
                else boundary_agreement(data, chunks, truth, tolerance=tolerance, unit=unit)
            )
            label = CHUNKERS.short(spec)
            row = DiagnosisRow(
                data.name, str(spec), label, seconds, diagnose(data, chunks), agreement
            )
            rows.append(row)
            note(f"{data.name}: {label}: {len(chunks)} chunks in {seconds:.2f} s")
    return rows


def _same_folder(source: str, folder: Path) -> bool:
    path = Path(source)
    return path.exists() and path.resolve() == folder.resolve()
