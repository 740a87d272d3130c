"""The machine a service checkpoints on: how much memory the process holds, how much the
machine (and the process's cgroup: a container's limit) has left for a copy of it, and the
one checkpoint at a time that services sharing a machine take turns at.

A forked child shares its parent's pages until either writes to them, and pickling writes
to every object's reference count: the child may come to copy nearly all of its parent, so
a checkpoint starts only with room for a whole copy, and six services of a fleet forking at
once would each see free the memory the others' children are about to copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from typing import Final

#: services that share a machine pickle one checkpoint at a time (the lock is held by the
#: pickling child, so it goes when the child does) (env ``LEDGERLET_SNAPSHOT_SLOT``:
#: containers share it through a volume mounted in each)
HOST_SLOT: Final = Path(
    os.environ.get("LEDGERLET_SNAPSHOT_SLOT") or Path(tempfile.gettempdir()) / "ledgerlet-snapshot.lock"
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
