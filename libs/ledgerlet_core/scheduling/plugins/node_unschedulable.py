"""NodeUnschedulable: a cordoned node takes only pods that tolerate its unschedulable taint.

Upstream ``framework/plugins/nodeunschedulable/node_unschedulable.go`` (``Filter``:
UnschedulableAndUnresolvable "node(s) were unschedulable" unless the pod tolerates
``node.kubernetes.io/unschedulable:NoSchedule``, by ``TolerationsTolerateTaint``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.taints import NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, tolerations_tolerate_taint
from ledgerlet_core.scheduling.plugins.base import AllNodes, Uniform, Verdict
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, NodeStatus, interned

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

NAME: Final = "NodeUnschedulable"
ERR_REASON: Final = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT: Final = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)
_CORDONED: Final = interned(UNRESOLVABLE, (ERR_REASON,), NAME)


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    if node.unschedulable and not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
        return _CORDONED
    return FITS


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    unschedulable = nodes.table.unschedulable
    if not unschedulable.any() or tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
        return None
    return Uniform(unschedulable, _CORDONED)
