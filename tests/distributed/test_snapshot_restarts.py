"""Snapshots on the real broker and PostgreSQL: control loops killed with SIGKILL restart
from their checkpoints and decide exactly what the embedded run decides; a service that
has served many runs reads back at most a snapshot interval's records when it restarts,
not its group's history.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerlet_services.runtime.catalog import CONTROL_LOOPS
from tests.conftest import fresh_pg_database
from tests.distributed.test_faults import SHORT_SCENARIO, _run_with_fault
from tests.support.events import assert_same_events
from tests.support.stack import LocalStack

pytestmark = pytest.mark.distributed

#: a checkpoint every few records, so every loop has one by the time it is killed
EVERY_RECORDS = 20

_REBUILT = re.compile(r"rebuilt state from (a snapshot and )?(\d+) events of (\d+) records")


def rebuilt(stack: LocalStack, name: str) -> list[tuple[bool, int, int]]:
    """Every ``rebuilt state`` line of a service's log: (from a snapshot, events, records)."""
    text = stack.log_path(name).read_text(errors="replace")
    return [(bool(m.group(1)), int(m.group(2)), int(m.group(3))) for m in _REBUILT.finditer(text)]


def restart_and_rebuild(stack: LocalStack, name: str, timeout: float = 120) -> tuple[bool, int, int]:
    """Kill ``name`` and start it again; what its rebuild did, once it has done it (its
    heartbeat is no sign: a process's loop turns while it waits for its lease, too)."""
    before = len(rebuilt(stack, name))
    stack.restart(name)
    deadline = time.monotonic() + timeout
    while len(found := rebuilt(stack, name)) == before:
        assert time.monotonic() < deadline, stack.tail(name)
        time.sleep(0.05)
    return found[-1]


@pytest.fixture
def stack(kafka_bootstrap: str, pg_server: str, tmp_path: Path) -> Iterator[LocalStack]:
    with fresh_pg_database() as dsn:
        s = LocalStack(
            f"kafka://{kafka_bootstrap}?namespace=s{uuid.uuid4().hex[:8]}",
            dsn,
            tmp_path / "stack",
            {"LEDGERLET_SNAPSHOT_RECORDS": str(EVERY_RECORDS)},
        )
        s.start()
        try:
            yield s
        finally:
            s.stop()


def test_every_control_loop_killed_and_restarted_from_its_snapshot(stack: LocalStack, tmp_path: Path) -> None:
    names = [k.name for k in CONTROL_LOOPS]

    def kill_all() -> None:
        for name in names:
            assert stack.kill(name) == -9
        time.sleep(0.5)
        for name in names:
            stack.start_service(name)

    embedded, distributed, log_e, log_d = _run_with_fault(stack, tmp_path, kill_all, at_fraction=0.5)
    assert_same_events(embedded, distributed)
    assert log_d == log_e
    for name in names:
        starts = rebuilt(stack, name)
        assert len(starts) == 2, name
        from_snapshot, _, _ = starts[1]
        assert from_snapshot, f"{name} folded its whole history:\n{stack.tail(name, 40)}"


def test_a_restart_after_many_runs_reads_back_a_snapshot_interval_not_the_history(
    stack: LocalStack, tmp_path: Path
) -> None:
    for i in range(10):
        run = f"many-{i}-{uuid.uuid4().hex[:6]}"
        stack.finish(stack.drive(SHORT_SCENARIO, tmp_path / f"{run}.jsonl", run_id=run), run)
    from_snapshot, events, records = restart_and_rebuild(stack, "eviction-manager")
    assert rebuilt(stack, "eviction-manager")[0][2] == 0  # a new stack: nothing to read back at first
    assert from_snapshot and events == 0  # every run had ended: nothing to fold again
    # a loop without snapshots reads its group's whole history: ten runs' worth
    stack.extra_env["LEDGERLET_SNAPSHOT_RECORDS"] = "0"
    without, _, everything = restart_and_rebuild(stack, "eviction-manager")
    assert not without
    # with them, what came after the newest checkpoint: a few runs' worth at most (the
    # interval is 20 records, stretched so that checkpoints take no more than a tenth of
    # the handling time), however many runs the service has served
    assert records <= 3 * everything // 10
    print(f"read back at restart: {records} records from the snapshot on, {everything} without")


def test_standbys_take_over_from_killed_active_members(stack: LocalStack, tmp_path: Path) -> None:
    """A second process of a service waits on its lease; when the active one is killed
    with SIGKILL, the standby takes the lease, rebuilds from the snapshot, and the run
    decides exactly what the embedded run decides."""
    names = ["stats-collector", "eviction-manager", "scheduler", "controller-manager"]
    for name in names:
        stack.start_service(name, member="b")
    stack.wait_healthy([f"{name}@b" for name in names])  # a standby's loop turns too
    deadline = time.monotonic() + 60
    for name in names:
        while "standby (another member holds the lease)" not in stack.tail(f"{name}@b", 50):
            assert time.monotonic() < deadline, stack.tail(f"{name}@b", 50)
            time.sleep(0.1)

    def kill_the_active_members() -> None:
        for name in names:
            assert stack.kill(name) == -9

    embedded, distributed, log_e, log_d = _run_with_fault(stack, tmp_path, kill_the_active_members, at_fraction=0.4)
    assert_same_events(embedded, distributed)
    assert log_d == log_e
    for name in names:
        standby = stack.log_path(f"{name}@b").read_text(errors="replace")
        assert "holds the lease: active" in standby, name
        assert "rebuilt state from a snapshot and" in standby, name
