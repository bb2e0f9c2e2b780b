"""Sets converted from raw files pinned at a GitHub commit: where each is kept, fetching and
checking its files, converting it.

A set's raw files are pinned: ``sources.json.gz`` beside this module holds, per set, the GitHub
repository, the commit and the SHA-256 of every file the converter reads
(``scripts/suite_sources.py`` writes it); a plugin's set carries its own (``SetInfo.pinned``).

:func:`convert_set` checks every pinned file of a local copy, converts it (optionally a seeded
sample of documents) and writes chunkmark's JSONL layout plus ``manifest.json`` (see
:mod:`~chunkmark.datasets.suite.manifest`); :func:`fetch_raw` fills the cache's raw copy from
the repository at the pinned commit first.

Environment variables:

- ``CHUNKMARK_SUITE_BASE_URL``: replaces ``https://raw.githubusercontent.com`` (paths below it
  are ``OWNER/REPO/COMMIT/PATH``), for mirrors and tests.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import statistics
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from chunkmark.datasets import download as downloads
from chunkmark.datasets.jsonl import load_jsonl, write_jsonl
from chunkmark.datasets.model import Dataset
from chunkmark.datasets.suite.base import SUITE_SETS, Converted, Preparing, Sample, Scope
from chunkmark.datasets.suite.manifest import (
    MANIFEST_FILE,
    SourceInfo,
    read_manifest,
    summary,
    write_manifest,
)
from chunkmark.errors import DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.paths import resolve_cache_dir

SUITE_BASE_URL_ENV = "CHUNKMARK_SUITE_BASE_URL"
RAW_BASE_URL = "https://raw.githubusercontent.com"
_THREADS = 8


@dataclass(frozen=True)
class Sources:
    """A set's pinned source: GitHub ``repository`` (owner/name), ``commit``, file -> SHA-256."""

    repository: str
    commit: str
    files: dict[str, str]

    def url(self, path: str, base: str = RAW_BASE_URL) -> str:
        quoted = urllib.parse.quote(path, safe="/")
        return f"{base.rstrip('/')}/{self.repository}/{self.commit}/{quoted}"

    def blob(self, path: str) -> str:
        return f"https://github.com/{self.repository}/blob/{self.commit}/{path}"


@dataclass(frozen=True)
class SetInfo:
    """A set converted from pinned raw files: its name, what it is, its source, its converter,
    the documents ``chunkmark suite run`` draws by default (``docs``; None: the whole set) and
    whether its questions are asked of one document each (``scope``).

    ``convert(root, files, sample)`` reads the raw files (``files`` are the pinned relative
    paths under ``root``) and returns the converted set. ``pinned`` is the source of a set
    chunkmark does not ship (a plugin's); chunkmark's own are in ``sources.json.gz``.
    """

    name: str
    title: str
    description: str
    licence: str
    homepage: str
    convert: Callable[[Path, Sequence[str], Sample], Converted]
    docs: int | None
    scope: Scope
    pinned: Sources | None = None

    def source(self, repository: str, commit: str) -> SourceInfo:
        return SourceInfo(repository, commit, self.licence, self.homepage)

    def folder(self, sample: Sample) -> Path:
        return converted_dir(self.name, sample)

    def prepare(self, how: Preparing) -> str:
        """Convert the set (its raw files fetched at the pinned commit, or read from
        ``how.from_dir``) unless a conversion from that commit is there; the summary line."""
        folder = converted_dir(self.name, how.sample)
        if not how.force and is_converted(folder):
            manifest = read_manifest(folder)
            if manifest["source"]["commit"] == sources(self.name).commit:
                return "already converted: " + summary(folder, manifest)
        if how.from_dir is not None:
            root = local_root(self.name, how.from_dir)
        else:
            root = fetch_raw(self.name, force=how.force, progress=how.progress)
        how.progress(f"{self.name}: converting {root}")
        _, manifest = convert_set(self.name, root, how.sample, folder)
        return summary(folder, manifest)


@cache
def _pinned() -> dict[str, Any]:
    data = resources.files("chunkmark.datasets.suite").joinpath("sources.json.gz").read_bytes()
    value: dict[str, Any] = json.loads(gzip.decompress(data))
    return value


def set_info(name: str) -> SetInfo:
    """The set ``name`` of :data:`SUITE_SETS`, converted from pinned files."""
    found = SUITE_SETS[name]
    if not isinstance(found, SetInfo):
        raise DatasetError(f"{name!r} is not converted from pinned files.", "Name another set.")
    return found


def sources(name: str) -> Sources:
    """The pinned source of the suite set ``name``."""
    info = set_info(name)
    if info.pinned is not None:
        return info.pinned
    item = _pinned()[name]
    return Sources(item["repository"], item["commit"], dict(item["files"]))


def raw_dir(name: str) -> Path:
    """Where the downloaded raw files of ``name`` are kept: ``<cache>/datasets/raw/<name>``."""
    return resolve_cache_dir() / "datasets" / "raw" / set_info(name).name


