"""The kubelet's shutdown manager across nodes (``nodeshutdown_manager_linux.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.kubelet.shutdown_manager import ShutdownManager
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.errors import InputError
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


# -- logind (nodeshutdown_manager_linux_test.go: TestManager) -------------------------------------
def logind_case(total: str, critical: str, found: str, after: str | None) -> tuple[Any, Any]:
    raw = {"shutdownGracePeriod": total, "shutdownGracePeriodCriticalPods": critical, "logindInhibitDelayMax": found}
    if after is not None:
        raw["logindInhibitDelayMaxAfterReload"] = after
    m = machine_with(("normal-pod-nil-grace-period", 0), ("critical-pod-nil-grace-period", 2000000000))
    m.requested("n1", 0)
    started = m.start("n1", 0, resolve_kubelet_config(raw), 0.0)
    kills = {k.pod.partition("/")[2]: k.grace_period_seconds for g in started.started.groups for k in g.kills}
    return started, kills


@pytest.mark.parametrize(
    ("case", "total", "critical", "found", "after", "kills", "raised"),
    [
        ("no override (total=30s, critical=10s)", "30s", "10s", "40s", "40s", {"normal": 20, "critical": 10}, False),
        ("no override (total=30, critical=0)", "30s", "0s", "40s", "40s", {"normal": 30, "critical": 0}, False),
        (
            "override successful (total=30, critical=10)",
            "30s",
            "10s",
            "5s",
            "30s",
            {"normal": 20, "critical": 10},
            True,
        ),
        ("no override, all time to critical pods", "5s", "5s", "5s", "5s", {"normal": 0, "critical": 5}, False),
    ],
)
def test_logind_inhibit_delay(
    case: str, total: str, critical: str, found: str, after: str, kills: dict[str, int], raised: bool
) -> None:
    started, got = logind_case(total, critical, found, after)
    record = started.started
    assert record.graceful, case
    assert got == {f"{k}-pod-nil-grace-period": v for k, v in kills.items()}, case
    assert ("raised from" in record.message) is raised, case  # expectedDidOverrideInhibitDelay


def test_logind_raise_takes_effect_unless_said_otherwise() -> None:
    """``logindInhibitDelayMax`` is logind's value before the kubelet's drop-in: without
    ``logindInhibitDelayMaxAfterReload`` the raise takes effect."""
    started, _ = logind_case("30s", "10s", "5s", None)
    assert started.started.graceful and started.started.inhibit_delay_max_seconds == 30
    assert "raised from 5s to 30s" in started.started.message


@pytest.mark.parametrize(
    ("case", "total", "critical", "found", "after", "error"),
    [
        (
            "override unsuccessful",
            "30s",
            "10s",
            "5s",
            "5s",
            "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to "
            "30s (ShutdownGracePeriod), current value is 5s",
        ),
        (
            "override unsuccessful, zero time",
            "5s",
            "5s",
            "0s",
            "0s",
            "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to "
            "5s (ShutdownGracePeriod), current value is 0s",
        ),
    ],
)
def test_logind_override_unsuccessful(case: str, total: str, critical: str, found: str, after: str, error: str) -> None:
    """The manager fails to start (``expectedError``): no inhibitor lock, so the shutdown is
    not graceful: no Ready False, no group, the node stops at once."""
    started, kills = logind_case(total, critical, found, after)
    record = started.started
    assert not record.graceful and started.ready is None and started.ends_at == 0 and kills == {}, case
    assert record.message.startswith(f"Failed to start node shutdown manager: {error}"), case


def test_logind_after_reload_must_be_a_duration() -> None:
    with pytest.raises(InputError) as exc:
        resolve_kubelet_config({"logindInhibitDelayMaxAfterReload": "-1s"})
    assert exc.value.field == "logindInhibitDelayMaxAfterReload"
