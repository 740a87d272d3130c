"""Local ephemeral-storage limits: evictions that need no node pressure at all.

Upstream: ``pkg/kubelet/eviction/eviction_manager.go`` (``localStorageEviction``,
``emptyDirLimitEviction``, ``podEphemeralStorageLimitEviction``,
``containerEphemeralStorageLimitEviction``). Checked on every pass while
``localStorageCapacityIsolation`` is on; per pod the first violation wins, in this order:
an emptyDir over its ``sizeLimit``, the pod over the sum of its containers' limits, a
container over its own limit. Several pods can go in one pass; the grace is always 1 s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.objects import Pod, PodSpec
from ledgerlet_core.model.k8s.priority import is_critical_pod
from ledgerlet_core.model.k8s.resources import pod_limits
from ledgerlet_core.model.k8s.spec_memo import per_spec
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.model.summary import PodStats

#: metric labels upstream counts these evictions under; used as the decision's signal
EMPTY_DIR_SIGNAL: Final = "emptydirfs.limit"
POD_SIGNAL: Final = "ephemeralpodfs.limit"
CONTAINER_SIGNAL: Final = "ephemeralcontainerfs.limit"


@dataclass(frozen=True, slots=True)
class LocalStorageEviction:
    pod: Pod
    signal: str
    limit: Quantity
    observed: int
    message: str
    #: what was over its limit, as the decision's ``threshold`` shows it
    what: str


def _empty_dir(pod: Pod, stats: PodStats) -> LocalStorageEviction | None:
    used = {v.name: v.used_bytes for v in stats.volume if v.used_bytes is not None}
    for vol in pod.spec.volumes:
        if vol.empty_dir is None:
            continue
        size = vol.empty_dir.size_limit
        u = used.get(vol.name)
        if u is not None and size is not None and size.sign() == 1 and Quantity.bytes(u) > size:
            return LocalStorageEviction(
                pod,
                EMPTY_DIR_SIGNAL,
                size,
                u,
                f'Usage of EmptyDir volume "{vol.name}" exceeds the limit "{size}". ',
                f"emptyDir {vol.name} sizeLimit {size}",
            )
    return None


def _pod_limit(pod: Pod, stats: PodStats) -> LocalStorageEviction | None:
    limit = pod_limits(pod).get("ephemeral-storage")
    if limit is None:
        return None
    eph = stats.ephemeral_storage
    used = eph.used_bytes if eph is not None and eph.used_bytes is not None else 0
    if Quantity.bytes(used) > limit:
        return LocalStorageEviction(
            pod,
            POD_SIGNAL,
            limit,
            used,
            f"Pod ephemeral local storage usage exceeds the total limit of containers {limit}. ",
            f"pod ephemeral-storage limit {limit}",
        )
    return None


def _container_limit(pod: Pod, stats: PodStats, dedicated_imagefs: bool) -> LocalStorageEviction | None:
    limits = {
        c.name: c.resources.limits["ephemeral-storage"]
        for c in pod.spec.containers
        if "ephemeral-storage" in c.resources.limits and c.resources.limits["ephemeral-storage"].value() != 0
    }
    for cs in stats.containers:
        used = (cs.logs.used_bytes or 0) if cs.logs is not None else 0
        if not dedicated_imagefs and cs.rootfs is not None:
            used += cs.rootfs.used_bytes or 0  # the writable layer is on nodefs too
        limit = limits.get(cs.name)
        if limit is not None and limit < Quantity.bytes(used):
            return LocalStorageEviction(
                pod,
                CONTAINER_SIGNAL,
                limit,
                used,
                f'Container {cs.name} exceeded its local ephemeral storage limit "{limit}". ',
                f"container {cs.name} ephemeral-storage limit {limit}",
            )
    return None


def has_local_storage_limits(pod: Pod) -> bool:
    """Whether any of the three checks can apply (most pods set no such limit)."""
    return _spec_sets_local_storage_limits(pod.spec)


@per_spec
def _spec_sets_local_storage_limits(spec: PodSpec) -> bool:
    if any(v.empty_dir is not None and v.empty_dir.size_limit is not None for v in spec.volumes):
        return True
    return any("ephemeral-storage" in c.resources.limits for c in (*spec.containers, *spec.init_containers))


def local_storage_evictions(
    pods: Sequence[Pod], lookup: Callable[[Pod], PodStats | None], *, dedicated_imagefs: bool
) -> list[LocalStorageEviction]:
    """Every pod over one of its local-storage limits (critical pods are refused)."""
    out: list[LocalStorageEviction] = []
    for pod in pods:
        if not has_local_storage_limits(pod):
            continue
        stats = lookup(pod)
        if stats is None or is_critical_pod(pod):
            continue
        hit = _empty_dir(pod, stats) or _pod_limit(pod, stats) or _container_limit(pod, stats, dedicated_imagefs)
        if hit is not None:
            out.append(hit)
    return out
