"""The scheduler loop, driven by hand: the API server admits at a tick, in event order,
then kube-scheduler places what waits."""

from __future__ import annotations

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import ObjectCreated
from ledgerlet_services.loops.scheduler import Scheduler

from .harness import Drive, node, pod, timers, types


def scheduler() -> Drive:
    d = Drive(Scheduler())
    d.input(inp.ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=600))
    d.apply(node("n1"))
    d.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 5,
            "globalDefault": True,
            "preemptionPolicy": "PreemptLowerPriority",
        }
    )
    return d


def test_created_pods_are_admitted_then_scheduled_at_the_next_tick() -> None:
    d = scheduler()
    created = pod("web-abcde")
    asked = d.decision(ObjectCreated(object=created, owner="default/ReplicaSet/web"), 3, pod="default/web-abcde")
    assert timers(asked) == [(3.0, 0)]
    out = d.tick(3)
    assert types(out) == ["PodAdmitted", "PodScheduled"]
    admitted = msgspec.json.decode(out[0].data, type=dec.PodAdmitted)
    assert (admitted.priority_class_name, admitted.priority) == ("low", 5)  # the global default
    assert out[1].node == "n1" and out[1].causes == [out[1].causes[0], out[0].id]


def test_a_refused_class_is_an_object_rejected_and_the_run_goes_on() -> None:
    d = scheduler()
    second = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "other"},
        "value": 1,
        "globalDefault": True,
    }
    d.apply(second, 2, initial=False)
    out = d.tick(2)
    assert types(out) == ["ObjectRejected"]
    assert "PriorityClass low is already marked as default" in msgspec.json.decode(out[0].data)["message"]


def test_a_pod_waiting_for_room_is_retried_when_a_pod_is_gone() -> None:
    d = scheduler()
    busy = pod("busy", "n1")
    busy["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "4"}}
    busy["spec"]["priority"] = 10  # (objects come admitted: nothing lower to preempt)
    d.apply(busy)
    want = pod("want")
    want["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    d.apply(want, 1, initial=False)
    assert types(d.tick(1)) == ["PodAdmitted", "PodUnschedulable"]
    gone = d.decision(
        dec.PodTerminated(reason="Deleted", grace_period_seconds=0, killed_at=4), 4, node="n1", pod="default/busy"
    )
    assert timers(gone) == [(4.0, 0)]
    assert types(d.tick(4)) == ["PodScheduled"]
