"""The kubelet's shutdown manager across nodes (``nodeshutdown_manager_linux.go``)."""

from __future__ import annotations

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.shutdown_manager import ShutdownManager
from ledgerlet_core.model.duration import SECOND
from tests.core.helpers import pod

GRACEFUL = resolve_kubelet_config({"shutdownGracePeriod": "30s", "shutdownGracePeriodCriticalPods": "10s"})
IMMEDIATE = resolve_kubelet_config({})


def machine_with(*pods: tuple[str, int]) -> ShutdownManager:
    m = ShutdownManager()
    m.node_added("n1")
    for name, priority in pods:
        m.active("n1", pod(name, priority))
    return m


def test_a_shutdown_starts_at_the_tick_after_the_request_and_plans_only_active_pods() -> None:
    m = machine_with(("web", 0), ("gone", 0), ("agent", 2000001000))
    m.inactive("default/gone")
    assert m.requested("n1", 5 * SECOND)
    assert not m.requested("n1", 6 * SECOND)  # already going down
    assert m.due(5 * SECOND) == [("n1", True)]
    started = m.start("n1", 5 * SECOND, GRACEFUL, 0.0)
    assert started.ready is not None and started.ready.status == "False"
    groups = started.started.groups
    assert [(g.priority, g.grace_period_seconds, g.pods) for g in groups] == [
        (0, 20, ["default/web"]),
        (2000000000, 10, ["default/agent"]),
    ]
    assert started.ends_at == 5 * SECOND  # every pod exits at once (no exit-after)
    m.started("n1", "started-id")
    record, cause = m.complete("n1", 5 * SECOND, 1000.0)
    assert cause == "started-id" and record.end_time_seconds == 1005.0
    assert m.pods_on("n1") == []  # the machine halted: nothing active
    assert m.powered_on("n1") is not None


def test_without_a_graceful_configuration_the_node_stops_at_once() -> None:
    m = machine_with(("web", 0))
    m.requested("n1", 0)
    started = m.start("n1", 0, IMMEDIATE, 0.0)
    assert started.ready is None and not started.started.graceful and started.ends_at == 0


def test_the_power_button_only_brings_back_a_node_that_is_off() -> None:
    m = machine_with()
    assert m.powered_on("n1") is None  # up already
    m.requested("n1", 0)
    assert m.powered_on("n1") is None  # still going down
    m.powered_off("n1")
    assert m.due(0) == []
    ready = m.powered_on("n1")
    assert ready is not None and (ready.status, ready.reason) == ("True", "KubeletReady")
