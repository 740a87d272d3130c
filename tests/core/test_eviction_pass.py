"""One housekeeping pass (synchronize): conditions, grace, reclaim, eviction, admission."""

from __future__ import annotations

from typing import Any

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.eviction.manager import EvictionState, PassResult, admit, synchronize
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.runtime import RuntimeImage, RuntimeView
from ledgerlet_core.model.summary import (
    ContainerStats,
    FsStats,
    MemoryStats,
    NodeStats,
    PodStats,
    RuntimeStats,
    Summary,
)

from .helpers import Mi, memory_stats, pod, resources

Gi = 1 << 30
S = 1_000_000_000


def summary(
    *,
    mem_available: int = 8 * Gi,
    mem_ws: int = 0,
    fs_available: int = 50 * Gi,
    fs_capacity: int = 100 * Gi,
    pods: list[PodStats] | None = None,
    time: str | None = None,
) -> Summary:
    fs = FsStats(
        available_bytes=fs_available, capacity_bytes=fs_capacity, inodes_free=10**6, inodes=2 * 10**6, time=time
    )
    return Summary(
        node=NodeStats(
            node_name="n1",
            memory=MemoryStats(available_bytes=mem_available, working_set_bytes=mem_ws, time=time),
            fs=fs,
            runtime=RuntimeStats(image_fs=fs, container_fs=fs),
            system_containers=[ContainerStats(name="pods", memory=MemoryStats(working_set_bytes=mem_ws))],
        ),
        pods=pods or [],
    )


def run(config: dict[str, Any], state: EvictionState, now: int, s: Summary, pods: list[Pod], **kw: Any) -> PassResult:
    return synchronize(
        now=now, config=resolve_kubelet_config(config), layout="single", state=state, summary=s, active_pods=pods, **kw
    )


HARD_1GI = {"evictionHard": {"memory.available": "1Gi"}, "enforceNodeAllocatable": []}


def pressure_pods() -> tuple[list[Pod], list[PodStats]]:
    best_effort = pod("best-effort", 0)
    burstable = pod("burstable", 100, requests=resources(memory="100Mi"), limits=resources(memory="1Gi"))
    guaranteed = pod("guaranteed", 0, requests=resources("100m", "1Gi"), limits=resources("100m", "1Gi"))
    pods = [guaranteed, burstable, best_effort]
    stats = [memory_stats(guaranteed, 500 * Mi), memory_stats(burstable, 400 * Mi), memory_stats(best_effort, 300 * Mi)]
    return pods, stats


def test_hard_threshold_evicts_one_pod_with_one_second_grace() -> None:
    pods, stats = pressure_pods()
    r = run(HARD_1GI, EvictionState(), 0, summary(mem_available=500 * Mi, mem_ws=7 * Gi, pods=stats), pods)
    assert [(c.condition, c.status, c.reason) for c in r.condition_changes] == [
        ("MemoryPressure", "True", "KubeletHasInsufficientMemory")
    ]
    assert r.eviction is not None
    assert r.eviction.pod.metadata.name == "best-effort"  # exceeds request, lowest priority
    assert [e.pod for e in r.eviction.ranking] == ["default/best-effort", "default/burstable", "default/guaranteed"]
    assert r.eviction.grace_period_seconds == 1
    assert r.eviction.message == (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. "
        "Container best-effort was using 300Mi, request is 0, has larger consumption of memory. "
    )


def test_no_pressure_no_decision() -> None:
    pods, stats = pressure_pods()
    r = run(HARD_1GI, EvictionState(), 0, summary(mem_available=3 * Gi, pods=stats), pods)
    assert r.condition_changes == () and r.eviction is None and r.state.conditions == ()


