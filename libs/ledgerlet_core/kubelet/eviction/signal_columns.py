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

from collections.abc import Callable, Iterable, Iterator, Mapping
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
    """Per signal: what is available, of what capacity, and where the signal is there at all.

    Each signal's columns are worked out when a threshold first asks for them, and each
    stat column is made an array only then: a tick's batch is tested twice (the
    collector's pods-or-not, the kubelet's quiet passes) against the few signals its
    nodes have thresholds on, and making all nine, of all sixteen columns, each time was
    a tenth of a replay."""

    @classmethod
    def of(cls, batch: NodesObserved) -> SignalColumns:
        return cls(_BatchColumns(batch))

    def __init__(self, stats: Mapping[str, Ints]) -> None:
        """``stats``: :data:`STAT_FIELDS` as arrays, a member per entry (read as asked)."""
        self._stats = stats
        self.size = len(stats["mem_available"])
        self._made: dict[Signal, tuple[Ints, Ints, Bools]] = {}
        self._everywhere: Bools | None = None

    def column(self, signal: Signal) -> tuple[Ints, Ints, Bools] | None:
        """``(available, capacity, present)`` of ``signal`` for every member (None: a
        signal the observations do not give)."""
        found = self._made.get(signal)
        if found is None:
            make = _MAKERS.get(signal)
            if make is None:
                return None
            found = self._made[signal] = make(self)
        return found

    def _col(self, name: str) -> Ints:
        return self._stats[name]

    @property
    def _all(self) -> Bools:
        if self._everywhere is None:
            self._everywhere = np.ones(self.size, dtype=np.bool_)
        return self._everywhere

    def _memory(self) -> tuple[Ints, Ints, Bools]:
        available = self._col("mem_available")
        return available, available + self._col("mem_working_set"), self._all

    def _allocatable_memory(self) -> tuple[Ints, Ints, Bools]:
        available = self._col("pods_available")
        return available, available + self._col("pods_working_set"), available >= 0

    def _nodefs(self) -> tuple[Ints, Ints, Bools]:
        capacity = self._col("fs_capacity")
        return np.maximum(capacity - self._col("fs_used"), 0), capacity, self._all

    def _nodefs_inodes(self) -> tuple[Ints, Ints, Bools]:
        inodes = self._col("fs_inodes")
        return np.maximum(inodes - self._col("fs_inodes_used"), 0), inodes, self._all

    def _imagefs(self) -> tuple[Ints, Ints, Bools]:
        nodefs = self._made_of(Signal.NODEFS_AVAILABLE)
        own = self._col("fs_mode") != FS_SINGLE
        capacity = self._col("img_capacity")
        available = np.maximum(capacity - self._col("img_used"), 0)
        return np.where(own, available, nodefs[0]), np.where(own, capacity, nodefs[1]), self._all

    def _imagefs_inodes(self) -> tuple[Ints, Ints, Bools]:
        nodefs = self._made_of(Signal.NODEFS_INODES_FREE)
        own = self._col("fs_mode") != FS_SINGLE
        inodes = self._col("img_inodes")
        free = np.maximum(inodes - self._col("img_inodes_used"), 0)
        return np.where(own, free, nodefs[0]), np.where(own, inodes, nodefs[1]), self._all

    def _containerfs(self) -> tuple[Ints, Ints, Bools]:
        nodefs, imagefs = self._made_of(Signal.NODEFS_AVAILABLE), self._made_of(Signal.IMAGEFS_AVAILABLE)
        dedicated = self._col("fs_mode") == FS_DEDICATED
        return np.where(dedicated, imagefs[0], nodefs[0]), np.where(dedicated, imagefs[1], nodefs[1]), self._all

    def _containerfs_inodes(self) -> tuple[Ints, Ints, Bools]:
        nodefs, imagefs = self._made_of(Signal.NODEFS_INODES_FREE), self._made_of(Signal.IMAGEFS_INODES_FREE)
        dedicated = self._col("fs_mode") == FS_DEDICATED
        return np.where(dedicated, imagefs[0], nodefs[0]), np.where(dedicated, imagefs[1], nodefs[1]), self._all

    def _pid(self) -> tuple[Ints, Ints, Bools]:
        max_pid = self._col("max_pid")
        return max_pid - self._col("cur_proc"), max_pid, self._all

    def _made_of(self, signal: Signal) -> tuple[Ints, Ints, Bools]:
        found = self.column(signal)
        assert found is not None
        return found


#: how each signal's columns are made
_MAKERS: Final[dict[Signal, Callable[[SignalColumns], tuple[Ints, Ints, Bools]]]] = {
    Signal.MEMORY_AVAILABLE: SignalColumns._memory,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE: SignalColumns._allocatable_memory,
    Signal.NODEFS_AVAILABLE: SignalColumns._nodefs,
    Signal.NODEFS_INODES_FREE: SignalColumns._nodefs_inodes,
    Signal.IMAGEFS_AVAILABLE: SignalColumns._imagefs,
    Signal.IMAGEFS_INODES_FREE: SignalColumns._imagefs_inodes,
    Signal.CONTAINERFS_AVAILABLE: SignalColumns._containerfs,
    Signal.CONTAINERFS_INODES_FREE: SignalColumns._containerfs_inodes,
    Signal.PID_AVAILABLE: SignalColumns._pid,
}


class _BatchColumns(Mapping[str, Ints]):
    """A batch's stat columns as arrays, each made when first read."""

    def __init__(self, batch: NodesObserved) -> None:
        self._batch = batch
        self._arrays: dict[str, Ints] = {}

    def __getitem__(self, name: str) -> Ints:
        found = self._arrays.get(name)
        if found is None:
            if name not in STAT_FIELDS:
                raise KeyError(name)
            found = self._arrays[name] = np.array(getattr(self._batch, name), dtype=np.int64)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(STAT_FIELDS)

    def __len__(self) -> int:
        return len(STAT_FIELDS)


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
        found = columns.column(t.signal)
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
