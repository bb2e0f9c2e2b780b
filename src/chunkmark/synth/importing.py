"""Documents in, corpus out: the engine of ``chunkmark datasets import``.

Files and folders of documents (markdown, plain text, PDF, HTML, Word) become a corpus folder
that the rest of chunkmark reads like the corpora of the Chroma layout::

    OUT/
      corpora/<id>.md      one file per imported source (.txt for plain-text sources)
      manifest.json        what was imported from where, and what was skipped and why

Markdown and text files are read directly as strict UTF-8; every other format goes through
markitdown, imported lazily. Corpus files are UTF-8 with ``\\n`` newlines only, so reading one
back with ``open(path, encoding="utf-8")`` gives exactly the text written, and character offsets
into it are offsets into the document. A source that cannot give usable text (unreadable,
empty, encrypted, an image-only PDF, an unsupported type, a converter failure) is skipped with
its reason; nothing the import did not write is ever deleted.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from chunkmark.datasets.chroma import CORPORA, CORPUS_SUFFIXES
from chunkmark.errors import ConfigError, DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.optional import import_optional
from chunkmark.version import __version__

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
TEXT_CONVERTER = "text"
#: Sources read directly, and the suffix of the corpus file each becomes.
TEXT_SUFFIXES = {".md": ".md", ".markdown": ".md", ".txt": ".txt"}
#: Sources converted by markitdown (into markdown).
CONVERTED_SUFFIXES = (".pdf", ".html", ".htm", ".docx")
SUPPORTED_SUFFIXES = (*TEXT_SUFFIXES, *CONVERTED_SUFFIXES)
NO_TEXT_LAYER = "no text layer (scanned or image-only PDF); run OCR first"
ENCRYPTED_PDF = "encrypted PDF (it needs a password); remove the password and import it again"

_PURPOSE = "Importing PDF, HTML and Word documents"
_ID_UNSAFE = re.compile(r"[^\w.-]+")
_ID_MAX_BYTES = 160
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
)
_PAGE_BREAK = re.compile(r"[ \t]*\n*\f\n*")
_REASON_LIMIT = 240

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ImportedSource:
    """One source that became a corpus file.

    ``path`` is the source's path as given (a folder argument joined with the file's path in
    it), ``resolved`` its absolute path; ``corpus_file`` is relative to the output folder
    (``corpora/<doc_id>.md``) and ``characters`` the length of the text written there.
    """

    path: str
    resolved: Path
    size: int
    sha256: str
    converter: str
    doc_id: str
    corpus_file: str
    characters: int


@dataclass(frozen=True, slots=True)
class SkippedSource:
    """One source that was not imported, and why."""

    path: str
    resolved: Path
    reason: str


@dataclass(slots=True)
class ImportReport:
    """What :func:`import_documents` did.

    ``foreign`` lists the corpus files in ``out/corpora`` that this import did not write (left
    over from an earlier import into the same folder): they are kept, and are read as documents.
    """

    out: Path
    manifest: Path
    imported: list[ImportedSource] = field(default_factory=list)
    skipped: list[SkippedSource] = field(default_factory=list)
    foreign: list[Path] = field(default_factory=list)


class NothingImportedError(DatasetError):
    """No source could be imported; ``skipped`` holds every source tried and its reason."""

    def __init__(self, problem: str, fix: str, skipped: Sequence[SkippedSource]) -> None:
        super().__init__(problem, fix)
        self.skipped = list(skipped)


class _Skip(Exception):
    """A source cannot be imported; the message is the reason."""


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A file to try: its path as given, on disk, and relative to its source argument."""

    given: str
    path: Path
    relative: PurePosixPath

    @property
    def suffix(self) -> str:
        return self.path.suffix.lower()


@dataclass(slots=True)
class _Converters:
    """The lazily imported converter libraries (None until a source needs them)."""

    markitdown: Any = None
    markitdown_version: str = ""
    pypdf: Any = None
    stream_info: Any = None


@dataclass(frozen=True, slots=True)
class _Converted:
    """A source's bytes and the corpus text made from them."""

    data: bytes
    text: str
    converter: str


