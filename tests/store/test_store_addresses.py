"""Store addresses that would lose a run, or read a store that is not there, are input
errors (exit 2) before anything runs; a store that cannot be written can still be read."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledgerlet_store.dsn import BadAddress, check_address
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.support.audit_server import serving
from tests.support.cli import Command
from tests.support.mounts import tmpfs

LOSING = [
    ("sqlite:///", "names no file"),  # SQLAlchemy opened it in memory: the run was gone at exit 0
    ("sqlite://", "names no file"),
    ("sqlite://events.db", "names no file"),  # a host, not a path
    ("sqlite:///:memory:", "store in memory"),
    ("postgresql://", "names no database"),  # the server picked a database of its own
    ("postgresql://postgres@127.0.0.1:5432/", "names no database"),
    ("not a dsn", "is not a store address"),  # became a SQLite file of that name
    ("events", "is not a store address"),
    ("mysql://u@h/db", "unsupported store"),
    ("", "empty"),
    ("postgresql://h:port/db", "not a PostgreSQL address"),
]


def in_a_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command that serves when it fails to refuse: in a process of its own, ended by a timeout."""
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("dsn", "said"), LOSING)
def test_addresses_that_would_lose_the_run_are_refused(dsn: str, said: str) -> None:
    with pytest.raises(BadAddress, match=said):
        check_address(dsn)


def test_sqlite_files_are_checked_for_what_the_command_does(tmp_path: Path) -> None:
    check_address(f"sqlite:///{tmp_path / 'new.db'}")  # a run creates it
    check_address(str(tmp_path / "bare.db"))  # a bare path ending in .db is a SQLite file
    with pytest.raises(BadAddress, match="read commands never create one"):
        check_address(f"sqlite:///{tmp_path / 'new.db'}", existing=True)
    with pytest.raises(BadAddress, match="no directory"):
        check_address(f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}")
    with pytest.raises(BadAddress, match="a directory"):
        check_address(f"sqlite:///{tmp_path}")
    with pytest.raises(BadAddress, match="not a regular file"):
        check_address("sqlite:////dev/null")


@pytest.mark.parametrize(("dsn", "said"), LOSING[:8])
def test_run_refuses_them_with_exit_2_and_creates_nothing(
    dsn: str, said: str, ledgerlet: Command, tmp_path: Path
) -> None:
    log = tmp_path / "d.jsonl"
    res = ledgerlet(
        "run", str(EXAMPLES / "memory-pressure.yaml"), "--decisions", str(log), "--store", dsn, cwd=tmp_path
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert said in res.stderr and "Traceback" not in res.stderr
    assert sorted(os.listdir(tmp_path)) == []  # no log, no file named after the address


@pytest.mark.parametrize("command", [["runs"], ["replay"], ["explain", "default/db"], ["report", "--out", "r.html"]])
def test_read_commands_refuse_a_missing_sqlite_file(command: list[str], ledgerlet: Command, tmp_path: Path) -> None:
    res = ledgerlet(*command, "--store", f"sqlite:///{tmp_path / 'typo.db'}", cwd=tmp_path)
    assert res.returncode == 2 and "no store at" in res.stderr, res.stderr
    assert not (tmp_path / "typo.db").exists()


def test_serve_refuses_a_missing_sqlite_file_instead_of_serving_an_empty_store(tmp_path: Path) -> None:
    res = in_a_process("serve", "--store", f"sqlite:///{tmp_path / 'typo.db'}", "--port", "1", cwd=tmp_path)
    assert res.returncode == 2 and "no store at" in res.stderr, res.stderr
    assert not (tmp_path / "typo.db").exists()
    env = {**os.environ, "LEDGERLET_STORE": f"sqlite:///{tmp_path / 'typo.db'}"}
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "service", "audit-api"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2 and "no store at" in res.stderr, res.stderr


@pytest.mark.slow  # (waits out a store's stated wait, or mounts a filesystem)
def test_a_store_on_a_read_only_filesystem_is_read_but_never_written(ledgerlet: Command, tmp_path: Path) -> None:
    """It could not even be read (migrating takes the write lock; WAL wants its -shm file)."""
    with tmpfs(tmp_path / "ro") as mount:
        dsn = f"sqlite:///{mount.path / 'events.db'}"
        log = tmp_path / "first.jsonl"
        res = ledgerlet(
            "run",
            str(EXAMPLES / "memory-pressure.yaml"),
            "--decisions",
            str(log),
            "--store",
            dsn,
            "--run-id",
            "mp",
            cwd=tmp_path,
        )
        assert res.returncode == 0, res.stderr
        mount.read_only()
        runs = ledgerlet("runs", "--store", dsn, "-o", "json", cwd=tmp_path)
        assert runs.returncode == 0, runs.stderr
        assert '"run": "mp"' in runs.stdout and '"status": "completed"' in runs.stdout
        explain = ledgerlet("explain", "default/cache", "--store", dsn, cwd=tmp_path)
        assert explain.returncode == 0 and "evicted" in explain.stdout, explain.stderr
        verify = ledgerlet("replay", "--verify", "--store", dsn, cwd=tmp_path)
        assert verify.returncode == 0 and "verified" in verify.stdout, verify.stdout + verify.stderr
        with serving(dsn) as url:
            import httpx

            assert [r["run"] for r in httpx.get(f"{url}/v1/runs").json()] == ["mp"]
        # writing it is a failure, said at once
        again = ledgerlet(
            "run",
            str(EXAMPLES / "memory-pressure.yaml"),
            "--decisions",
            str(tmp_path / "again.jsonl"),
            "--store",
            dsn,
            cwd=tmp_path,
        )
        assert again.returncode == 1 and "it cannot be written" in again.stderr, again.stderr
        assert "Traceback" not in again.stderr


def test_the_library_still_opens_a_store_in_memory() -> None:
    async def count() -> int:
        async with await open_store("sqlite:///:memory:") as store:
            return await store.count()

    assert asyncio.run(count()) == 0
