from __future__ import annotations

import numpy as np
import pytest

from chunkmark.embedders import EMBEDDERS, Embedder
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import SpecError


def test_deterministic_and_normalised() -> None:
    texts = ["The cat sat on the mat.", "Stock markets fell sharply.", ""]
    a = FakeEmbedder(dimension=32).embed(texts)
    b = FakeEmbedder(dimension=32).embed(texts)
    assert a.dtype == np.float32
    assert a.shape == (3, 32)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)


def test_seed_changes_vectors() -> None:
    a = FakeEmbedder(seed=0).embed(["hello world"])
    b = FakeEmbedder(seed=1).embed(["hello world"])
    assert not np.allclose(a, b)


def test_shared_words_are_closer() -> None:
    emb = FakeEmbedder(dimension=256)
    q, near, far = emb.embed(
        [
            "how do interest rates affect bond prices",
            "bond prices fall when interest rates rise",
            "the recipe needs two eggs and flour",
        ]
    )
    assert q @ near > q @ far + 0.2


def test_feature_memo_is_bounded_and_changes_no_vector() -> None:
    texts = [f"word{i} other{i * 7} shared words" for i in range(300)]
    reference = FakeEmbedder(dimension=32).embed(texts)
    small = FakeEmbedder(dimension=32)
    small.memo_size = 16
    for lo in range(0, len(texts), 50):
        np.testing.assert_array_equal(small.embed(texts[lo : lo + 50]), reference[lo : lo + 50])
        assert len(small._slots) <= 16


def test_counts_calls_and_inputs() -> None:
    emb = FakeEmbedder()
    emb.embed(["a", "b"])
    emb.embed(["c"], kind="query")
    assert (emb.stats().requests, emb.stats().inputs) == (2, 3)


def test_registered_and_protocol() -> None:
    emb, spec = EMBEDDERS.build("fake(dimension=16)")
    assert isinstance(emb, Embedder)
    assert str(spec) == "fake(dimension=16, seed=0, max_words=None)"
    assert emb.embed(["x"]).shape == (1, 16)
    assert emb.identity() == {"embedder": "fake", "version": 1, "dimension": 16, "seed": 0}
    with pytest.raises(SpecError):
        EMBEDDERS.build("fake(dimension=0)")
