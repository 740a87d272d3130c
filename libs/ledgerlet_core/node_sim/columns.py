"""What a tick's observations are made of, over whole columns.

:class:`SeriesTable` holds every distinct usage series of a run (a fleet's pods share
theirs: a DaemonSet's, a generated fleet's hundred templates) and evaluates them all at
an instant at once, exactly as :meth:`~ledgerlet_core.model.usage.Series.at` does one
(integer interpolation rounded down; a product beyond an int64 is worked out in Python).
:class:`PodTerms` lists what each running pod adds to its node (memory, writable layers,
logs and counted volumes, inodes, pids), one row per series, so the totals of every node
are one weighted count over the rows.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt

from ledgerlet_core.model.usage import ZERO, Series

Ints = npt.NDArray[np.int64]

#: what a pod adds to its node, by kind (the columns of :meth:`PodTerms.totals`)
MEMORY: Final = 0
ROOTFS: Final = 1
LOGS_VOLUMES: Final = 2
INODES: Final = 3
PIDS: Final = 4
KINDS: Final = 5

#: a product the interpolation may form in an int64 (beyond it: Python's integers)
_SAFE: Final = float(1 << 62)
#: a float64 counts integers exactly below this
_EXACT: Final = float(1 << 53)


class SeriesTable:
    """Every distinct series of a run, by identity, and their values at an instant."""

    def __init__(self) -> None:
        self._index: dict[int, int] = {}
        self._series: list[Series] = []
        self._fixed: list[int] = []
        #: the series whose value changes over time, as flat arrays of their points
        self._moving: list[int] = []
        self._flat: tuple[Ints, Ints, Ints, Ints, Ints] | None = None
        self._values: tuple[int, Ints] | None = None
        self.index(ZERO)

    def __len__(self) -> int:
        return len(self._series)

    def index(self, series: Series) -> int:
        """The series' row (a new one for a series not seen before)."""
        found = self._index.get(id(series))
        if found is not None and self._series[found] is series:
            return found
        row = len(self._series)
        self._index[id(series)] = row
        self._series.append(series)
        self._fixed.append(series.fixed if series.fixed is not None else 0)
        if series.fixed is None:
            self._moving.append(row)
            self._flat = None
        self._values = None
        return row

    def values_at(self, t: int) -> Ints:
        """Every series' value at ``t`` (ns), by row (kept for the instant)."""
        kept = self._values
        if kept is not None and kept[0] == t and len(kept[1]) == len(self._series):
            return kept[1]
        values = np.array(self._fixed, dtype=np.int64)
        if self._moving:
            rows = np.array(self._moving, dtype=np.int64)
            values[rows] = self._moving_at(t)
        self._values = (t, values)
        return values

    def _points(self) -> tuple[Ints, Ints, Ints, Ints, Ints]:
        if self._flat is None:
            series = [self._series[r] for r in self._moving]
            counts = np.array([len(s.times) for s in series], dtype=np.int64)
            offsets = np.zeros(len(series), dtype=np.int64)
            np.cumsum(counts[:-1], out=offsets[1:])
            times = np.fromiter((x for s in series for x in s.times), dtype=np.int64, count=int(counts.sum()))
            values = np.fromiter((x for s in series for x in s.values), dtype=np.int64, count=int(counts.sum()))
            self._flat = (offsets, counts, times, values, offsets + counts - 1)
        return self._flat

    def _moving_at(self, t: int) -> Ints:
        """``Series.at(t)`` for every moving series, in the same order of cases."""
        offsets, _, times, values, last = self._points()
        first_t, last_t = times[offsets], times[last]
        out = values[last].copy()  # t at or past the last point
        inside = (t > first_t) & (t < last_t)
        out[t <= first_t] = values[offsets][t <= first_t]  # (checked first, as Series.at does)
        if inside.any():
            # bisect_right: how many of the series' points are at or before t
            reached = np.add.reduceat((times <= t).astype(np.int64), offsets)
            i = (offsets + reached)[inside]
            t0, t1 = times[i - 1], times[i]
            v0, v1 = values[i - 1], values[i]
            dv, dt, span = v1 - v0, t - t0, t1 - t0
            big = np.abs(dv).astype(np.float64) * dt.astype(np.float64) >= _SAFE
            part = np.zeros(len(i), dtype=np.int64)
            small = ~big
            part[small] = (dv[small] * dt[small]) // span[small]
            for j in np.flatnonzero(big):  # (beyond an int64: exactly, in Python)
                part[j] = (int(dv[j]) * int(dt[j])) // int(span[j])
            out[inside] = v0 + part
        return out


class PodTerms:
    """What the running pods add to their nodes: a row per (pod, series), each with its
    node, its kind and its series; rows of pods that stopped are reused."""

    def __init__(self, table: SeriesTable) -> None:
        self.table = table
        self._bucket = np.zeros(0, dtype=np.int64)
        self._series = np.zeros(0, dtype=np.int64)
        self._used = 0
        self._free: list[int] = []
        #: each pod's rows (machine integers, not a list of int objects: a fleet has millions)
        self._rows: dict[str, array[int]] = {}

    def place(self, pod: str, node_row: int, terms: Iterable[tuple[int, Series]]) -> None:
        """Pod ``pod`` on node row ``node_row`` adds each ``(kind, series)`` (replacing
        whatever it added before)."""
        self.remove(pod)
        rows: list[int] = []
        for kind, series in terms:
            row = self._free.pop() if self._free else self._grow()
            self._bucket[row] = node_row * KINDS + kind
            self._series[row] = self.table.index(series)
            rows.append(row)
        self._rows[pod] = array("q", rows)

    def remove(self, pod: str) -> None:
        for row in self._rows.pop(pod, ()):
            self._bucket[row] = 0
            self._series[row] = 0  # (the ZERO series: adds nothing)
            self._free.append(row)

    def _grow(self) -> int:
        if self._used == len(self._bucket):
            size = max(1024, 2 * len(self._bucket))
            self._bucket = np.resize(self._bucket, size)
            self._series = np.resize(self._series, size)
            self._bucket[self._used :] = 0
            self._series[self._used :] = 0
        row = self._used
        self._used += 1
        return row

    def totals(self, t: int, nodes: int) -> Ints:
        """Every node row's totals at ``t``: ``[nodes, KINDS]`` (memory, writable layers,
        logs and counted volumes, inodes, pids)."""
        used = self._used
        values = self.table.values_at(t)[self._series[:used]]
        bucket = self._bucket[:used]
        size = nodes * KINDS
        if used and float(np.abs(values).max()) * used < _EXACT:
            sums = np.bincount(bucket, weights=values.astype(np.float64), minlength=size)[:size]
            return sums.astype(np.int64).reshape(nodes, KINDS)
        out = np.zeros(size, dtype=np.int64)  # (sums a float64 might round: exactly)
        np.add.at(out, bucket, values)
        return out.reshape(nodes, KINDS)
