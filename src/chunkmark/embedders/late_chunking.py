"""Late chunking (Jina): chunks embedded as spans of their documents.

Each document is tokenised once (with character offsets) and read by the model in windows of
``window`` model tokens, special tokens and the document prompt included; neighbouring windows
share ``window_overlap`` tokens, and each shared token takes its vector from the window where it
sits further from the edge (the overlap is split in the middle). A chunk's vector is the mean of
the vectors of the tokens that overlap its span, over every window it reaches, then the model's
modules after pooling (dense layers, normalisation) and the usual L2 normalisation. A window's
leading special tokens (and prompt) count with its first token, its trailing ones with its last,
so a chunk covering a whole window gets exactly the model's own pooled vector for that text. A
span with no token of its own (only whitespace) takes the nearest token's vector and is counted
(``late_empty_spans`` in the stats).

It needs a model that mean-pools the token vectors of a transformer (most sentence-transformers
models: all-MiniLM-L6-v2, the jina/nomic/bge families with mean pooling); ``window`` may not
exceed its position embeddings. :class:`LateChunking` holds one embedder's settings, counts and
the token vectors of the documents it read last; the embedder
(:class:`~chunkmark.embedders.sentence_transformers.SentenceTransformerEmbedder`) runs the model.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.embedders.base import DocSpan, FloatArray
from chunkmark.embedders.st_inputs import TOKEN_PATH_MODULES, module_names, special_tokens
from chunkmark.embedders.st_models import pooling_modes
from chunkmark.errors import EmbeddingError

# Model tokens per window, tokens shared by neighbouring windows, and the version of the method
# (part of the identity).
LATE_WINDOW = 512
LATE_OVERLAP = 64
LATE_VERSION = 1
# Token vectors of the documents last read by late chunking, kept for the next cells that chunk
# the same documents (the windows do not depend on the chunks).
LATE_TOKEN_CACHE_BYTES = 2 * 1024**3

# The transformer's token vectors (before pooling) for each row of token ids.
TokenVectors = Callable[[list[npt.NDArray[np.int32]]], list[npt.NDArray[np.float32]]]


def check_late_settings(window: int, window_overlap: int) -> None:
    """Raise ValueError for a window or overlap late chunking cannot use."""
    if not 0 <= window_overlap < window // 2:
        raise ValueError(
            f"window_overlap must be at least 0 and less than half the window ({window}), "
            f"got {window_overlap}"
        )
    if window < 16:
        raise ValueError(f"window must be at least 16 model tokens, got {window}")


@dataclass(eq=False, repr=False)
class LateChunking:
    """Late chunking for one embedder (see the module docs): its window settings, the token
    vectors of the documents read last (up to :data:`LATE_TOKEN_CACHE_BYTES`), and counts of
    windows read, empty spans and documents tokenised."""

    window: int = LATE_WINDOW
    window_overlap: int = LATE_OVERLAP
    windows: int = field(default=0, init=False)
    empty_spans: int = field(default=0, init=False)
    tokenized: int = field(default=0, init=False)
    tokenize_seconds: float = field(default=0.0, init=False)
    _kept: OrderedDict[bytes, LateTokens] = field(default_factory=OrderedDict, init=False)

    def identity(self) -> dict[str, Any]:
        """What the method adds to the embedder's identity."""
        return {
            "version": LATE_VERSION,
            "window": self.window,
            "window_overlap": self.window_overlap,
        }

    def post_modules(self, model: Any, name: str) -> list[Any]:
        """The modules after pooling (applied to chunk means), once the model is checked to
        mean-pool a transformer's token vectors; else an error with the fix."""
        modules = list(model)
        names = module_names(modules)
        if not names or names[0] != "Transformer" or not set(names) <= TOKEN_PATH_MODULES:
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

    def span_means(
        self, model: Any, spans: Sequence[DocSpan], prompt: str | None, forward: TokenVectors
    ) -> npt.NDArray[np.float64]:
        """The mean token vector (before post-pooling modules) of each ``(document, start,
        end)``, one row per span; each document is read once."""
        by_doc: dict[str, list[int]] = {}
        for i, (doc, _, _) in enumerate(spans):
            by_doc.setdefault(doc, []).append(i)
        pooled: npt.NDArray[np.float64] | None = None
        for doc, rows in by_doc.items():
            starts = np.fromiter((spans[i][1] for i in rows), np.int64, len(rows))
            ends = np.fromiter((spans[i][2] for i in rows), np.int64, len(rows))
            means = self._document_means(model, doc, starts, ends, prompt, forward)
            if pooled is None:
                pooled = np.zeros((len(spans), means.shape[1]), dtype=np.float64)
            pooled[np.asarray(rows, dtype=np.intp)] = means
        assert pooled is not None
        return pooled

    def _document_means(
        self,
        model: Any,
        doc: str,
        starts: npt.NDArray[np.int64],
        ends: npt.NDArray[np.int64],
        prompt: str | None,
        forward: TokenVectors,
    ) -> npt.NDArray[np.float64]:
        """The mean token vector (before post-pooling modules) of each span of one document."""
        tokens = self._tokens(model, doc, prompt, forward)
        n = len(tokens.weights)
        first = np.searchsorted(
            tokens.offsets[:, 1], starts, side="right"
        )  # first token ending after
        last = np.searchsorted(
            tokens.offsets[:, 0], ends, side="left"
        )  # tokens starting before end
        empty = first >= last
        if empty.any():
            self.empty_spans += int(empty.sum())
            first[empty] = np.minimum(first[empty], n - 1)
            last[empty] = first[empty] + 1
        prefix = np.zeros((n + 1, tokens.vectors.shape[1]), dtype=np.float64)
        np.cumsum(tokens.vectors, axis=0, dtype=np.float64, out=prefix[1:])
        weights = np.concatenate([[0.0], np.cumsum(tokens.weights, dtype=np.float64)])
        out: npt.NDArray[np.float64] = (prefix[last] - prefix[first]) / (
            weights[last] - weights[first]
        )[:, None]
        return out

    def _tokens(
        self, model: Any, doc: str, prompt: str | None, forward: TokenVectors
    ) -> LateTokens:
        """A document's token vectors, each from the window that owns it, with each window's
        special tokens folded into its first and last owned token; kept for the next cells
        that chunk the same document (up to ``LATE_TOKEN_CACHE_BYTES``)."""
        key = hashlib.blake2b(doc.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
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
        self.tokenize_seconds += time.perf_counter() - began
        self.tokenized += 1
        n = len(ids)
        head, tail = special_tokens(tokenizer)
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
            whole = forward([np.concatenate([lead, trail])])[0]
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
            for w, out in zip(windows, forward(rows), strict=True):
                if vectors.shape[1] == 0:
                    vectors = np.zeros((n, out.shape[1]), dtype=np.float32)
                lo = len(lead) + w.own_start - w.start
                vectors[w.own_start : w.own_end] = out[lo : lo + w.own_end - w.own_start]
                vectors[w.own_start] += out[: len(lead)].sum(axis=0)
                weights[w.own_start] += len(lead)
                vectors[w.own_end - 1] += out[len(out) - len(trail) :].sum(axis=0)
                weights[w.own_end - 1] += len(trail)
            tokens = LateTokens(offsets, vectors, weights)
        self._kept[key] = tokens
        held = sum(t.nbytes for t in self._kept.values())
        while held > LATE_TOKEN_CACHE_BYTES and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            held -= dropped.nbytes
        return tokens


def post_pool(post: list[Any], pooled: npt.NDArray[np.float64], device: str | None) -> FloatArray:
    """The model's modules after pooling (dense layers, normalisation) on chunk means."""
    if not post:
        return pooled.astype(np.float32)
    import torch

    with torch.inference_mode():
        features: dict[str, Any] = {
            "sentence_embedding": torch.from_numpy(pooled.astype(np.float32)).to(
                torch.device(device or "cpu")
            )
        }
        for module in post:
            features = module(features)
        out: FloatArray = features["sentence_embedding"].float().cpu().numpy()
    return out


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
