"""Which pod goes first: the kubelet's ranking, per signal.

Upstream: ``pkg/kubelet/eviction/helpers.go`` (``orderedBy``/``multiSorter``,
``exceedMemoryRequests``, ``priority``, ``memory``, ``process``, ``exceedDiskRequests``,
``disk``, ``rankMemoryPressure``, ``rankPIDPressure``, ``rankDiskPressureFunc``,
``podDiskUsage``, ``containerUsage``, ``podLocalVolumeUsage``, ``cachedStatsFunc``).

Upstream sorts with Go's ``sort.Sort`` (not stable past 12 pods); ledgerlet sorts
stably, so ties keep the node's admission order, and records every comparator input.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.contracts.decisions import RankingEntry
from ledgerlet_core.kubelet.eviction.signals import (
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_INODES,
    Signal,
)
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.k8s.priority import pod_priority
from ledgerlet_core.model.k8s.resources import kubelet_request
from ledgerlet_core.model.k8s.volumes import local_volume_names
from ledgerlet_core.model.summary import PodStats, Summary


class FsStatsType(enum.StrEnum):
    ROOT = "root"
    LOGS = "logs"
    LOCAL_VOLUME = "localVolumeSource"


StatsLookup = Callable[[Pod], PodStats | None]


def stats_lookup(summary: Summary) -> StatsLookup:
    """``cachedStatsFunc``: a pod's stats by UID (by namespace/name when stats carry none)."""
    by_uid: dict[str, PodStats] = {}
    by_name: dict[str, PodStats] = {}
    for ps in summary.pods:
        if ps.pod_ref.uid:
            by_uid[ps.pod_ref.uid] = ps
        by_name[ps.key] = ps

    def lookup(pod: Pod) -> PodStats | None:
        if pod.metadata.uid and pod.metadata.uid in by_uid:
            return by_uid[pod.metadata.uid]
        found = by_name.get(pod.key)
        if found is not None and found.pod_ref.uid and pod.metadata.uid and found.pod_ref.uid != pod.metadata.uid:
            return None
        return found

    return lookup


def memory_usage(ps: PodStats) -> int:
    """Sum of container working sets (``memoryUsage`` per pod, via the pod's own stat)."""
    if ps.memory is not None and ps.memory.working_set_bytes is not None:
        return ps.memory.working_set_bytes
    return 0


def process_usage(ps: PodStats) -> int:
    if ps.process_stats is None or ps.process_stats.process_count is None:
        return 0
    return ps.process_stats.process_count


def pod_disk_usage(ps: PodStats, pod: Pod, measure: Sequence[FsStatsType]) -> dict[str, int]:
    """``podDiskUsage``: bytes and inodes of the measured filesystems' stats."""
    disk = inodes = 0
    for c in ps.containers:
        if FsStatsType.ROOT in measure and c.rootfs is not None:
            disk += c.rootfs.used_bytes or 0
            inodes += c.rootfs.inodes_used or 0
        if FsStatsType.LOGS in measure and c.logs is not None:
            disk += c.logs.used_bytes or 0
            inodes += c.logs.inodes_used or 0
    if FsStatsType.LOCAL_VOLUME in measure:
        names = local_volume_names(pod)
        for name in names:
            for v in ps.volume:
                if v.name == name:
                    disk += v.used_bytes or 0
                    inodes += v.inodes_used or 0
    return {RESOURCE_EPHEMERAL_STORAGE: disk, RESOURCE_INODES: inodes}


def _cmp_bool(a: bool, b: bool) -> int:
    """``cmpBool``: true sorts first."""
    if a == b:
        return 0
    return -1 if a else 1


def _cmp(a: int, b: int) -> int:
    return (a > b) - (a < b)


@dataclass(slots=True)
class _Facts:
    pod: Pod
    found: bool
    priority: int
    usage: int
    request: int
    exceeds: bool


Comparator = Callable[[_Facts, _Facts], int]


def _exceeds(p1: _Facts, p2: _Facts) -> int:
    if not p1.found or not p2.found:
        return _cmp_bool(not p1.found, not p2.found)
    return _cmp_bool(p1.exceeds, p2.exceeds)


def _priority(p1: _Facts, p2: _Facts) -> int:
    return _cmp(p1.priority, p2.priority)  # lower priority first


def _usage_above_request(p1: _Facts, p2: _Facts) -> int:
    if not p1.found or not p2.found:
        return _cmp_bool(not p1.found, not p2.found)
    return _cmp(p2.usage - p2.request, p1.usage - p1.request)  # larger first


def _usage(p1: _Facts, p2: _Facts) -> int:
    if not p1.found or not p2.found:
        return _cmp_bool(not p1.found, not p2.found)
    return _cmp(p2.usage, p1.usage)  # larger process count first


def _usage_cmp(kind: str) -> Comparator:
    return _usage if kind == "pid" else _usage_above_request


def _ordered(comparators: Sequence[Comparator]) -> Callable[[_Facts, _Facts], int]:
    """``multiSorter.Less`` as a three-way comparison (first non-zero decides)."""

    def compare(a: _Facts, b: _Facts) -> int:
        for c in comparators:
            r = c(a, b)
            if r:
                return r
        return 0

    return compare


