"""The report's summary, what-if hints and one-device charts, on numbers small enough to
check by hand."""

from __future__ import annotations

from ledgerlet_core.kubelet.eviction.thresholds import parse_percentage
from ledgerlet_core.postmortem.signals_series import SignalSeries, ThresholdLine
from ledgerlet_services.audit.report_devices import one_chart_per_device
from ledgerlet_services.audit.report_hints import Met, hints
from ledgerlet_services.audit.report_summary import NO_POOL, Evicted, bucket_width, node_pool, summarise

MI = 1 << 20


def test_pools_by_the_most_specific_label() -> None:
    assert node_pool({"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/nodepool": "batch"}) == (
        "karpenter.sh/nodepool",
        "batch",
    )
    assert node_pool({"cloud.google.com/gke-nodepool": "default-pool"})[1] == "default-pool"
    assert node_pool({"node.kubernetes.io/instance-type": "m5.large"})[1] == "m5.large"
    assert node_pool({"zone": "a"}) == ("", NO_POOL) and node_pool(None) == ("", NO_POOL)


def _ev(t: float, node: str, pod: str, signal: str = "memory.available", pool: str = "a", usage: int = 0) -> Evicted:
    return Evicted(
        t=t,
        minute=f"14:{int(t // 60):02d}",
        node=node,
        pod=pod,
        signal=signal,
        threshold=f"{signal}<100Mi",
        pool=pool,
        usage=usage,
    )


def test_grouped_by_signal_pool_and_minute_and_counted_over_time() -> None:
    evicted = [
        _ev(70, "n1", "ns1/a", usage=5 * MI),
        _ev(75, "n2", "ns1/b", usage=9 * MI),
        _ev(80, "n2", "ns2/c", signal="nodefs.available", pool="b"),
        _ev(130, "n3", "ns1/a", usage=7 * MI),  # the same pod again, elsewhere
    ]
    s = summarise(evicted, duration=600)
    assert (s.evictions, s.nodes, s.t_first, s.t_last) == (4, 3, 70, 130)
    assert s.by_signal == {
        "memory.available": (3, ["memory.available<100Mi"]),
        "nodefs.available": (1, ["nodefs.available<100Mi"]),
    }
    assert s.by_pool == {"a": 3, "b": 1}
    assert [(g.minute, g.signal, g.pool, g.evictions, g.nodes) for g in s.groups] == [
        ("14:01", "memory.available", "a", 2, ["n1", "n2"]),
        ("14:01", "nodefs.available", "b", 1, ["n2"]),
        ("14:02", "memory.available", "a", 1, ["n3"]),
    ]
    assert s.busiest_minute == ("14:01", 3)
    assert s.width == 10 and len(s.buckets) == 61  # 600 s in 10 s bars, the last one closing
    assert {b.t_from: b.counts for b in s.buckets if b.counts} == {
        70.0: {"memory.available": 2},
        80.0: {"nodefs.available": 1},
        130.0: {"memory.available": 1},
    }
    assert [(n.name, n.evictions, n.nodes) for n in s.namespaces] == [("ns1", 3, 3), ("ns2", 1, 1)]
    assert [(p.name, p.evictions, p.usage) for p in s.pods][:2] == [("ns1/a", 2, 7 * MI), ("ns1/b", 1, 9 * MI)]


def test_bucket_width_keeps_the_histogram_readable() -> None:
    assert bucket_width(600) == 10 and bucket_width(601) == 30 and bucket_width(3600) == 60
    assert bucket_width(86400) == 3600 and bucket_width(90 * 86400) == 86400


def test_an_absolute_hint_is_below_most_observed_values() -> None:
    # five memory evictions at 100Mi: the lowest observed 20Mi, the rest 80-99Mi
    observed = [20 * MI, 80 * MI + 5, 90 * MI, 95 * MI, 99 * MI]
    ms = [Met("memory.available", "memory.available<100Mi", True, o, 8 << 30, "bytes") for o in observed]
    (h,) = hints(ms)
    # 80 % of 5 is 4: the level must be at or below the 4th highest (80Mi + 5 bytes), in whole Mi
    assert (h.setting, h.value, h.spared, h.of) == ("evictionHard.memory.available", "80Mi", 4, 5)
    assert (h.lowest, h.highest) == ("20Mi", "99Mi")
    assert h.command("r1") == "ledgerlet whatif --run r1 --set evictionHard.memory.available=80Mi"


def test_a_percentage_hint_holds_with_the_kubelets_float32_arithmetic() -> None:
    capacity = 40 << 30
    # observed a byte below 9.3 % of capacity (as float32 makes it): 9.3 % would be met, 9.2 % is not
    at = int(float(capacity) * parse_percentage("9.3%"))
    ms = [Met("nodefs.available", "nodefs.available<10%", True, at - 1, capacity, "bytes") for _ in range(3)]
    (h,) = hints(ms)
    assert h.value == "9.2%" and h.spared == 3
    assert int(float(capacity) * parse_percentage(h.value)) <= at - 1 < int(float(capacity) * parse_percentage("9.3%"))


def test_soft_thresholds_hint_their_own_setting_and_nothing_helps_at_zero() -> None:
    soft = Met("memory.available", "memory.available<1Gi", False, 600 * MI, 8 << 30, "bytes")
    assert [h.assignment for h in hints([soft])] == ["evictionSoft.memory.available=600Mi"]
    empty = Met("memory.available", "memory.available<100Mi", True, 0, 8 << 30, "bytes")
    assert hints([empty]) == []
    derived = Met("allocatableMemory.available", "allocatableMemory.available<100Mi", True, 50 * MI, 1, "bytes")
    assert hints([derived]) == []  # set through memory.available, not a setting of its own


def _series(signal: str, points: list[tuple[int, int, int]], written: str) -> SignalSeries:
    return SignalSeries(signal, "bytes", points, [ThresholdLine(written, True, 0.0, [(0, 1)])])


def test_filesystems_that_are_one_device_are_one_chart() -> None:
    disk = [(0, 50, 100), (10, 40, 100)]
    charts = one_chart_per_device(
        [
            _series("imagefs.available", disk, "imagefs.available<15%"),
            _series("memory.available", disk, "memory.available<100Mi"),  # same numbers, not a filesystem
            _series("nodefs.available", disk, "nodefs.available<10%"),
            _series("containerfs.available", disk, "containerfs.available<10%"),
            _series("nodefs.inodesFree", [(0, 5, 10)], "nodefs.inodesFree<5%"),
            _series("imagefs.inodesFree", [(0, 6, 10)], "imagefs.inodesFree<5%"),  # a second disk's inodes
        ]
    )
    assert [c.signals for c in charts] == [
        ["imagefs.available", "nodefs.available", "containerfs.available"],
        ["memory.available"],
        ["nodefs.inodesFree"],
        ["imagefs.inodesFree"],
    ]
    assert [t.written for t in charts[0].series.thresholds] == [
        "imagefs.available<15%",
        "nodefs.available<10%",
        "containerfs.available<10%",
    ]
