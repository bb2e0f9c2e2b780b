"""Where a sentence-transformers model runs: the device, the precision it may run in there, and
how many texts go in one batch (see docs/gpu.md).

``device="auto"`` takes a CUDA GPU when torch sees one, then Apple's mps, else the CPU,
resolved when the model loads. The precision a model runs in (``fp32``, ``fp16`` on CUDA,
``bf16``) is part of the embedder identity; the device is not: fp32 vectors from a GPU and from a
CPU differ by float rounding only, so a cache filled on a GPU serves a CPU rerun.
``precision="auto"`` is resolved to one of them by :func:`resolve_precision` (bf16 where the
hardware runs it natively with matrix units, else fp32). Nothing here imports torch until a
function that needs it runs.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from chunkmark.errors import EmbeddingError

Source = Literal["package", "folder", "hub"]
Precision = Literal["fp32", "fp16", "bf16"]
"""A precision a model runs in."""
PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "bf16")
PrecisionSpec = Literal["fp32", "fp16", "bf16", "auto"]
"""A precision as a spec may ask for it: one of :data:`PRECISIONS`, or ``auto``."""
PRECISION_SPECS: tuple[PrecisionSpec, ...] = (*PRECISIONS, "auto")
DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
# Texts per batch on a CPU, by measurement on a 2-core CPU (benchmarks/precision.py,
# length-sorted batches of benchmark chunks): fp32 peaks at 16, bf16 at 32. fp16 never runs
# on a CPU.
DEFAULT_BATCH_SIZE: dict[str, int] = {"fp32": 16, "bf16": 32}
# Texts per batch on a GPU for windows up to GPU_BATCH_WINDOW tokens, at most: enough rows to
# keep the GPU busy on small models; longer windows get proportionally fewer rows, and CUDA
# batches are also capped by the GPU's memory (see default_batch_size).
GPU_BATCH_SIZE: dict[str, int] = {"fp32": 128, "fp16": 256, "bf16": 256}
GPU_BATCH_WINDOW = 512
# Share of the GPU memory left after loading the weights that one batch's activations may use.
GPU_MEMORY_SHARE = 0.5


def cpu_flags() -> str:
    """This CPU's feature flags as ``/proc/cpuinfo`` lists them ('' where it cannot be read)."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_supports_bf16(flags: str | None = None) -> bool:
    """Whether a CPU has native bfloat16 instructions (AVX512-BF16 or AMX); ``flags`` is its flag
    list as ``/proc/cpuinfo`` writes it (this CPU's when None). Without them torch still runs
    bf16 on the CPU, emulated, and slower than fp32."""
    words = (cpu_flags() if flags is None else flags).split()
    return any(flag in words for flag in ("avx512_bf16", "amx_bf16"))


def cpu_has_amx(flags: str | None = None) -> bool:
    """Whether a CPU has AMX bfloat16 tile units (``amx_bf16``); ``flags`` as in
    :func:`cpu_supports_bf16`."""
    return "amx_bf16" in (cpu_flags() if flags is None else flags).split()


def resolve_precision(
    requested: PrecisionSpec, device: str, *, flags: str = "", cuda_bf16: bool = False
) -> Precision:
    """The precision a model asked for ``requested`` runs in on the resolved ``device``.

    An explicit precision is itself. ``auto`` is ``bf16`` where bfloat16 runs on matrix units,
    the one fast path measured faster than fp32 with the same verdicts (docs/embedders.md): a
    CUDA GPU that supports bfloat16 (``cuda_bf16``), or a CPU whose ``flags`` (as
    ``/proc/cpuinfo`` lists them) include AMX (``amx_bf16``); else ``fp32``: on a CPU without
    AMX (AVX512-BF16 alone included) bf16 is emulated or barely faster, and on mps chunkmark runs
    fp32 only. Pure: the caller reads the flags and asks torch about the GPU.
    """
    if requested != "auto":
        return requested
    if device.startswith("cuda"):
        return "bf16" if cuda_bf16 else "fp32"
    if device == "cpu" and cpu_has_amx(flags):
        return "bf16"
    return "fp32"


def run_precision(requested: PrecisionSpec, device: str) -> Precision:
    """:func:`resolve_precision` on this machine: the CPU's flags and, for a CUDA ``device``,
    whether torch says the GPU supports bfloat16 (imports torch only then)."""
    if requested != "auto":
        return requested
    cuda_bf16 = False
    if device.startswith("cuda"):
        import torch

        cuda_bf16 = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return resolve_precision(requested, device, flags=cpu_flags(), cuda_bf16=cuda_bf16)