def import_documents(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    force: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Turn document files and folders into ``out/corpora/*`` plus ``out/manifest.json``.

    Folders are searched recursively (hidden files and folders, and ``out`` itself, are left
    out); ``include``/``exclude`` are glob patterns matched, case-insensitively, against each
    file's path relative to its folder argument and against its name (``exclude`` also against
    each parent folder's relative path and name, so ``drafts`` leaves out every ``drafts``
    folder); by default every file is tried and unsupported types are skipped with their
    reason. Files named directly are always tried. Sources are taken in argument order,
    each folder's files sorted by relative path.

    Raises :class:`DatasetError` when a source does not exist or nothing could be imported
    (:class:`NothingImportedError`), :class:`ConfigError` when ``out`` is not an empty or new
    folder and ``force`` is false, and :class:`MissingDependencyError` when a source needs
    markitdown or pypdf and it is not installed. ``progress`` receives one line per imported
    source as it is written.
    """
    out = Path(out)
    paths = _check_sources(sources)
    _check_out(out, force)
    report = ImportReport(out=out, manifest=out / MANIFEST)
    candidates = _collect(paths, out, include, exclude, report.skipped)
    converters = _load_converters({c.suffix for c in candidates})
    used: set[str] = set()
    for candidate in candidates:
        _import_one(candidate, converters, used, report, progress)
    if not report.imported:
        raise _nothing_imported(sources, report.skipped)
    _write_manifest(report)
    report.foreign = _foreign_files(out, report.imported)
    return report


# --- sources ------------------------------------------------------------------------------


def _check_sources(sources: Sequence[str | Path]) -> list[tuple[str, Path]]:
    """Each source as given and as a path; a DatasetError naming the first that is missing."""
    if not sources:
        raise ConfigError("no documents to import.", "Name one or more files or folders.")
    paths = [(str(src), Path(src)) for src in sources]
    for given, path in paths:
        if not path.exists():
            raise DatasetError(
                f"{given} does not exist.",
                "Check the path: each SRC is a document file or a folder of documents.",
            )
    return paths


def _collect(
    paths: Iterable[tuple[str, Path]],
    out: Path,
    include: Sequence[str],
    exclude: Sequence[str],
    skipped: list[SkippedSource],
) -> list[_Candidate]:
    """The files to try, in order, each file once; unreadable folders go to ``skipped``."""
    seen: set[Path] = set()
    candidates: list[_Candidate] = []
    for given, path in paths:
        if path.is_dir():
            if path.resolve() == out.resolve():
                raise ConfigError(
                    f"--out {out} is also a folder to import.",
                    "Write the corpus to a folder of its own, outside the sources or inside "
                    "one (it is then left out of the import).",
                )
            found = _walk(given, path, out.resolve(), skipped)
            found = [c for c in found if _wanted(c.relative, include, exclude)]
        else:
            found = [_Candidate(given, path, PurePosixPath(path.name))]
        for candidate in found:
            key = candidate.path.resolve()
            if key not in seen:
                seen.add(key)
                candidates.append(candidate)
    return candidates


def _walk(given: str, folder: Path, out: Path, skipped: list[SkippedSource]) -> list[_Candidate]:
    """Every visible file under ``folder`` (not under ``out``), sorted by relative path."""

    def unreadable(exc: OSError) -> None:
        where = str(exc.filename or folder)
        reason = f"folder cannot be read ({exc.strerror or exc})"
        skipped.append(SkippedSource(where, Path(where).absolute(), reason))

    found: list[_Candidate] = []
    for root, dirs, files in os.walk(folder, onerror=unreadable):
        dirs[:] = [d for d in dirs if not d.startswith(".") and Path(root, d).resolve() != out]
        for name in files:
            if name.startswith("."):
                continue
            path = Path(root, name)
            relative = PurePosixPath(path.relative_to(folder).as_posix())
            found.append(_Candidate(os.path.join(given, *relative.parts), path, relative))
    return sorted(found, key=lambda c: c.relative.as_posix())


def _wanted(relative: PurePosixPath, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a file passes the filters (see :func:`import_documents`)."""
    names = [relative.as_posix(), relative.name]
    if include and not any(_matches(name, include) for name in names):
        return False
    folders = [parent for parent in relative.parents if parent.name]
    names += [folder.as_posix() for folder in folders] + [folder.name for folder in folders]
    return not any(_matches(name, exclude) for name in names)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether ``name`` matches one of the glob ``patterns``, ignoring case."""
    return any(fnmatch.fnmatchcase(name.casefold(), p.casefold()) for p in patterns)


# --- the output folder --------------------------------------------------------------------


def _check_out(out: Path, force: bool) -> None:
    """Refuse a file, or a non-empty folder unless ``force``."""
    if out.exists() and not out.is_dir():
        raise ConfigError(
            f"--out {out} is a file, not a folder.", "Give --out a new or empty folder."
        )
    if out.is_dir() and not force and any(out.iterdir()):
        raise ConfigError(
            f"the --out folder {out} is not empty.",
            "Give --out a new or empty folder, or pass --force to write into it (files this "
            "import does not write are kept).",
        )


def _write_manifest(report: ImportReport) -> None:
    """Write ``manifest.json`` for ``report`` atomically."""
    manifest = {
        "format": MANIFEST_FORMAT,
        "chunkmark_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sources": [_imported_entry(item) for item in report.imported],
        "skipped": [
            {"path": s.path, "resolved": str(s.resolved), "reason": s.reason}
            for s in report.skipped
        ],
    }
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    write_bytes_atomic(report.manifest, text.encode("utf-8"))


def _imported_entry(item: ImportedSource) -> dict[str, Any]:
    """One ``sources`` entry of the manifest."""
    return {
        "path": item.path,
        "resolved": str(item.resolved),
        "size": item.size,
        "sha256": item.sha256,
        "converter": item.converter,
        "id": item.doc_id,
        "corpus_file": item.corpus_file,
        "characters": item.characters,
    }


def _foreign_files(out: Path, imported: Sequence[ImportedSource]) -> list[Path]:
    """Corpus files in ``out/corpora`` that this import did not write."""
    written = {item.corpus_file for item in imported}
    corpora = out / CORPORA
    return sorted(
        path
        for path in corpora.iterdir()
        if path.suffix.lower() in CORPUS_SUFFIXES
        and path.is_file()
        and f"{CORPORA}/{path.name}" not in written
    )


def _nothing_imported(
    sources: Sequence[str | Path], skipped: Sequence[SkippedSource]
) -> NothingImportedError:
    """The error for an import that produced no corpus file."""
    supported = ", ".join(SUPPORTED_SUFFIXES)
    if not skipped:
        return NothingImportedError(
            f"no documents found in {', '.join(str(s) for s in sources)}.",
            f"Check the paths and the --include/--exclude patterns; supported types: {supported}.",
            skipped,
        )
    first = skipped[0]
    noun = "source was" if len(skipped) == 1 else "sources were"
    return NothingImportedError(
        f"nothing could be imported: {len(skipped)} {noun} skipped "
        f"(first: {first.path}: {first.reason}).",
        f"Give documents with text in them; supported types: {supported}.",
        skipped,
    )


# --- one source ---------------------------------------------------------------------------


def _import_one(
    candidate: _Candidate,
    converters: _Converters,
    used: set[str],
    report: ImportReport,
    progress: Progress | None,
) -> None:
    """Convert one source and write its corpus file, or record why it was skipped."""
    resolved = candidate.path.resolve()
    try:
        converted = _convert(candidate, converters)
    except _Skip as skip:
        report.skipped.append(SkippedSource(candidate.given, resolved, str(skip)))
        return
    doc_id = unique_id(document_id(candidate.relative), used)
    suffix = TEXT_SUFFIXES.get(candidate.suffix, ".md")
    corpus_file = f"{CORPORA}/{doc_id}{suffix}"
    write_bytes_atomic(report.out / corpus_file, converted.text.encode("utf-8"))
    item = ImportedSource(
        path=candidate.given,
        resolved=resolved,
        size=len(converted.data),
        sha256=hashlib.sha256(converted.data).hexdigest(),
        converter=converted.converter,
        doc_id=doc_id,
        corpus_file=corpus_file,
        characters=len(converted.text),
    )
    report.imported.append(item)
    if progress is not None:
        progress(f"  {candidate.given} -> {corpus_file} ({item.characters:,} characters)")


def _convert(candidate: _Candidate, converters: _Converters) -> _Converted:
    """The source's bytes and corpus text; raises :class:`_Skip` with the reason."""
    suffix = candidate.suffix
    if suffix not in SUPPORTED_SUFFIXES:
        kind = f"{suffix!r}" if suffix else "(no extension)"
        raise _Skip(f"unsupported file type {kind}; supported: {', '.join(SUPPORTED_SUFFIXES)}")
    data = _read(candidate.path)
    if not data:
        raise _Skip("empty file")
    if suffix in TEXT_SUFFIXES:
        text, converter = _decode(data), TEXT_CONVERTER
    else:
        text = _markitdown(candidate.path.name, suffix, data, converters)
        converter = f"markitdown {converters.markitdown_version}"
    if not text.strip():
        raise _Skip(_blank_reason(suffix))
    _check_encodable(text)
    return _Converted(data, text, converter)


def _read(path: Path) -> bytes:
    """The file's bytes; raises :class:`_Skip` when it cannot be read."""
    if not path.is_file():
        raise _Skip("not a regular file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _Skip(f"cannot be read ({exc.strerror or exc})") from exc


def _decode(data: bytes) -> str:
    """A text source as chunkmark reads corpus files: strict UTF-8, newlines translated."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Skip(
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start}; "
            "re-save it as UTF-8 (for example: iconv -f latin1 -t utf-8)"
        ) from exc
    return normalise_newlines(text)


def _blank_reason(suffix: str) -> str:
    """Why a source whose text is empty or whitespace-only is skipped."""
    if suffix == ".pdf":
        return NO_TEXT_LAYER
    if suffix in TEXT_SUFFIXES:
        return "holds only whitespace"
    return "no text after conversion (the document is empty or holds only images)"


def _check_encodable(text: str) -> None:
    """Raise :class:`_Skip` when ``text`` cannot be written as UTF-8 (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Skip(
            f"the converted text holds a character that UTF-8 cannot store at offset {exc.start}"
        ) from exc


# --- markitdown and pypdf -----------------------------------------------------------------


def _load_converters(suffixes: Iterable[str]) -> _Converters:
    """Import markitdown (and pypdf, for PDFs) when a source needs them."""
    converters = _Converters()
    needed = set(suffixes)
    if needed & set(CONVERTED_SUFFIXES):
        module = import_optional("markitdown", "markitdown", "import", _PURPOSE)
        converters.markitdown = module.MarkItDown()
        converters.stream_info = module.StreamInfo
        converters.markitdown_version = str(getattr(module, "__version__", "unknown"))
    if ".pdf" in needed:
        converters.pypdf = import_optional(
            "pypdf", "pypdf", "import", "Checking PDFs for encryption"
        )
    return converters


def _markitdown(name: str, suffix: str, data: bytes, converters: _Converters) -> str:
    """The markdown markitdown makes of ``data``, newlines normalised and page breaks made
    blank lines; raises :class:`_Skip` when the source cannot be converted."""
    if suffix == ".pdf":
        _check_pdf(data, converters.pypdf)
    info = converters.stream_info(extension=suffix, filename=name)
    try:
        result = converters.markitdown.convert_stream(io.BytesIO(data), stream_info=info)
    except Exception as exc:  # any converter failure skips this one source
        raise _Skip(_conversion_failure(exc)) from exc
    text = normalise_newlines(str(result.markdown))
    text = _PAGE_BREAK.sub("\n\n", text).strip("\n")
    return f"{text}\n" if text.strip() else ""


def _check_pdf(data: bytes, pypdf: Any) -> None:
    """Raise :class:`_Skip` for a PDF pypdf cannot open, or one that needs a password.

    A PDF encrypted with an empty user password (restrictions only) opens, and is imported.
    """
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        encrypted = bool(reader.is_encrypted)
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise _Skip(f"not a readable PDF ({_one_line(exc)})") from exc
    if encrypted and not _opens_without_password(reader):
        raise _Skip(ENCRYPTED_PDF)


def _opens_without_password(reader: Any) -> bool:
    """Whether an encrypted PDF opens with the empty password."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an unsupported algorithm or missing crypto library: treat as locked
        return False


def _conversion_failure(exc: Exception) -> str:
    """The skip reason for a converter exception."""
    if type(exc).__name__ == "MissingDependencyException":
        return (
            "the converter needs a package that is not installed; pip install 'chunkmark[import]'"
        )
    return f"conversion failed ({_one_line(exc)})"


def _one_line(exc: Exception) -> str:
    """An exception as one short line: its type and message."""
    message = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"


# --- text and ids -------------------------------------------------------------------------


def normalise_newlines(text: str) -> str:
    """``text`` with ``\\r\\n`` and ``\\r`` made ``\\n``, as Python's text mode reads them."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def document_id(relative: PurePosixPath) -> str:
    """A filesystem-safe document id from a source's relative path, without its suffix.

    Folders are joined with ``__`` (``policies/home-insurance.pdf`` gives
    ``policies__home-insurance``); characters other than letters, digits, ``_``, ``.`` and
    ``-`` become ``-``; no part starts or ends with a dot or dash; long ids are cut.
    """
    parts = [*relative.parent.parts, relative.stem]
    cleaned = [_clean_part(part) for part in parts if part not in ("", ".")]
    doc_id = "__".join(part for part in cleaned if part) or "document"
    doc_id = _cut(doc_id, _ID_MAX_BYTES).rstrip(".-") or "document"
    if doc_id.split(".")[0].upper() in _WINDOWS_RESERVED:
        doc_id = f"{doc_id}_"
    return doc_id


def _clean_part(part: str) -> str:
    """One path part made safe for an id."""
    part = unicodedata.normalize("NFC", part)
    return _ID_UNSAFE.sub("-", part).strip(".-")


def _cut(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def unique_id(doc_id: str, used: set[str]) -> str:
    """``doc_id``, or ``doc_id-2``, ``doc_id-3``... when taken (ignoring case); recorded."""
    candidate, n = doc_id, 1
    while candidate.casefold() in used:
        n += 1
        candidate = f"{doc_id}-{n}"
    used.add(candidate.casefold())
    return candidate
