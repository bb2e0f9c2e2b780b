"""Downloadable datasets: Chroma's general benchmark, fetched once and cached.

Files come from the public GitHub repository brandonstarxel/chunking_evaluation (MIT licence)
through raw.githubusercontent.com. Each file is checked against a pinned SHA-256 and written
atomically, so the cache holds either nothing or a verified copy of each file.

Environment variables:

- ``CHUNKMARK_CACHE_DIR``: the cache root (default: the user cache dir of "chunkmark"), as
  :func:`chunkmark.paths.resolve_cache_dir` finds it; datasets go to
  ``<cache>/datasets/<name>/``.
- ``CHUNKMARK_DOWNLOAD_BASE_URL``: replaces the repository's raw base URL, for mirrors and
  tests; file paths below it are the repository's.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chunkmark.errors import DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.paths import resolve_cache_dir

BASE_URL_ENV = "CHUNKMARK_DOWNLOAD_BASE_URL"
_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """A file of a downloadable dataset: where it goes, where it comes from, its SHA-256."""

    local: str
    remote: str
    sha256: str


@dataclass(frozen=True, slots=True)
class RemoteDataset:
    name: str
    description: str
    base_url: str
    homepage: str
    files: tuple[RemoteFile, ...]


_GENERAL = "src/chunking_evaluation/evaluation_framework/general_evaluation_data"

CHROMA_GENERAL = RemoteDataset(
    name="chroma-general",
    description="Chroma's general retrieval benchmark: 5 corpora, 472 questions (MIT).",
    base_url="https://raw.githubusercontent.com/brandonstarxel/chunking_evaluation/main",
    homepage="https://github.com/brandonstarxel/chunking_evaluation",
    files=(
        RemoteFile(
            "corpora/chatlogs.md",
            f"{_GENERAL}/corpora/chatlogs.md",
            "543a98f82b2a6a492349fd7f8c9d6c3e78d1a4af81d13c79a7fd513c3f65bda6",
        ),
        RemoteFile(
            "corpora/finance.md",
            f"{_GENERAL}/corpora/finance.md",
            "1c48d0156820abc88e46e5c992fa0cd2708b07ae59a3771b2b18234b7208561f",
        ),
        RemoteFile(
            "corpora/pubmed.md",
            f"{_GENERAL}/corpora/pubmed.md",
            "0fd9242ffb253695e5d0f0215cb79a66a2a8f1236591e764c60d370747684ced",
        ),
        RemoteFile(
            "corpora/state_of_the_union.md",
            f"{_GENERAL}/corpora/state_of_the_union.md",
            "6fc21d560d31eb2421e337596feea0f83f1fa9ca02c6c4e47bc26959d7531b37",
        ),
        RemoteFile(
            "corpora/wikitexts.md",
            f"{_GENERAL}/corpora/wikitexts.md",
            "74cafcdb771185ecb9f22cc41b73e2e44477e0636ecf9cf1f96fd6ee0f4b86c0",
        ),
        RemoteFile(
            "questions_df.csv",
            f"{_GENERAL}/questions_df.csv",
            "3ab3901889b8900f43775537bf12d36bd6614255fc59124faca31bede1dda7a3",
        ),
        RemoteFile(
            "LICENSE",
            "LICENSE",
            "d45a8feb04274ffe74d308c1ce44db7af536b6fe66f48a96566a4e4329ffba27",
        ),
    ),
)

DOWNLOADABLE: dict[str, RemoteDataset] = {CHROMA_GENERAL.name: CHROMA_GENERAL}


def dataset_dir(name: str) -> Path:
    """Where the downloadable dataset ``name`` is (or would be) cached."""
    return resolve_cache_dir() / "datasets" / _remote(name).name


def is_downloaded(name: str) -> bool:
    """True when every file of ``name`` is in the cache with its pinned SHA-256."""
    folder = dataset_dir(name)
    return all(verified(folder / f.local, f.sha256) for f in _remote(name).files)


def download(
    name: str, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> Path:
    """Fetch the dataset ``name`` into the cache (files already verified are kept unless
    ``force``) and return its folder. ``progress`` receives one line per file fetched.

    Raises :class:`DatasetError` when the source cannot be reached or a file's SHA-256 differs
    from the pinned value; a file is written only once verified.
    """
    remote = _remote(name)
    folder = dataset_dir(name)
    base = os.environ.get(BASE_URL_ENV) or remote.base_url
    manual = (
        f"Check your connection, or download the files manually from {remote.homepage} into "
        f"{folder} (corpora/*.md, questions_df.csv)."
    )
    for item in remote.files:
        target = folder / item.local
        if not force and verified(target, item.sha256):
            continue
        url = f"{base.rstrip('/')}/{item.remote}"
        if progress is not None:
            progress(f"downloading {url}")
        data = fetch_url(url, manual, BASE_URL_ENV)
        digest = hashlib.sha256(data).hexdigest()
        if digest != item.sha256:
            raise DatasetError(
                f"{url} has SHA-256 {digest}, not the pinned {item.sha256}; the file was not "
                "saved.",
                f"Retry later; if it persists the upstream file changed: download it from "
                f"{remote.homepage} into {folder} and check it with "
                f"`chunkmark datasets validate {folder}`.",
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target, data)
    return folder


def _remote(name: str) -> RemoteDataset:
    try:
        return DOWNLOADABLE[name]
    except KeyError:
        raise DatasetError(
            f"no downloadable dataset named {name!r}.",
            f"Use one of: {', '.join(sorted(DOWNLOADABLE))}.",
        ) from None


def verified(path: Path, sha256: str) -> bool:
    """Whether ``path`` exists and its bytes have the SHA-256 ``sha256``."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == sha256


def fetch_url(url: str, manual: str, base_url_env: str) -> bytes:
    """The bytes at ``url``; a DatasetError whose fix is ``manual`` when it cannot be fetched
    (or names ``base_url_env`` when the URL it made is not http(s))."""
    request = urllib.request.Request(url, headers={"User-Agent": "chunkmark"})
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
            data: bytes = response.read()
    except urllib.error.HTTPError as exc:
        message = f"could not download {url} (HTTP {exc.code} {exc.reason})."
        raise DatasetError(message, manual) from None
    except ValueError as exc:
        raise DatasetError(
            f"cannot download from {url!r} ({exc}).",
            f"Set {base_url_env} to an http(s) URL, or unset it.",
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise DatasetError(f"could not reach {url} ({reason}).", manual) from None
    return data