def is_device(device: str) -> bool:
    """Whether ``device`` is one of :data:`DEVICES` (``cuda:N`` with a number)."""
    return device in ("auto", "cpu", "cuda", "mps") or re.fullmatch(r"cuda:\d+", device) is not None


def resolve_device(device: str) -> str:
    """The torch device to run on: ``auto`` takes the current CUDA GPU when torch sees one, then
    Apple's mps, else the CPU; ``cuda`` names the current CUDA GPU. Imports torch."""
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return f"cuda:{torch.cuda.current_device()}"
        return "mps" if _mps_available(torch) else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EmbeddingError(
                f"device={device!r} was asked for, but torch {torch.__version__} sees no CUDA "
                "GPU (no GPU or driver, or a CPU-only build of torch).",
                "Use device='auto' (the GPU when there is one, else the CPU) or 'cpu', or install "
                "a CUDA build of torch on a machine with an NVIDIA GPU.",
            )
        index = int(device[5:]) if ":" in device else torch.cuda.current_device()
        count = torch.cuda.device_count()
        if index >= count:
            raise EmbeddingError(
                f"device={device!r} was asked for, but torch sees {count} CUDA GPU(s), "
                f"numbered 0 to {count - 1}.",
                "Use device='cuda' (the current GPU) or a number below the count; "
                "CUDA_VISIBLE_DEVICES renumbers the GPUs a process sees.",
            )
        return f"cuda:{index}"
    if device == "mps" and not _mps_available(torch):
        raise EmbeddingError(
            "device='mps' was asked for, but torch reports mps unavailable "
            "(it needs Apple silicon and a torch built with mps).",
            "Use device='auto' or 'cpu'.",
        )
    return device


def run_device(requested: str, precision: Precision) -> str:
    """The torch device a model asked to run on ``requested`` in ``precision`` loads on
    (:func:`resolve_device`), once the precision is known to run there."""
    device = resolve_device(requested)
    _check_precision(precision, device, requested)
    return device


def _mps_available(torch: Any) -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def device_name(device: str) -> str | None:
    """The GPU's name for a CUDA device (e.g. ``NVIDIA H100 80GB HBM3``), else None."""
    if not device.startswith("cuda"):
        return None
    import torch

    return str(torch.cuda.get_device_name(int(device[5:])))


@dataclass(frozen=True)
class ModelWidths:
    """A transformer's widths, from its config: hidden size, feed-forward size, heads."""

    hidden: int
    intermediate: int
    heads: int


def activation_bytes(window: int, widths: ModelWidths) -> int:
    """An upper estimate of the memory one sequence of ``window`` tokens needs in one layer.

    Inference keeps no earlier layer's activations, so one layer's count: about eight tensors as
    wide as the hidden size (input, query, key, value, attention output, residual sums), two as
    wide as the feed-forward layer, and two ``window x window`` score matrices per head
    (attention kernels that avoid them use less), all counted at 4 bytes a value.
    """
    per_token = 8 * widths.hidden + 2 * widths.intermediate
    return 4 * (window * per_token + 2 * widths.heads * window * window)


