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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from ledgerlet_core.k8s.objects import Node, Pod, Volume
from ledgerlet_core.summary import (
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
from ledgerlet_core.usage import (
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


@dataclass(frozen=True, slots=True)
class RunningPod:
    """A pod running on the node, with the usage series that apply to it (if any)."""

    pod: Pod
    usage: PodUsage | None


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


def local_volume_names(pod: Pod) -> list[str]:
    """``localVolumeNames``: hostPath, and emptyDir/gitRepo/configMap not backed by memory."""
    return [v.name for v in pod.spec.volumes if is_local_volume(v)]


def is_local_volume(v: Volume) -> bool:
    if v.host_path is not None or v.git_repo is not None or v.config_map is not None:
        return True
    return v.empty_dir is not None and v.empty_dir.medium != "Memory"


@dataclass(slots=True)
class _PodNumbers:
    stats: PodStats
    memory: int
    rootfs: int
    logs: int
    volumes: int
    inodes: int
    pids: int


def _container_values(pod: Pod, usage: PodUsage, t: int) -> list[tuple[str, int, int, int]]:
    names = [c.name for c in pod.spec.containers]
    per: dict[str, list[int]] = {n: [0, 0, 0] for n in names}
    for idx, (res, pod_series) in enumerate((("memory", usage.memory), ("rootfs", usage.rootfs), ("logs", usage.logs))):
        split = [(n, getattr(c, res)) for n, c in usage.containers.items() if getattr(c, res) is not None]
        if split:
            for n, s in split:
                per.setdefault(n, [0, 0, 0])[idx] = s.at(t)
        elif names:
            per[names[0]][idx] = pod_series.at(t)
    return [(n, v[0], v[1], v[2]) for n, v in per.items()]


def pod_writable_bytes(pod: Pod, usage: PodUsage, t: int) -> tuple[int, int]:
    """Writable-layer and log bytes of the pod's containers at ``t``."""
    values = _container_values(pod, usage, t)
    return sum(v[2] for v in values), sum(v[3] for v in values)


def _pod_numbers(rp: RunningPod, t: int, time: str) -> _PodNumbers:
    pod = rp.pod
    usage = rp.usage or PodUsage()
    containers: list[ContainerStats] = []
    mem = rootfs = logs = 0
    inodes = usage.inodes.at(t)
    for i, (name, m, r, lg) in enumerate(_container_values(pod, usage, t)):
        mem += m
        rootfs += r
        logs += lg
        containers.append(
            ContainerStats(
                name=name,
                memory=MemoryStats(time=time, working_set_bytes=m, usage_bytes=m),
                # A pod's inode count is carried on its first container's writable layer.
                rootfs=FsStats(time=time, used_bytes=r, inodes_used=inodes if i == 0 else 0),
                logs=FsStats(time=time, used_bytes=lg, inodes_used=0),
            )
        )
    volumes: list[VolumeStats] = []
    vol_total = 0
    local = local_volume_names(pod)
    if usage.volumes_by_name:
        for name, series in usage.volumes_by_name.items():
            used = series.at(t)
            vol_total += used if name in local or not local else 0
            volumes.append(VolumeStats(name=name, time=time, used_bytes=used, inodes_used=0))
    else:
        used = usage.volumes.at(t)
        if used or local:
            name = local[0] if local else "ephemeral"
            vol_total = used
            volumes.append(VolumeStats(name=name, time=time, used_bytes=used, inodes_used=0))
    pids = usage.pids.at(t)
    stats = PodStats(
        pod_ref=PodReference(name=pod.metadata.name, namespace=pod.metadata.namespace, uid=pod.metadata.uid),
        containers=containers,
        memory=MemoryStats(time=time, working_set_bytes=mem, usage_bytes=mem),
        volume=volumes,
        ephemeral_storage=FsStats(time=time, used_bytes=rootfs + logs + vol_total, inodes_used=inodes),
        process_stats=ProcessStats(process_count=pids),
    )
    return _PodNumbers(stats, mem, rootfs, logs, vol_total, inodes, pids)


def images_in_use(images: Iterable[Image], pods: Iterable[RunningPod]) -> set[str]:
    """Images the runtime reports in use: flagged so, or run by a container on the node."""
    running = {c.image for rp in pods for c in (*rp.pod.spec.containers, *rp.pod.spec.init_containers)}
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
    pods: Sequence[RunningPod],
    pods_memory_limit: int | None,
) -> Summary:
    """The Summary the kubelet would read at virtual time ``t`` (ns)."""
    numbers = [_pod_numbers(rp, t, time) for rp in pods]
    system: Mapping[str, Series] = usage.system
    pods_ws = sum(n.memory for n in numbers)
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
    rootfs = sum(n.rootfs for n in numbers)
    logs_volumes = sum(n.logs + n.volumes for n in numbers)
    pod_inodes = sum(n.inodes for n in numbers)
    sys_fs = system.get("nodefs", ZERO).at(t)
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

    curproc = system.get("pids", ZERO).at(t) + sum(n.pids for n in numbers)
    return Summary(
        node=NodeStats(
            node_name=node_name,
            system_containers=[ContainerStats(name="pods", memory=pods_memory)],
            memory=memory,
            fs=nodefs,
            runtime=RuntimeStats(image_fs=imagefs, container_fs=containerfs),
            rlimit=RlimitStats(time=time, maxpid=capacity.pids, curproc=curproc),
        ),
        pods=[n.stats for n in numbers],
    )


def effective_layout(annotation: str | None, has_image_fs: bool) -> str:
    """Annotation ``ledgerlet/filesystems``; an ``imageFs`` in usage implies a dedicated one."""
    if annotation:
        return annotation
    return LAYOUT_DEDICATED_IMAGEFS if has_image_fs else LAYOUT_SINGLE


__all__ = [
    "LAYOUT_DEDICATED_IMAGEFS",
    "LAYOUT_SINGLE",
    "LAYOUT_SPLIT_IMAGEFS",
    "NodeCapacity",
    "RunningPod",
    "derive_summary",
    "effective_layout",
    "images_in_use",
    "node_capacity",
]
