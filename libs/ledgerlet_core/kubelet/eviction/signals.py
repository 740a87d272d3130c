"""Eviction signals and what they map to.

Upstream: ``pkg/kubelet/eviction/api/types.go`` (Signal constants, ``OpForSignal``) and
``pkg/kubelet/eviction/helpers.go: init`` (``signalToResource``,
``signalToNodeCondition``).
"""

from __future__ import annotations

import enum
from typing import Final


class Signal(enum.StrEnum):
    MEMORY_AVAILABLE = "memory.available"
    ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
    NODEFS_AVAILABLE = "nodefs.available"
    NODEFS_INODES_FREE = "nodefs.inodesFree"
    IMAGEFS_AVAILABLE = "imagefs.available"
    IMAGEFS_INODES_FREE = "imagefs.inodesFree"
    CONTAINERFS_AVAILABLE = "containerfs.available"
    CONTAINERFS_INODES_FREE = "containerfs.inodesFree"
    PID_AVAILABLE = "pid.available"


RESOURCE_MEMORY: Final = "memory"
RESOURCE_EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_INODES: Final = "inodes"
RESOURCE_PIDS: Final = "pids"

MEMORY_PRESSURE: Final = "MemoryPressure"
DISK_PRESSURE: Final = "DiskPressure"
PID_PRESSURE: Final = "PIDPressure"

SIGNAL_TO_RESOURCE: Final[dict[Signal, str]] = {
    Signal.MEMORY_AVAILABLE: RESOURCE_MEMORY,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE: RESOURCE_MEMORY,
    Signal.NODEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    Signal.NODEFS_INODES_FREE: RESOURCE_INODES,
    Signal.IMAGEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    Signal.IMAGEFS_INODES_FREE: RESOURCE_INODES,
    Signal.CONTAINERFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    Signal.CONTAINERFS_INODES_FREE: RESOURCE_INODES,
    Signal.PID_AVAILABLE: RESOURCE_PIDS,
}

SIGNAL_TO_CONDITION: Final[dict[Signal, str]] = {
    Signal.MEMORY_AVAILABLE: MEMORY_PRESSURE,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    Signal.NODEFS_AVAILABLE: DISK_PRESSURE,
    Signal.NODEFS_INODES_FREE: DISK_PRESSURE,
    Signal.IMAGEFS_AVAILABLE: DISK_PRESSURE,
    Signal.IMAGEFS_INODES_FREE: DISK_PRESSURE,
    Signal.CONTAINERFS_AVAILABLE: DISK_PRESSURE,
    Signal.CONTAINERFS_INODES_FREE: DISK_PRESSURE,
    Signal.PID_AVAILABLE: PID_PRESSURE,
}

#: The fixed order ledgerlet uses where upstream iterates a Go map (scenario spec §6).
SIGNAL_ORDER: Final[tuple[Signal, ...]] = (
    Signal.MEMORY_AVAILABLE,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE,
    Signal.NODEFS_AVAILABLE,
    Signal.NODEFS_INODES_FREE,
    Signal.CONTAINERFS_AVAILABLE,
    Signal.CONTAINERFS_INODES_FREE,
    Signal.IMAGEFS_AVAILABLE,
    Signal.IMAGEFS_INODES_FREE,
    Signal.PID_AVAILABLE,
)
SIGNAL_RANK: Final[dict[Signal, int]] = {s: i for i, s in enumerate(SIGNAL_ORDER)}

#: Conditions in the order the decision log reports them.
CONDITION_ORDER: Final[tuple[str, ...]] = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)

MEMORY_SIGNALS: Final = frozenset({Signal.MEMORY_AVAILABLE, Signal.ALLOCATABLE_MEMORY_AVAILABLE})


def parse_signal(text: str) -> Signal | None:
    try:
        return Signal(text)
    except ValueError:
        return None
