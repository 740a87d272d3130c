"""Node-level reclaim: container GC and image GC, before any pod is evicted.

Upstream: ``pkg/kubelet/eviction/helpers.go: buildSignalToNodeReclaimFuncs``,
``eviction_manager.go: reclaimNodeLevelResources`` and
``pkg/kubelet/images/image_gc_manager.go`` (``GarbageCollect``, ``freeSpace``,
``imagesInEvictionOrder``, ``DeleteUnusedImages``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from ledgerlet_core.kubelet.eviction.signals import Signal
from ledgerlet_core.model.runtime import RuntimeImage, RuntimeView
from ledgerlet_core.model.summary import FsStats, NodeStats, RuntimeStats, Summary
from ledgerlet_core.model.usage import LAYOUT_DEDICATED_IMAGEFS, LAYOUT_SPLIT_IMAGEFS


class ReclaimAction(enum.StrEnum):
    GARBAGE_COLLECT_CONTAINERS = "GarbageCollectContainers"
    DELETE_UNUSED_IMAGES = "DeleteUnusedImages"


def reclaim_funcs(signal: Signal, layout: str) -> tuple[ReclaimAction, ...]:
    """``buildSignalToNodeReclaimFuncs`` for a signal on a filesystem layout."""
    both = (ReclaimAction.GARBAGE_COLLECT_CONTAINERS, ReclaimAction.DELETE_UNUSED_IMAGES)
    nodefs = (Signal.NODEFS_AVAILABLE, Signal.NODEFS_INODES_FREE)
    imagefs = (Signal.IMAGEFS_AVAILABLE, Signal.IMAGEFS_INODES_FREE)
    containerfs = (Signal.CONTAINERFS_AVAILABLE, Signal.CONTAINERFS_INODES_FREE)
    if layout == LAYOUT_DEDICATED_IMAGEFS:
        if signal in imagefs or signal in containerfs:
            return both
        return ()
    if layout == LAYOUT_SPLIT_IMAGEFS:
        if signal in nodefs or signal in containerfs:
            return (ReclaimAction.GARBAGE_COLLECT_CONTAINERS,)
        if signal in imagefs:
            return (ReclaimAction.DELETE_UNUSED_IMAGES,)
        return ()
    if signal in nodefs or signal in imagefs or signal in containerfs:
        return both
    return ()


def images_in_eviction_order(images: Sequence[RuntimeImage], now: int, min_age: int) -> list[RuntimeImage]:
    """``imagesInEvictionOrder`` + ``freeSpace``'s skips: unused, unpinned, old enough.

    Sorted by last use, then first detection (stable: ties keep the runtime's order).
    An image last used at or after ``now`` is skipped, as is one younger than min age.
    """
    candidates = [
        img
        for img in images
        if not img.in_use
        and not img.pinned
        and not (img.last_used is not None and img.last_used >= now)
        and now - img.first_detected >= min_age
    ]
    return sorted(candidates, key=lambda i: (i.last_used if i.last_used is not None else -(2**62), i.first_detected))


@dataclass(frozen=True, slots=True)
class ReclaimResult:
    action: ReclaimAction
    bytes_freed: int
    images: tuple[str, ...] = ()
    containers: int = 0
    #: of ``bytes_freed``, the dead containers' logs (freed on nodefs)
    log_bytes: int = 0


def run_reclaim(action: ReclaimAction, view: RuntimeView, now: int, min_age: int) -> tuple[ReclaimResult, RuntimeView]:
    """One reclaim function on the runtime's state: what it frees and what is left."""
    if action == ReclaimAction.GARBAGE_COLLECT_CONTAINERS:
        freed = view.dead_container_bytes + view.dead_container_log_bytes
        result = ReclaimResult(action, freed, containers=view.dead_containers, log_bytes=view.dead_container_log_bytes)
        return result, msgspec.structs.replace(
            view,
            dead_containers=0,
            dead_container_bytes=0,
            dead_container_log_bytes=0,
        )
    doomed = images_in_eviction_order(view.images, now, min_age)
    names = {i.name for i in doomed}
    result = ReclaimResult(action, sum(i.size for i in doomed), images=tuple(i.name for i in doomed))
    return result, msgspec.structs.replace(view, images=[i for i in view.images if i.name not in names])


def _free(fs: FsStats | None, freed: int) -> FsStats | None:
    if fs is None or not freed:
        return fs
    used = fs.used_bytes - freed if fs.used_bytes is not None else None
    avail = fs.available_bytes + freed if fs.available_bytes is not None else None
    if avail is not None and fs.capacity_bytes is not None:
        avail = min(avail, fs.capacity_bytes)
    return msgspec.structs.replace(fs, used_bytes=max(used, 0) if used is not None else None, available_bytes=avail)


def summary_after_reclaim(summary: Summary, layout: str, image_bytes: int, layer_bytes: int, log_bytes: int) -> Summary:
    """The next Summary once images and dead containers are gone (closed loop).

    Images and writable layers come off the filesystem they live on per the layout;
    logs always come off nodefs."""
    node = summary.node
    runtime = node.runtime or RuntimeStats()
    if layout == LAYOUT_DEDICATED_IMAGEFS:
        nodefs = _free(node.fs, log_bytes)
        imagefs = _free(runtime.image_fs, image_bytes + layer_bytes)
        new_node = replace_node(node, fs=nodefs, image_fs=imagefs, container_fs=imagefs)
    elif layout == LAYOUT_SPLIT_IMAGEFS:
        nodefs = _free(node.fs, layer_bytes + log_bytes)
        imagefs = _free(runtime.image_fs, image_bytes)
        new_node = replace_node(node, fs=nodefs, image_fs=imagefs, container_fs=nodefs)
    else:
        nodefs = _free(node.fs, image_bytes + layer_bytes + log_bytes)
        new_node = replace_node(node, fs=nodefs, image_fs=nodefs, container_fs=nodefs)
    return msgspec.structs.replace(summary, node=new_node)


def replace_node(
    node: NodeStats, *, fs: FsStats | None, image_fs: FsStats | None, container_fs: FsStats | None
) -> NodeStats:
    return msgspec.structs.replace(node, fs=fs, runtime=RuntimeStats(image_fs=image_fs, container_fs=container_fs))


@dataclass(frozen=True, slots=True)
class ImageGCPlan:
    """``GarbageCollect``'s arithmetic for one periodic run."""

    usage_percent: int
    high_threshold_percent: int
    low_threshold_percent: int
    bytes_to_free: int
    triggered: bool


def image_gc_plan(capacity: int, available: int, high: int, low: int) -> ImageGCPlan:
    """usage% rounds *up* (integer division of the free share); target is the low mark.

    Seed 003's log: 97% used, high 85%, low 80% -> "Trying to free 6582996172 bytes".
    """
    if capacity <= 0:
        raise ValueError(f"invalid capacity {capacity} on image filesystem")
    available = min(available, capacity)
    usage = 100 - (available * 100) // capacity
    if usage >= high:
        to_free = (capacity * (100 - low)) // 100 - available
        return ImageGCPlan(usage, high, low, to_free, True)
    return ImageGCPlan(usage, high, low, 0, False)


@dataclass(frozen=True, slots=True)
class ImageGCResult:
    """One periodic image GC run that had something to do."""

    plan: ImageGCPlan
    bytes_freed: int
    images: tuple[str, ...]
    message: str
    error: str = ""


def periodic_image_gc(
    view: RuntimeView,
    capacity: int,
    available: int,
    *,
    high: int,
    low: int,
    now: int,
    min_age: int,
    max_age: int = 0,
) -> tuple[ImageGCResult | None, RuntimeView]:
    """``GarbageCollect``: old images past ``imageMaximumGCAge`` first, then, when usage is at
    or over the high threshold, unused images oldest-used first until the low mark.

    The message is the kubelet's log line (the text form seed 003 quotes).
    """
    candidates = images_in_eviction_order(view.images, now, min_age)
    aged: list[RuntimeImage] = []
    if max_age > 0:
        aged = [i for i in candidates if now - (i.last_used if i.last_used is not None else i.first_detected) > max_age]
        candidates = [i for i in candidates if i not in aged]
    plan = image_gc_plan(capacity, available, high, low)
    deleted = list(aged)
    freed = 0
    if plan.triggered:
        for img in candidates:
            if freed >= plan.bytes_to_free:
                break
            deleted.append(img)
            freed += img.size
    if not deleted and not plan.triggered:
        return None, view
    names = {i.name for i in deleted}
    message = ""
    error = ""
    if plan.triggered:
        message = (
            f"Disk usage on image filesystem is at {plan.usage_percent}% which is over the high threshold "
            f"({high}%). Trying to free {plan.bytes_to_free} bytes down to the low threshold ({low}%)."
        )
        if freed < plan.bytes_to_free:
            error = (
                f"Failed to garbage collect required amount of images. Attempted to free {plan.bytes_to_free} "
                f"bytes, but only found {freed} bytes eligible to free."
            )
    result = ImageGCResult(plan, sum(i.size for i in deleted), tuple(i.name for i in deleted), message, error)
    return result, msgspec.structs.replace(view, images=[i for i in view.images if i.name not in names])


__all__ = [
    "ImageGCPlan",
    "ImageGCResult",
    "ReclaimAction",
    "ReclaimResult",
    "RuntimeImage",
    "RuntimeView",
    "image_gc_plan",
    "images_in_eviction_order",
    "periodic_image_gc",
    "reclaim_funcs",
    "run_reclaim",
    "summary_after_reclaim",
]
