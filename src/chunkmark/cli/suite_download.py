"""``chunkmark datasets download`` for the suite's sets: fetch (or take from ``--from``),
check, convert, and list what is converted.

The suite is seven sets: the five human-evidence sets converted by
:mod:`chunkmark.datasets.suite`, Re-DocRED's evidence-backed relations
(:func:`chunkmark.relations.redocred.evidence_dataset`) and Chroma's general benchmark.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkmark.datasets import download as downloads
from chunkmark.datasets import load_dataset, suite
from chunkmark.datasets.jsonl import load_jsonl, write_jsonl
from chunkmark.datasets.suite.manifest import MANIFEST_FILE, write_manifest
from chunkmark.errors import ChunkmarkError, DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.paths import resolve_cache_dir
from chunkmark.relations import redocred

CHROMA = "chroma-general"
REDOCRED_EVIDENCE = redocred.EVIDENCE_SET
SUITE = "suite"
SUITE_NAMES = (*suite.SETS, REDOCRED_EVIDENCE, CHROMA)


def expand(names: list[str]) -> list[str]:
    """The sets named, ``suite`` standing for all seven; each once, in the order given."""
    out: list[str] = []
    for name in names:
        for one in SUITE_NAMES if name == SUITE else (name,):
            if one not in out:
                out.append(one)
    return out


def redocred_dir(sample: suite.Sample) -> Path:
    folder = REDOCRED_EVIDENCE
    if sample.docs is not None:
        folder += f"-docs{sample.docs}-seed{sample.seed}"
    return resolve_cache_dir() / "datasets" / folder


def download_one(
    name: str,
    *,
    force: bool,
    from_dir: Path | None,
    sample: suite.Sample,
    progress: Callable[[str], None],
) -> str:
    """Make ``name`` ready; returns the one-line summary. Raises a ChunkmarkError on failure."""
    if name == CHROMA:
        if sample.docs is not None:
            progress(f"{CHROMA}: --docs does not apply (its 5 corpora are used whole)")
        local = _chroma_copy(from_dir) if from_dir is not None else None
        folder = downloads.dataset_dir(CHROMA)
        if local is not None:
            _copy_chroma(local, progress)
        elif not force and downloads.is_downloaded(CHROMA):
            return f"{CHROMA} is already downloaded: {folder}"
        else:
            downloads.download(CHROMA, force=force, progress=progress)
        dataset = load_dataset(folder)
        return _summary(name, folder, len(dataset.documents), len(dataset.questions), None)
    if name == REDOCRED_EVIDENCE:
        return _redocred(force=force, from_dir=from_dir, sample=sample, progress=progress)
    if name not in suite.SETS:
        raise DatasetError(
            f"no downloadable dataset named {name!r}.",
            f"Use one of: {', '.join(SUITE_NAMES)}, or {SUITE} for all of them.",
        )
    folder = suite.converted_dir(name, sample)
    if not force and suite.is_converted(folder):
        manifest = suite.read_manifest(folder)
        if manifest["source"]["commit"] == suite.sources(name).commit:
            return "already converted: " + _from_manifest(folder, manifest)
    if from_dir is not None:
        root = suite.local_root(name, from_dir)
    else:
        root = suite.fetch_raw(name, force=force, progress=progress)
    progress(f"{name}: converting {root}")
    _, manifest = suite.convert_set(name, root, sample, folder)
    return _from_manifest(folder, manifest)


def _chroma_copy(from_dir: Path) -> Path | None:
    """A local copy of Chroma's general set beside or inside ``from_dir``, if there is one."""
    for base in (from_dir, from_dir.parent):
        for folder in (base / CHROMA, base / CHROMA.replace("-", "_")):
            if (folder / "questions_df.csv").is_file():
                return folder
    return None


def _copy_chroma(local: Path, progress: Callable[[str], None]) -> None:
    """Check the local copy's files against their pinned SHA-256 and put them in the cache."""
    target = downloads.dataset_dir(CHROMA)
    progress(f"{CHROMA}: copying {local}")
    for item in downloads.CHROMA_GENERAL.files:
        path = local / item.local
        try:
            data = path.read_bytes()
        except OSError:
            raise DatasetError(
                f"{path} is missing.",
                f"Put {downloads.CHROMA_GENERAL.homepage}'s file there, or leave out --from.",
            ) from None
        if hashlib.sha256(data).hexdigest() != item.sha256:
            raise DatasetError(
                f"{path} differs from the pinned file (SHA-256).",
                f"Replace it with {downloads.CHROMA_GENERAL.homepage}'s, or leave out --from.",
            )
        (target / item.local).parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target / item.local, data)


