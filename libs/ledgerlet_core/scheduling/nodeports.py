"""NodePorts: a pod's host ports must be free on the node.

Upstream ``framework/plugins/nodeports/node_ports.go`` (``Filter``: Unschedulable
"node(s) didn't have free ports for the requested pod ports") over
``framework/types.go: HostPortInfo.CheckConflict``: a port bound on 0.0.0.0 conflicts with
the same protocol and port on any address, one bound on an address with the same
protocol and port on that address or on 0.0.0.0. The ports in use are those of every pod
the scheduler has on the node, terminating ones included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from ledgerlet_core.scheduling.terms import HostPort

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
