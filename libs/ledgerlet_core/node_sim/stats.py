"""Closed-loop observations: a Summary derived from ``usage`` and what runs on a node.

This plays the part of cAdvisor/CRI stats (``pkg/kubelet/stats``): working set excludes
inactive_file; ``availableBytes`` is the cgroup limit minus the working set; the
``pods`` system container is the kubepods cgroup, limited to capacity − systemReserved
− kubeReserved when node allocatable is enforced on pods
(``pkg/kubelet/cm/node_container_manager_linux.go: getNodeAllocatableAbsoluteImpl``).

Filesystem layout (scenario spec §1): with one filesystem the runtime's imagefs *is*
the node filesystem, so the kubelet's imagefs signals see the root disk as well (as on
a real single-disk node, where ``imagefs.available<15%`` fires before
``nodefs.available<10%``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Final, Protocol

import msgspec

from ledgerlet_core.model.k8s.objects import Container, Node, Pod, PodSpec
from ledgerlet_core.model.k8s.resources import is_sidecar
from ledgerlet_core.model.k8s.spec_memo import per_spec
from ledgerlet_core.model.k8s.volumes import local_volume_names
from ledgerlet_core.model.summary import (
    ContainerStats,
    FsStats,
    MemoryStats,
    NodeStats,
    PodReference,
    PodStats,
    ProcessStats,
    RlimitStats,
    RuntimeStats,
    Summary,
    VolumeStats,
)
from ledgerlet_core.model.usage import (
    LAYOUT_DEDICATED_IMAGEFS,
    LAYOUT_SINGLE,
    LAYOUT_SPLIT_IMAGEFS,
    ZERO,
    NodeUsage,
    PodUsage,
    Series,
)

#: Linux's pid_max on 64-bit systems with systemd (used when usage gives no pids capacity).
DEFAULT_MAX_PID: Final = 4_194_304
#: mkfs.ext4's default bytes-per-inode ratio (used when usage gives no inode capacity).
BYTES_PER_INODE: Final = 16_384


class Image(Protocol):
    """An image as the runtime lists it (scenario images and the kubelet's records alike)."""

    @property
    def name(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def in_use(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    memory: int
    nodefs: int
    nodefs_inodes: int
    pids: int
    imagefs: int | None = None
    imagefs_inodes: int | None = None


def node_capacity(node: Node | None, usage: NodeUsage) -> NodeCapacity:
    """Usage's capacity, falling back to the Node object's ``status.capacity``."""
    cap = dict(usage.capacity)
    status = node.status.capacity if node is not None else {}
    memory = cap.get("memory")
    if memory is None:
        memory = status["memory"].value() if "memory" in status else 0
    nodefs = cap.get("nodefs")
    if nodefs is None:
        nodefs = status["ephemeral-storage"].value() if "ephemeral-storage" in status else 0
    inodes = cap.get("nodefsInodes", nodefs // BYTES_PER_INODE)
    pids = cap.get("pids", DEFAULT_MAX_PID)
    imagefs = imagefs_inodes = None
    if usage.image_fs is not None:
        imagefs = usage.image_fs["capacity"]
        imagefs_inodes = usage.image_fs.get("inodes", imagefs // BYTES_PER_INODE)
    return NodeCapacity(memory, nodefs, inodes, pids, imagefs, imagefs_inodes)


def _fs(capacity: int, used: int, inodes: int, inodes_used: int, time: str) -> FsStats:
    return FsStats(
        time=time,
        available_bytes=max(capacity - used, 0),
        capacity_bytes=capacity,
        used_bytes=used,
        inodes_free=max(inodes - inodes_used, 0),
        inodes=inodes,
        inodes_used=inodes_used,
    )


@dataclass(frozen=True, slots=True)
class PodPlan:
    """Which series feed which container and volume of one pod: worked out once, so a pass
    only evaluates series (the collector's hot path)."""

    ref: PodReference
    #: (container name, memory, rootfs, logs); ``None`` where the container uses nothing
    containers: tuple[tuple[str, Series | None, Series | None, Series | None], ...]
    #: container name -> memory limit in bytes (containers that have one)
    memory_limits: Mapping[str, int]
    #: (volume name, usage, counts as local ephemeral storage)
    volumes: tuple[tuple[str, Series, bool], ...]
    inodes: Series
    pids: Series
    #: what the pod uses when no series it reads changes over time (most pods of a large
    #: fleet): worked out once per template and reused by every pass
    fixed: PodUse | None = None


#: a pod's stats and its memory, rootfs, logs, local volume bytes, inodes and pids
PodStatsAt = tuple[PodStats, int, int, int, int, int, int]


def running_containers(pod: Pod) -> list[Container]:
    """The containers that run for the pod's life: its sidecars, then its main containers."""
    return [*(c for c in pod.spec.init_containers if is_sidecar(c)), *pod.spec.containers]


#: plans by the parts they are made of (a fleet's pods share their containers, volumes and
#: usage entries: ``Interner``, ``parse_pod_usage``), each with the parts it was made from
_TEMPLATES: dict[tuple[int, int, int, int], tuple[object, object, object, object, PodPlan]] = {}
_TEMPLATES_KEPT: Final = 4096
_NONE: Final = ()


def plan_pod(pod: Pod, usage: PodUsage | None) -> PodPlan:
    """Per-container usage when ``containers`` splits it; otherwise the pod-level series
    go to the first container. The pod's inode count is carried on the first container.

    Pods made of the same parts get the same plan but for their own reference: it is
    worked out once and given each pod's name. (The stats' JSON is made only when an
    observation carries the pods' stats: :func:`pod_stats_json`.)"""
    spec = pod.spec
    # (empty lists are new objects in every pod: one stands for them all)
    parts = (spec.containers, spec.init_containers or _NONE, spec.volumes or _NONE, usage)
    key = (id(parts[0]), id(parts[1]), id(parts[2]), id(parts[3]))
    found = _TEMPLATES.get(key)
    if found is None or any(a is not b for a, b in zip(found[:4], parts, strict=True)):
        if len(_TEMPLATES) >= _TEMPLATES_KEPT:
            _TEMPLATES.clear()
        found = _TEMPLATES[key] = (*parts, _plan(pod, usage))
    ref = PodReference(name=pod.metadata.name, namespace=pod.metadata.namespace, uid=pod.metadata.uid)
    return dataclasses.replace(found[4], ref=ref)


def _plan(pod: Pod, usage: PodUsage | None) -> PodPlan:
    u = usage or PodUsage()
    names = [c.name for c in pod.spec.containers]
    per: dict[str, list[Series | None]] = {n: [None, None, None] for n in names}
    for idx, (res, pod_series) in enumerate((("memory", u.memory), ("rootfs", u.rootfs), ("logs", u.logs))):
        split = [(n, getattr(c, res)) for n, c in u.containers.items() if getattr(c, res) is not None]
        if split:
            for n, series in split:
                per.setdefault(n, [None, None, None])[idx] = series
        elif names and pod_series is not ZERO:
            per[names[0]][idx] = pod_series
    local = local_volume_names(pod)
    volumes: list[tuple[str, Series, bool]] = []
    if u.volumes_by_name:
        volumes = [(name, series, name in local or not local) for name, series in u.volumes_by_name.items()]
    elif u.volumes is not ZERO or local:
        volumes = [(local[0] if local else "ephemeral", u.volumes, True)]
    # sidecars (restartable init containers) run beside the main containers, each under its
    # own memory limit (kuberuntime_container_linux.go sets it on every container it starts)
    limits = {
        c.name: c.resources.limits["memory"].value()
        for c in running_containers(pod)
        if "memory" in c.resources.limits and c.resources.limits["memory"].value() > 0
    }
    plan = PodPlan(
        ref=PodReference(name=pod.metadata.name, namespace=pod.metadata.namespace, uid=pod.metadata.uid),
        containers=tuple((n, v[0], v[1], v[2]) for n, v in per.items()),
        memory_limits=limits,
        volumes=tuple(volumes),
        inodes=u.inodes,
        pids=u.pids,
    )
    series = [s for c in plan.containers for s in c[1:] if s is not None]
    series += [v[1] for v in plan.volumes]
    if all(s.is_constant() for s in (*series, plan.inodes, plan.pids)):
        plan = dataclasses.replace(plan, fixed=_values(plan, 0)[1])
    return plan


def pod_writable_bytes(plan: PodPlan, t: int) -> tuple[int, int]:
    """Writable-layer and log bytes of the pod's containers at ``t``."""
    rootfs = sum(c[2].at(t) for c in plan.containers if c[2] is not None)
    logs = sum(c[3].at(t) for c in plan.containers if c[3] is not None)
    return rootfs, logs


def pod_stats_at(plan: PodPlan, t: int, stopped: Set[str] = frozenset()) -> PodStatsAt:
    """The pod's stats at ``t`` (see :func:`_pod_stats`), from the plan when they never change."""
    return _pod_stats(plan, 0 if plan.fixed is not None and not stopped else t, stopped)


def pod_use(plan: PodPlan, t: int, stopped: Set[str] = frozenset()) -> PodUse:
    """What the pod uses at ``t`` (memory, rootfs, logs, local volume bytes, inodes, pids)."""
    if plan.fixed is not None and not stopped:
        return plan.fixed
    return _values(plan, t, stopped)[1]


def pod_stats_json(plan: PodPlan, t: int, stopped: Set[str] = frozenset()) -> bytes:
    """The pod's stats at ``t`` as JSON (what an observation carrying them holds)."""
    return _JSON.encode(_stats(plan, _values(plan, t, stopped)[0]))


_JSON: Final = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class PodTotals:
    """What a node's pods use together (the node-level stats are made of it)."""

    memory: int = 0
    rootfs: int = 0
    logs_volumes: int = 0
    inodes: int = 0
    pids: int = 0

    def __add__(self, other: PodTotals) -> PodTotals:
        return PodTotals(
            self.memory + other.memory,
            self.rootfs + other.rootfs,
            self.logs_volumes + other.logs_volumes,
            self.inodes + other.inodes,
            self.pids + other.pids,
        )

    @staticmethod
    def of(uses: Iterable[PodUse]) -> PodTotals:
        memory = rootfs = logs_volumes = inodes = pids = 0
        for m, r, lg, v, ino, pid in uses:
            memory += m
            rootfs += r
            logs_volumes += lg + v
            inodes += ino
            pids += pid
        return PodTotals(memory, rootfs, logs_volumes, inodes, pids)


def _values(plan: PodPlan, t: int, stopped: Set[str] = frozenset()) -> tuple[list[int], PodUse]:
    """The numbers of the pod's stats at ``t``, in the order :func:`_stats` places them
    (the order they are encoded in), and what the pod uses (memory, rootfs, logs, local volume bytes, inodes, pids).

    A container in ``stopped`` (OOM-killed, waiting to restart) holds no memory; its
    writable layer and logs stay on disk."""
    values: list[int] = []
    mem = rootfs = logs = 0
    inodes = plan.inodes.at(t)
    first = True
    for name, ms, rs, ls in plan.containers:
        m = ms.at(t) if ms is not None and name not in stopped else 0
        r = rs.at(t) if rs is not None else 0
        lg = ls.at(t) if ls is not None else 0
        mem += m
        rootfs += r
        logs += lg
        values += (m, r, inodes if first else 0, lg)
        first = False
    values.append(mem)
    vol_total = 0
    for _, series, counts in plan.volumes:
        used = series.at(t)
        if counts:
            vol_total += used
        values.append(used)
    pids = plan.pids.at(t)
    values += (rootfs + logs + vol_total, inodes, pids)
    return values, (mem, rootfs, logs, vol_total, inodes, pids)


#: what a pod uses: memory, rootfs, logs, local volume bytes, inodes, pids
PodUse = tuple[int, int, int, int, int, int]


def _stats(plan: PodPlan, values: Sequence[int]) -> PodStats:
    """The pod's stats made of :func:`_values`' numbers."""
    it = iter(values)
    containers = [
        ContainerStats(
            name=name,
            memory=MemoryStats(working_set_bytes=next(it)),
            rootfs=FsStats(used_bytes=next(it), inodes_used=next(it)),
            logs=FsStats(used_bytes=next(it)),
        )
        for name, *_ in plan.containers
    ]
    memory = MemoryStats(working_set_bytes=next(it))
    volumes = [VolumeStats(name=name, used_bytes=next(it)) for name, _, _ in plan.volumes]
    return PodStats(
        pod_ref=plan.ref,
        containers=containers,
        memory=memory,
        volume=volumes,
        ephemeral_storage=FsStats(used_bytes=next(it), inodes_used=next(it)),
        process_stats=ProcessStats(process_count=next(it)),
    )


def _pod_stats(plan: PodPlan, t: int, stopped: Set[str] = frozenset()) -> PodStatsAt:
    """The pod's stats, and what it uses (see :func:`_values`)."""
    values, use = _values(plan, t, stopped)
    return (_stats(plan, values), *use)


def pod_images(pod: Pod) -> frozenset[str]:
    """The images the pod's containers run (shared by the pods of one spec)."""
    return _spec_images(pod.spec)


@per_spec
def _spec_images(spec: PodSpec) -> frozenset[str]:
    return frozenset(c.image for c in (*spec.containers, *spec.init_containers) if c.image)


def images_in_use(images: Iterable[Image], running: set[str]) -> set[str]:
    """Images the runtime reports in use: flagged so, or run by a container on the node."""
    return {img.name for img in images if img.in_use or img.name in running}


def derive_summary(
    node_name: str,
    t: int,
    time: str,
    usage: NodeUsage,
    capacity: NodeCapacity,
    layout: str,
    images: Sequence[Image],
    dead_containers_bytes: int,
    pods: Sequence[PodPlan],
    pods_memory_limit: int | None,
    stopped: Mapping[str, Set[str]] | None = None,
    dead_container_log_bytes: int = 0,
) -> Summary:
    """The Summary the kubelet would read at virtual time ``t`` (ns)."""
    down = stopped or {}
    at = [pod_stats_at(plan, t, down.get(f"{plan.ref.namespace}/{plan.ref.name}", frozenset())) for plan in pods]
    node = node_stats(
        node_name,
        t,
        time,
        usage,
        capacity,
        layout,
        images,
        dead_containers_bytes,
        PodTotals.of(a[1:] for a in at),
        pods_memory_limit,
        dead_container_log_bytes,
    )
    return Summary(node=node, pods=[a[0] for a in at])


def node_stats(
    node_name: str,
    t: int,
    time: str,
    usage: NodeUsage,
    capacity: NodeCapacity,
    layout: str,
    images: Sequence[Image],
    dead_containers_bytes: int,
    totals: PodTotals,
    pods_memory_limit: int | None,
    dead_container_log_bytes: int = 0,
) -> NodeStats:
    """The node-level part of :func:`derive_summary`, from what its pods use together."""
    pods_ws, rootfs, logs_volumes = totals.memory, totals.rootfs, totals.logs_volumes
    pod_inodes, pod_pids = totals.inodes, totals.pids
    system: Mapping[str, Series] = usage.system
    node_ws = system.get("memory", ZERO).at(t) + pods_ws
    inactive = usage.inactive_file.at(t)
    memory = MemoryStats(
        time=time,
        available_bytes=max(capacity.memory - node_ws, 0),
        usage_bytes=node_ws + inactive,
        working_set_bytes=node_ws,
    )
    pods_memory = MemoryStats(
        time=time,
        available_bytes=max(pods_memory_limit - pods_ws, 0) if pods_memory_limit is not None else None,
        usage_bytes=pods_ws,
        working_set_bytes=pods_ws,
    )
    image_bytes = sum(i.size for i in images)
    sys_fs = system.get("nodefs", ZERO).at(t) + dead_container_log_bytes  # exited containers' logs
    sys_inodes = system.get("nodefsInodes", ZERO).at(t)

    if layout == LAYOUT_DEDICATED_IMAGEFS and capacity.imagefs is not None:
        nodefs = _fs(capacity.nodefs, sys_fs + logs_volumes, capacity.nodefs_inodes, sys_inodes, time)
        imagefs = _fs(
            capacity.imagefs,
            image_bytes + dead_containers_bytes + rootfs,
            capacity.imagefs_inodes or 0,
            pod_inodes,
            time,
        )
        containerfs = imagefs
    elif layout == LAYOUT_SPLIT_IMAGEFS and capacity.imagefs is not None:
        nodefs = _fs(
            capacity.nodefs,
            sys_fs + dead_containers_bytes + rootfs + logs_volumes,
            capacity.nodefs_inodes,
            sys_inodes + pod_inodes,
            time,
        )
        imagefs = _fs(capacity.imagefs, image_bytes, capacity.imagefs_inodes or 0, 0, time)
        containerfs = nodefs
    else:  # one filesystem holds everything; the runtime reports it as imagefs too
        nodefs = _fs(
            capacity.nodefs,
            sys_fs + image_bytes + dead_containers_bytes + rootfs + logs_volumes,
            capacity.nodefs_inodes,
            sys_inodes + pod_inodes,
            time,
        )
        imagefs = containerfs = nodefs

    curproc = system.get("pids", ZERO).at(t) + pod_pids
    return NodeStats(
        node_name=node_name,
        system_containers=[ContainerStats(name="pods", memory=pods_memory)],
        memory=memory,
        fs=nodefs,
        runtime=RuntimeStats(image_fs=imagefs, container_fs=containerfs),
        rlimit=RlimitStats(time=time, maxpid=capacity.pids, curproc=curproc),
    )


__all__ = [
    "LAYOUT_DEDICATED_IMAGEFS",
    "LAYOUT_SINGLE",
    "LAYOUT_SPLIT_IMAGEFS",
    "NodeCapacity",
    "PodPlan",
    "derive_summary",
    "images_in_use",
    "node_capacity",
    "node_stats",
    "plan_pod",
    "pod_images",
    "pod_stats_json",
]
