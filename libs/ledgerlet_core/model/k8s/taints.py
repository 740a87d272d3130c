"""Taints and tolerations.

Upstream: ``staging/src/k8s.io/api/core/v1/toleration.go: ToleratesTaint``,
``component-helpers/scheduling/corev1: TolerationsTolerateTaint``, and the well-known
taint keys of ``staging/src/k8s.io/api/core/v1/well_known_taints.go``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ledgerlet_core.model.k8s.objects import Taint, Toleration

TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
TAINT_NODE_OUT_OF_SERVICE: Final = "node.kubernetes.io/out-of-service"

NO_SCHEDULE: Final = "NoSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
NO_EXECUTE: Final = "NoExecute"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: effect, key and operator/value all match."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return toleration.value == taint.value
    return False


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)
