"""Pod ranking, with upstream's own cases from pkg/kubelet/eviction/helpers_test.go."""

from __future__ import annotations

from collections.abc import Sequence

from ledgerlet_core.kubelet.eviction.ranking import (
    MEMORY_RANK,
    PID_RANK,
    FsStatsType,
    RankFunc,
    rank_funcs,
    rank_pods,
)
from ledgerlet_core.kubelet.eviction.signals import RESOURCE_EPHEMERAL_STORAGE, RESOURCE_INODES, Signal
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.summary import PodStats

from .helpers import LOCAL_VOLUME, Mi, disk_stats, inode_stats, memory_stats, pod, process_stats, resources

ALL_FS = (FsStatsType.ROOT, FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME)
DISK = RankFunc("disk", ALL_FS, RESOURCE_EPHEMERAL_STORAGE)
INODES = RankFunc("disk", ALL_FS, RESOURCE_INODES)
LOW, DEFAULT, HIGH = -1, 0, 1  # upstream's lowPriority / defaultPriority / highPriority


def order(pods: Sequence[Pod], rank: RankFunc, stats: dict[str, PodStats], comparators: Sequence[str]) -> list[str]:
    entries = rank_pods(
        pods, rank, lambda p: stats.get(p.metadata.name), critical=lambda p: False, comparators=comparators
    )
    return [e.pod.split("/")[1] for e in entries]


def test_ordered_by_exceeds_request_memory() -> None:
    below = pod("below-requests", -1, requests=resources(memory="200Mi"))
    exceeds = pod("exceeds-requests", 1, requests=resources(memory="100Mi"))
    stats = {"below-requests": memory_stats(below, 199 * Mi), "exceeds-requests": memory_stats(exceeds, 101 * Mi)}
    assert order([below, exceeds], MEMORY_RANK, stats, ["exceeds"]) == ["exceeds-requests", "below-requests"]


def test_ordered_by_exceeds_request_disk() -> None:
    below = pod("below-requests", -1, requests=resources(storage="200Mi"), volumes=LOCAL_VOLUME)
    exceeds = pod("exceeds-requests", 1, requests=resources(storage="100Mi"), volumes=LOCAL_VOLUME)
    stats = {
        "below-requests": disk_stats(below, 99 * Mi, 100 * Mi, 0),
        "exceeds-requests": disk_stats(exceeds, 90 * Mi, 11 * Mi, 0),
    }
    assert order([below, exceeds], DISK, stats, ["exceeds"]) == ["exceeds-requests", "below-requests"]


def test_ordered_by_priority() -> None:
    low = pod("low-priority", -134)
    medium = pod("medium-priority", 1, requests=resources("100m", "100Mi"), limits=resources("200m", "200Mi"))
    high = pod("high-priority", 12534, requests=resources("200m", "200Mi"), limits=resources("200m", "200Mi"))
    assert order([high, medium, low], MEMORY_RANK, {}, ["priority"]) == [
        "low-priority",
        "medium-priority",
        "high-priority",
    ]


def test_ordered_by_disk() -> None:
    p = [
        pod("best-effort-high", DEFAULT, volumes=LOCAL_VOLUME),
        pod("best-effort-low", DEFAULT, volumes=LOCAL_VOLUME),
        pod(
            "burstable-high",
            DEFAULT,
            requests=resources(storage="100Mi"),
            limits=resources(storage="400Mi"),
            volumes=LOCAL_VOLUME,
        ),
        pod(
            "burstable-low",
            DEFAULT,
            requests=resources(storage="100Mi"),
            limits=resources(storage="400Mi"),
            volumes=LOCAL_VOLUME,
        ),
        pod(
            "guaranteed-high",
            DEFAULT,
            requests=resources(storage="400Mi"),
            limits=resources(storage="400Mi"),
            volumes=LOCAL_VOLUME,
        ),
        pod(
            "guaranteed-low",
            DEFAULT,
            requests=resources(storage="400Mi"),
            limits=resources(storage="400Mi"),
            volumes=LOCAL_VOLUME,
        ),
    ]
    usage = [(50, 100, 150), (25, 25, 50), (150, 150, 50), (25, 35, 50), (225, 100, 50), (25, 45, 50)]
    stats = {x.metadata.name: disk_stats(x, r * Mi, lg * Mi, v * Mi) for x, (r, lg, v) in zip(p, usage, strict=True)}
    assert order(p, DISK, stats, ["usage"]) == [
        "best-effort-high",
        "burstable-high",
        "best-effort-low",
        "burstable-low",
        "guaranteed-high",
        "guaranteed-low",
    ]