def _redocred(
    *,
    force: bool,
    from_dir: Path | None,
    sample: suite.Sample,
    progress: Callable[[str], None],
) -> str:
    folder = redocred_dir(sample)
    if not force and (folder / MANIFEST_FILE).is_file():
        return "already converted: " + _from_manifest(
            folder, json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        )
    source: Path | None = None
    if from_dir is not None:
        for candidate in (from_dir / "redocred", from_dir.parent / "redocred", from_dir):
            if (candidate / "test_revised.json").is_file():
                source = candidate / "test_revised.json"
                break
    if source is None:
        source = redocred.ensure_redocred(progress)
    progress(f"{REDOCRED_EVIDENCE}: converting {source}")
    dataset, counts = redocred.evidence_dataset(
        source, docs=sample.docs, seed=sample.seed, name=folder.name
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST_FILE).unlink(missing_ok=True)
    write_jsonl(dataset, folder)
    loaded = load_jsonl(folder)
    lengths = [len(d.text) for d in loaded.documents]
    manifest: dict[str, Any] = {
        "set": REDOCRED_EVIDENCE,
        "title": "Re-DocRED evidence",
        "source": {
            "repository": redocred.REDOCRED.homepage,
            "commit": None,
            "licence": "MIT (dataset); texts from English Wikipedia (CC BY-SA)",
            "homepage": redocred.REDOCRED.homepage,
        },
        "sampling": {"docs": sample.docs, "seed": sample.seed, "documents_in_source": None},
        "documents": len(loaded.documents),
        "mean_document_chars": round(statistics.fmean(lengths), 1) if lengths else 0.0,
        "questions": {"raw": counts["questions"], "kept": len(loaded.questions), "dropped": {}},
        "splits": {"test": len(loaded.questions)},
        "evidence": {
            "placed": {
                "exact": 0,
                "normalised": 0,
                "structural": sum(len(q.excerpts) for q in loaded.questions),
                "repaired": 0,
                "elided": 0,
            },
            "not_placed": {},
            "first_of_several": 0,
            "set_aside": {"relations without evidence sentences": counts["without_evidence"]},
        },
        "notes": counts,
        "dropped": [],
        "repaired": [],
    }
    write_manifest(folder, manifest)
    return _from_manifest(folder, manifest)


def _from_manifest(folder: Path, manifest: dict[str, Any]) -> str:
    dropped = manifest["questions"]["dropped"]
    return _summary(
        manifest["set"],
        folder,
        manifest["documents"],
        manifest["questions"]["kept"],
        sum(dropped.values()),
    )


def _summary(name: str, folder: Path, documents: int, questions: int, dropped: int | None) -> str:
    tail = "" if dropped is None else f", {dropped} dropped (see {MANIFEST_FILE})"
    return f"ok: {name} in {folder} ({documents} documents, {questions} questions{tail})"


def download_many(
    names: list[str],
    *,
    force: bool,
    from_dir: Path | None,
    sample: suite.Sample,
    say: Callable[[str], None],
) -> list[str]:
    """Make every set of ``names`` ready, one after the other; a set that fails is one line
    and the others go on. Returns the names that failed. A single set's error is raised."""
    wanted = expand(names)
    failed: list[str] = []
    for name in wanted:
        try:
            say(download_one(name, force=force, from_dir=from_dir, sample=sample, progress=say))
        except ChunkmarkError as exc:
            if len(wanted) == 1:
                raise
            say(f"failed: {name}: {exc}")
            failed.append(name)
    return failed


def prepared_folder(name: str, sample: suite.Sample) -> Path:
    """The folder :func:`download_one` makes ready for ``name`` and ``sample``."""
    if name == CHROMA:
        return downloads.dataset_dir(CHROMA)
    if name == REDOCRED_EVIDENCE:
        return redocred_dir(sample)
    return suite.converted_dir(name, sample)


def status(name: str) -> tuple[str, Path | None]:
    """A suite set's status line for ``chunkmark datasets`` and its folder once converted."""
    folder = (
        redocred_dir(suite.Sample()) if name == REDOCRED_EVIDENCE else suite.converted_dir(name)
    )
    if (folder / MANIFEST_FILE).is_file():
        return f"converted: {folder}", folder
    return f"not downloaded (chunkmark datasets download {name})", None


def description(name: str) -> str:
    if name == REDOCRED_EVIDENCE:
        return (
            "Re-DocRED evidence: 500 Wikipedia articles, 7,547 relations with annotated "
            "evidence sentences (MIT; texts CC BY-SA)."
        )
    return suite.SETS[name].description
