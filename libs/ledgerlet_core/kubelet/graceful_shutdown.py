"""The kubelet's graceful node shutdown as a plan: priority groups, who is killed when and
with what grace, and when each group ends.

Upstream: ``pkg/kubelet/nodeshutdown/nodeshutdown_manager.go`` (``migrateConfig``,
``groupByPriority``, ``podManager.killPods``) and ``nodeshutdown_manager_linux.go``
(``processShutdownEvent``, ``Admit``). The kill of one pod returns when the pod has
exited; a group ends when all of its kills returned (volumes unmount at once here) or its
period is over; an empty group is skipped without waiting; a zero-second group kills with
grace 0 and does not wait.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Final

from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.priority import DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, SYSTEM_CRITICAL_PRIORITY

SHUTDOWN_REASON: Final = "Terminated"
SHUTDOWN_MESSAGE: Final = "Pod was terminated in response to imminent node shutdown."
ADMIT_REASON: Final = "NodeShutdown"
ADMIT_MESSAGE: Final = "Pod was rejected as the node is shutting down."
READY_REASON: Final = "KubeletNotReady"
READY_MESSAGE: Final = "node is shutting down"
#: ``groupByPriority`` reads the kubelet's own pod: a static pod never passes API-server
#: priority admission (only its mirror pod does), so a priorityClassName alone leaves it at 0
STATIC_PRIORITY: Final = (
    "static pod: grouped by its manifest's own spec.priority (unset: 0), not by its priorityClassName, "
    "which only its mirror pod's admission resolves (nodeshutdown_manager.go groupByPriority; a known "
    "upstream defect)"
)


@dataclass(frozen=True, slots=True)
class Group:
    priority: int
    seconds: int


def migrate_config(period_s: int, critical_s: int) -> list[Group]:
    """``migrateConfig``: two groups from shutdownGracePeriod / ...CriticalPods, or none."""
    if period_s == 0 or period_s - critical_s < 0:
        return []
    return [
        Group(DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, period_s - critical_s),
        Group(SYSTEM_CRITICAL_PRIORITY, critical_s),
    ]


def shutdown_groups(config: KubeletConfig) -> tuple[list[Group], str]:
    """The effective table, sorted by priority (lowest first), and where it came from."""
    if not config.gate("GracefulNodeShutdown"):
        return [], "feature gate GracefulNodeShutdown is off"
    table = config.spec.shutdown_grace_period_by_pod_priority
    if config.gate("GracefulNodeShutdownBasedOnPodPriority") and table:
        groups = [Group(g.priority, g.shutdown_grace_period_seconds) for g in table]
        source = "shutdownGracePeriodByPodPriority"
    else:
        groups = migrate_config(
            config.shutdown_grace_period // SECOND, config.shutdown_grace_period_critical_pods // SECOND
        )
        source = "shutdownGracePeriod/shutdownGracePeriodCriticalPods"
    return sorted(groups, key=lambda g: g.priority), source


def period_requested(groups: list[Group]) -> int:
    """Seconds the kubelet asks logind to delay shutdown: the sum of all periods."""
    return sum(g.seconds for g in groups)


def group_of(groups: list[Group], priority: int) -> int:
    """``groupByPriority``: the first group whose priority is >= the pod's; between two, the
    lower one; above the top entry, the top group."""
    priorities = [g.priority for g in groups]
    i = bisect.bisect_left(priorities, priority)
    if i == len(groups):
        return len(groups) - 1
    if priorities[i] == priority or i == 0:
        return i
    return i - 1


@dataclass(frozen=True, slots=True)
class ShutdownPod:
    key: str
    #: the priority the kubelet sees (a static pod's is its manifest's, see ``STATIC_PRIORITY``)
    priority: int
    termination_grace: int | None
    #: how long it takes to exit after SIGTERM (ns): ``ledgerlet/exit-after``
    exits_after: int
    static: bool = False


@dataclass(slots=True)
class Kill:
    pod: str
    at: int
    grace: int
    grace_from: str
    exits_at: int
    priority_from: str = ""


@dataclass(slots=True)
class GroupPlan:
    priority: int
    seconds: int
    pods: list[str] = field(default_factory=list)
    start: int | None = None
    end: int | None = None
    ended_by: str = ""
    kills: list[Kill] = field(default_factory=list)


@dataclass(slots=True)
class Plan:
    groups: list[GroupPlan]
    end: int


def plan_shutdown(now: int, groups: list[Group], pods: list[ShutdownPod]) -> Plan:
    """Every group in kill order (lowest priority first), empty ones too."""
    plans = [GroupPlan(g.priority, g.seconds) for g in groups]
    members: list[list[ShutdownPod]] = [[] for _ in groups]
    for p in pods:
        members[group_of(groups, p.priority)].append(p)
    t = now
    for plan, pods_in in zip(plans, members, strict=True):
        plan.pods = [p.key for p in pods_in]
        if not pods_in:
            plan.ended_by = "empty: skipped"
            continue
        plan.start = t
        period = plan.seconds * SECOND
        for p in pods_in:
            own = p.termination_grace
            if own is not None and own <= plan.seconds:
                grace, why = own, "the pod's terminationGracePeriodSeconds"
            else:
                grace, why = plan.seconds, "the group's shutdownGracePeriodSeconds"
            exits = t + min(p.exits_after, grace * SECOND)
            plan.kills.append(Kill(p.key, t, grace, why, exits, STATIC_PRIORITY if p.static else ""))
        if plan.seconds == 0:
            plan.end, plan.ended_by = t, "zero-second group: no wait"
        else:
            last = max(k.exits_at for k in plan.kills)
            if last >= t + period:
                plan.end, plan.ended_by = t + period, "period over"
            else:
                plan.end, plan.ended_by = last, "all pods exited"
        t = plan.end
    return Plan(plans, t)
