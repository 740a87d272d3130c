"""Builders for core tests, in the spirit of upstream's newPod/newContainer helpers."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.summary import (
    ContainerStats,
    FsStats,
    MemoryStats,
    PodReference,
    PodStats,
    ProcessStats,
    VolumeStats,
)

Mi = 1 << 20


def resources(cpu: str = "", memory: str = "", storage: str = "") -> dict[str, str]:
    """newResourceList(cpu, memory, ephemeral-storage)."""
    out = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    if storage:
        out["ephemeral-storage"] = storage
    return out


def pod(
    name: str,
    priority: int | None = 0,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    namespace: str = "default",
    volumes: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    node: str = "n1",
    extra_spec: dict[str, Any] | None = None,
    defaults: bool = True,
) -> Pod:
    """newPod(name, priority, [newContainer(name, requests, limits)], volumes)."""
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [{"name": name, "resources": {"requests": requests or {}, "limits": limits or {}}}],
        "volumes": volumes or [],
        **(extra_spec or {}),
    }
    if priority is not None:
        spec["priority"] = priority
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "annotations": annotations or {}},
        "spec": spec,
    }
    p = convert(raw, Pod)
    return apply_defaults(p) if defaults else p  # type: ignore[return-value]


def memory_stats(p: Pod, working_set: int) -> PodStats:
    """newPodMemoryStats."""
    return PodStats(
        pod_ref=PodReference(name=p.metadata.name, namespace=p.metadata.namespace, uid=p.metadata.uid),
        containers=[
            ContainerStats(name=c.name, memory=MemoryStats(working_set_bytes=working_set)) for c in p.spec.containers
        ],
        memory=MemoryStats(working_set_bytes=working_set),
    )


def disk_stats(p: Pod, rootfs: int, logs: int, per_volume: int) -> PodStats:
    """newPodDiskStats: every container uses rootfs+logs, every volume ``per_volume``."""
    return PodStats(
        pod_ref=PodReference(name=p.metadata.name, namespace=p.metadata.namespace, uid=p.metadata.uid),
        containers=[
            ContainerStats(name=c.name, rootfs=FsStats(used_bytes=rootfs), logs=FsStats(used_bytes=logs))
            for c in p.spec.containers
        ],
        volume=[VolumeStats(name=v.name, used_bytes=per_volume) for v in p.spec.volumes],
    )


def inode_stats(p: Pod, rootfs: int, logs: int, per_volume: int) -> PodStats:
    """newPodInodeStats."""
    return PodStats(
        pod_ref=PodReference(name=p.metadata.name, namespace=p.metadata.namespace, uid=p.metadata.uid),
        containers=[
            ContainerStats(name=c.name, rootfs=FsStats(inodes_used=rootfs), logs=FsStats(inodes_used=logs))
            for c in p.spec.containers
        ],
        volume=[VolumeStats(name=v.name, inodes_used=per_volume) for v in p.spec.volumes],
    )


def process_stats(p: Pod, count: int) -> PodStats:
    return PodStats(
        pod_ref=PodReference(name=p.metadata.name, namespace=p.metadata.namespace, uid=p.metadata.uid),
        process_stats=ProcessStats(process_count=count),
    )


LOCAL_VOLUME = [{"name": "local-volume", "emptyDir": {}}]
