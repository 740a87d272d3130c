"""A tick's derived observations, made over whole columns (:class:`NodesObserved`).

Every closed-loop node due for a pass at a housekeeping tick is observed here at once:
its pods' usage is the sum of their series (node_sim/columns.py), its node-level stats
are worked out for every node together by the arithmetic of
:func:`~ledgerlet_core.node_sim.stats.node_stats`, and the observations travel as
batches whose members keep the ids and places single ``NodeObserved`` events would have
had. A node whose pass may read its pods' stats (one of its thresholds met, counting
the minimum reclaim, or a pod with local-storage limits) has them worked out pod by pod
and carried along; the others' are never made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

import msgspec
import numpy as np
import numpy.typing as npt

from ledgerlet_core.contracts.envelope import Envelope, event_id
from ledgerlet_core.contracts.internal import FS_DEDICATED, FS_SINGLE, FS_SPLIT, NodesObserved
from ledgerlet_core.contracts.observed import (
    BATCH_KEY,
    MAX_MEMBERS,
    MAX_POD_BYTES,
    OBSERVED_BATCH,
    encode_observed,
    member_ids,
)
from ledgerlet_core.kubelet.eviction.signal_columns import STAT_FIELDS, SignalColumns, grouped_met
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.model.runtime import RuntimeView
from ledgerlet_core.model.usage import LAYOUT_DEDICATED_IMAGEFS, LAYOUT_SPLIT_IMAGEFS, ZERO, NodeUsage, Series
from ledgerlet_core.node_sim.columns import INODES, LOGS_VOLUMES, MEMORY, PIDS, ROOTFS, Ints, SeriesTable
from ledgerlet_core.node_sim.stats import NodeCapacity, PodPlan

Bools = npt.NDArray[np.bool_]

#: a node row's inputs besides its pods: series rows, then plain numbers
_SERIES: Final = ("sys_memory", "sys_nodefs", "sys_inodes", "sys_pids", "inactive")
_NUMBERS: Final = (
    "cap_memory",
    "cap_nodefs",
    "cap_inodes",
    "cap_pids",
    "img_capacity",
    "img_inodes",
    "mode",
    "image_bytes",
    "dead_bytes",
    "dead_log_bytes",
    "pods_limit",
    "has_limit",
)


def fs_mode(layout: str, capacity: NodeCapacity) -> int:
    """Which filesystems a node's observation tells apart (as ``node_stats`` decides)."""
    if capacity.imagefs is None:
        return FS_SINGLE
    if layout == LAYOUT_DEDICATED_IMAGEFS:
        return FS_DEDICATED
    if layout == LAYOUT_SPLIT_IMAGEFS:
        return FS_SPLIT
    return FS_SINGLE


def plan_terms(plan: PodPlan) -> list[tuple[int, Series]]:
    """What a pod adds to its node, series by series (``stats._values``' sums): each
    container's memory, writable layer and logs, the volumes that count as local
    ephemeral storage, its inodes and its pids."""
    terms: list[tuple[int, Series]] = []
    for _, memory, rootfs, logs in plan.containers:
        if memory is not None:
            terms.append((MEMORY, memory))
        if rootfs is not None:
            terms.append((ROOTFS, rootfs))
        if logs is not None:
            terms.append((LOGS_VOLUMES, logs))
    terms += [(LOGS_VOLUMES, series) for _, series, counts in plan.volumes if counts]
    terms += [(INODES, plan.inodes), (PIDS, plan.pids)]
    return terms