def test_soft_threshold_reports_the_condition_at_once_but_waits_to_evict() -> None:
    cfg = {
        "evictionHard": {},
        "evictionSoft": {"memory.available": "2Gi"},
        "evictionSoftGracePeriod": {"memory.available": "30s"},
        "evictionMaxPodGracePeriod": 60,
        "enforceNodeAllocatable": [],
    }
    pods, stats = pressure_pods()
    low = summary(mem_available=1 * Gi, pods=stats)
    r0 = run(cfg, EvictionState(), 0, low, pods)
    assert r0.state.conditions == ("MemoryPressure",) and r0.eviction is None  # grace not met yet
    r1 = run(cfg, r0.state, 20 * S, low, pods)
    assert r1.eviction is None
    r2 = run(cfg, r1.state, 30 * S, low, pods)
    assert r2.eviction is not None
    # soft: min(evictionMaxPodGracePeriod, the pod's own terminationGracePeriodSeconds=30)
    assert r2.eviction.grace_period_seconds == 30


def test_soft_threshold_clock_restarts_when_not_met_once() -> None:
    cfg = {
        "evictionHard": {},
        "evictionSoft": {"memory.available": "2Gi"},
        "evictionSoftGracePeriod": {"memory.available": "30s"},
        "enforceNodeAllocatable": [],
    }
    pods, stats = pressure_pods()
    low, high = summary(mem_available=1 * Gi, pods=stats), summary(mem_available=3 * Gi, pods=stats)
    r0 = run(cfg, EvictionState(), 0, low, pods)
    r1 = run(cfg, r0.state, 20 * S, high, pods)
    r2 = run(cfg, r1.state, 40 * S, low, pods)
    assert r2.eviction is None  # first observed again at 40s
    r3 = run(cfg, r2.state, 70 * S, low, pods)
    assert r3.eviction is not None and r3.eviction.grace_period_seconds == 0  # max pod grace 0 wins


def test_transition_period_keeps_the_condition() -> None:
    cfg = {**HARD_1GI, "evictionPressureTransitionPeriod": "5m"}
    pods, stats = pressure_pods()
    r0 = run(cfg, EvictionState(), 0, summary(mem_available=500 * Mi, pods=stats), pods)
    ok = summary(mem_available=3 * Gi, pods=stats)
    r1 = run(cfg, r0.state, 290 * S, ok, pods)
    assert r1.state.conditions == ("MemoryPressure",) and r1.condition_changes == ()
    r2 = run(cfg, r1.state, 300 * S, ok, pods)  # 300 - 0 < 300 is false: dropped
    assert r2.state.conditions == ()
    assert [(c.condition, c.status) for c in r2.condition_changes] == [("MemoryPressure", "False")]


def test_zero_transition_period_never_reports() -> None:
    cfg = {**HARD_1GI, "evictionPressureTransitionPeriod": "0s"}
    pods, stats = pressure_pods()
    r = run(cfg, EvictionState(), 0, summary(mem_available=500 * Mi, pods=stats), pods)
    assert r.state.conditions == () and r.eviction is not None


def test_minimum_reclaim_keeps_pressure_until_threshold_plus_minimum() -> None:
    cfg = {
        "evictionHard": {"memory.available": "1Gi"},
        "evictionMinimumReclaim": {"memory.available": "500Mi"},
        "enforceNodeAllocatable": [],
    }
    pods, stats = pressure_pods()
    r0 = run(cfg, EvictionState(), 0, summary(mem_available=900 * Mi, pods=stats), pods)
    assert r0.eviction is not None
    rest = [p for p in pods if p.metadata.name != r0.eviction.pod.metadata.name]
    r1 = run(cfg, r0.state, 10 * S, summary(mem_available=1200 * Mi, pods=stats), rest)
    assert r1.eviction is not None  # 1.2Gi is above 1Gi, not above 1.5Gi
    rest2 = [p for p in rest if p.metadata.name != r1.eviction.pod.metadata.name]
    r2 = run(cfg, r1.state, 20 * S, summary(mem_available=1600 * Mi, pods=stats), rest2)
    assert r2.eviction is None


def test_stale_stats_do_not_evict_twice() -> None:
    pods, stats = pressure_pods()
    t0 = "2026-01-01T00:00:00Z"
    s = summary(mem_available=500 * Mi, pods=stats, time=t0)
    r0 = run(HARD_1GI, EvictionState(), 0, s, pods)
    assert r0.eviction is not None
    r1 = run(HARD_1GI, r0.state, 10 * S, s, pods[:2])  # same observation time
    assert r1.eviction is None and r1.state.conditions == ("MemoryPressure",)


