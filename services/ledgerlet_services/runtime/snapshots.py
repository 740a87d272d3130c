"""Checkpoints of a service's state, so a restart folds what came after one, not its
group's whole history.

A service's state is a function of the records its group has committed (the shell's
module docstring): the loops' state per run, the runs that ended, the ids handled. Once
a batch is committed and nothing is held back, that state and the committed offsets are
saved together (every ``records`` records or ``seconds`` of handling, whichever comes
first); a restarted service loads the newest one and folds only the records between its
offsets and what the group has committed since.

The state is pickled, so its shape is the code's: a snapshot carries :func:`state_version`,
a digest of the code whose objects it holds, and one taken by other code is not loaded
(the service folds from the start, as it would without snapshots). A snapshot that cannot
be read is treated the same way, and so is one the database does not give within
``load_patience`` seconds. Snapshots are never the source of truth: dropping them
all costs a slower restart, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import hashlib
import logging
import os
import pickle
import signal
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Final, Protocol

import cramjam

import ledgerlet_core
from ledgerlet_bus.api import TopicPartition
from ledgerlet_bus.retry import with_backoff
from ledgerlet_services import loops as _loops
from ledgerlet_services.loops.base import Loop
from ledgerlet_services.runtime.dedupe import RecentIds
from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.snapshots import StoredSnapshot

log = logging.getLogger(__name__)

#: bump when what :class:`RunnerState` holds changes in a way the code digest cannot see
STATE_FORMAT: Final = 1
PICKLE_PROTOCOL: Final = 5

DEFAULT_EVERY_RECORDS: Final = 20_000
DEFAULT_EVERY_SECONDS: Final = 30.0
#: how long a starting service waits for the database to read its snapshot, before it
#: folds its group's history instead (slower, but it does not wait on the database)
DEFAULT_LOAD_PATIENCE: Final = 30.0
#: the most of a service's handling time checkpoints may take
MAX_SHARE: Final = 0.1
#: services that share a machine pickle one checkpoint at a time (the lock is held by the
#: pickling child, so it goes when the child does): six services of a fleet forking at once
#: would each see the memory free that the others' children are about to copy
#: (env ``LEDGERLET_SNAPSHOT_SLOT``: containers share it through a volume mounted in each)
HOST_SLOT: Final = Path(
    os.environ.get("LEDGERLET_SNAPSHOT_SLOT") or Path(tempfile.gettempdir()) / "ledgerlet-snapshot.lock"
)
#: a child still pickling after this long (or twenty times what the checkpoint is expected
#: to cost, if more) is stopped: a stuck child would hold every service's turn for ever
CAPTURE_PATIENCE: Final = 600.0


class SnapshotStore(Protocol):
    """Where checkpoints are kept (the event store's database: ``SqlEventStore``); raises
    StoreUnavailable while the database is away."""

    async def save_snapshot(self, snap: StoredSnapshot) -> None: ...

    async def load_snapshot(self, key: str) -> StoredSnapshot | None: ...


@dataclass(slots=True)
class RunnerState:
    """What a service runner holds that folding its committed records rebuilds."""

    instances: dict[str, Loop]
    ended: OrderedDict[str, None]
    seen: RecentIds
    last_root: dict[str, tuple[int, tuple[int, ...]]]


@cache
def state_version() -> str:
    """A digest of everything a pickled state's shape depends on: the format above, the
    Python version, and the source of the packages whose objects the state holds (the
    decision code in ``ledgerlet_core``, the loops, and the shell's own bookkeeping)."""
    h = hashlib.sha256(f"{STATE_FORMAT}:{PICKLE_PROTOCOL}:{sys.version_info[:2]}".encode())
    here = Path(__file__).parent
    roots = [Path(ledgerlet_core.__file__).parent, Path(_loops.__file__).parent]
    files = [f for root in roots for f in sorted(root.rglob("*.py"))]
    files += [here / "shell.py", here / "dedupe.py", Path(__file__)]
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:32]


def capture(state: RunnerState) -> bytes:
    """The state as bytes (pickled, then compressed: a fleet's state is mostly repetition)."""
    return bytes(cramjam.zstd.compress(pickle.dumps(state, protocol=PICKLE_PROTOCOL), level=1))


def restore(blob: bytes) -> RunnerState:
    state = pickle.loads(bytes(cramjam.zstd.decompress(blob)))
    if not isinstance(state, RunnerState):
        raise TypeError(f"a snapshot holds {type(state).__name__}, not RunnerState")
    return state


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

    async def load(self, stop: asyncio.Event | None = None) -> tuple[RunnerState, dict[TopicPartition, int]] | None:
        """The newest checkpoint this code can read, or None (fold from the start). The
        database is waited for ``load_patience`` seconds at most (a snapshot is only a
        cache), and not once ``stop`` is set: raises :class:`~ledgerlet_bus.retry.Stopped`
        (a service told to stop while its database is away leaves at once)."""
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
        if snap.version != state_version():
            log.info(
                "%s: the snapshot was taken by other code (state %s): folding from the start", self.key, snap.version
            )
            return None
        try:
            state = restore(snap.state)
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
            capture = capture_aside(state)
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
                version=state_version(),
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


def resident_bytes() -> int:
    """The process's resident memory now (Linux's /proc/self/statm), a measure of how
    much state a checkpoint has to pickle; 0 where it cannot be read (no scaling)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0


def available_bytes() -> int | None:
    """What the machine can give without swapping (Linux's MemAvailable), and no more than
    this process's cgroup (a container's memory limit) has left; None where neither can
    be read. A forked child shares its parent's pages until either writes to them, and
    pickling writes to every object's reference count: the child may come to copy nearly
    all of its parent (Redis's BGSAVE has the same caveat)."""
    found = [x for x in (_meminfo_available(), _cgroup_available()) if x is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_available(root: Path = Path("/sys/fs/cgroup"), membership: str | None = None) -> int | None:
    """What this process's memory cgroup and every cgroup above it have left (a container's
    limit, a systemd unit's ``MemoryMax``): the smallest limit less its usage, page cache
    that can be dropped not counted as used; None where there is no limit. cgroup v2
    (``memory.max``) and v1 (``memory.limit_in_bytes``)."""
    if membership is None:
        try:
            membership = Path("/proc/self/cgroup").read_text()
        except OSError:
            return None
    found: list[int] = []
    for line in membership.splitlines():
        _, _, rest = line.partition(":")
        controllers, _, rel = rest.partition(":")
        if controllers == "" and rel:
            found += _left(root, rel, _V2_FILES)
        elif "memory" in controllers.split(","):
            found += _left(root / "memory", rel, _V1_FILES)
    return min(found) if found else None


_V2_FILES: Final = ("memory.max", "memory.current", "inactive_file")
_V1_FILES: Final = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")


def _left(base: Path, rel: str, files: tuple[str, str, str]) -> list[int]:
    """Limit less usage for the cgroup at ``base/rel`` and each one above it that has a limit
    (``files``: the limit's file, the usage's, and the droppable cache's key in memory.stat)."""
    limit_file, usage_file, cache_key = files
    out: list[int] = []
    here = base / rel.strip("/")
    while True:
        try:
            text = (here / limit_file).read_text().strip()
            if text != "max" and int(text) < 1 << 60:  # (v1 writes "no limit" as a huge number)
                used = int((here / usage_file).read_text())
                out.append(max(int(text) - used + _stat(here / "memory.stat", cache_key), 0))
        except (OSError, ValueError):
            pass
        if here == base or base not in here.parents:
            return out
        here = here.parent


def _stat(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def take_host_slot(path: Path) -> int | None:
    """An open descriptor that holds ``path``'s exclusive lock (flock), or None if another
    holds it. The lock goes with the last descriptor of it: a child forked meanwhile keeps
    it until it exits, however it exits."""
    try:  # (a lock needs no write access: another user's file will do)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)  # (whatever the umask: every user's services take turns)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


_PAGE_SIZE: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Capture:
    """A state being pickled by a child process (``pid``) that writes it to a pipe
    (``fd``); or, where the platform cannot fork, already pickled (``blob``)."""

    def __init__(self, pid: int = 0, fd: int = -1, blob: bytes | None = None, cpu_seconds: float | None = None) -> None:
        self.pid, self.fd, self.blob = pid, fd, blob
        #: what pickling took of the CPU (known once :meth:`result` has returned)
        self.cpu_seconds = cpu_seconds

    async def result(self) -> bytes:
        if self.blob is not None:
            return self.blob
        loop = asyncio.get_running_loop()
        try:
            data = await loop.run_in_executor(None, _read_all, self.fd)
            _, status, usage = await loop.run_in_executor(None, os.wait4, self.pid, 0)
            self.pid = 0
            self.cpu_seconds = usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                raise RuntimeError(f"the process pickling the state exited with {code}")
            return data
        finally:
            self.drop()

    def drop(self) -> None:
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = 0
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def capture_aside(state: RunnerState) -> Capture:
    """Pickle ``state`` in a forked child (copy-on-write: the child sees the state as it
    is at the fork, whatever the service does next), as Redis's BGSAVE does. The child
    only pickles and writes to a pipe, then leaves with ``os._exit``: it touches no
    socket, event loop or lock of the parent's, and dies with its parent."""
    if not hasattr(os, "fork"):
        began = time.process_time()
        blob = capture(state)
        return Capture(blob=blob, cpu_seconds=time.process_time() - began)
    parent = os.getpid()
    read, write = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read)
        os.close(write)
        raise
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read)
            _die_with_parent(parent)
            _write_all(write, capture(state))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Capture(pid=pid, fd=read)


def _load_prctl() -> Callable[..., int] | None:
    """The C library's prctl, or None where there is none (not Linux)."""
    try:
        return ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None


#: looked up by the parent at import: a forked child does as little as it can (loading a
#: library or looking up a symbol takes the dynamic loader's lock, which another thread
#: of the parent's may have held at the fork: the child would wait for ever)
_PRCTL: Final = _load_prctl()
_PR_SET_PDEATHSIG: Final = 1


def _die_with_parent(parent: int) -> None:
    """Linux's PR_SET_PDEATHSIG: a service killed mid-checkpoint leaves no child pickling
    on. It covers a parent that dies from now on, so a child whose ``parent`` is already
    gone (it was re-parented) leaves at once."""
    if _PRCTL is not None:
        with contextlib.suppress(Exception):
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
