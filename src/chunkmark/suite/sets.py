"""The suite's sets, made ready for a run: ``chunkmark datasets download`` and ``chunkmark suite
run`` read them from :data:`~chunkmark.datasets.suite.SUITE_SETS` through this module.

The suite is seven sets, in this order: the five human-evidence sets converted by
:mod:`chunkmark.datasets.suite`, Re-DocRED's evidence-backed relations
(:class:`chunkmark.relations.redocred.EvidenceSet`) and Chroma's general benchmark (declared
here); the sets of plugin packages follow. Each set declares the documents a suite run draws
from it by default (``docs``; Chroma's general set is used whole, and says so).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from chunkmark.datasets import download as downloads
from chunkmark.datasets import load_dataset
from chunkmark.datasets.suite import SUITE_SETS, Sample
from chunkmark.datasets.suite.base import Preparing, Scope
from chunkmark.datasets.suite.manifest import MANIFEST_FILE, summary_line
from chunkmark.errors import ChunkmarkError, DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.relations import redocred
from chunkmark.suite.run import SuiteSet

SUITE = "suite"  # every set of the suite
CHROMA = downloads.CHROMA_GENERAL.name
REDOCRED_EVIDENCE = redocred.EVIDENCE_SET


@dataclass(frozen=True)
class ChromaGeneral:
    """Chroma's general benchmark as a set of the suite: downloaded whole (its five corpora are
    one set each time), or copied from a local copy beside or inside ``--from``."""

    name: str = CHROMA
    description: str = downloads.CHROMA_GENERAL.description
    docs: int | None = None
    scope: Scope = "corpus"

    def folder(self, sample: Sample) -> Path:
        return downloads.dataset_dir(self.name)

    def prepare(self, how: Preparing) -> str:
        if how.sample.docs is not None:
            how.progress(f"{CHROMA}: --docs does not apply (its 5 corpora are used whole)")
        local = _chroma_copy(how.from_dir) if how.from_dir is not None else None
        folder = downloads.dataset_dir(CHROMA)
        if local is not None:
            _copy_chroma(local, how.progress)
        elif not how.force and downloads.is_downloaded(CHROMA):
            return f"{CHROMA} is already downloaded: {folder}"
        else:
            downloads.download(CHROMA, force=how.force, progress=how.progress)
        dataset = load_dataset(folder)
        return summary_line(CHROMA, folder, len(dataset.documents), len(dataset.questions), None)


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
    homepage = downloads.CHROMA_GENERAL.homepage
    progress(f"{CHROMA}: copying {local}")
    for item in downloads.CHROMA_GENERAL.files:
        path = local / item.local
        try:
            data = path.read_bytes()
        except OSError:
            raise DatasetError(
                f"{path} is missing.", f"Put {homepage}'s file there, or leave out --from."
            ) from None
        if hashlib.sha256(data).hexdigest() != item.sha256:
            raise DatasetError(
                f"{path} differs from the pinned file (SHA-256).",
                f"Replace it with {homepage}'s, or leave out --from.",
            )
        (target / item.local).parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target / item.local, data)


SUITE_SETS.add(ChromaGeneral())


def names() -> list[str]:
    """Every set of the suite, in order (plugins' sets last)."""
    return list(SUITE_SETS)


def expand(wanted: Sequence[str]) -> list[str]:
    """The sets named, ``suite`` standing for all of them; each once, in the order given."""
    out: list[str] = []
    for name in wanted:
        for one in names() if name == SUITE else (name,):
            if one not in out:
                out.append(one)
    return out


def download_one(
    name: str,
    *,
    force: bool,
    from_dir: Path | None,
    sample: Sample,
    progress: Callable[[str], None],
) -> str:
    """Make ``name`` ready; returns the one-line summary. Raises a ChunkmarkError on failure."""
    return SUITE_SETS[name].prepare(Preparing(sample, force, from_dir, progress))


def download_many(
    wanted: Sequence[str],
    *,
    force: bool,
    from_dir: Path | None,
    sample: Sample,
    say: Callable[[str], None],
) -> list[str]:
    """Make every set of ``wanted`` ready, one after the other; a set that fails is one line
    and the others go on. Returns the names that failed. A single set's error is raised."""
    sets = expand(wanted)
    failed: list[str] = []
    for name in sets:
        try:
            say(download_one(name, force=force, from_dir=from_dir, sample=sample, progress=say))
        except ChunkmarkError as exc:
            if len(sets) == 1:
                raise
            say(f"failed: {name}: {exc}")
            failed.append(name)
    return failed


def prepared_folder(name: str, sample: Sample) -> Path:
    """The folder :func:`download_one` makes ready for ``name`` and ``sample``."""
    return SUITE_SETS[name].folder(sample)


def status(name: str) -> tuple[str, Path | None]:
    """A suite set's status line for ``chunkmark datasets`` and its folder once converted."""
    folder = prepared_folder(name, Sample())
    if (folder / MANIFEST_FILE).is_file():
        return f"converted: {folder}", folder
    return f"not downloaded (chunkmark datasets download {name})", None


def description(name: str) -> str:
    return SUITE_SETS[name].description


def for_run(
    wanted: Sequence[str],
    *,
    docs: int | None,
    full: bool,
    seed: int,
    from_dir: Path | None,
    progress: Callable[[str], None],
) -> tuple[list[SuiteSet], dict[str, str]]:
    """The sets of ``wanted`` made ready for ``chunkmark suite run``: each drawn with ``docs``
    documents, else its own default sample (``full``: whole), and ``seed``. Returns the sets
    ready and, for each that failed, its one-line reason (the others go on)."""
    ready: list[SuiteSet] = []
    failed: dict[str, str] = {}
    for name in wanted:
        try:
            sample = Sample(None if full else (docs or SUITE_SETS[name].docs), seed)
            download_one(name, force=False, from_dir=from_dir, sample=sample, progress=progress)
        except ChunkmarkError as exc:
            failed[name] = str(exc)
            continue
        ready.append(SuiteSet(name, prepared_folder(name, sample)))
    return ready, failed