def _sort_key(chain: Sequence[str], kind: str) -> Callable[[_Facts], tuple[int, ...]]:
    """A sort key equal to the comparator chain (``_ordered``), for a fast stable sort.

    Every stats-based comparator puts pods without stats first and ties them with each
    other, hence the (found, value-if-found) pairs."""

    def key(f: _Facts) -> tuple[int, ...]:
        out: list[int] = []
        for name in chain:
            if name == "priority":
                out.append(f.priority)
            elif name == "exceeds":
                out += (1, 0 if f.exceeds else 1) if f.found else (0, 0)
            elif kind == "pid":
                out += (1, -f.usage) if f.found else (0, 0)
            else:
                out += (1, f.request - f.usage) if f.found else (0, 0)
        return tuple(out)

    return key


@dataclass(frozen=True, slots=True)
class RankFunc:
    """How one signal ranks pods: which usage, against which request, in what order."""

    kind: str  # "memory" | "disk" | "pid"
    measure: tuple[FsStatsType, ...] = ()
    resource: str = ""

    def facts(self, pod: Pod, ps: PodStats | None, pod_level_resources: bool) -> _Facts:
        prio = pod_priority(pod)
        if ps is None:
            return _Facts(pod, False, prio, 0, 0, False)
        if self.kind == "memory":
            usage = memory_usage(ps)
            request = kubelet_request(pod, "memory", pod_level_resources=pod_level_resources).value()
            return _Facts(pod, True, prio, usage, request, usage > request)
        if self.kind == "pid":
            return _Facts(pod, True, prio, process_usage(ps), 0, False)
        usage = pod_disk_usage(ps, pod, self.measure)[self.resource]
        # exceedDiskRequests compares with the request of the signal's resource ("inodes"
        # has none, so any inode use exceeds); disk() subtracts the ephemeral-storage
        # request even for inodes (upstream quirk, kept).
        own = kubelet_request(pod, self.resource, pod_level_resources=pod_level_resources).value()
        storage = kubelet_request(pod, RESOURCE_EPHEMERAL_STORAGE, pod_level_resources=pod_level_resources).value()
        return _Facts(pod, True, prio, usage, storage, usage > own)

    def comparators(self) -> tuple[str, ...]:
        """``rankMemoryPressure``, ``rankPIDPressure``, ``rankDiskPressureFunc``."""
        if self.kind == "pid":
            return ("priority", "usage")
        return ("exceeds", "priority", "usage")


MEMORY_RANK: Final = RankFunc("memory")
PID_RANK: Final = RankFunc("pid")


def rank_funcs(dedicated_imagefs: bool, split_containerfs: bool) -> dict[Signal, RankFunc]:
    """``buildSignalToRankFunc``: the filesystems each disk signal measures per layout."""
    all_fs: tuple[FsStatsType, ...] = (FsStatsType.ROOT, FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME)
    out: dict[Signal, RankFunc] = {
        Signal.MEMORY_AVAILABLE: MEMORY_RANK,
        Signal.ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_RANK,
        Signal.PID_AVAILABLE: PID_RANK,
    }
    if dedicated_imagefs and not split_containerfs:
        nodefs: tuple[FsStatsType, ...] = (FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME)
        imagefs: tuple[FsStatsType, ...] = (FsStatsType.ROOT,)
        containerfs = imagefs
    elif split_containerfs:
        nodefs = all_fs
        imagefs = ()
        containerfs = all_fs
    else:
        nodefs = imagefs = containerfs = all_fs
    for avail, free, measure in (
        (Signal.NODEFS_AVAILABLE, Signal.NODEFS_INODES_FREE, nodefs),
        (Signal.IMAGEFS_AVAILABLE, Signal.IMAGEFS_INODES_FREE, imagefs),
        (Signal.CONTAINERFS_AVAILABLE, Signal.CONTAINERFS_INODES_FREE, containerfs),
    ):
        out[avail] = RankFunc("disk", measure, RESOURCE_EPHEMERAL_STORAGE)
        out[free] = RankFunc("disk", measure, RESOURCE_INODES)
    return out


def rank_pods(
    pods: Sequence[Pod],
    rank: RankFunc,
    lookup: StatsLookup,
    *,
    critical: Callable[[Pod], bool],
    pod_level_resources: bool = True,
    comparators: Sequence[str] | None = None,
) -> list[RankingEntry]:
    """The pods best candidate first, stable on the input (admission) order.

    ``comparators`` picks a sub-chain of ``exceeds``, ``priority``, ``usage`` (upstream's
    ``exceed*Requests``, ``priority``, ``memory``/``disk``/``process``), as upstream's own
    tests compose them; by default the signal's full rank function.
    """
    chain = comparators or rank.comparators()
    facts = [rank.facts(p, lookup(p), pod_level_resources) for p in pods]
    ordered = sorted(facts, key=_sort_key(chain, rank.kind))
    return [
        RankingEntry(
            pod=f.pod.key,
            stats_found=f.found,
            priority=f.priority,
            usage=f.usage,
            request=f.request,
            exceeds_request=f.exceeds,
            critical=critical(f.pod),
        )
        for f in ordered
    ]


def ranked_pods(entries: Sequence[RankingEntry], by_key: Mapping[str, Pod]) -> list[Pod]:
    return [by_key[e.pod] for e in entries]
