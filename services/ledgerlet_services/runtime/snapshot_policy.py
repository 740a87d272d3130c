"""When a service checkpoints its state and where, so a restart folds what came after the
newest checkpoint, not its group's whole history.

A service's state is a function of the records its group has committed (the shell's
module docstring): the loops' state per run, the runs that ended, the ids handled. Once
a batch is committed and nothing is held back, that state and the committed offsets are
saved together (every ``records`` records or ``seconds`` of handling, whichever comes
first, and never more than ``max_share`` of the handling time); a restarted service loads
the newest one and folds only the records between its offsets and what the group has
committed since.

How the state becomes bytes, and which code can read them back, is snapshot_codec.py; the
child process that pickles it, snapshot_fork.py; the machine's memory and the turns its
services take, host_memory.py. A snapshot taken by other code, one that cannot be read, and
one the database does not give within ``load_patience`` seconds are all done without: the
service folds from the start. Snapshots are never the source of truth: dropping them all
costs a slower restart, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Protocol

from ledgerlet_bus.api import TopicPartition
from ledgerlet_bus.retry import with_backoff
from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_services.runtime.host_memory import available_bytes, resident_bytes, take_host_slot
from ledgerlet_services.runtime.snapshot_codec import RunnerState, StaleSnapshot, format_version, manifest, restore
from ledgerlet_services.runtime.snapshot_fork import Capture, capture_aside
from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.snapshots import StoredSnapshot

log = logging.getLogger(__name__)

DEFAULT_EVERY_RECORDS: Final = 20_000
DEFAULT_EVERY_SECONDS: Final = 30.0
#: how long a starting service waits for the database to read its snapshot, before it
#: folds its group's history instead (slower, but it does not wait on the database)
DEFAULT_LOAD_PATIENCE: Final = 30.0
#: the most of a service's handling time checkpoints may take
MAX_SHARE: Final = 0.1
#: a child still pickling after this long (or twenty times what the checkpoint is expected
#: to cost, if more) is stopped: a stuck child would hold every service's turn for ever
CAPTURE_PATIENCE: Final = 600.0


class SnapshotStore(Protocol):
    """Where checkpoints are kept (the event store's database: ``SqlEventStore``); raises
    StoreUnavailable while the database is away."""

    async def save_snapshot(self, snap: StoredSnapshot) -> None: ...

    async def load_snapshot(self, key: str) -> StoredSnapshot | None: ...


#: seconds :meth:`Snapshots.save` waits for its turn on the machine and the save: a
#: fleet's state takes seconds to pickle (bench_snapshot.py)
SAVE_PATIENCE: Final = 120.0


@dataclass
class SnapshotStats:
    taken: int = 0
    failed: int = 0
    #: not started: the machine had too little memory available for a copy of the process
    refused: int = 0
    last_bytes: int = 0
    #: what the last checkpoint cost: the CPU seconds of the child that pickled it (the
    #: service goes on handling while the child pickles and the store writes, so neither
    #: the database's answer nor the machine's other work counts against it)
    last_seconds: float = 0.0
    #: how large the process was when the last checkpoint began (:func:`resident_bytes`)
    last_size: int = 0
    #: the offsets the loaded snapshot reflected (None: none was loaded)
    loaded_from: dict[TopicPartition, int] | None = None


class Snapshots:
    """When to checkpoint a runner's state and where: ``key`` names its group (with the
    bus namespace, so stacks that share a database keep apart)."""

    def __init__(
        self,
        store: SnapshotStore,
        key: str,
        *,
        every_records: int = DEFAULT_EVERY_RECORDS,
        every_seconds: float = DEFAULT_EVERY_SECONDS,
        max_share: float = MAX_SHARE,
        load_patience: float = DEFAULT_LOAD_PATIENCE,
        size: Callable[[], int] | None = None,
        available: Callable[[], int | None] | None = None,
        host_slot: Path | None = None,
    ) -> None:
        self.store = store
        self.size = size if size is not None else resident_bytes
        self.available = available if available is not None else available_bytes
        #: a lock file that one checkpoint of the machine holds at a time (None: no turns)
        self.host_slot = host_slot
        #: the last checkpoint due could not start: another service of the machine had the
        #: slot (the shell tries again when it is next idle)
        self.waiting_for_host = False
        #: the offsets of the newest checkpoint this service stored
        self.stored_offsets: dict[TopicPartition, int] | None = None
        self.max_share = max_share
        self.key = key
        self.every_records = every_records
        self.every_seconds = every_seconds
        self.load_patience = load_patience
        self.stats = SnapshotStats()
        self._records = 0
        self._seconds = 0.0
        self._pending: asyncio.Task[None] | None = None
        self._began = 0.0
        #: records folded into the state since the group's first (carried in each snapshot)
        self.folded = 0

    def count(self, records: int, seconds: float) -> bool:
        """Note a handled batch; whether a checkpoint is due. Never more often than
        ``max_share`` of the handling time allows: a fleet's state takes seconds to
        save, and saving it every few thousand records would cost more than it saves.

        The next checkpoint is expected to cost what the last one did, scaled by how much
        the process has grown since (a fleet's first checkpoint, taken early in its
        starting state, says little of the next one: 6 s at 20k records, 58 s at 290k)."""
        self._records += records
        self._seconds += seconds
        self.folded += records
        if self._seconds * self.max_share < self.stats.last_seconds:  # (at once: what follows reads /proc)
            return False
        if self._records < self.every_records and self._seconds < self.every_seconds:
            return False
        expected = self.expected_seconds()
        if self.saving:  # one under way has cost at least this much so far
            expected = max(expected, time.perf_counter() - self._began)
        return self._seconds * self.max_share >= expected

    def expected_seconds(self) -> float:
        """What the next checkpoint is expected to take: the last one's time, times the
        process's growth since it began (never less than the last one's time)."""
        last = self.stats
        if last.last_seconds <= 0.0 or last.last_size <= 0:
            return last.last_seconds
        return last.last_seconds * max(1.0, self.size() / last.last_size)

    async def load(
        self, stop: asyncio.Event | None = None, decoding: SharedDecoding | None = None
    ) -> tuple[RunnerState, dict[TopicPartition, int]] | None:
        """The newest checkpoint this code can read, or None (fold from the start). The
        database is waited for ``load_patience`` seconds at most (a snapshot is only a
        cache), and not once ``stop`` is set: raises :class:`~ledgerlet_bus.retry.Stopped`
        (a service told to stop while its database is away leaves at once). ``decoding``:
        the restoring runner's, which the restored loops decode through."""
        try:
            snap = await with_backoff(
                f"{self.key}: reading the snapshot",
                lambda: self.store.load_snapshot(self.key),
                retry_on=(StoreUnavailable,),
                deadline=self.load_patience,
                stop=stop,
            )
        except StoreUnavailable as exc:
            log.warning(
                "%s: the snapshot could not be read for %g s (%s): folding from the start",
                self.key,
                self.load_patience,
                exc,
            )
            return None
        if snap is None:
            return None
        if snap.version != format_version():
            log.info(
                "%s: the snapshot was taken by other code (format %s): folding from the start", self.key, snap.version
            )
            return None
        try:
            state = restore(snap.state, decoding)
        except StaleSnapshot as exc:
            log.info("%s: the snapshot was taken by other code (%s): folding from the start", self.key, exc)
            return None
        except Exception as exc:  # a snapshot is only a cache: never worse than none
            log.warning("%s: the snapshot could not be read (%s): folding from the start", self.key, exc)
            return None
        self.folded = snap.records
        self.stats.loaded_from = dict(snap.offsets)
        return state, dict(snap.offsets)

    @property
    def saving(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def begin(self, state: RunnerState, offsets: dict[TopicPartition, int]) -> bool:
        """Start a checkpoint of ``state`` as of ``offsets`` and return at once: a child
        process pickles the state as it is now (the service goes on handling meanwhile:
        a fleet's state takes seconds to pickle), and a task stores what it wrote.
        False if one is still under way (this one is skipped: :attr:`saving`), or if it
        could not start (no fork: out of memory or processes), and then the interval
        starts over: it is tried again at the next one, not at once."""
        if self.saving:
            return False
        slot = self._take_slot()
        self.waiting_for_host = slot is None
        if slot is None:
            return False
        try:
            return self._begin(state, offsets)
        finally:
            if slot >= 0:
                os.close(slot)  # (a forked child holds its own copy until it is done)

    def _take_slot(self) -> int | None:
        """The machine's checkpoint slot (-1: none is kept), or None while another has it."""
        if self.host_slot is None:
            return -1
        try:
            return take_host_slot(self.host_slot)
        except OSError as exc:  # a lock that cannot be had at all is no reason to stop checkpoints
            log.warning("%s: %s cannot be locked (%s): checkpointing without turns", self.key, self.host_slot, exc)
            return -1

    def _begin(self, state: RunnerState, offsets: dict[TopicPartition, int]) -> bool:
        self._records, self._seconds = 0, 0.0
        began = self._began = time.perf_counter()
        size = self.size()
        free = self.available()
        if free is not None and free < size:
            self.stats.refused += 1
            log.warning(
                "%s: snapshot not started: the machine has %d MiB available, and the child that pickles"
                " the state may come to copy all of this process's %d MiB; the next interval tries again",
                self.key,
                free >> 20,
                size >> 20,
            )
            return False
        try:
            capture = capture_aside(state, manifest())
        except OSError as exc:
            self.stats.failed += 1
            log.warning("%s: snapshot not started (%s); the next interval tries again", self.key, exc)
            return False
        self._pending = asyncio.create_task(self._store(capture, dict(offsets), self.folded, began, size))
        return True

    async def save(
        self, state: RunnerState, offsets: dict[TopicPartition, int], timeout: float = SAVE_PATIENCE
    ) -> bool:
        """Checkpoint ``state`` as of ``offsets`` and wait until it is stored, waiting
        first for one under way and for the machine's turn (the caller handles nothing
        meanwhile, so ``state`` stays as it is: a member handed over); whether it was
        stored within ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    await self.wait()
                    if self.stored_offsets == offsets:
                        return True  # (the one under way was of this very state)
                    taken = self.stats.taken
                    if self.begin(state, offsets):
                        await self.wait()
                        return self.stats.taken > taken
                    if not self.waiting_for_host:
                        return False  # (it could not start: no fork)
                    await asyncio.sleep(0.1)
        except TimeoutError:
            return False

    async def wait(self) -> None:
        if self._pending is not None:
            await asyncio.shield(self._pending)

    async def close(self, timeout: float = 10.0) -> None:
        """Let a checkpoint under way finish for up to ``timeout`` seconds, else drop it."""
        if self._pending is None or self._pending.done():
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._pending)
        except TimeoutError:
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pending
            log.info("%s: the snapshot under way was dropped (the service is stopping)", self.key)

    async def _store(
        self, capture: Capture, offsets: dict[TopicPartition, int], folded: int, began: float, size: int
    ) -> None:
        """Wait for the child's pickle and store it; a failure is logged and tried again
        at the next interval (the database may be restarting: the service goes on)."""
        try:
            patience = max(CAPTURE_PATIENCE, 20 * self.expected_seconds())
            try:
                async with asyncio.timeout(patience):
                    blob = await capture.result()
            except TimeoutError:
                capture.drop()
                raise RuntimeError(f"the child pickling the state took over {patience:g} s: stopped") from None
            snap = StoredSnapshot(
                key=self.key,
                version=format_version(),
                offsets=offsets,
                state=blob,
                records=folded,
                taken_at=datetime.now(UTC),
            )
            await self.store.save_snapshot(snap)
        except asyncio.CancelledError:
            capture.drop()
            raise
        except Exception as exc:
            self.stats.failed += 1
            log.warning("%s: snapshot not saved (%s); the next interval tries again", self.key, exc)
            return
        self.stats.taken += 1
        self.stored_offsets = dict(offsets)
        self.stats.last_bytes = len(blob)
        wall = time.perf_counter() - began
        self.stats.last_seconds = capture.cpu_seconds if capture.cpu_seconds is not None else wall
        self.stats.last_size = size
        log.info(
            "%s: snapshot of %d records saved (%d KiB in %.3f s; pickled in %.3f CPU s)",
            self.key,
            folded,
            len(blob) // 1024,
            wall,
            self.stats.last_seconds,
        )