def test_ordered_by_inodes() -> None:
    low, medium, high = (pod(n, DEFAULT, volumes=LOCAL_VOLUME) for n in ("low", "medium", "high"))
    stats = {
        "low": inode_stats(low, 50000, 100000, 50000),
        "medium": inode_stats(medium, 100000, 150000, 50000),
        "high": inode_stats(high, 200000, 150000, 50000),
    }
    assert order([low, medium, high], INODES, stats, ["usage"]) == ["high", "medium", "low"]


def test_ordered_by_priority_disk() -> None:
    names = [
        ("above-requests-low-priority-high-usage", LOW, "", (200, 100, 200)),
        ("above-requests-low-priority-low-usage", LOW, "", (10, 10, 30)),
        ("above-requests-high-priority-high-usage", HIGH, "100Mi", (200, 150, 250)),
        ("above-requests-high-priority-low-usage", HIGH, "100Mi", (90, 50, 10)),
        ("below-requests-low-priority-high-usage", LOW, "1Gi", (500, 200, 100)),
        ("below-requests-low-priority-low-usage", LOW, "1Gi", (50, 100, 50)),
        ("below-requests-high-priority-high-usage", HIGH, "1Gi", (250, 500, 50)),
        ("below-requests-high-priority-low-usage", HIGH, "1Gi", (100, 60, 40)),
    ]
    pods = {n: pod(n, prio, requests=resources(storage=req), volumes=LOCAL_VOLUME) for n, prio, req, _ in names}
    stats = {n: disk_stats(pods[n], r * Mi, lg * Mi, v * Mi) for n, _, _, (r, lg, v) in names}
    given = [pods[n] for n, *_ in reversed(names)]
    assert order(given, DISK, stats, ["exceeds", "priority", "usage"]) == [n for n, *_ in names]


def test_ordered_by_priority_inodes() -> None:
    names = [
        ("low-priority-high-usage", LOW, (50000, 100000, 250000)),
        ("low-priority-low-usage", LOW, (60000, 30000, 10000)),
        ("high-priority-high-usage", HIGH, (150000, 150000, 50000)),
        ("high-priority-low-usage", HIGH, (10000, 40000, 100000)),
    ]
    pods = {n: pod(n, prio, volumes=LOCAL_VOLUME) for n, prio, _ in names}
    stats = {n: inode_stats(pods[n], *u) for n, _, u in names}
    given = [pods[n] for n, *_ in reversed(names)]
    assert order(given, INODES, stats, ["priority", "usage"]) == [n for n, *_ in names]


def test_ordered_by_memory() -> None:
    spec = [
        ("best-effort-high", "", "", 500),
        ("best-effort-low", "", "", 300),
        ("burstable-high", "100Mi", "1Gi", 800),
        ("burstable-low", "100Mi", "1Gi", 300),
        ("guaranteed-high", "1Gi", "1Gi", 800),
        ("guaranteed-low", "1Gi", "1Gi", 200),
    ]
    pods = [pod(n, DEFAULT, requests=resources(memory=r), limits=resources(memory=lim)) for n, r, lim, _ in spec]
    stats = {p.metadata.name: memory_stats(p, u * Mi) for p, (_, _, _, u) in zip(pods, spec, strict=True)}
    assert order(pods, MEMORY_RANK, stats, ["usage"]) == [
        "burstable-high",
        "best-effort-high",
        "best-effort-low",
        "burstable-low",
        "guaranteed-high",
        "guaranteed-low",
    ]


def test_ordered_by_priority_memory() -> None:
    spec = [
        ("above-requests-low-priority-high-usage", LOW, "", 500),
        ("above-requests-low-priority-low-usage", LOW, "", 50),
        ("above-requests-high-priority-high-usage", HIGH, "100Mi", 600),
        ("above-requests-high-priority-low-usage", HIGH, "100Mi", 150),
        ("below-requests-low-priority-high-usage", LOW, "1Gi", 800),
        ("below-requests-low-priority-low-usage", LOW, "1Gi", 200),
        ("below-requests-high-priority-high-usage", HIGH, "1Gi", 800),
        ("below-requests-high-priority-low-usage", HIGH, "1Gi", 200),
    ]
    pods = {n: pod(n, prio, requests=resources(memory=r)) for n, prio, r, _ in spec}
    stats = {n: memory_stats(pods[n], u * Mi) for n, _, _, u in spec}
    given = [pods[n] for n, *_ in reversed(spec)]
    assert order(given, MEMORY_RANK, stats, ["exceeds", "priority", "usage"]) == [n for n, *_ in spec]


def test_ordered_by_priority_process() -> None:
    spec = [
        ("low-priority-high-usage", LOW, 20),
        ("low-priority-low-usage", LOW, 6),
        ("high-priority-high-usage", HIGH, 20),
        ("high-priority-low-usage", HIGH, 5),
    ]
    pods = {n: pod(n, prio) for n, prio, _ in spec}
    stats = {n: process_stats(pods[n], c) for n, _, c in spec}
    given = [pods[n] for n, *_ in reversed(spec)]
    assert order(given, PID_RANK, stats, ["priority", "usage"]) == [n for n, *_ in spec]


