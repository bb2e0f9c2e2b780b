"""A deterministic embedder for tests: no model, no dependencies, still meaningful.

Each text becomes a bag of hashed features (lower-cased words and character trigrams), every
feature adding a signed unit to one of ``dimension`` coordinates. Texts that share words share
coordinates, so they come out closer than unrelated texts; the same text always gives the same
vector, and ``seed`` picks a different (equally deterministic) hashing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkmark.counters import EmbedderStats
from chunkmark.embedders.base import EMBEDDERS, FloatArray, Kind, l2_normalise
from chunkmark.specs import class_factory

_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5
_EMPTY_FEATURE = "\x00empty"


@dataclass(eq=False, repr=False)
class FakeEmbedder:
    """Deterministic hashed word/trigram vectors for tests and dry runs (no model needed).

    Texts sharing words are closer than unrelated texts. ``seed`` selects the hashing.
    ``max_words`` makes it read only each text's first words, as a model truncates its input.
    It counts its calls so tests can see cache hits. Its ``__init__`` parameters are the spec
    parameters of ``fake(...)``.

    Each feature's coordinate and sign are remembered, up to ``memo_size`` features: a large
    corpus has millions of distinct words (every perturbed copy in ``benchmarks/scale.py``
    adds its own), so the memo starts again when full instead of growing with the corpus the
    way no model's vocabulary does. Vectors do not depend on it.
    """

    memo_size = 1 << 18

    dimension: int = 64
    seed: int = 0
    max_words: int | None = None
    inputs_embedded: int = field(default=0, init=False)
    calls: int = field(default=0, init=False)
    texts_embedded: int = field(default=0, init=False)
    _slots: dict[str, tuple[int, float]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.dimension < 1:
            raise ValueError(f"dimension must be at least 1, got {self.dimension}")
        if self.max_words is not None and self.max_words < 1:
            raise ValueError(f"max_words must be at least 1, got {self.max_words}")
        self._salt = (self.seed % 2**64).to_bytes(8, "little")

    @property
    def name(self) -> str:
        return "fake"

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "embedder": "fake",
            "version": 1,
            "dimension": self.dimension,
            "seed": self.seed,
        }
        if self.max_words is not None:
            identity["max_words"] = self.max_words
        return identity

    def supports_model_inputs(self, kind: Kind = "document") -> bool:
        """With ``max_words``, it reads only a text's first words, like a model's window."""
        return self.max_words is not None

    def model_inputs(self, texts: Sequence[str], kind: Kind = "document") -> list[bytes]:
        return [self._window(t).encode("utf-8", "surrogatepass") for t in texts]

    def embed_inputs(self, inputs: Sequence[bytes], kind: Kind = "document") -> FloatArray:
        self.inputs_embedded += len(inputs)
        return self.embed([i.decode("utf-8", "surrogatepass") for i in inputs], kind)

    def _window(self, text: str) -> str:
        if self.max_words is None:
            return text
        for count, match in enumerate(_WORD.finditer(text), start=1):
            if count == self.max_words:
                return text[: match.end()]
        return text

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        self.calls += 1
        self.texts_embedded += len(texts)
        texts = [self._window(t) for t in texts]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                index, sign = self._slot(feature)
                out[row, index] += sign * weight
        return l2_normalise(out)

    def stats(self) -> EmbedderStats:
        """Texts embedded (``inputs``) and ``embed`` calls (``requests``)."""
        return EmbedderStats(inputs=self.texts_embedded, requests=self.calls)

    def _slot(self, feature: str) -> tuple[int, float]:
        slot = self._slots.get(feature)
        if slot is None:
            if len(self._slots) >= self.memo_size:
                self._slots.clear()
            digest = hashlib.blake2b(feature.encode(), digest_size=8, key=self._salt).digest()
            value = int.from_bytes(digest, "little")
            slot = (value >> 1) % self.dimension, 1.0 if value & 1 else -1.0
            self._slots[feature] = slot
        return slot


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        return [(_EMPTY_FEATURE, 1.0)]
    features = [("w:" + w, _WORD_WEIGHT) for w in words]
    for w in words:
        padded = f" {w} "
        features.extend(("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return features


EMBEDDERS.register("fake")(class_factory(FakeEmbedder))
