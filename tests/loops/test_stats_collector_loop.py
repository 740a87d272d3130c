"""The stats collector loop, driven by hand: observations on the housekeeping grid, what
exited pods leave on disk, and the kernel's OOM kill between passes."""

from __future__ import annotations

from typing import Any

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import NodeObserved
from ledgerlet_services.loops.stats_collector import Collector

from .harness import Drive, node, pod, timers, types

Mi = 1 << 20


def collector(**pod_usage: Any) -> Drive:
    d = Drive(Collector())
    d.input(inp.ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=600))
    d.apply(node("n1"))
    web = pod("web", "n1")
    web["spec"]["containers"][0]["resources"] = {"limits": {"memory": "300Mi"}}
    d.apply(web)
    d.input(inp.UsageDeclared(key="node/n1", usage={"system": {"memory": "1Gi", "nodefs": "10Gi"}}), node="n1")
    d.input(inp.UsageDeclared(key="default/web", usage={"memory": "100Mi", "rootfs": "50Mi", **pod_usage}))
    return d


def observation(envs: list[Any]) -> NodeObserved:
    (obs,) = [e for e in envs if e.type == "NodeObserved"]
    return msgspec.json.decode(obs.data, type=NodeObserved)


def test_a_closed_loop_node_is_observed_on_its_housekeeping_grid() -> None:
    d = collector()
    assert (0.0, 1) in timers(d.emitted)  # the first pass at time 0, in the housekeeping phase
    seen = observation(d.tick(0, phase=1))
    assert seen.source == "usage" and [p.pod_ref.name for p in seen.summary.pods] == ["web"]
    assert seen.summary.pods[0].memory is not None and seen.summary.pods[0].memory.working_set_bytes == 100 * Mi
    assert (10.0, 1) in timers(d.emitted)  # every housekeepingInterval (10 s) after


def test_an_exited_pods_writable_layer_stays_on_disk_unless_the_kubelet_removes_it() -> None:
    d = collector()
    d.tick(0, phase=1)
    completed = dec.PodTerminated(reason="Completed", grace_period_seconds=0, killed_at=5)
    d.decision(completed, 5, node="n1", pod="default/web")
    runtime = observation(d.tick(10, phase=1)).runtime
    assert runtime is not None and runtime.dead_containers == 1 and runtime.dead_container_bytes == 50 * Mi


def test_an_evicted_pods_containers_are_removed_at_once() -> None:
    d = collector()
    d.tick(0, phase=1)
    d.decision(
        dec.PodTerminated(reason="Evicted", grace_period_seconds=1, killed_at=5), 5, node="n1", pod="default/web"
    )
    runtime = observation(d.tick(10, phase=1)).runtime
    assert runtime is not None and runtime.dead_containers == 0


def test_a_container_over_its_limit_is_oom_killed_by_the_kernel_between_passes() -> None:
    d = collector(memory=[[0, "100Mi"], [10, "500Mi"]])
    d.tick(0, phase=1)
    # the working set passes the 300Mi limit just after 5 s: the kernel acts then, not at a pass
    (at,) = [t for t, phase in timers(d.emitted) if phase == 0]
    assert 5.0 <= at < 6.0
    killed = d.tick(at, phase=0)
    assert types(killed) == ["OOMKilled"]
    data = msgspec.json.decode(killed[0].data, type=dec.OOMKilled)
    assert (data.container, data.scope, data.limit) == ("c", "limit", 300 * Mi)


def test_a_pass_tells_only_what_changed_and_the_kubelet_rebuilds_every_pods_stats() -> None:
    """Pods' stats go as a change from the node's previous observation (podsDelta); what
    the kubelet makes of the changes is, pass after pass, the whole list a pass derives."""
    from ledgerlet_core.contracts.internal import decode_lazy_observation
    from ledgerlet_core.kubelet.kubelet import Kubelet
    from ledgerlet_core.kubelet.node import KubeletNode
    from ledgerlet_core.node_sim.stats import derive_summary

    d = collector(logs=[[0, "1Mi"], [60, "61Mi"]])  # web's logs grow: its stats vary
    d.apply(pod("db", "n1"))
    d.input(inp.UsageDeclared(key="default/db", usage={"memory": "10Mi"}))
    kubelet_node = KubeletNode.__new__(KubeletNode)
    kubelet_node.pod_stats = None
    machines = d.loop.machines  # type: ignore[attr-defined]

    def observe(at: float) -> tuple[NodeObserved, list[str]]:
        (env,) = [e for e in d.tick(at, phase=1) if e.type == "NodeObserved"]
        told = Kubelet._pods_told(kubelet_node, decode_lazy_observation(env.data))()
        node = machines.nodes["n1"]
        whole = derive_summary(
            "n1",
            env.t,
            "",
            node.usage,
            node.capacity,
            node.layout,
            node.images,
            node.dead_container_bytes,
            list(node.plans.values()),
            None,
            node.memory.stopped(env.t),
            node.dead_container_log_bytes,
        )
        assert told == whole.pods
        return msgspec.json.decode(env.data, type=NodeObserved), [p.pod_ref.name for p in told]

    first, names = observe(0)
    assert not first.pods_delta and names == ["web", "db"]
    second, names = observe(10)
    assert second.pods_delta and list(second.pods_changed) == ["default/web"] and not second.pods_gone
    assert names == ["web", "db"]
    d.decision(
        dec.PodTerminated(reason="Deleted", grace_period_seconds=0, killed_at=15), 15, node="n1", pod="default/db"
    )
    third, names = observe(20)
    assert third.pods_delta and third.pods_gone == ["default/db"] and names == ["web"]
    # db comes back: it stands last again, as a new pod does
    d.apply(pod("db", "n1"), 25)
    fourth, names = observe(30)
    assert fourth.pods_delta and list(fourth.pods_changed) == ["default/web", "default/db"] and names == ["web", "db"]
    # db leaves and comes back between two passes: it moved, so the list goes whole
    d.apply(pod("cache", "n1"), 35)
    assert observe(40)[1] == ["web", "db", "cache"]
    d.decision(
        dec.PodTerminated(reason="Deleted", grace_period_seconds=0, killed_at=45), 45, node="n1", pod="default/db"
    )
    d.apply(pod("db", "n1"), 46)
    sixth, names = observe(50)
    assert not sixth.pods_delta and names == ["web", "cache", "db"]


def test_the_kubelet_refuses_a_change_of_pods_stats_it_has_no_base_for() -> None:
    import pytest

    from ledgerlet_core.contracts.internal import LazyNodeObserved
    from ledgerlet_core.kubelet.kubelet import Kubelet
    from ledgerlet_core.kubelet.node import KubeletNode

    node = KubeletNode.__new__(KubeletNode)
    node.pod_stats = None
    delta = msgspec.json.decode(
        b'{"node":"n1","summary":{"node":{"nodeName":"n1"}},"source":"usage","podsDelta":true}', type=LazyNodeObserved
    )
    with pytest.raises(RuntimeError, match="no base"):
        Kubelet._pods_told(node, delta)
