"""What kube-controller-manager does about a node that went away, as pure rules.

Upstream: ``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` (``monitorNodeHealth``:
Ready Unknown after ``--node-monitor-grace-period`` without a heartbeat, checked every
``--node-monitor-period`` 5 s; condition -> taint mapping), ``pkg/controller/tainteviction``
(``processPodOnNode``, ``getMinTolerationTime``), ``pkg/controller/podgc/gc_controller.go``
(``gcTerminating``: every 20 s, terminating pods on a not-Ready node with the
out-of-service taint are force-deleted) and ``volume/attachdetach/reconciler.go``
(force detach after 6 minutes on an unhealthy node, or at once with the taint).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Taint, Toleration
from ledgerlet_core.model.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_UNREACHABLE,
    tolerates,
)

NODE_MONITOR_PERIOD: Final = 5 * SECOND
POD_GC_PERIOD: Final = 20 * SECOND
ORPHAN_QUARANTINE: Final = 40 * SECOND
MAX_WAIT_FOR_UNMOUNT: Final = 360 * SECOND
RECONCILE_PERIOD: Final = SECOND // 10
UNKNOWN_REASON: Final = "NodeStatusUnknown"
UNKNOWN_MESSAGE: Final = "Kubelet stopped posting node status."
TAINT_EVICTION_MESSAGE: Final = "Taint manager: deleting due to NoExecute taint"


def last_heartbeat(stopped_at: int, frequency: int) -> int:
    """The kubelet's last status post before it stopped: it posts every ``frequency`` from 0."""
    return stopped_at // frequency * frequency


def unknown_at(heartbeat: int, grace: int) -> int:
    """The first node-monitor pass (every 5 s) strictly after heartbeat + grace."""
    deadline = heartbeat + grace
    return (deadline // NODE_MONITOR_PERIOD + 1) * NODE_MONITOR_PERIOD


def ready_taints(status: str) -> list[Taint]:
    """The lifecycle controller's taints for a Ready status (NoSchedule and NoExecute)."""
    if status == "False":
        key = TAINT_NODE_NOT_READY
    elif status == "Unknown":
        key = TAINT_NODE_UNREACHABLE
    else:
        return []
    return [Taint(key=key, effect=NO_SCHEDULE), Taint(key=key, effect=NO_EXECUTE)]


def toleration_delay(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> int | None:
    """``processPodOnNode``: seconds until the pod is deleted for the node's NoExecute
    taints (0: now), or None when it tolerates them forever (or there are none)."""
    no_execute = [t for t in taints if t.effect == NO_EXECUTE]
    if not no_execute:
        return None
    tolerations = list(tolerations)
    used: list[Toleration] = []
    for taint in no_execute:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0
        used += [t for t in matching if t not in used]
    seconds = [t.toleration_seconds for t in used if t.toleration_seconds is not None]
    if not seconds:
        return None
    return max(min(seconds), 0)


def force_detach(*, healthy: bool, out_of_service: bool, unwanted_for: int, disable_on_timeout: bool) -> str | None:
    """The reconciler's choice for a volume no longer wanted but still mounted on its node:
    ``OutOfService`` or ``Timeout`` (forced), or None (keep waiting)."""
    if out_of_service:
        return "OutOfService"
    expired = unwanted_for > MAX_WAIT_FOR_UNMOUNT
    if not healthy and expired and not disable_on_timeout:
        return "Timeout"
    return None
