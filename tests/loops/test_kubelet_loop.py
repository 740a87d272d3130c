"""The kubelet loop (the eviction-manager service), driven by hand: which pods it starts,
and how it stops them."""

from __future__ import annotations

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import PodStarted
from ledgerlet_services.loops.kubelet import KubeletLoop

from .harness import Drive, node, pod, timers, types


def kubelet() -> Drive:
    d = Drive(KubeletLoop())
    d.input(inp.ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=600))
    d.apply(node("n1"))
    return d


def test_a_pending_pod_of_the_scenario_is_started_once_the_scheduler_binds_it() -> None:
    """Regression: a pod listed in ``objects`` without a node was bound by the scheduler but
    never started by its kubelet (its copy of the pod only held pods admitted later)."""
    d = kubelet()
    d.apply(pod("pending"))
    asked = d.decision(dec.PodScheduled(requests={}), 0, node="n1", pod="default/pending")
    assert timers(asked) == [(0.0, 0)]  # admission is decided at the tick
    started = d.tick(0)
    assert types(started) == ["PodStarted"]
    assert msgspec.json.decode(started[0].data, type=PodStarted).node == "n1"
    # and it is the kubelet's now: a preemption stops it with its own grace
    d.decision(dec.PodPreempted(preemptor="default/x", grace_period_seconds=0), 5, node="n1", pod="default/pending")
    stopped = d.tick(5)
    assert types(stopped) == ["PodTerminated"]
    assert msgspec.json.decode(stopped[0].data, type=dec.PodTerminated).reason == "Preempted"


def test_a_bound_pod_waits_for_admission_whichever_of_binding_and_admission_comes_first() -> None:
    d = kubelet()
    d.apply(pod("late"), 1, initial=False)
    d.decision(dec.PodScheduled(requests={}), 1, node="n1", pod="default/late")  # before the admission
    assert d.tick(1) == []
    d.decision(dec.PodAdmitted(priority=0, qos_class="BestEffort", overhead={}), 1, pod="default/late")
    assert types(d.tick(1)) == ["PodStarted"]


def test_a_delete_stops_a_running_pod_after_its_exit_and_ignores_one_never_bound() -> None:
    d = kubelet()
    slow = pod("slow", "n1", terminationGracePeriodSeconds=30)
    slow["metadata"]["annotations"] = {"ledgerlet/exit-after": "4"}
    d.apply(slow)
    d.apply(pod("nowhere"))
    assert d.input(inp.ObjectDeleted(kind="Pod", namespace="default", name="nowhere"), 2) == []
    d.input(inp.ObjectDeleted(kind="Pod", namespace="default", name="slow"), 2)
    at_delete = d.tick(2)
    assert types(at_delete) == [] and timers(at_delete) == [(6.0, 0)]  # SIGTERM now, exit after 4 s
    gone = d.tick(6)
    data = msgspec.json.decode(gone[0].data, type=dec.PodTerminated)
    assert (data.reason, data.grace_period_seconds, data.killed_at) == ("Deleted", 30, 2.0)
