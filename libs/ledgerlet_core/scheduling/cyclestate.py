"""What the PreFilter plugins work out once per pod and cycle, over every node, for the
filters to read node by node (upstream's ``CycleState``): PodTopologySpread's and
InterPodAffinity's counts per topology domain, NodeAffinity's node set.

Preemption's dry run works on a copy per node and moves the counts as it takes victims
away and gives them back (``RunPreFilterExtensionRemovePod`` / ``AddPod``), as do the
nominated pods a filter counts on their node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledgerlet_core.scheduling.plugins import inter_pod_affinity, pod_topology_spread
from ledgerlet_core.scheduling.plugins.node_affinity import ERR_REASON_CONFLICT

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.domains import Bools
    from ledgerlet_core.scheduling.index import PodIndex
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
    from ledgerlet_core.scheduling.table import NodeTable


@dataclass(slots=True)
class CycleState:
    spread: pod_topology_spread.FilterState | None = None
    affinity: inter_pod_affinity.FilterState | None = None
    #: NodeAffinity's PreFilterResult: the only nodes worth filtering (None: every node)
    node_names: frozenset[str] | None = None
    #: a PreFilter refused the pod outright: its message ("" when none did)
    rejected: str = ""

    @property
    def pod_dependent(self) -> bool:
        """Whether a filter reads other pods than the node's own (spread, affinity)."""
        return self.spread is not None or self.affinity is not None

    def clone(self) -> CycleState:
        return CycleState(
            self.spread.clone() if self.spread is not None else None,
            self.affinity.clone() if self.affinity is not None else None,
            self.node_names,
            self.rejected,
        )

    def added(self, pod: PodInfo, other: PodInfo, node: NodeInfo) -> None:
        """``other`` now counts on ``node`` for ``pod``'s filters."""
        if self.spread is not None:
            self.spread.update(pod, other, node, 1)
        if self.affinity is not None:
            self.affinity.update(other, node, 1)

    def removed(self, pod: PodInfo, other: PodInfo, node: NodeInfo) -> None:
        if self.spread is not None:
            self.spread.update(pod, other, node, -1)
        if self.affinity is not None:
            self.affinity.update(other, node, -1)


EMPTY = CycleState()


def _node_names(pod: PodInfo) -> tuple[frozenset[str] | None, str]:
    names = pod.sched.required.node_names()
    if names is not None and not names:
        return None, ERR_REASON_CONFLICT
    return names, ""


def prefilter(pod: PodInfo, nodes: Sequence[NodeInfo]) -> CycleState:
    """Every PreFilter, node by node."""
    names, rejected = _node_names(pod)
    if rejected:
        return CycleState(rejected=rejected)
    return CycleState(
        pod_topology_spread.filter_state(pod, nodes), inter_pod_affinity.filter_state(pod, nodes), names, rejected
    )


def vector_prefilter(
    pod: PodInfo, table: NodeTable, index: PodIndex, affinity_ok: Bools, taints_ok: Bools
) -> CycleState:
    """:func:`prefilter` from the cache's per-node counts."""
    names, rejected = _node_names(pod)
    if rejected:
        return CycleState(rejected=rejected)
    return CycleState(
        pod_topology_spread.vector_filter_state(pod, table, index, affinity_ok, taints_ok),
        inter_pod_affinity.vector_filter_state(pod, table, index),
        names,
        rejected,
    )