def default_batch_size(
    device: str,
    precision: Precision,
    window: int,
    memory: int | None = None,
    widths: ModelWidths | None = None,
) -> int:
    """Texts per batch when none is asked for.

    - CPU: the sizes measured fastest, :data:`DEFAULT_BATCH_SIZE` (16 for fp32, 32 for bf16).
    - GPU: :data:`GPU_BATCH_SIZE` (128 for fp32, 256 for fp16 and bf16) for windows up to
      :data:`GPU_BATCH_WINDOW` (512) tokens, proportionally fewer for longer windows, so a batch
      holds at most that many tokens; on CUDA, also no more sequences than fit in
      :data:`GPU_MEMORY_SHARE` of ``memory`` (the GPU's memory less the loaded weights) by
      :func:`activation_bytes`. Rounded down to a power of two, at least 1.

    Batches are length-sorted, so the first batch holds the longest inputs: a size that does not
    fit fails at once (with an error naming a smaller size), not late in a run.
    """
    if not device.startswith(("cuda", "mps")):
        return DEFAULT_BATCH_SIZE.get(precision, DEFAULT_BATCH_SIZE["fp32"])
    size = GPU_BATCH_SIZE[precision] * GPU_BATCH_WINDOW // max(window, GPU_BATCH_WINDOW)
    if memory is not None and widths is not None:
        size = min(size, int(memory * GPU_MEMORY_SHARE) // activation_bytes(window, widths))
    return 1 << (max(size, 1).bit_length() - 1)


def model_batch_size(device: str, precision: Precision, model: Any) -> int:
    """:func:`default_batch_size` for a loaded sentence-transformers ``model`` on ``device``: its
    input limit as the window (512 when it has none), and on CUDA the memory left and its
    widths."""
    window = model.max_seq_length
    window = window if isinstance(window, int) and window > 0 else GPU_BATCH_WINDOW
    return default_batch_size(device, precision, window, *_gpu_room(device, model))


def _gpu_room(device: str, model: Any) -> tuple[int | None, ModelWidths | None]:
    """A CUDA GPU's memory less what the loaded model holds, and the model's widths (None where
    unknown: not CUDA, or a first module that is not a Hugging Face transformer)."""
    if not device.startswith("cuda"):
        return None, None
    import torch

    index = int(device[5:])
    memory = torch.cuda.get_device_properties(index).total_memory
    memory -= torch.cuda.memory_allocated(index)
    first = next(iter(model), None)
    config = getattr(getattr(first, "auto_model", None), "config", None)
    hidden = getattr(config, "hidden_size", None)
    if not isinstance(hidden, int):
        return memory, None
    intermediate = getattr(config, "intermediate_size", None)
    heads = getattr(config, "num_attention_heads", None)
    return memory, ModelWidths(
        hidden,
        intermediate if isinstance(intermediate, int) else 4 * hidden,
        heads if isinstance(heads, int) else max(1, hidden // 64),
    )


def fp16_refused(device: str, requested: str | None = None) -> EmbeddingError:
    where = (
        f"device={requested!r}, which resolved to {device} (torch sees no CUDA GPU)"
        if requested is not None and requested != device
        else f"device={device!r}"
    )
    return EmbeddingError(
        f"precision='fp16' was asked for on {where}; fp16 runs on CUDA GPUs only "
        "(half-precision matrix products on a CPU are slow or unsupported).",
        "Use precision='fp32' (the default), or 'bf16' on a CPU with AVX512-BF16 or AMX; run "
        "fp16 with device='auto' or 'cuda' where torch sees a CUDA GPU.",
    )


def _check_precision(precision: Precision, device: str, requested: str | None = None) -> None:
    """Refuse a precision the resolved ``device`` cannot run (``requested`` is what the user
    asked for, e.g. ``auto``, named in the message)."""
    if precision == "fp32":
        return
    if precision == "fp16":
        if device.startswith("cuda"):
            return
        raise fp16_refused(device, requested)
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return
        raise EmbeddingError(
            f"precision='bf16' was asked for on {device}, which does not support bfloat16.",
            "Use precision='fp16' (any CUDA GPU) or 'fp32'.",
        )
    if device == "mps":
        raise EmbeddingError(
            "precision='bf16' was asked for on mps, where chunkmark runs fp32 only.",
            "Use precision='fp32' (the default).",
        )
    # A CPU runs bf16 everywhere: natively with AVX512-BF16 or AMX, emulated (slower than
    # fp32, the same vectors within bf16 rounding) without; the stats say which.


def autocast(precision: Precision, device: str | None) -> Any:
    """Half-precision autocast for fp16/bf16: matrix products in half precision, while
    normalisation, softmax and reductions stay in float32."""
    if precision == "fp32":
        return contextlib.nullcontext()
    import torch

    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    return torch.autocast(device_type=kind, dtype=dtype)


@contextlib.contextmanager
def out_of_memory(
    device: str | None, batch_size: int, model: str, precision: str
) -> Iterator[None]:
    """Turn a CUDA out-of-memory error into one that names a batch size that may fit."""
    import torch

    try:
        yield
    except torch.cuda.OutOfMemoryError:
        raise EmbeddingError(
            f"{device} ran out of memory embedding batches of {batch_size} texts with "
            f"{model} ({precision}).",
            f"Pass a smaller batch_size (e.g. batch_size={max(1, batch_size // 2)}), or free the "
            "GPU's memory held by other processes.",
        ) from None


def non_finite_error(model: str, precision: str, device: str | None) -> EmbeddingError:
    """The error for vectors with inf or NaN, naming a wider precision where there is one."""
    fix = (
        "Use precision='bf16' (same range as float32) or 'fp32'."
        if precision == "fp16"
        else "Use precision='fp32'."
        if precision == "bf16"
        else "Check the model's files; this model cannot be evaluated as loaded."
    )
    return EmbeddingError(
        f"{model} returned non-finite vectors (inf or NaN) in {precision} "
        f"on {device}; its activations overflow this precision.",
        fix,
    )
