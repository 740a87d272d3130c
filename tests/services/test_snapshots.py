"""A service restored from a snapshot decides what it would have decided had it never
stopped, folds only what came after the snapshot, and falls back to a full fold when the
snapshot is not its own (other code, or unreadable).

Each loop is fed the records its group read in a real embedded run of every example
(the bus keeps them), split at an instant (one where the loop still has something to
decide, where what it decides is compared): the first part is folded, the state captured
and restored into a fresh runner, and both runners are given the rest.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledgerlet_bus.api import Record
from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.contracts.envelope import decode_envelope, encode_envelope
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.loops.base import Loop
from ledgerlet_services.runtime import snapshot_fork
from ledgerlet_services.runtime import snapshot_policy as snapshots_module
from ledgerlet_services.runtime.catalog import CONTROL_LOOPS
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_services.runtime.host_memory import _cgroup_available, available_bytes, resident_bytes, take_host_slot
from ledgerlet_services.runtime.shell import ServiceRunner
from ledgerlet_services.runtime.snapshot_codec import RunnerState, format_version, manifest, restore
from ledgerlet_services.runtime.snapshot_codec import capture as capture_with
from ledgerlet_services.runtime.snapshot_fork import Capture
from ledgerlet_services.runtime.snapshot_policy import Snapshots
from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.snapshots import StoredSnapshot
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES
from tests.support.tiers import slow_unless
from tests.support.waiting import Turns, until

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


def capture(state: RunnerState) -> bytes:
    """A checkpoint of ``state`` with the manifest of the code loaded now."""
    return capture_with(state, manifest())


def capture_aside(state: RunnerState) -> Capture:
    return snapshot_fork.capture_aside(state, manifest())


#: (checkpoints after every batch, however long each takes)
INF = float("inf")


@dataclass
class Recorded:
    """What each loop's group read in one embedded run, in the order the run handled it."""

    run: str
    by_loop: dict[str, list[Record]]
    bus: MemoryBus


_CACHE: dict[str, Recorded] = {}


async def recorded(example: str, tmp: Path) -> Recorded:
    if example not in _CACHE:
        bus = MemoryBus(retain=True)
        scenario = load_scenario((EXAMPLES / example).read_text(), example)
        store = await open_store(f"sqlite:///{tmp / 'run.db'}")
        try:
            run = f"snap-{example.removesuffix('.yaml')}"
            await run_embedded(scenario, store, run=run, bus=bus)
        finally:
            await store.close()
        by_loop = {k.name: await bus.history(k.name, k.topics) for k in CONTROL_LOOPS}
        _CACHE[example] = Recorded(run, by_loop, bus)
    return _CACHE[example]


