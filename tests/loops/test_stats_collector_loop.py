"""The stats collector loop, driven by hand: observations on the housekeeping grid, what
exited pods leave on disk, and the kernel's OOM kill between passes."""

from __future__ import annotations

from typing import Any

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import NodeObserved
from ledgerlet_core.contracts.observed import expand_observed
from ledgerlet_services.loops.stats_collector import Collector

from .harness import Drive, node, pod, timers, types

Mi = 1 << 20


def collector(*, whole: bool = True, **pod_usage: Any) -> Drive:
    """(``whole``: the run keeps every pod's stats in its observations, so tests can read them)"""
    d = Drive(Collector())
    observations = inp.OBSERVATIONS_WHOLE if whole else ""
    d.input(inp.ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=600, observations=observations))
    d.apply(node("n1"))
    web = pod("web", "n1")
    web["spec"]["containers"][0]["resources"] = {"limits": {"memory": "300Mi"}}
    d.apply(web)
    d.input(inp.UsageDeclared(key="node/n1", usage={"system": {"memory": "1Gi", "nodefs": "10Gi"}}), node="n1")
    d.input(inp.UsageDeclared(key="default/web", usage={"memory": "100Mi", "rootfs": "50Mi", **pod_usage}))
    return d


def observation(envs: list[Any]) -> NodeObserved:
    """The one observation ``envs`` hold (a tick's derived ones travel in a batch)."""
    (obs,) = [e for e in expand_observed(envs) if e.type == "NodeObserved"]
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


def test_every_pass_carries_the_pods_stats_a_pass_derives_as_pods_come_and_go() -> None:
    """A run that keeps its observations whole gets every pod's stats in every member, in
    the order the pods run, as ``derive_summary`` works them out one pod at a time."""
    from ledgerlet_core.node_sim.stats import derive_summary

    d = collector(logs=[[0, "1Mi"], [60, "61Mi"]])  # web's logs grow: its stats vary
    d.apply(pod("db", "n1"))
    d.input(inp.UsageDeclared(key="default/db", usage={"memory": "10Mi"}))
    machines = d.loop.machines  # type: ignore[attr-defined]

    def observe(at: float) -> list[str]:
        (env,) = [e for e in d.tick(at, phase=1) if e.type == "NodesObserved"]
        (member,) = expand_observed([env])
        seen = msgspec.json.decode(member.data, type=NodeObserved)
        node = machines.nodes["n1"]
        whole = derive_summary(
            "n1",
            env.t,
            seen.summary.node.memory.time if seen.summary.node.memory else "",
            node.usage,
            node.capacity,
            node.layout,
            node.images,
            node.dead_container_bytes,
            list(node.plans.values()),
            machines._pods_memory_limit(node),
            node.memory.stopped(env.t),
            node.dead_container_log_bytes,
        )
        assert seen.summary == whole
        return [p.pod_ref.name for p in seen.summary.pods]

    assert observe(0) == ["web", "db"]
    assert observe(10) == ["web", "db"]
    d.decision(
        dec.PodTerminated(reason="Deleted", grace_period_seconds=0, killed_at=15), 15, node="n1", pod="default/db"
    )
    assert observe(20) == ["web"]
    d.apply(pod("db", "n1"), 25)  # db comes back: it stands last, as a new pod does
    assert observe(30) == ["web", "db"]


def test_only_a_pass_that_may_rank_pods_gets_their_stats() -> None:
    """Without whole observations, a node's pods' stats ride along only when one of its
    thresholds is met counting its minimum reclaim (the kubelet may rank its pods then)."""
    from ledgerlet_core.contracts.internal import NodesObserved

    d = collector(whole=False, memory=[[0, "100Mi"], [20, "7Gi"]])  # web grows past memory.available<100Mi

    def carried(at: float) -> list[int]:
        (env,) = [e for e in d.tick(at, phase=1) if e.type == "NodesObserved"]
        return msgspec.json.decode(env.data, type=NodesObserved).pods_of

    assert carried(0) == []
    assert carried(20) == [0]


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


def test_the_kubelet_reads_the_batch_the_collector_made_as_its_json_tells_it() -> None:
    """In one process the kubelet takes a tick's batch as the collector made it, not
    decoded again: it must be what decoding its JSON gives, with and without pods' stats
    riding along; a copy of the JSON (a batch read through a broker) is decoded."""
    from ledgerlet_core.contracts import observed
    from ledgerlet_core.contracts.internal import NodesObserved
    from ledgerlet_core.contracts.observed import handed_observed

    d = collector(whole=False, memory=[[0, "100Mi"], [20, "7Gi"]])
    for at, carried in ((0, []), (20, [0])):
        (env,) = [e for e in d.tick(at, phase=1) if e.type == "NodesObserved"]
        decoded = msgspec.json.decode(env.data, type=NodesObserved)
        made = observed._HANDED[id(env.data)][1]  # (the batch the collector encoded)
        handed = handed_observed(env.data)
        assert handed is made
        assert handed == decoded and handed.pods_of == carried
        assert msgspec.json.encode(handed) == bytes(env.data)
        again = handed_observed(env.data)  # (handed over once: then decoded)
        assert again == decoded and again is not handed
        copy = handed_observed(msgspec.Raw(bytes(env.data)))
        assert copy == decoded and copy is not handed


def test_a_batch_is_stored_without_the_pods_stats_that_rode_along() -> None:
    from ledgerlet_core.contracts.internal import NodesObserved
    from ledgerlet_core.contracts.observed import stored_observed

    d = collector(whole=False, memory=[[0, "100Mi"], [20, "7Gi"]])
    (quiet,) = [e for e in d.tick(0, phase=1) if e.type == "NodesObserved"]
    assert stored_observed(quiet.data) is None  # (nothing rode along: stored as it is)
    (met,) = [e for e in d.tick(20, phase=1) if e.type == "NodesObserved"]
    stored = stored_observed(met.data)
    assert stored is not None
    kept = msgspec.json.decode(stored, type=NodesObserved)
    full = msgspec.json.decode(met.data, type=NodesObserved)
    assert full.pods_of == [0] and full.pods
    assert (kept.pods_of, kept.pods) == ([], [])
    assert msgspec.structs.replace(full, pods_of=[], pods=[]) == kept
