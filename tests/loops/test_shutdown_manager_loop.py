"""The shutdown manager loop, driven by hand: which pods it plans, and when it acts."""

from __future__ import annotations

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import PodStarted
from ledgerlet_services.loops.shutdown_manager import ShutdownManager

from .harness import Drive, node, pod, timers, types

CONFIG = {"shutdownGracePeriod": "30s", "shutdownGracePeriodCriticalPods": "10s"}


def started_drive() -> Drive:
    d = Drive(ShutdownManager())
    d.input(inp.ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=600, kubelet_config=CONFIG))
    d.apply(node("n1"))
    web = pod("web", "n1", terminationGracePeriodSeconds=5)
    web["metadata"]["annotations"] = {"ledgerlet/exit-after": "60"}  # exits when its grace runs out
    d.apply(web)
    d.apply(pod("done", "n1"))
    return d


def test_a_shutdown_plans_the_active_pods_and_completes_when_the_last_group_ends() -> None:
    d = started_drive()
    d.input(inp.ObjectDeleted(kind="Pod", namespace="default", name="done"), 1)  # told to stop: not in the plan
    asked = d.input(inp.NodeShutdownRequested(node="n1"), 2, node="n1")
    assert timers(asked) == [(2.0, 0)]
    at_start = d.tick(2)
    assert types(at_start) == ["NodeConditionChanged", "NodeShutdownStarted"]
    plan = msgspec.json.decode(at_start[1].data, type=dec.NodeShutdownStarted)
    assert [g.pods for g in plan.groups] == [["default/web"], []]
    assert plan.groups[0].kills[0].grace_period_seconds == 5  # its own grace, shorter than the group's 20 s
    assert timers(at_start) == [(7.0, 0)]  # the group ends when web's grace runs out
    assert d.tick(3) == []
    done = d.tick(7)
    assert types(done) == ["NodeShutdownCompleted"]
    assert done[0].causes == [at_start[1].id]


def test_a_pod_started_later_is_planned_and_a_power_on_reports_ready() -> None:
    d = started_drive()
    d.apply(pod("late"), 1, initial=False)
    d.decision(dec.PodAdmitted(priority=0, qos_class="BestEffort", overhead={}), 1, pod="default/late")
    d.decision(PodStarted(node="n1", pod="default/late", uid="uid-late"), 1, node="n1", pod="default/late")
    d.input(inp.NodeShutdownRequested(node="n1"), 2, node="n1")
    plan = msgspec.json.decode(d.tick(2)[1].data, type=dec.NodeShutdownStarted)
    assert sorted(p for g in plan.groups for p in g.pods) == ["default/done", "default/late", "default/web"]
    assert d.input(inp.NodePoweredOn(node="n1"), 3) == []  # still going down: the button does nothing
    d.input(inp.NodePoweredOff(node="n1"), 4)
    back = d.input(inp.NodePoweredOn(node="n1"), 5)
    assert types(back) == ["NodeConditionChanged"]