class NodeColumns:
    """Per node row: what its observations are made of besides its pods."""

    def __init__(self, table: SeriesTable) -> None:
        self.table = table
        self.size = 0
        self._arrays: dict[str, Ints] = {name: np.zeros(0, dtype=np.int64) for name in (*_SERIES, *_NUMBERS)}

    def grow(self, rows: int) -> None:
        if rows <= len(self._arrays["mode"]):
            self.size = max(self.size, rows)
            return
        size = max(rows, 2 * len(self._arrays["mode"]), 64)
        for name, array in self._arrays.items():
            grown = np.zeros(size, dtype=np.int64)
            grown[: len(array)] = array
            self._arrays[name] = grown
        self.size = rows

    def set(
        self,
        row: int,
        usage: NodeUsage,
        capacity: NodeCapacity,
        layout: str,
        image_bytes: int,
        dead_bytes: int,
        dead_log_bytes: int,
        pods_limit: int | None,
    ) -> None:
        self.grow(row + 1)
        a, index, system = self._arrays, self.table.index, usage.system
        a["sys_memory"][row] = index(system.get("memory", ZERO))
        a["sys_nodefs"][row] = index(system.get("nodefs", ZERO))
        a["sys_inodes"][row] = index(system.get("nodefsInodes", ZERO))
        a["sys_pids"][row] = index(system.get("pids", ZERO))
        a["inactive"][row] = index(usage.inactive_file)
        a["cap_memory"][row] = capacity.memory
        a["cap_nodefs"][row] = capacity.nodefs
        a["cap_inodes"][row] = capacity.nodefs_inodes
        a["cap_pids"][row] = capacity.pids
        mode = fs_mode(layout, capacity)
        a["mode"][row] = mode
        a["img_capacity"][row] = (capacity.imagefs or 0) if mode != FS_SINGLE else 0
        a["img_inodes"][row] = (capacity.imagefs_inodes or 0) if mode != FS_SINGLE else 0
        a["image_bytes"][row] = image_bytes
        a["dead_bytes"][row] = dead_bytes
        a["dead_log_bytes"][row] = dead_log_bytes
        a["pods_limit"][row] = pods_limit or 0
        a["has_limit"][row] = pods_limit is not None

    def stats(self, t: int, rows: Ints, totals: Ints) -> dict[str, Ints]:
        """The node-level stats of ``rows`` at ``t``, given what their pods use together
        (``totals``: a row each), as :data:`STAT_FIELDS` columns (``node_stats``' sums)."""
        a = self._arrays
        values = self.table.values_at(t)

        def at(name: str) -> Ints:
            return values[a[name][rows]]

        def of(name: str) -> Ints:
            return a[name][rows]

        pods_ws, rootfs, logs_volumes = totals[:, MEMORY], totals[:, ROOTFS], totals[:, LOGS_VOLUMES]
        pod_inodes, pod_pids = totals[:, INODES], totals[:, PIDS]
        node_ws = at("sys_memory") + pods_ws
        limit, has_limit = of("pods_limit"), of("has_limit") != 0
        sys_fs = at("sys_nodefs") + of("dead_log_bytes")
        sys_inodes = at("sys_inodes")
        mode, image_bytes, dead = of("mode"), of("image_bytes"), of("dead_bytes")
        single, dedicated = mode == FS_SINGLE, mode == FS_DEDICATED
        fs_used = np.where(
            single,
            sys_fs + image_bytes + dead + rootfs + logs_volumes,
            np.where(dedicated, sys_fs + logs_volumes, sys_fs + dead + rootfs + logs_volumes),
        )
        fs_inodes_used = np.where(dedicated, sys_inodes, sys_inodes + pod_inodes)
        zero = np.zeros(len(rows), dtype=np.int64)
        img_used = np.where(single, zero, np.where(dedicated, image_bytes + dead + rootfs, image_bytes))
        img_inodes_used = np.where(dedicated, pod_inodes, zero)
        return {
            "mem_available": np.maximum(of("cap_memory") - node_ws, 0),
            "mem_usage": node_ws + at("inactive"),
            "mem_working_set": node_ws,
            "pods_available": np.where(has_limit, np.maximum(limit - pods_ws, 0), -1),
            "pods_working_set": pods_ws,
            "fs_capacity": of("cap_nodefs"),
            "fs_used": fs_used,
            "fs_inodes": of("cap_inodes"),
            "fs_inodes_used": fs_inodes_used,
            "fs_mode": mode,
            "img_capacity": of("img_capacity"),
            "img_used": img_used,
            "img_inodes": of("img_inodes"),
            "img_inodes_used": img_inodes_used,
            "max_pid": of("cap_pids"),
            "cur_proc": at("sys_pids") + pod_pids,
        }


