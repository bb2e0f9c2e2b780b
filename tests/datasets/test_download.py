from __future__ import annotations

import hashlib
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chunkmark.cli.datasets import register
from chunkmark.datasets import download as dl
from chunkmark.datasets import load_chroma, load_dataset
from chunkmark.errors import DatasetError
from chunkmark.paths import CACHE_DIR_ENV, resolve_cache_dir

REMOTE = "src/chunking_evaluation/evaluation_framework/general_evaluation_data"


class Server:
    """A static file server on 127.0.0.1 that counts the requests it answers."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self) -> None:
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(root))
    return root


@pytest.fixture
def mirror(
    chroma_general_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Server]:
    """A temporary copy of the benchmark laid out like the upstream repository, served."""
    root = tmp_path / "mirror"
    shutil.copytree(chroma_general_dir / "corpora", root / REMOTE / "corpora")
    shutil.copy(chroma_general_dir / "questions_df.csv", root / REMOTE / "questions_df.csv")
    shutil.copy(chroma_general_dir / "LICENSE", root / "LICENSE")
    server = Server(root)
    monkeypatch.setenv(dl.BASE_URL_ENV, server.url)
    yield server
    server.close()


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_pinned_hashes_match_the_shared_copy(chroma_general_dir: Path) -> None:
    for item in dl.CHROMA_GENERAL.files:
        data = (chroma_general_dir / item.local).read_bytes()
        assert hashlib.sha256(data).hexdigest() == item.sha256, item.local


def test_cache_dir_follows_the_environment(cache: Path) -> None:
    assert dl.dataset_dir("chroma-general") == cache / "datasets" / "chroma-general"
    assert not dl.is_downloaded("chroma-general")


def test_datasets_share_the_cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(CACHE_DIR_ENV, "~/cache")
    assert dl.dataset_dir("chroma-general") == tmp_path / "cache" / "datasets" / "chroma-general"
    monkeypatch.delenv(CACHE_DIR_ENV)
    assert dl.dataset_dir("chroma-general") == resolve_cache_dir() / "datasets" / "chroma-general"


@pytest.mark.integration
def test_download_verifies_every_file_and_loads(cache: Path, mirror: Server) -> None:
    folder = dl.download("chroma-general")
    assert folder == cache / "datasets" / "chroma-general"
    assert len(mirror.requests) == 7
    assert dl.is_downloaded("chroma-general")
    assert (folder / "LICENSE").read_text().startswith("MIT License")
    assert len(load_chroma(folder).questions) == 472
    assert leftovers(cache) == []

    dl.download("chroma-general")  # everything verified already: nothing fetched
    assert len(mirror.requests) == 7
    dl.download("chroma-general", force=True)
    assert len(mirror.requests) == 14


@pytest.mark.integration
def test_corrupted_file_is_rejected_and_not_written(cache: Path, mirror: Server) -> None:
    served = mirror.root / REMOTE / "corpora" / "finance.md"
    served.write_bytes(served.read_bytes() + b"tampered")
    with pytest.raises(DatasetError) as info:
        dl.download("chroma-general")
    message = str(info.value)
    assert "\n" not in message
    assert "corpora/finance.md has SHA-256" in message
    assert "the file was not saved" in message
    assert "Fix: " in message
    folder = dl.dataset_dir("chroma-general")
    assert not (folder / "corpora" / "finance.md").exists()
    assert (folder / "corpora" / "chatlogs.md").exists()  # verified before it: kept
    assert leftovers(cache) == []
    assert not dl.is_downloaded("chroma-general")


@pytest.mark.integration
def test_forced_download_of_a_bad_file_keeps_the_good_copy(
    cache: Path, mirror: Server, chroma_general_dir: Path
) -> None:
    folder = dl.download("chroma-general")
    served = mirror.root / REMOTE / "questions_df.csv"
    served.write_bytes(b"question,references,corpus_id\n")
    with pytest.raises(DatasetError, match="SHA-256"):
        dl.download("chroma-general", force=True)
    original = (chroma_general_dir / "questions_df.csv").read_bytes()
    assert (folder / "questions_df.csv").read_bytes() == original
    assert leftovers(cache) == []


@pytest.mark.integration
def test_load_dataset_downloads_on_first_use(
    cache: Path, mirror: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = load_dataset("chroma-general")
    assert len(dataset.questions) == 472
    assert "downloading the chroma-general dataset" in capsys.readouterr().err
    load_dataset("chroma-general")
    assert capsys.readouterr().err == ""
    assert len(mirror.requests) == 7


def test_unreachable_source(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv(dl.BASE_URL_ENV, f"http://127.0.0.1:{port}")
    with pytest.raises(DatasetError) as info:
        dl.download("chroma-general")
    message = str(info.value)
    assert message.startswith(f"could not reach http://127.0.0.1:{port}/")
    assert "Fix: Check your connection, or download the files manually" in message
    assert str(dl.dataset_dir("chroma-general")) in message
    assert not dl.dataset_dir("chroma-general").exists() or leftovers(cache) == []


def test_missing_file_on_the_server(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty").mkdir()
    server = Server(tmp_path / "empty")
    monkeypatch.setenv(dl.BASE_URL_ENV, server.url)
    try:
        with pytest.raises(DatasetError, match="HTTP 404"):
            dl.download("chroma-general")
    finally:
        server.close()


def test_unknown_dataset_name(cache: Path) -> None:
    with pytest.raises(DatasetError, match="no downloadable dataset named 'nope'"):
        dl.download("nope")


@pytest.mark.integration
def test_cli_download(cache: Path, mirror: Server) -> None:
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    result = runner.invoke(app, ["datasets", "download", "chroma-general"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "ok: chroma-general in" in result.output
    assert "5 documents, 472 questions" in result.output
    result = runner.invoke(app, ["datasets", "download", "chroma-general"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "already downloaded" in result.output
    listed = runner.invoke(app, ["datasets", "list"], env={"COLUMNS": "200"})
    assert "downloaded:" in listed.output