def split_at_instant(records: list[Record]) -> tuple[list[Record], list[Record], int]:
    """The records before the middle instant of the run, and the rest (whatever derives
    from a step has that step's instant, so nothing in the first part waits on the rest)."""
    ts = sorted({decode_envelope(r.value).t for r in records})
    middle = ts[len(ts) // 2]
    first = [r for r in records if decode_envelope(r.value).t < middle]
    rest = [r for r in records if decode_envelope(r.value).t >= middle]
    return first, rest, middle


def split_where_it_decides(kind: type[Loop], records: list[Record]) -> tuple[list[Record], list[Record]] | None:
    """The records before the middle one of the instants at which the loop, never stopped,
    decides something, and the rest (which then has something to decide); None where it
    decides nothing after the run's first instant (before it, the run is not under way)."""
    probe = ServiceRunner(MemoryBus(), kind, group="probe")
    steps = _steps(records)
    deciding = [_instant(step[0]) for step in steps if emitted(probe, step)]
    later = sorted(set(deciding) - {_instant(steps[0][0])})
    if not later:
        return None
    cut = later[len(later) // 2]
    return [r for r in records if _instant(r) < cut], [r for r in records if _instant(r) >= cut]


def _instant(record: Record) -> int:
    return decode_envelope(record.value).t


def emitted(runner: ServiceRunner, records: list[Record]) -> list[bytes]:
    return [encode_envelope(o.envelope) for o in runner.handle_records(records)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", CONTROL_LOOPS, ids=lambda k: k.name)
async def test_a_restored_loop_decides_what_the_uninterrupted_one_decides(kind: type[Loop], tmp_path: Path) -> None:
    """In each example where the loop decides something after the run's first instant,
    cut where it still has something to decide (two empty lists compared would show
    nothing); every loop decides in some."""
    compared = []
    for example in EXAMPLE_FILES:
        (tmp_path / example).mkdir()
        rec = await recorded(example, tmp_path / example)
        split = split_where_it_decides(kind, rec.by_loop[kind.name])
        if split is None:
            continue
        first, rest = split
        original = ServiceRunner(MemoryBus(), kind, group="original")
        emitted(original, first)
        assert original.instances.get(rec.run) is not None, example  # the run is under way at the cut

        restored = ServiceRunner(MemoryBus(), kind, group="restored")
        restored.adopt(restore(capture(original.state())))
        assert restored.instances[rec.run] is not original.instances[rec.run]

        went_on = emitted(original, rest)
        assert went_on, example
        assert emitted(restored, rest) == went_on, example
        compared.append(example)
    assert compared, f"{kind.name} decides nothing after a restore in any example"


@pytest.mark.parametrize("example", slow_unless(EXAMPLE_FILES, quick={"memory-pressure.yaml"}))
@pytest.mark.parametrize("kind", CONTROL_LOOPS, ids=lambda k: k.name)
async def test_what_a_restored_loop_had_handled_is_known_as_handled(
    example: str, kind: type[Loop], tmp_path: Path
) -> None:
    """What was handled before the snapshot comes again (a redelivery) and is skipped."""
    rec = await recorded(example, tmp_path)
    first, _, _ = split_at_instant(rec.by_loop[kind.name])
    original = ServiceRunner(MemoryBus(), kind, group="original")
    emitted(original, first)
    twin = ServiceRunner(MemoryBus(), kind, group="twin")
    twin.adopt(restore(capture(original.state())))
    assert first and emitted(twin, first) == []
    assert twin.stats.duplicates == len(first)


class _Failing:
    async def save_snapshot(self, snap: StoredSnapshot) -> None:
        raise OSError("the database is restarting")

    async def load_snapshot(self, key: str) -> StoredSnapshot | None:
        return None


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqlEventStore]:
    s = await open_store(f"sqlite:///{tmp_path / 'snapshots.db'}")
    try:
        yield s
    finally:
        await s.close()


def _steps(records: list[Record]) -> list[list[Record]]:
    """Records grouped by the step (input or tick) they follow from, in step order."""
    by_step: dict[tuple[int, tuple[int, ...]], list[Record]] = {}
    for r in records:
        env = decode_envelope(r.value)
        by_step.setdefault((env.t, tuple(env.order[:2])), []).append(r)
    return [by_step[k] for k in sorted(by_step)]


async def _serve(
    bus: MemoryBus, runner: ServiceRunner, records: list[Record], until: Callable[[], bool] | None = None
) -> None:
    """Run ``runner`` as a service, given ``records`` a step at a time as the driver gives
    them (the next step once the service has committed everything: idle). What it
    publishes itself comes back to it as copies of what the records hold, and is skipped.
    ``until``: what must hold, after the last step, before the service is stopped (polled:
    the service does it when idle, and a loaded machine takes its time)."""
    task = asyncio.create_task(runner.run())
    group = {runner.group: list(runner.topics)}
    producer = bus.producer()
    try:
        for step in _steps(records):
            for r in step:
                await producer.send(r.topic, r.value, key=r.key, headers=r.headers)
            await producer.flush()
            while await bus.lag(group):
                await asyncio.sleep(0.002)
                if task.done():
                    task.result()
        async with asyncio.timeout(120):
            while until is not None and not until():
                await asyncio.sleep(0.002)
                if task.done():
                    task.result()
    finally:
        runner.stop()
        await task


async def test_a_restarted_service_folds_only_what_came_after_its_snapshot(
    sqlite_store: SqlEventStore, tmp_path: Path
) -> None:
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    records = rec.by_loop[kind.name]
    first, rest, _ = split_at_instant(records)
    # the first part served by a runner that checkpoints after every batch
    bus = MemoryBus(retain=True)
    snaps = Snapshots(sqlite_store, "test.eviction-manager", every_records=1, every_seconds=1e9, max_share=INF)
    # (a checkpoint due while the one before is still being stored is taken when the
    # service is next idle, as of what it committed by then: waited for, not raced)
    await _serve(
        bus,
        ServiceRunner(bus, kind, snapshots=snaps),
        first,
        until=lambda: not snaps.saving and snaps.stored_offsets == bus.committed(kind.name),
    )
    assert snaps.stats.taken >= 1
    saved = await sqlite_store.load_snapshot("test.eviction-manager")
    assert saved is not None and saved.version == format_version()
    assert saved.offsets == bus.committed(kind.name)  # the newest checkpoint covers all of it

    # the rest arrives; a restarted service takes up the snapshot and folds nothing again
    p = bus.producer()
    for r in rest:
        await p.send(r.topic, r.value, key=r.key, headers=r.headers)
    await p.flush()
    again = ServiceRunner(bus, kind, snapshots=Snapshots(sqlite_store, "test.eviction-manager"))
    assert await again.rebuild() == 0
    assert again.stats.rebuilt_records == 0  # nothing was read back
    assert again.snapshots is not None and again.snapshots.stats.loaded_from == saved.offsets
    consumer = bus.consumer(kind.name, kind.topics, whole=True)
    tail = await consumer.getmany(timeout=0.1, max_records=100_000)
    assert sorted(r.value for r in tail) == sorted(r.value for r in rest)  # (nothing else was left)

    # what it decides on the rest is what a service that never stopped decides (the same
    # events, ids and all), and what the embedded run decided
    never_stopped = ServiceRunner(MemoryBus(), kind, group="x")
    emitted(never_stopped, first)
    decided = sorted(emitted(again, tail))
    assert decided == sorted(emitted(never_stopped, rest))
    evicted = [e for e in decided if b'"type":"PodEvicted"' in e]
    assert evicted and all(e in {r.value for r in rest} for e in evicted)


async def test_a_snapshot_behind_the_committed_offsets_is_caught_up_from_the_bus(
    sqlite_store: SqlEventStore, tmp_path: Path
) -> None:
    """A service that committed more after its last checkpoint (or died before the next)
    loads the checkpoint and folds the records between it and what was committed."""
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "stats-collector")
    records = rec.by_loop[kind.name]
    first, rest, _ = split_at_instant(records)
    bus = MemoryBus(retain=True)
    snaps = Snapshots(sqlite_store, "k", every_records=10**9, every_seconds=1e9)
    runner = ServiceRunner(bus, kind, snapshots=snaps)
    await _serve(bus, runner, first)
    offsets = bus.committed(kind.name)
    await runner.checkpoint(offsets)
    assert snaps.stats.taken == 1
    steps = _steps(rest)
    more = [r for step in steps[: len(steps) // 2] for r in step]  # (the run goes on: not its end)
    await _serve(bus, ServiceRunner(bus, kind), more)  # served on, without a checkpoint

    again = ServiceRunner(bus, kind, snapshots=Snapshots(sqlite_store, "k"))
    folded = await again.rebuild()
    committed = sum(bus.committed(kind.name).values())
    assert 0 < folded <= committed - sum(offsets.values()) == again.stats.rebuilt_records
    full = ServiceRunner(bus, kind)  # no snapshots: folds the group's whole history
    assert await full.rebuild() > folded
    assert full.stats.rebuilt_records == committed
    # both go on alike (the state is compared by what it decides: a pickle's bytes follow
    # the order things were folded in)
    later = [r for step in steps[len(steps) // 2 :] for r in step]
    decided = sorted(emitted(again, later))
    assert decided and decided == sorted(emitted(full, later))


def _with_manifest(blob: bytes, change: dict[str, str]) -> bytes:
    """A checkpoint's bytes with entries of its manifest changed (as other code took it)."""
    import json
    import struct

    start = blob.index(b"\n") + 1
    (length,) = struct.unpack_from(">I", blob, start)
    modules = json.loads(blob[start + 4 : start + 4 + length]) | change
    head = json.dumps(modules).encode()
    return blob[:start] + struct.pack(">I", len(head)) + head + blob[start + 4 + length :]


@pytest.mark.parametrize("spoil", ["other code", "a class of it changed", "unreadable"])
async def test_a_snapshot_that_is_not_this_codes_falls_back_to_a_full_fold(
    spoil: str, sqlite_store: SqlEventStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = await recorded("oom-killer.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, rest, _ = split_at_instant(rec.by_loop[kind.name])
    bus = MemoryBus(retain=True)
    snaps = Snapshots(sqlite_store, "k", every_records=1, every_seconds=1e9, max_share=INF)
    await _serve(bus, ServiceRunner(bus, kind, snapshots=snaps), first)
    saved = await sqlite_store.load_snapshot("k")
    assert saved is not None
    if spoil == "other code":
        spoiled = StoredSnapshot(saved.key, "0" * 32, saved.offsets, saved.state, saved.records, saved.taken_at)
    elif spoil == "a class of it changed":  # (the eviction manager's loop, as pickled, is not this code's)
        blob = _with_manifest(saved.state, {kind.__module__: "0" * 32})
        spoiled = StoredSnapshot(saved.key, saved.version, saved.offsets, blob, saved.records, saved.taken_at)
    else:
        spoiled = StoredSnapshot(
            saved.key, saved.version, saved.offsets, saved.state[:100], saved.records, saved.taken_at
        )
    await sqlite_store.save_snapshot(spoiled)
    caplog.set_level(logging.INFO)
    again = ServiceRunner(bus, kind, snapshots=Snapshots(sqlite_store, "k"))
    folded = await again.rebuild()
    assert again.snapshots is not None and again.snapshots.stats.loaded_from is None
    assert "folding from the start" in caplog.text
    full = ServiceRunner(bus, kind)
    assert folded == await full.rebuild() > 0
    decided = sorted(emitted(again, rest))
    assert decided and decided == sorted(emitted(full, rest))


async def test_a_snapshot_that_cannot_be_saved_leaves_the_service_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    records = rec.by_loop[kind.name]
    bus = MemoryBus(retain=True)
    snaps = Snapshots(_Failing(), "k", every_records=1, every_seconds=1e9, max_share=INF)
    caplog.set_level(logging.WARNING)
    await _serve(bus, ServiceRunner(bus, kind, snapshots=snaps), records)
    assert snaps.stats.failed >= 1 and snaps.stats.taken == 0
    assert "snapshot not saved (the database is restarting)" in caplog.text


async def test_once_a_run_ends_its_state_and_ids_are_let_go_and_its_copies_still_skipped(tmp_path: Path) -> None:
    """What a long-lived service keeps (and each snapshot holds) follows the runs under
    way, not every run it has served."""
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    records = rec.by_loop[kind.name]
    first, _, _ = split_at_instant(records)
    runner = ServiceRunner(MemoryBus(), kind)
    emitted(runner, first)
    assert len(runner.state().seen) == len(first)
    emitted(runner, records)  # the rest, and the run's end
    state = runner.state()
    assert state.instances == {} and len(state.seen) == 0 and rec.run in state.ended
    before = runner.stats.duplicates
    assert emitted(runner, first) == []
    assert runner.stats.duplicates - before == len(first)
    assert len(runner.state().seen) == 0


def test_checkpoints_never_take_more_than_a_tenth_of_the_handling_time() -> None:
    snaps = Snapshots(_Failing(), "k", every_records=10, every_seconds=1e9)
    assert not snaps.count(9, 0.01)
    assert snaps.count(1, 0.01)  # ten records
    snaps.stats.last_seconds = 2.0  # the last checkpoint took two seconds
    snaps._records, snaps._seconds = 0, 0.0
    assert not snaps.count(1_000, 19.0)  # due by records, but only 19 s of handling since
    assert snaps.count(1, 1.0)  # 20 s: a tenth of it is the two seconds


def test_a_grown_process_expects_a_longer_checkpoint() -> None:
    """A fleet's first checkpoint is taken early in its starting state; the next one
    pickles what the process has grown to, so it waits for proportionally more handling."""
    size = [100 << 20]
    snaps = Snapshots(_Failing(), "k", every_records=10, every_seconds=1e9, size=lambda: size[0])
    snaps.stats.last_seconds, snaps.stats.last_size = 6.0, 100 << 20  # 6 s at 100 MiB
    assert snaps.count(10, 60.0)  # not grown: 60 s of handling pays for 6 s
    snaps._records, snaps._seconds = 0, 0.0
    size[0] = 1000 << 20  # ten times larger: a checkpoint is expected to take 60 s
    assert snaps.expected_seconds() == 60.0
    assert not snaps.count(1_000, 599.0)
    assert snaps.count(1, 1.0)
    size[0] = 50 << 20  # a smaller process never expects less than the last one took
    assert snaps.expected_seconds() == 6.0


async def test_a_checkpoint_under_way_counts_as_costing_what_it_took_so_far() -> None:
    """Its cost is not known until it is stored: a service whose first checkpoint has
    been pickling for 100 s does not queue a second to start the moment it ends."""
    snaps = Snapshots(_Failing(), "k", every_records=1, every_seconds=1e9)
    under_way = asyncio.get_running_loop().create_future()
    snaps._pending = asyncio.ensure_future(under_way)
    snaps._began = time.perf_counter() - 100.0
    assert snaps.saving and not snaps.count(1_000_000, 990.0)
    assert snaps.count(1, 20.0)  # 1,010 s of handling: a tenth of it pays for 101 s
    under_way.set_result(None)
    await asyncio.sleep(0)


def test_resident_bytes_measures_this_process() -> None:
    before = resident_bytes()
    block = bytearray(64 << 20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page
    assert resident_bytes() - before >= 60 << 20
    del block


async def test_a_checkpoint_is_pickled_by_a_child_while_the_service_goes_on(
    sqlite_store: SqlEventStore, tmp_path: Path
) -> None:
    """The state is pickled as it was when the checkpoint began (a forked child's copy),
    whatever the service handles meanwhile; one checkpoint at a time."""
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, rest, _ = split_at_instant(rec.by_loop[kind.name])
    runner = ServiceRunner(MemoryBus(), kind, group="x")
    emitted(runner, first)
    snaps = Snapshots(sqlite_store, "aside")
    assert snaps.begin(runner.state(), {("ledgerlet.clock", 0): 1})
    assert snaps.saving and not snaps.begin(runner.state(), {("ledgerlet.clock", 0): 2})
    emitted(runner, rest)  # the service goes on, and its run ends (its state goes)
    assert runner.instances == {}
    await snaps.wait()
    assert snaps.stats.taken == 1 and not snaps.saving
    saved = await sqlite_store.load_snapshot("aside")
    assert saved is not None and saved.offsets == {("ledgerlet.clock", 0): 1}
    assert rec.run in restore(saved.state).instances  # the run as it was at the checkpoint

    aside = capture_aside(runner.state())
    assert aside.pid > 0 and aside.fd >= 0 and aside.cpu_seconds is None
    blob = await aside.result()
    assert restore(blob).ended == runner.state().ended
    assert aside.pid == 0 and aside.fd == -1  # the child reaped, its pipe closed
    # its cost is the child's CPU time: the parent's time waiting meanwhile is not counted
    assert aside.cpu_seconds is not None and 0.0 <= aside.cpu_seconds < 5.0


async def _feed_until_idle(bus: MemoryBus, kind: type[Loop], records: list[Record]) -> None:
    """Put ``records`` on the bus and wait until ``kind``'s running service has handled them."""
    p = bus.producer()
    for r in records:
        await p.send(r.topic, r.value, key=r.key, headers=r.headers)
    await p.flush()
    await bus.wait_idle({kind.name: list(kind.topics)}, timeout=10)


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_a_checkpoint_whose_fork_fails_leaks_nothing_and_waits_for_the_next_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused fork (out of memory, too many processes) closes the pipe it opened, and
    the service tries again when the next checkpoint is due, not on every idle poll."""
    forks: list[int] = []

    def refused() -> int:
        forks.append(1)
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, _, _ = split_at_instant(rec.by_loop[kind.name])
    fds = _open_fds()
    snaps = Snapshots(_Failing(), "k", every_records=1, every_seconds=1e9, max_share=INF)
    assert not snaps.begin(ServiceRunner(MemoryBus(), kind).state(), {})
    assert forks == [1] and snaps.stats.failed == 1 and not snaps.saving
    assert _open_fds() == fds

    bus = MemoryBus(retain=True)
    runner = ServiceRunner(bus, kind, snapshots=snaps)
    turns = Turns()
    runner.heartbeat = turns.beat
    task = asyncio.create_task(runner.run())
    try:
        await _feed_until_idle(bus, kind, first)
        await turns.more(1)  # (the last batch committed, its checkpoint tried: back at the loop's top)
        tried = len(forks)
        assert tried > 1  # each committed batch was due (one record is an interval here)
        await turns.more(5)  # idle: five polls
        assert len(forks) == tried
    finally:
        runner.stop()
        await task
    assert _open_fds() == fds


def test_no_checkpoint_starts_without_memory_for_a_copy_of_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pickling in a forked child may copy every page of the parent (reference counts are
    written): with less memory available than the process holds, none is forked."""
    forks: list[int] = []

    def fork() -> int:
        forks.append(1)
        raise OSError(errno.ENOMEM, "not expected")

    monkeypatch.setattr(os, "fork", fork)
    state = ServiceRunner(MemoryBus(), CONTROL_LOOPS[0]).state()
    free = [100 << 20]
    snaps = Snapshots(_Failing(), "k", size=lambda: 400 << 20, available=lambda: free[0])
    assert not snaps.begin(state, {})
    assert forks == [] and snaps.stats.refused == 1 and not snaps.saving
    free[0] = 500 << 20  # room for a whole copy: it forks
    assert not snaps.begin(state, {})
    assert forks == [1] and snaps.stats.failed == 1 and snaps.stats.refused == 1


async def test_services_of_one_machine_checkpoint_in_turn(sqlite_store: SqlEventStore, tmp_path: Path) -> None:
    """One pickling child at a time on a machine: a checkpoint due while another service's
    child holds the slot waits (and is tried again when the service is idle); the slot is
    free again once the child is done."""
    slot = tmp_path / "snapshot.lock"
    state = ServiceRunner(MemoryBus(), CONTROL_LOOPS[0]).state()
    snaps = Snapshots(sqlite_store, "k", host_slot=slot)
    other = take_host_slot(slot)  # another service's child is pickling
    assert other is not None
    try:
        assert not snaps.begin(state, {}) and snaps.waiting_for_host and not snaps.saving
    finally:
        os.close(other)
    assert snaps.begin(state, {}) and not snaps.waiting_for_host
    await snaps.wait()
    assert snaps.stats.taken == 1
    free = take_host_slot(slot)  # the child has exited: its copy of the lock went with it
    assert free is not None
    os.close(free)


async def test_a_checkpoint_whose_turn_has_not_come_is_taken_once_the_service_is_idle(
    sqlite_store: SqlEventStore, tmp_path: Path
) -> None:
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, _, _ = split_at_instant(rec.by_loop[kind.name])
    slot = tmp_path / "snapshot.lock"
    snaps = Snapshots(sqlite_store, "turns", every_records=1, every_seconds=1e9, max_share=INF, host_slot=slot)
    bus = MemoryBus(retain=True)
    runner = ServiceRunner(bus, kind, snapshots=snaps)
    other = take_host_slot(slot)
    assert other is not None
    turns = Turns()
    runner.heartbeat = turns.beat
    task = asyncio.create_task(runner.run())
    try:
        await _feed_until_idle(bus, kind, first)
        await turns.more(3)  # idle polls: still not its turn
        assert snaps.stats.taken == 0 and snaps.waiting_for_host
        os.close(other)
        await until(lambda: snaps.stats.taken > 0, what="the next idle poll takes it")
        assert snaps.stats.taken == 1 and not snaps.waiting_for_host
    finally:
        runner.stop()
        await task
    saved = await sqlite_store.load_snapshot("turns")
    assert saved is not None and saved.offsets == bus.committed(kind.name)


def test_a_containers_memory_limit_counts(tmp_path: Path) -> None:
    """cgroup v2 and v1, the process's own cgroup and the ones above it: the least left of
    any limit counts, page cache that can be dropped is not counted as used."""
    pod = tmp_path / "kubepods" / "pod1"
    pod.mkdir(parents=True)
    (pod / "memory.max").write_text("1073741824\n")  # 1 GiB, 768 MiB used, 128 MiB of it droppable cache
    (pod / "memory.current").write_text("805306368\n")
    (pod / "memory.stat").write_text("anon 671088640\ninactive_file 134217728\n")
    (tmp_path / "kubepods" / "memory.max").write_text("max\n")
    assert _cgroup_available(tmp_path, "0::/kubepods/pod1\n") == 384 << 20
    (tmp_path / "kubepods" / "memory.max").write_text("943718400\n")  # 900 MiB above it, 800 used
    (tmp_path / "kubepods" / "memory.current").write_text("838860800\n")
    assert _cgroup_available(tmp_path, "0::/kubepods/pod1\n") == 100 << 20

    v1 = tmp_path / "memory" / "docker" / "x"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("536870912\n")
    (v1 / "memory.usage_in_bytes").write_text("268435456\n")
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # no limit
    assert _cgroup_available(tmp_path, "12:memory:/docker/x\n1:cpu,cpuacct:/\n") == 256 << 20
    assert _cgroup_available(tmp_path, "0::/\n") is None  # no limit anywhere


def test_the_machines_turn_is_open_to_every_user(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        fd = take_host_slot(tmp_path / "slot.lock")
    finally:
        os.umask(old)
    assert fd is not None
    os.close(fd)
    assert (tmp_path / "slot.lock").stat().st_mode & 0o777 == 0o666


async def test_a_stuck_child_is_stopped_and_gives_up_the_turn(
    sqlite_store: SqlEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that never finishes would hold every service's turn: it is stopped after
    CAPTURE_PATIENCE, and the checkpoint counts as failed."""
    dropped: list[int] = []

    class _Stuck(Capture):
        async def result(self) -> bytes:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        def drop(self) -> None:
            dropped.append(1)

    monkeypatch.setattr(snapshots_module, "CAPTURE_PATIENCE", 0.2)
    monkeypatch.setattr(snapshots_module, "capture_aside", lambda state, modules: _Stuck())
    snaps = Snapshots(sqlite_store, "stuck")
    assert snaps.begin(ServiceRunner(MemoryBus(), CONTROL_LOOPS[0]).state(), {})
    await asyncio.wait_for(snaps.wait(), timeout=10)
    assert dropped and snaps.stats.failed == 1 and snaps.stats.taken == 0 and not snaps.saving


def test_available_bytes_reads_the_machine() -> None:
    free = available_bytes()
    assert free is None or 0 < free <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class _Away:
    """A snapshot store whose database never answers."""

    def __init__(self) -> None:
        self.reads = 0

    async def save_snapshot(self, snap: StoredSnapshot) -> None:
        raise StoreUnavailable("connection refused")

    async def load_snapshot(self, key: str) -> StoredSnapshot | None:
        self.reads += 1
        raise StoreUnavailable("connection refused")


async def test_a_service_told_to_stop_while_its_snapshots_database_is_away_stops() -> None:
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    store = _Away()
    runner = ServiceRunner(MemoryBus(), kind, snapshots=Snapshots(store, "k", load_patience=1e9))
    task = asyncio.create_task(runner.run())
    await until(lambda: store.reads > 1, what="the snapshot's database asked again")
    assert not runner.ready.is_set()  # waiting for the database
    runner.stop()  # SIGTERM
    await asyncio.wait_for(task, 2)  # (the next try would have been seconds away)


async def test_a_snapshot_that_cannot_be_read_for_long_is_done_without(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Snapshots are a cache: a service whose database stays away folds its group's
    history instead of waiting for it."""
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, rest, _ = split_at_instant(rec.by_loop[kind.name])
    bus = MemoryBus(retain=True)
    await _serve(bus, ServiceRunner(bus, kind), first)
    caplog.set_level(logging.WARNING)
    again = ServiceRunner(bus, kind, snapshots=Snapshots(_Away(), "k", load_patience=0.5))
    folded = await asyncio.wait_for(again.rebuild(), 5)
    assert "the snapshot could not be read for 0.5 s (connection refused): folding from the start" in caplog.text
    assert again.snapshots is not None and again.snapshots.stats.loaded_from is None
    full = ServiceRunner(bus, kind)
    assert folded == await full.rebuild() > 0
    decided = sorted(emitted(again, rest))
    assert decided and decided == sorted(emitted(full, rest))


def test_a_snapshot_child_dies_with_its_parent_by_what_its_parent_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """By the prctl the parent looked up at import (a forked child loading a library can
    wait for ever on a lock another thread held at the fork); and a child whose parent is
    already gone leaves at once."""
    assert snapshot_fork._PRCTL is not None  # (Linux's, looked up at import)
    calls: list[tuple[int, int]] = []
    exits: list[int] = []
    monkeypatch.setattr(snapshot_fork, "_PRCTL", lambda *args: calls.append(args) or 0)
    monkeypatch.setattr(ctypes, "CDLL", lambda *_: pytest.fail("the child loaded a library"))
    monkeypatch.setattr(os, "_exit", exits.append)
    snapshot_fork._die_with_parent(os.getppid())
    assert calls == [(1, signal.SIGKILL)] and exits == []
    snapshot_fork._die_with_parent(os.getpid())  # not this process's parent: it is gone
    assert exits == [1]


async def test_a_member_handed_over_checkpoints_what_it_committed_and_its_next_host_folds_nothing(
    sqlite_store: SqlEventStore, tmp_path: Path
) -> None:
    """``ServiceRunner.hand_over`` (a pool's member moving to another process:
    runtime/pool.py): the runner stops where its state reflects exactly what it committed,
    checkpoints there, waiting for the machine's turn if another service's child holds
    it, and the runner that takes the member over reads nothing back and decides what
    one that never stopped decides."""
    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, rest, _ = split_at_instant(rec.by_loop[kind.name])
    slot = tmp_path / "snapshot.lock"
    snaps = Snapshots(sqlite_store, "handed", every_records=10**9, every_seconds=1e9, host_slot=slot)  # (none due)
    bus = MemoryBus(retain=True)
    runner = ServiceRunner(bus, kind, snapshots=snaps)
    task = asyncio.create_task(runner.run())
    try:
        await _feed_until_idle(bus, kind, first)
        other = take_host_slot(slot)  # another member's child is pickling
        assert other is not None
        runner.hand_over()
        await until(lambda: snaps.waiting_for_host, what="the hand-over asked for the machine's turn")
        assert not task.done() and snaps.stats.taken == 0  # it waits for its turn
        os.close(other)
        await asyncio.wait_for(task, 30)
    finally:
        runner.stop()
        await task
    assert snaps.stats.taken == 1
    saved = await sqlite_store.load_snapshot("handed")
    assert saved is not None and saved.offsets == bus.committed(kind.name)

    p = bus.producer()
    for r in rest:
        await p.send(r.topic, r.value, key=r.key, headers=r.headers)
    await p.flush()
    taker = ServiceRunner(bus, kind, snapshots=Snapshots(sqlite_store, "handed"))
    assert await taker.rebuild() == 0 and taker.stats.rebuilt_records == 0
    tail = await bus.consumer(kind.name, kind.topics, whole=True).getmany(timeout=0.1, max_records=100_000)
    never_stopped = ServiceRunner(MemoryBus(), kind, group="x")
    emitted(never_stopped, first)
    decided = sorted(emitted(taker, tail))
    assert decided == sorted(emitted(never_stopped, rest))
    assert any(b'"type":"PodEvicted"' in e for e in decided)


async def test_a_rebuild_gives_the_event_loop_turns_as_it_folds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folding a fleet's history takes minutes; meanwhile the lease's pings, a pool's
    looks and the other members of the process must go on (recovery.REBUILD_SLICE)."""
    from ledgerlet_services.runtime import recovery

    rec = await recorded("memory-pressure.yaml", tmp_path)
    kind = next(k for k in CONTROL_LOOPS if k.name == "eviction-manager")
    first, _, _ = split_at_instant(rec.by_loop[kind.name])
    bus = MemoryBus(retain=True)
    await _serve(bus, ServiceRunner(bus, kind), first)  # (commits it all: the history to fold)
    monkeypatch.setattr(recovery, "REBUILD_SLICE", 5)
    turns = 0

    async def others() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    going = asyncio.create_task(others())
    await asyncio.sleep(0)
    try:
        folded = await ServiceRunner(bus, kind).rebuild()
    finally:
        going.cancel()
    assert folded > 50
    assert turns >= folded // 5  # (at least a turn every five events)
