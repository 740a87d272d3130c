"""Allocatable, condition taints and the periodic image GC's arithmetic."""

from __future__ import annotations

import pytest

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.eviction.reclaim import image_gc_plan, periodic_image_gc
from ledgerlet_core.kubelet.node_status import allocatable, condition_taints, status_capacity
from ledgerlet_core.model.quantity import parse_quantity
from ledgerlet_core.model.runtime import RuntimeImage, RuntimeView

Gi = 1 << 30
Mi = 1 << 20
MIN = 60 * 10**9


def test_allocatable_of_the_seeds_10gi_node() -> None:
    # --eviction-hard=memory.available<500Mi --system-reserved=memory=1.5Gi on a 10Gi node
    cfg = resolve_kubelet_config({"evictionHard": {"memory.available": "500Mi"}, "systemReserved": {"memory": "1.5Gi"}})
    cap = status_capacity({"memory": parse_quantity("10Gi"), "cpu": parse_quantity("4")}, cfg)
    alloc = allocatable(cap, cfg)
    assert alloc["memory"].value() == 10 * Gi - 1536 * Mi - 500 * Mi
    assert str(alloc["memory"]) == "8204Mi" and str(alloc["cpu"]) == "4" and str(alloc["pods"]) == "110"


def test_allocatable_subtracts_percentage_thresholds_as_float32() -> None:
    cfg = resolve_kubelet_config({})  # nodefs.available<10%
    cap = status_capacity({"ephemeral-storage": parse_quantity("100Gi")}, cfg)
    assert allocatable(cap, cfg)["ephemeral-storage"].value() == 100 * Gi - 10737418400
    cfg2 = resolve_kubelet_config(
        {"kubeReserved": {"cpu": "500m"}, "systemReserved": {"cpu": "500m"}, "maxPods": 30, "podsPerCore": 4}
    )
    cap2 = status_capacity({"cpu": parse_quantity("4")}, cfg2)
    assert str(cap2["pods"]) == "16"  # min(maxPods, cores x podsPerCore)
    assert str(allocatable(cap2, cfg2)["cpu"]) == "3"


def test_condition_taints() -> None:
    taints = condition_taints(["MemoryPressure", "DiskPressure", "PIDPressure"])
    assert [(t.key, t.effect) for t in taints] == [
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ]


@pytest.mark.parametrize(
    ("capacity", "available", "usage", "to_free"),
    [
        (100 * Gi, 10 * Gi, 90, 10737418240),  # the reference's worked example
        (40802189312, 1577441690, 97, 6582996172),  # seed 003's kubelet log line
    ],
)
def test_image_gc_arithmetic(capacity: int, available: int, usage: int, to_free: int) -> None:
    plan = image_gc_plan(capacity, available, 85, 80)
    assert (plan.usage_percent, plan.bytes_to_free, plan.triggered) == (usage, to_free, True)


def test_usage_percent_rounds_up() -> None:
    assert image_gc_plan(1000, 151, 85, 80).usage_percent == 85  # 84.9% used
    assert not image_gc_plan(1000, 160, 85, 80).triggered
    with pytest.raises(ValueError, match="invalid capacity 0 on image filesystem"):
        image_gc_plan(0, 0, 85, 80)


def test_periodic_gc_deletes_least_recently_used_until_the_low_mark() -> None:
    view = RuntimeView(
        layout="single",
        images=[
            RuntimeImage(name="in-use", size=5 * Gi, in_use=True),
            RuntimeImage(name="recent", size=3 * Gi, last_used=50 * MIN),
            RuntimeImage(name="old", size=2 * Gi, last_used=10 * MIN),
            RuntimeImage(name="never-used", size=1 * Gi),
            RuntimeImage(name="pinned", size=9 * Gi, pinned=True),
            RuntimeImage(name="young", size=4 * Gi, first_detected=59 * MIN),
        ],
    )
    result, after = periodic_image_gc(view, 100 * Gi, 12 * Gi, high=85, low=80, now=60 * MIN, min_age=2 * MIN)
    assert result is not None and result.plan.bytes_to_free == 8 * Gi
    assert result.images == ("never-used", "old", "recent")  # oldest use first; then out of candidates
    assert result.bytes_freed == 6 * Gi and "only found 6442450944 bytes eligible" in result.error
    assert [i.name for i in after.images] == ["in-use", "pinned", "young"]
    quiet, same = periodic_image_gc(view, 100 * Gi, 50 * Gi, high=85, low=80, now=60 * MIN, min_age=2 * MIN)
    assert quiet is None and same is view


def test_maximum_gc_age_deletes_old_images_regardless_of_usage() -> None:
    view = RuntimeView(
        layout="single",
        images=[
            RuntimeImage(name="stale", size=Gi, last_used=0),
            RuntimeImage(name="fresh", size=Gi, last_used=55 * MIN),
        ],
    )
    result, after = periodic_image_gc(
        view, 100 * Gi, 90 * Gi, high=85, low=80, now=60 * MIN, min_age=2 * MIN, max_age=30 * MIN
    )
    assert result is not None and result.images == ("stale",) and not result.plan.triggered
    assert [i.name for i in after.images] == ["fresh"]