def test_pods_without_stats_rank_first() -> None:
    a = pod("has-stats", LOW)
    b = pod("no-stats", HIGH)
    stats = {"has-stats": memory_stats(a, 999 * Mi)}
    assert order([a, b], MEMORY_RANK, stats, ["exceeds", "priority", "usage"]) == ["no-stats", "has-stats"]


def test_ties_keep_admission_order() -> None:
    pods = [pod(f"p{i}", 0) for i in range(20)]
    stats = {p.metadata.name: memory_stats(p, 10 * Mi) for p in pods}
    assert order(pods, MEMORY_RANK, stats, ["exceeds", "priority", "usage"]) == [f"p{i}" for i in range(20)]


def test_overhead_counts_in_the_kubelet_request_only_when_non_zero() -> None:
    # GetResourceRequestQuantity: a BestEffort pod with RuntimeClass overhead still requests 0.
    best_effort = pod("be", 0, extra_spec={"overhead": {"memory": "120Mi"}})
    burstable = pod("bu", 0, requests=resources(memory="100Mi"), extra_spec={"overhead": {"memory": "120Mi"}})
    stats = {"be": memory_stats(best_effort, 50 * Mi), "bu": memory_stats(burstable, 200 * Mi)}
    entries = {
        e.pod: e
        for e in rank_pods(
            [best_effort, burstable], MEMORY_RANK, lambda p: stats[p.metadata.name], critical=lambda p: False
        )
    }
    assert entries["default/be"].request == 0 and entries["default/be"].exceeds_request
    assert entries["default/bu"].request == 220 * Mi and not entries["default/bu"].exceeds_request


def test_rank_functions_by_filesystem_layout() -> None:
    single = rank_funcs(dedicated_imagefs=False, split_containerfs=False)
    assert single[Signal.NODEFS_AVAILABLE].measure == ALL_FS
    assert single[Signal.IMAGEFS_AVAILABLE].measure == ALL_FS
    dedicated = rank_funcs(dedicated_imagefs=True, split_containerfs=False)
    assert dedicated[Signal.NODEFS_AVAILABLE].measure == (FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME)
    assert dedicated[Signal.IMAGEFS_AVAILABLE].measure == (FsStatsType.ROOT,)
    assert dedicated[Signal.CONTAINERFS_AVAILABLE].measure == (FsStatsType.ROOT,)
    split = rank_funcs(dedicated_imagefs=True, split_containerfs=True)
    assert split[Signal.NODEFS_AVAILABLE].measure == ALL_FS
    assert split[Signal.IMAGEFS_AVAILABLE].measure == ()
    assert single[Signal.PID_AVAILABLE] == PID_RANK and single[Signal.MEMORY_AVAILABLE] == MEMORY_RANK


def test_the_fast_sort_key_orders_exactly_like_the_comparator_chain() -> None:
    """Property check: random pods, every chain upstream composes, both orderings agree."""
    import random
    from functools import cmp_to_key

    from ledgerlet_core.kubelet.eviction.ranking import (
        _exceeds,
        _ordered,
        _priority,
        _sort_key,
        _usage,
        _usage_above_request,
    )

    rng = random.Random(7)
    chains = [["exceeds"], ["priority"], ["usage"], ["exceeds", "priority", "usage"], ["priority", "usage"]]
    table = {"exceeds": _exceeds, "priority": _priority}
    for rank in (MEMORY_RANK, PID_RANK, DISK):
        for _ in range(40):
            pods = [
                pod(f"p{i}", rng.choice([-5, 0, 0, 7]), requests=resources(memory=f"{rng.randint(0, 4)}Mi"))
                for i in range(25)
            ]
            stats = {
                p.metadata.name: (
                    process_stats(p, rng.randint(0, 9)) if rank is PID_RANK else memory_stats(p, rng.randint(0, 6) * Mi)
                )
                for p in pods
                if rng.random() < 0.8
            }
            if rank is DISK:
                stats = {k: disk_stats(pods[int(k[1:])], rng.randint(0, 3) * Mi, 0, 0) for k in stats}
            facts = [rank.facts(p, stats.get(p.metadata.name), True) for p in pods]
            for chain in chains:
                comps = [table.get(c, _usage if rank.kind == "pid" else _usage_above_request) for c in chain]
                slow = [f.pod.metadata.name for f in sorted(facts, key=cmp_to_key(_ordered(comps)))]
                fast = [f.pod.metadata.name for f in sorted(facts, key=_sort_key(chain, rank.kind))]
                assert slow == fast, (rank.kind, chain)
