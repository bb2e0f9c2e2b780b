"""The model2vec embedder: a static model's vectors, the mean of its token rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.model2vec import Model2VecEmbedder, distilled_minilm
from chunkmark.embedders.st_models import minilm_package_dir
from chunkmark.errors import EmbeddingError
from static_models import minilm_tokenizer_file, write_tiny_static_model

TEXTS = [
    "The cat sat on the mat.",
    "Dogs chase cats around the garden.",
    "Quarterly revenue rose by twelve percent.",
    "",
]


@pytest.fixture
def tiny_model(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A static model with random rows over MiniLM's word-piece vocabulary."""
    return write_tiny_static_model(tmp_path / "tiny")


def test_vectors_are_the_normalised_mean_of_the_token_rows(
    tiny_model: tuple[Path, np.ndarray],
) -> None:
    from tokenizers import Tokenizer

    folder, rows = tiny_model
    tokenizer = Tokenizer.from_file(str(minilm_tokenizer_file()))
    tokenizer.no_padding()  # MiniLM's file pads to 128 word pieces
    tokenizer.no_truncation()
    unknown = tokenizer.token_to_id("[UNK]")
    embedder, _ = EMBEDDERS.build(f"model2vec(model={str(folder)!r})")
    got = embedder.embed(TEXTS)
    assert got.shape == (len(TEXTS), 8) and got.dtype == np.float32
    for text, vector in zip(TEXTS, got, strict=True):
        ids = [i for i in tokenizer.encode(text, add_special_tokens=False).ids if i != unknown]
        if not ids:
            assert not vector.any()  # no token: the zero vector, left as it is
            continue
        mean = rows[ids].mean(axis=0)
        np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), atol=2e-3)


def test_identity_follows_the_files(tiny_model: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    folder, _ = tiny_model
    first = Model2VecEmbedder(str(folder)).identity()
    assert first == Model2VecEmbedder(str(folder)).identity()
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")
    assert Model2VecEmbedder(str(folder)).identity() != first


def test_a_folder_that_is_no_model_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="no model2vec model folder there"):
        Model2VecEmbedder(str(tmp_path)).embed(["x"])


@pytest.mark.integration
def test_distilled_minilm_keeps_minilms_similarities(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """all-MiniLM-L6-v2 distilled into static vectors: pairwise similarities of real sentences
    rank like the transformer's (the distilled model is built here, from the offline package).
    Building it in the Python API draws no progress bar and prints no load report."""
    from sentence_transformers import SentenceTransformer

    from chunkmark.datasets import load_dataset

    capfd.readouterr()
    folder = distilled_minilm(tmp_path / "cache")
    assert (folder / "model.safetensors").is_file()
    printed = capfd.readouterr()
    for noise in ("Encoding tokens", "LOAD REPORT", "Loading weights", "UNEXPECTED"):
        assert noise not in printed.err and noise not in printed.out, noise
    texts = [q.text for q in load_dataset("demo").questions][:40]
    static = Model2VecEmbedder(str(folder)).embed(texts)
    teacher = SentenceTransformer(str(minilm_package_dir()), device="cpu").encode(
        texts, normalize_embeddings=True
    )
    upper = np.triu_indices(len(texts), 1)
    rho = spearmanr((static @ static.T)[upper], (teacher @ teacher.T)[upper]).statistic
    # measured 0.47 over the 780 pairs of the first 40 demo questions; unrelated vectors give ~0
    assert rho > 0.3
