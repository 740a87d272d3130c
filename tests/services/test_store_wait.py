"""A store that cannot be written ends ``ledgerlet run`` after ``--store-wait`` seconds,
with exit 1, the reason and how to complete the run (it was "retrying in 5.0s" for ever
on a full disk, a read-only store or a stopped PostgreSQL); PostgreSQL away for less
than the wait is still ridden out, and nothing is lost."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledgerlet_store.runs import run_states
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.support import private_pg
from tests.support.mounts import tmpfs


def _scenario(tmp_path: Path, duration: str = "24h") -> Path:
    """memory-pressure.yaml made long (some 15 s of work): the store fails mid-run."""
    path = tmp_path / "long.yaml"
    path.write_text((EXAMPLES / "memory-pressure.yaml").read_text().replace("duration: 12m", f"duration: {duration}"))
    return path


def _start(scenario: Path, dsn: str, log: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ledgerlet_services.app.cli", "run", str(scenario), "--quiet", "--run-id", "cut"]
    cmd += ["--decisions", str(log), "--store", dsn, *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def _stored(dsn: str, run: str) -> int:
    try:
        async with await open_store(dsn, migrate=False) as store:
            return await store.count(run)
    except Exception:  # (not created yet)
        return 0


def _when_storing(proc: subprocess.Popen[str], dsn: str) -> None:
    """Return once the run has stored something (it is under way), polling."""
    deadline = time.monotonic() + 120
    while asyncio.run(_stored(dsn, "cut")) == 0:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()


async def _state(dsn: str) -> str:
    async with await open_store(dsn) as store:
        return {s.run: s.status for s in await run_states(store)}["cut"]


def _fill(folder: Path) -> None:
    with open(folder / "ballast", "wb", buffering=0) as f:
        while True:
            try:
                f.write(b"\0" * (1 << 20))
            except OSError:
                return


@pytest.mark.slow  # (waits out a store's stated wait, or mounts a filesystem)
def test_a_full_disk_ends_the_run_after_the_stated_wait(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    with tmpfs(tmp_path / "disk", size="256m") as mount:
        dsn = f"sqlite:///{mount.path / 'events.db'}"
        proc = _start(scenario, dsn, tmp_path / "d.jsonl", "--store-wait", "3")
        _when_storing(proc, dsn)
        _fill(mount.path)
        filled = time.monotonic()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, out + err
        assert time.monotonic() - filled < 60  # 3 s of attempts, and whatever one takes
        said = " ".join(err.split())
        assert "could not be written: the store took nothing for 3 s: database or disk is full" in said, said
        assert "(--store-wait 3); run cut stopped" in said and "--run-id cut" in said
        assert "Traceback" not in said
        assert not (tmp_path / "d.jsonl").exists()
        os.unlink(mount.path / "ballast")
        assert asyncio.run(_state(dsn)) in ("failed", "running")  # (failed if that could be stored)
        # nothing lost: completing it gives the log of a run never interrupted
        resumed = _start(scenario, dsn, tmp_path / "resumed.jsonl")
        assert resumed.wait(timeout=300) == 0, resumed.communicate()
        assert asyncio.run(_state(dsn)) == "completed"
    clean = _start(scenario, f"sqlite:///{tmp_path / 'clean.db'}", tmp_path / "clean.jsonl")
    assert clean.wait(timeout=300) == 0, clean.communicate()
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


@pytest.fixture
def cluster() -> private_pg.PrivateCluster:
    if not private_pg.available():
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    with private_pg.private_cluster() as pg:
        yield pg  # type: ignore[misc]


def test_postgresql_gone_longer_than_the_wait_ends_the_run(cluster: private_pg.PrivateCluster, tmp_path: Path) -> None:
    """On a cluster of the test's own (stopping the shared one would cut off its users)."""
    dsn = asyncio.run(cluster.create_database("ledgerlet"))
    proc = _start(_scenario(tmp_path), dsn, tmp_path / "d.jsonl", "--store-wait", "3")
    _when_storing(proc, dsn)
    cluster.stop("fast")
    stopped = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, out + err
    assert time.monotonic() - stopped < 60
    said = " ".join(err.split())
    assert "could not be written: the store took nothing for 3 s" in said, said
    assert "could not be stored as failed either" in said and "--run-id cut" in said
    assert "Traceback" not in said
    cluster.start()
    assert asyncio.run(_state(dsn)) == "running"  # (abandoned two minutes on)


@pytest.mark.slow  # (waits out a store's stated wait, or mounts a filesystem)
def test_postgresql_away_for_less_than_the_wait_is_ridden_out(
    cluster: private_pg.PrivateCluster, tmp_path: Path
) -> None:
    dsn = asyncio.run(cluster.create_database("ledgerlet"))
    scenario = _scenario(tmp_path)
    proc = _start(scenario, dsn, tmp_path / "d.jsonl", "--store-wait", "60")
    _when_storing(proc, dsn)
    cluster.stop("fast")
    try:
        time.sleep(2.0)  # the recorder cannot store meanwhile
    finally:
        cluster.start()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert asyncio.run(_state(dsn)) == "completed"
    clean = _start(scenario, f"sqlite:///{tmp_path / 'clean.db'}", tmp_path / "clean.jsonl")
    assert clean.wait(timeout=300) == 0, clean.communicate()
    assert (tmp_path / "d.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