def test_critical_pods_are_skipped() -> None:
    static = pod("static", 0, annotations={"kubernetes.io/config.source": "file"})
    critical = pod("node-critical", 2_000_001_000)
    normal = pod("normal", 1000, requests=resources(memory="10Mi"))
    stats = [memory_stats(static, 900 * Mi), memory_stats(critical, 800 * Mi), memory_stats(normal, 20 * Mi)]
    r = run(HARD_1GI, EvictionState(), 0, summary(mem_available=500 * Mi, pods=stats), [static, critical, normal])
    assert r.eviction is not None and r.eviction.pod.metadata.name == "normal"
    assert [e.pod for e in r.eviction.ranking] == ["default/static", "default/normal", "default/node-critical"]
    assert r.eviction.skipped_critical == ("default/static",)
    only_critical = run(
        HARD_1GI, EvictionState(), 0, summary(mem_available=500 * Mi, pods=stats[:2]), [static, critical]
    )
    assert only_critical.eviction is None and only_critical.note == "every ranked pod is critical"


def test_node_reclaim_before_eviction_can_resolve_disk_pressure() -> None:
    cfg = {"evictionHard": {"nodefs.available": "10Gi"}, "imageMinimumGCAge": "0s"}
    p = pod("web", 0)
    runtime = RuntimeView(
        layout="single",
        images=[RuntimeImage(name="old:v0", size=3 * Gi), RuntimeImage(name="web:v1", size=1 * Gi, in_use=True)],
        dead_containers=4,
        dead_container_bytes=1 * Gi,
    )
    s = summary(fs_available=7 * Gi)
    r = run(cfg, EvictionState(), 0, s, [p], runtime=runtime)
    assert [(x.action, x.bytes_freed) for x in r.reclaims] == [
        ("GarbageCollectContainers", 1 * Gi),
        ("DeleteUnusedImages", 3 * Gi),
    ]
    assert r.reclaim_resolved and r.eviction is None
    assert r.runtime is not None and [i.name for i in r.runtime.images] == ["web:v1"]
    # Not enough to reclaim: the pod goes
    r2 = run(cfg, EvictionState(), 0, summary(fs_available=5 * Gi), [p], runtime=runtime)
    assert not r2.reclaim_resolved and r2.eviction is not None


def test_images_younger_than_minimum_gc_age_are_kept() -> None:
    cfg = {"evictionHard": {"nodefs.available": "10Gi"}}  # imageMinimumGCAge 2m
    runtime = RuntimeView(layout="single", images=[RuntimeImage(name="old:v0", size=3 * Gi, first_detected=0)])
    r = run(cfg, EvictionState(), 60 * S, summary(fs_available=8 * Gi), [pod("web", 0)], runtime=runtime)
    assert [(x.action, x.bytes_freed) for x in r.reclaims][-1] == ("DeleteUnusedImages", 0)
    r2 = run(cfg, EvictionState(), 120 * S, summary(fs_available=8 * Gi), [pod("web", 0)], runtime=runtime)
    assert r2.reclaims[-1].bytes_freed == 3 * Gi


def test_admission_under_pressure() -> None:
    best_effort = pod("be", 0)
    tolerating = pod(
        "be-tolerating",
        0,
        extra_spec={
            "tolerations": [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}]
        },
    )
    burstable = pod("bu", 0, requests=resources(memory="1Mi"))
    critical = pod("crit", 2_000_000_000)
    assert admit(best_effort, ()) == (True, "", "")
    assert admit(best_effort, ("MemoryPressure",)) == (False, "Evicted", "The node had condition: [MemoryPressure]. ")
    assert admit(tolerating, ("MemoryPressure",))[0]
    assert admit(burstable, ("MemoryPressure",))[0]
    assert admit(burstable, ("DiskPressure",)) == (False, "Evicted", "The node had condition: [DiskPressure]. ")
    assert (
        admit(burstable, ("MemoryPressure", "DiskPressure"))[2]
        == "The node had condition: [MemoryPressure DiskPressure]. "
    )
    assert admit(critical, ("DiskPressure",))[0]
