"""NodeName: a pod that names its node fits only there.

Upstream ``framework/plugins/nodename/node_name.go`` (``Filter``: UnschedulableAndUnresolvable
"node(s) didn't match the requested node name").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ledgerlet_core.scheduling.plugins.base import AllNodes, Uniform, Verdict
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, NodeStatus, interned

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

NAME: Final = "NodeName"
ERR_REASON: Final = "node(s) didn't match the requested node name"
_ELSEWHERE: Final = interned(UNRESOLVABLE, (ERR_REASON,), NAME)


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    wanted = pod.sched.node_name
    return _ELSEWHERE if wanted and wanted != node.name else FITS


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    wanted = pod.sched.node_name
    if not wanted:
        return None
    return Uniform(nodes.table.names_array() != wanted, _ELSEWHERE)
