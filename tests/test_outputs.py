"""What the command line writes goes only to a regular file or a new path, never over
what it reads; a path that cannot be written ends the command before the run, and a
failure after the run leaves the run stored and says so (no traceback, nothing beside)."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from pathlib import Path

import pytest

from ledgerlet_store.runs import run_states
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.support.cli import Command, Result
from tests.support.mounts import tmpfs

SCENARIO = EXAMPLES / "memory-pressure.yaml"


def run(
    ledgerlet: Command, log: Path | str, dsn: str, tmp_path: Path, *extra: str, scenario: Path = SCENARIO
) -> Result:
    return ledgerlet("run", str(scenario), "--decisions", str(log), "--store", dsn, "--quiet", *extra, cwd=tmp_path)


async def _runs(dsn: str) -> dict[str, str]:
    async with await open_store(dsn, migrate=False) as store:
        return {s.run: s.status for s in await run_states(store)}


def runs(dsn: str) -> dict[str, str]:
    return asyncio.run(_runs(dsn))


def _device(tmp_path: Path) -> Path:
    """A character device like /dev/null (the real one is not risked: as root the old
    code replaced it with a regular file); /dev/null itself where mknod is not allowed
    (and then neither is replacing it)."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return Path("/dev/null")
    return node


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "link-to-fifo"])
def test_a_device_fifo_or_directory_is_refused_before_the_run(kind: str, ledgerlet: Command, tmp_path: Path) -> None:
    if kind == "device":
        target = _device(tmp_path)
    elif kind == "fifo":
        target = tmp_path / "pipe"
        os.mkfifo(target)
    elif kind == "directory":
        target = tmp_path / "logs"
        target.mkdir()
    else:  # a link to a FIFO is the FIFO
        os.mkfifo(tmp_path / "pipe")
        target = tmp_path / "link.jsonl"
        target.symlink_to(tmp_path / "pipe")
    before = os.stat(target)
    dsn = f"sqlite:///{tmp_path / 's.db'}"
    res = run(ledgerlet, target, dsn, tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "only a regular file or a new path is written" in res.stderr and "Traceback" not in res.stderr
    after = os.stat(target)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert not (tmp_path / "s.db").exists()  # refused before anything ran


def test_the_stores_own_file_and_the_scenario_are_refused(ledgerlet: Command, tmp_path: Path) -> None:
    """--decisions naming the store's SQLite file destroyed every run in it, exit 0; naming
    the scenario overwrote it."""
    dsn = f"sqlite:///{tmp_path / 's.db'}"
    assert run(ledgerlet, tmp_path / "first.jsonl", dsn, tmp_path, "--run-id", "first").returncode == 0
    for target in (tmp_path / "s.db", tmp_path / "." / "s.db"):
        res = run(ledgerlet, target, dsn, tmp_path, "--run-id", "second")
        assert res.returncode == 2 and "the store's own file" in res.stderr, res.stderr
    (tmp_path / "alias.db").symlink_to(tmp_path / "s.db")
    assert "the store's own file" in run(ledgerlet, tmp_path / "alias.db", dsn, tmp_path).stderr
    assert runs(dsn) == {"first": "completed"}
    scenario = tmp_path / "mine.yaml"
    scenario.write_text(SCENARIO.read_text())
    res = run(ledgerlet, scenario, dsn, tmp_path, scenario=scenario)
    assert res.returncode == 2 and "is the scenario" in res.stderr, res.stderr
    assert scenario.read_text() == SCENARIO.read_text()
    # the post-mortem commands' outputs too
    replay = ledgerlet("replay", "--store", dsn, "--decisions", str(tmp_path / "s.db"), cwd=tmp_path)
    report = ledgerlet("report", "--store", dsn, "--out", str(tmp_path / "s.db"), cwd=tmp_path)
    for res in (replay, report):
        assert res.returncode == 2 and "the store's own file" in res.stderr, res.stderr
    assert runs(dsn) == {"first": "completed"}


def test_import_never_writes_over_a_recording_it_reads(ledgerlet: Command, tmp_path: Path) -> None:
    from tests.conftest import ROOT

    dump = tmp_path / "nodes.yaml"
    dump.write_bytes((ROOT / "tests/data/recordings/kind-v1.31/kubectl-get-nodes-pods.yaml").read_bytes())
    res = ledgerlet("import", str(dump), "--out", str(dump), cwd=tmp_path)
    assert res.returncode == 2 and "a recording read" in res.stderr, res.stderr
    assert dump.read_bytes() == (ROOT / "tests/data/recordings/kind-v1.31/kubectl-get-nodes-pods.yaml").read_bytes()


def test_a_folder_that_cannot_be_written_ends_the_command_before_the_run(ledgerlet: Command, tmp_path: Path) -> None:
    """Found out only after the run, it cost the run's time and ended in a traceback."""
    dsn = f"sqlite:///{tmp_path / 's.db'}"
    res = run(ledgerlet, "/proc/ledgerlet-decisions.jsonl", dsn, tmp_path)  # (no one may create files in /proc)
    assert res.returncode == 2 and "cannot write in /proc" in res.stderr, res.stderr
    assert not (tmp_path / "s.db").exists()
    with tmpfs(tmp_path / "ro") as mount:
        mount.read_only()
        res = run(ledgerlet, mount.path / "d.jsonl", dsn, tmp_path)
        assert res.returncode == 2 and "Read-only file system" in res.stderr, res.stderr
        assert not (tmp_path / "s.db").exists()


def test_a_link_to_a_regular_file_replaces_that_file(ledgerlet: Command, tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    real = tmp_path / "logs" / "real.jsonl"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    res = run(ledgerlet, link, f"sqlite:///{tmp_path / 's.db'}", tmp_path)
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and real.read_text().count("\n") == 10
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # (the file's own mode is kept)
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["real.jsonl"]


def _fill(folder: Path, leave: int = 4096) -> None:
    """Fill a filesystem, then free ``leave`` bytes: room for an empty file (the check
    before the run passes), not for the log (5.5 KB)."""
    ballast = folder / "ballast"
    written = 0
    with open(ballast, "wb", buffering=0) as f:
        while written < (1 << 30):  # (a guard: the filesystem is a megabyte)
            try:
                written += f.write(b"\0" * 4096) or 0
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    os.truncate(ballast, ballast.stat().st_size - leave)


def test_a_log_that_cannot_be_written_after_the_run_leaves_the_run_stored_and_says_so(
    ledgerlet: Command, tmp_path: Path
) -> None:
    """A full disk when the log is written: the run is stored (completed), the command
    says so and how to write the log, exits 1, with no traceback and no .tmp left; the
    way it names writes the log of an uninterrupted run."""
    dsn = f"sqlite:///{tmp_path / 's.db'}"
    with tmpfs(tmp_path / "full", size="1m") as mount:
        _fill(mount.path)
        res = run(ledgerlet, mount.path / "d.jsonl", dsn, tmp_path, "--run-id", "full")
        assert res.returncode == 1, res.stdout + res.stderr
        said = " ".join(res.stderr.split())
        assert "run full is stored in" in said and "No space left on device" in said, said
        assert "--run-id full" in said and "Traceback" not in said
        assert sorted(p.name for p in mount.path.iterdir()) == ["ballast"]
    assert runs(dsn) == {"full": "completed"}
    again = run(ledgerlet, tmp_path / "again.jsonl", dsn, tmp_path, "--run-id", "full")
    assert again.returncode == 0, again.stderr
    clean = run(ledgerlet, tmp_path / "clean.jsonl", f"sqlite:///{tmp_path / 'clean.db'}", tmp_path, "--run-id", "full")
    assert clean.returncode == 0
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


def test_a_write_that_fails_half_way_leaves_the_old_file_and_nothing_beside(tmp_path: Path) -> None:
    from ledgerlet_services.app import outputs

    target = tmp_path / "d.jsonl"
    target.write_text("the old log\n")
    out = outputs.check_output(target, "--decisions")
    original = outputs._write_all

    def half(f: object, data: bytes) -> None:
        original(f, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    outputs._write_all = half  # type: ignore[assignment]
    try:
        with pytest.raises(outputs.OutputFailed, match="No space left on device"):
            outputs.write_output(out, b"x" * 1000)
    finally:
        outputs._write_all = original  # type: ignore[assignment]
    assert target.read_text() == "the old log\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]
