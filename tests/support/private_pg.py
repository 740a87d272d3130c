"""A PostgreSQL cluster of a test's own (initdb in a scratch directory, its own port and
socket), so that a test that stops and starts the database never touches the machine's
shared cluster, where other tests and other programs keep their data."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]


def _bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PrivateCluster:
    bindir: Path
    base: Path
    port: int
    owner: str | None  # the user the server runs as (initdb refuses root)

    @property
    def data(self) -> Path:
        return self.base / "data"

    def _as_owner(self, *cmd: str) -> list[str]:
        return ["runuser", "-u", self.owner, "--", *cmd] if self.owner else list(cmd)

    def _pg_ctl(self, *args: str) -> None:
        cmd = self._as_owner(str(self.bindir / "pg_ctl"), "-D", str(self.data), *args)
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg_ctl("-l", str(self.base / "server.log"), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._pg_ctl("-m", mode, "-w", "stop")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    async def create_database(self, name: str) -> str:
        conn = await asyncpg.connect(self.dsn())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return self.dsn(name)


def available() -> bool:
    return _bindir() is not None and (os.geteuid() != 0 or shutil.which("runuser") is not None)


@contextlib.contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    """initdb, start; stop and remove afterwards, whatever happened."""
    bindir = _bindir()
    assert bindir is not None, "PostgreSQL's server binaries are not installed"
    owner = "postgres" if os.geteuid() == 0 else None
    base = Path(tempfile.mkdtemp(prefix="ledgerlet-pg-"))  # (pytest's tmp_path is root's alone)
    try:
        if owner:
            shutil.chown(base, owner)
        cluster = PrivateCluster(bindir, base, _free_port(), owner)
        initdb = cluster._as_owner(
            str(bindir / "initdb"), "-D", str(cluster.data), "-A", "trust", "-U", "postgres", "--no-sync"
        )
        subprocess.run(initdb, check=True, capture_output=True, timeout=180)
        cluster.start()
        try:
            yield cluster
        finally:
            with contextlib.suppress(subprocess.SubprocessError):
                cluster.stop("immediate")
    finally:
        shutil.rmtree(base, ignore_errors=True)
