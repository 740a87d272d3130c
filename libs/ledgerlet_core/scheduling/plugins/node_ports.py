"""NodePorts: a pod's host ports must be free on the node.

Upstream ``framework/plugins/nodeports/node_ports.go`` (``Filter``: Unschedulable
"node(s) didn't have free ports for the requested pod ports") over
``framework/types.go: HostPortInfo.CheckConflict``: a port bound on 0.0.0.0 conflicts with
the same protocol and port on any address, one bound on an address with the same
protocol and port on that address or on 0.0.0.0. The ports in use are those of every pod
the scheduler has on the node, terminating ones included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.scheduling.plugins.base import AllNodes, Uniform, Verdict
from ledgerlet_core.scheduling.status import FITS, UNSCHEDULABLE, NodeStatus, interned
from ledgerlet_core.scheduling.terms import HostPort

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

NAME: Final = "NodePorts"
ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"
ALL_ADDRESSES: Final = "0.0.0.0"


def conflicts(want: Iterable[HostPort], used: Mapping[HostPort, int]) -> bool:
    if not used:
        return False
    for ip, protocol, port in want:
        if ip == ALL_ADDRESSES:
            if any(p == port and proto == protocol for _, proto, p in used):
                return True
        elif (ip, protocol, port) in used or (ALL_ADDRESSES, protocol, port) in used:
            return True
    return False


# -- the plugin's two forms ----------------------------------------------------------------------
_TAKEN: Final = interned(UNSCHEDULABLE, (ERR_REASON,), NAME)


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    want = pod.sched.host_ports
    return _TAKEN if want and conflicts(want, node.ports) else FITS


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    """Once per distinct set of ports in use."""
    want = pod.sched.host_ports
    if not want:
        return None
    table = nodes.table
    by_set = np.array([conflicts(want, used) for used in table.port_sets], np.bool_)
    return Uniform(by_set[table.port_set], _TAKEN)
