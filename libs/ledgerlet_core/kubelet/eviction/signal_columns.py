"""The eviction signals of a tick's observations, a column per signal, and the threshold
test over whole columns.

The same numbers :func:`~ledgerlet_core.kubelet.eviction.observations.signal_values`
takes from one node's Summary (available and capacity per signal), for every member of
a :class:`~ledgerlet_core.contracts.internal.NodesObserved` at once; and
:func:`met_any` is ``bool(thresholds_met(...))`` on them, exactly: a threshold's level is
``GetThresholdQuantity`` (a quantity, or ``int64(float64(capacity) * float32 pct)``),
plus its minimum reclaim when asked, and it is met where strictly more is wanted than is
available (``helpers.go: thresholdsMet``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import numpy as np
import numpy.typing as npt

from ledgerlet_core.contracts.internal import FS_DEDICATED, FS_SINGLE, NodesObserved
from ledgerlet_core.kubelet.eviction.signals import Signal
from ledgerlet_core.kubelet.eviction.thresholds import Threshold, ThresholdValue
from ledgerlet_core.model.quantity import NANO

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: a level beyond every int64 (a threshold no count can stay under)
_TOP: Final = np.iinfo(np.int64).max


#: the batch's columns a signal is made of (NodesObserved's field names)
STAT_FIELDS: Final = (
    "mem_available",
    "mem_usage",
    "mem_working_set",
    "pods_available",
    "pods_working_set",
    "fs_capacity",
    "fs_used",
    "fs_inodes",
    "fs_inodes_used",
    "fs_mode",
    "img_capacity",
    "img_used",
    "img_inodes",
    "img_inodes_used",
    "max_pid",
    "cur_proc",
)


class SignalColumns:
    """Per signal: what is available, of what capacity, and where the signal is there at all."""

    @classmethod
    def of(cls, batch: NodesObserved) -> SignalColumns:
        return cls({name: np.array(getattr(batch, name), dtype=np.int64) for name in STAT_FIELDS})

    def __init__(self, stats: Mapping[str, Ints]) -> None:
        """``stats``: :data:`STAT_FIELDS` as arrays, a member per entry."""
        n = len(stats["mem_available"])
        self.size = n
        mem_available, mem_ws = stats["mem_available"], stats["mem_working_set"]
        pods_available, pods_ws = stats["pods_available"], stats["pods_working_set"]
        fs_cap, fs_used = stats["fs_capacity"], stats["fs_used"]
        fs_inodes, fs_iused = stats["fs_inodes"], stats["fs_inodes_used"]
        mode = stats["fs_mode"]
        img_cap, img_used = stats["img_capacity"], stats["img_used"]
        img_inodes, img_iused = stats["img_inodes"], stats["img_inodes_used"]
        max_pid, cur_proc = stats["max_pid"], stats["cur_proc"]
        everywhere = np.ones(n, dtype=np.bool_)
        nodefs = (np.maximum(fs_cap - fs_used, 0), fs_cap)
        nodefs_inodes = (np.maximum(fs_inodes - fs_iused, 0), fs_inodes)
        own = mode != FS_SINGLE
        imagefs = (
            np.where(own, np.maximum(img_cap - img_used, 0), nodefs[0]),
            np.where(own, img_cap, fs_cap),
        )
        imagefs_inodes = (
            np.where(own, np.maximum(img_inodes - img_iused, 0), nodefs_inodes[0]),
            np.where(own, img_inodes, fs_inodes),
        )
        dedicated = mode == FS_DEDICATED
        self.columns: dict[Signal, tuple[Ints, Ints, Bools]] = {
            Signal.MEMORY_AVAILABLE: (mem_available, mem_available + mem_ws, everywhere),
            Signal.ALLOCATABLE_MEMORY_AVAILABLE: (pods_available, pods_available + pods_ws, pods_available >= 0),
            Signal.NODEFS_AVAILABLE: (*nodefs, everywhere),
            Signal.NODEFS_INODES_FREE: (*nodefs_inodes, everywhere),
            Signal.IMAGEFS_AVAILABLE: (*imagefs, everywhere),
            Signal.IMAGEFS_INODES_FREE: (*imagefs_inodes, everywhere),
            Signal.CONTAINERFS_AVAILABLE: (
                np.where(dedicated, imagefs[0], nodefs[0]),
                np.where(dedicated, imagefs[1], fs_cap),
                everywhere,
            ),
            Signal.CONTAINERFS_INODES_FREE: (
                np.where(dedicated, imagefs_inodes[0], nodefs_inodes[0]),
                np.where(dedicated, imagefs_inodes[1], fs_inodes),
                everywhere,
            ),
            Signal.PID_AVAILABLE: (max_pid - cur_proc, max_pid, everywhere),
        }


def _level(value: ThresholdValue, capacity: Ints) -> tuple[int, Ints | None]:
    """A threshold value as (quantity nanos, the percentage's whole units per row or None)."""
    if value.quantity is not None:
        return value.quantity.nanos, None
    return 0, (capacity.astype(np.float64) * value.percentage).astype(np.int64)


def met_any(
    thresholds: Iterable[Threshold], columns: SignalColumns, rows: Ints, *, with_min_reclaim: bool = False
) -> Bools:
    """For each of ``rows``: whether any of ``thresholds`` is met (``with_min_reclaim``:
    counting its minimum reclaim, as a threshold met last pass is kept until it is
    reclaimed)."""
    met = np.zeros(len(rows), dtype=np.bool_)
    for t in thresholds:
        found = columns.columns.get(t.signal)
        if found is None:
            continue
        available, capacity, present = found[0][rows], found[1][rows], found[2][rows]
        nanos, whole = _level(t.value, capacity)
        if with_min_reclaim and t.min_reclaim is not None:
            more_nanos, more = _level(t.min_reclaim, capacity)
            nanos += more_nanos
            whole = more if whole is None else (whole if more is None else whole + more)
        # more wanted than available: level_nanos > available * NANO, i.e. available < ceil(level)
        base = min(-(-nanos // NANO), int(_TOP))
        level = np.full(len(rows), base, dtype=np.int64) if whole is None else whole + base
        met |= present & (available < level)
    return met


def grouped_met(
    thresholds_of: Mapping[int, tuple[Threshold, ...]],
    group: Ints,
    columns: SignalColumns,
    *,
    with_min_reclaim: bool = False,
) -> Bools:
    """:func:`met_any` for members whose thresholds differ by group (a node's configuration
    and filesystem layout): ``group[i]`` names member ``i``'s in ``thresholds_of``."""
    out = np.zeros(columns.size, dtype=np.bool_)
    for key, thresholds in thresholds_of.items():
        rows = np.flatnonzero(group == key)
        if len(rows):
            out[rows] = met_any(thresholds, columns, rows, with_min_reclaim=with_min_reclaim)
    return out