def converted_dir(name: str, sample: Sample | None = None) -> Path:
    """Where ``name`` converted is written: ``<cache>/datasets/<name>``, or
    ``<cache>/datasets/<name>-docs<N>-seed<S>`` for a sample of N documents."""
    set_info(name)
    sample = sample or Sample()
    folder = name if sample.docs is None else f"{name}-docs{sample.docs}-seed{sample.seed}"
    return resolve_cache_dir() / "datasets" / folder


def is_converted(folder: Path) -> bool:
    """True when ``folder`` holds a finished conversion (its manifest is written last)."""
    return (folder / MANIFEST_FILE).is_file() and (folder / "questions.jsonl").is_file()


def local_root(name: str, given: Path) -> Path:
    """The raw copy of ``name`` inside ``given``: ``given/<name>`` when that is a folder (the
    suite's root, holding one folder per set), else ``given`` itself (the set's own folder)."""
    inside = given / name
    return inside if inside.is_dir() else given


def verify_raw(name: str, root: Path) -> None:
    """Check every pinned file of ``name`` under ``root``: it exists and has its SHA-256.

    Raises :class:`DatasetError` naming the first missing or altered file and the fix.
    """
    pinned = sources(name)
    for path, sha256 in pinned.files.items():
        file = root / path
        fix = (
            f"Put the file of {pinned.repository} at commit {pinned.commit[:12]} there "
            f"({pinned.url(path)}), or run `chunkmark datasets download {name}` without --from."
        )
        try:
            data = file.read_bytes()
        except OSError:
            raise DatasetError(f"{file} is missing.", fix) from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise DatasetError(
                f"{file} has SHA-256 {digest[:16]}..., not the pinned {sha256[:16]}... (the file "
                "was altered or is another version).",
                fix,
            )


def fetch_raw(
    name: str, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> Path:
    """Download the pinned raw files of ``name`` into :func:`raw_dir` (files already there with
    their SHA-256 are kept unless ``force``); returns the folder.

    Each file is checked against its pinned SHA-256 before it is written. Raises
    :class:`DatasetError` naming the file and the fix when one cannot be fetched or differs.
    """
    pinned = sources(name)
    folder = raw_dir(name)
    base = os.environ.get(SUITE_BASE_URL_ENV) or RAW_BASE_URL
    missing = [
        (path, sha)
        for path, sha in pinned.files.items()
        if force or not downloads.verified(folder / path, sha)
    ]
    if progress is not None and missing:
        progress(
            f"{name}: downloading {len(missing)} files from {pinned.repository} at "
            f"{pinned.commit[:12]}"
        )

    def one(item: tuple[str, str]) -> None:
        path, sha256 = item
        url = pinned.url(path, base)
        data = _fetch(url, name, pinned, path)
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise DatasetError(
                f"{url} has SHA-256 {digest[:16]}..., not the pinned {sha256[:16]}...; the file "
                "was not saved.",
                f"Retry later; if it persists, download {pinned.blob(path)} into "
                f"{folder / path} and run `chunkmark datasets download {name} --from {folder}`.",
            )
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target, data)

    with ThreadPoolExecutor(_THREADS) as pool:
        for _ in pool.map(one, missing):
            pass
    return folder


def _fetch(url: str, name: str, pinned: Sources, path: str) -> bytes:
    manual = (
        f"Check your connection, or copy {pinned.blob(path)} (the whole repository at that "
        f"commit works) and run `chunkmark datasets download {name} --from DIR`."
    )
    return downloads.fetch_url(url, manual, SUITE_BASE_URL_ENV)


def convert_set(
    name: str, root: Path, sample: Sample | None = None, out: Path | None = None
) -> tuple[Dataset, dict[str, Any]]:
    """Verify the raw copy of ``name`` at ``root``, convert it and write it to ``out`` (default
    :func:`converted_dir`): ``documents.jsonl``, ``questions.jsonl``, then ``manifest.json``.

    The folder is read back and must give the same dataset. Returns the dataset as read back
    and the manifest.
    """
    info = set_info(name)
    sample = sample or Sample()
    verify_raw(name, root)
    pinned = sources(name)
    folder = out if out is not None else converted_dir(name, sample)
    converted = info.convert(root, sorted(pinned.files), sample)
    dataset = Dataset(folder.resolve().name, tuple(converted.documents), tuple(converted.questions))
    lengths = [len(d.text) for d in dataset.documents]
    manifest = converted.tally.manifest(
        name=name,
        title=info.title,
        source=info.source(pinned.repository, pinned.commit),
        documents=len(dataset.documents),
        documents_in_source=converted.documents_in_source,
        docs=sample.docs,
        seed=sample.seed,
        mean_document_chars=statistics.fmean(lengths) if lengths else 0.0,
        notes=converted.notes,
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST_FILE).unlink(missing_ok=True)
    write_jsonl(dataset, folder)
    loaded = load_jsonl(folder)
    if loaded.fingerprint != dataset.fingerprint:
        raise DatasetError(
            f"{folder} does not read back as the converted {name}.",
            "Convert into a new or empty folder.",
        )
    write_manifest(folder, manifest)
    return loaded, manifest
