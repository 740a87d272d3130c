"""Local ephemeral-storage limit evictions (emptyDir sizeLimit, pod and container limits)."""

from __future__ import annotations

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.eviction.local_storage import local_storage_evictions
from ledgerlet_core.kubelet.eviction.manager import EvictionState, synchronize
from ledgerlet_core.model.summary import ContainerStats, FsStats, PodReference, PodStats, VolumeStats

from .helpers import Mi, pod, resources
from .test_eviction_pass import summary


def stats(
    name: str, *, rootfs: int = 0, logs: int = 0, volumes: dict[str, int] | None = None, ephemeral: int | None = None
) -> PodStats:
    vols = volumes or {}
    total = ephemeral if ephemeral is not None else rootfs + logs + sum(vols.values())
    return PodStats(
        pod_ref=PodReference(name=name, namespace="default", uid=f"uid-{name}"),
        containers=[ContainerStats(name=name, rootfs=FsStats(used_bytes=rootfs), logs=FsStats(used_bytes=logs))],
        volume=[VolumeStats(name=k, used_bytes=v) for k, v in vols.items()],
        ephemeral_storage=FsStats(used_bytes=total),
    )


def check(pods: list, all_stats: list[PodStats], dedicated: bool = False) -> list[tuple[str, str, str]]:
    by_name = {s.pod_ref.name: s for s in all_stats}
    found = local_storage_evictions(pods, lambda p: by_name.get(p.metadata.name), dedicated_imagefs=dedicated)
    return [(e.pod.metadata.name, e.signal, e.message) for e in found]


def test_empty_dir_over_its_size_limit() -> None:
    p = pod("cache", volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "100Mi"}}])
    assert check([p], [stats("cache", volumes={"scratch": 101 * Mi})]) == [
        ("cache", "emptydirfs.limit", 'Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". ')
    ]
    assert check([p], [stats("cache", volumes={"scratch": 100 * Mi})]) == []  # equal is fine


def test_pod_over_the_sum_of_its_container_limits() -> None:
    p = pod("builder", limits=resources(storage="1Gi"))
    assert check([p], [stats("builder", rootfs=600 * Mi, logs=500 * Mi)]) == [
        (
            "builder",
            "ephemeralpodfs.limit",
            "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
        )
    ]


def test_container_limit_counts_the_writable_layer_only_without_a_dedicated_imagefs() -> None:
    p = pod("app", limits=resources(storage="1Gi"))
    s = stats("app", rootfs=700 * Mi, logs=400 * Mi, ephemeral=0)  # pod-level usage unknown: container check
    assert check([p], [s]) == [
        ("app", "ephemeralcontainerfs.limit", 'Container app exceeded its local ephemeral storage limit "1Gi". ')
    ]
    assert check([p], [s], dedicated=True) == []  # with imagefs, only logs count: 400Mi


def test_first_violation_wins_and_several_pods_go_in_one_pass() -> None:
    a = pod("a", limits=resources(storage="1Gi"), volumes=[{"name": "v", "emptyDir": {"sizeLimit": "10Mi"}}])
    b = pod("b", limits=resources(storage="1Gi"))
    crit = pod("crit", 2_000_000_000, limits=resources(storage="1Gi"))
    got = check(
        [a, b, crit],
        [stats("a", logs=2048 * Mi, volumes={"v": 20 * Mi}), stats("b", logs=2048 * Mi), stats("crit", logs=2048 * Mi)],
    )
    assert [(n, s) for n, s, _ in got] == [("a", "emptydirfs.limit"), ("b", "ephemeralpodfs.limit")]


def test_limit_evictions_come_before_thresholds_and_can_be_turned_off() -> None:
    p = pod("a", limits=resources(storage="1Gi"))
    other = pod("b")
    s = summary(mem_available=100 * Mi, pods=[stats("a", logs=2048 * Mi), stats("b")])
    cfg = {"evictionHard": {"memory.available": "1Gi"}, "enforceNodeAllocatable": []}
    r = synchronize(
        now=0,
        config=resolve_kubelet_config(cfg),
        layout="single",
        state=EvictionState(),
        summary=s,
        active_pods=[p, other],
    )
    assert [e.pod.metadata.name for e in r.local_evictions] == ["a"] and r.eviction is None
    assert r.state.conditions == ("MemoryPressure",)  # the condition is still reported
    off = resolve_kubelet_config({**cfg, "localStorageCapacityIsolation": False})
    r2 = synchronize(now=0, config=off, layout="single", state=EvictionState(), summary=s, active_pods=[p, other])
    assert r2.local_evictions == () and r2.eviction is not None