def needs_pods(
    stats: Mapping[str, Ints],
    thresholds: Sequence[tuple[Threshold, ...]],
    group: Ints,
    limited: Bools,
) -> Bools:
    """The members whose pass may read their pods' stats: a threshold met counting its
    minimum reclaim (a superset of what the kubelet finds met, now or kept from its last
    pass: it ranks pods only then), or a pod with local-storage limits (``limited``)."""
    columns = SignalColumns(stats)
    met = grouped_met(dict(enumerate(thresholds)), group, columns, with_min_reclaim=True)
    return met | limited


def batches(
    tick: Envelope,
    rank: int,
    nodes: Sequence[str],
    places: Sequence[int],
    stats: Mapping[str, Ints],
    runtimes: Sequence[RuntimeView],
    pods: Callable[[int], bytes | None],
    *,
    time: str,
    whole: bool,
) -> list[tuple[Envelope, int]]:
    """The tick's observations of ``nodes`` (at their ``places``) as batches of at most
    :data:`MAX_MEMBERS` members and :data:`MAX_POD_BYTES` of pods' stats, each with how
    many members it carries; ``pods(i)`` gives member ``i``'s pods' stats (JSON) when
    they ride along."""
    columns = {name: stats[name].tolist() for name in STAT_FIELDS}
    prefix = [*tick.order, rank]
    out: list[tuple[Envelope, int]] = []
    start = 0
    while start < len(nodes):
        end, size = start, 0
        pods_of: list[int] = []
        carried: list[msgspec.Raw] = []
        while end < len(nodes) and end - start < MAX_MEMBERS and size <= MAX_POD_BYTES:
            found = pods(end)
            if found is not None:
                pods_of.append(end - start)
                carried.append(msgspec.Raw(found))
                size += len(found)
            end += 1
        batch = _batch(tick, prefix, nodes, places, columns, runtimes, start, end, pods_of, carried, time, whole)
        out.append((batch, end - start))
        start = end
    return out


def _batch(
    tick: Envelope,
    prefix: list[int],
    nodes: Sequence[str],
    places: Sequence[int],
    columns: Mapping[str, list[int]],
    runtimes: Sequence[RuntimeView],
    start: int,
    end: int,
    pods_of: list[int],
    pods: list[msgspec.Raw],
    time: str,
    whole: bool,
) -> Envelope:
    seen: dict[int, int] = {}
    views: list[RuntimeView] = []
    runtime: list[int] = []
    for view in runtimes[start:end]:  # (nodes share a view where nothing of theirs differs)
        found = seen.get(id(view))
        if found is None:
            found = seen[id(view)] = len(views)
            views.append(view)
        runtime.append(found)
    run, t = tick.run, tick.t
    member_places = list(places[start:end])
    data = NodesObserved(
        time=time,
        nodes=list(nodes[start:end]),
        ids=member_ids(run, t, prefix, member_places),
        places=member_places,
        **{name: values[start:end] for name, values in columns.items()},
        runtime=runtime,
        runtimes=views,
        pods_of=pods_of,
        pods=pods,
        whole=whole,
    )
    order = [*prefix, member_places[0]]
    return Envelope(
        id=event_id(run, t, order, OBSERVED_BATCH),
        type=OBSERVED_BATCH,
        data=encode_observed(data),
        run=run,
        t=t,
        order=order,
        stream="observations",
        kind="internal",
        causes=[tick.id],
    )


def emit_batch(out: Emitter, batch: Envelope, count: int) -> None:
    """Send a batch of ``count`` observations (as :func:`batches` made it: its count
    known, not read back from its JSON)."""
    out.emit_batch(batch, BATCH_KEY, count)
