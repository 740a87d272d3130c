"""The default profile's Score phase node by node, and how many nodes to score.

The score plugins (:data:`.profile.SCORES`, weights from ``apis/config/v1/default_plugins.go``)
each give the feasible nodes a normalized score; the node's total is their weighted sum.
``schedule_one.go: numFeasibleNodesToFind`` for ``percentageOfNodesToScore``.

A plugin whose PreScore skips the pod (no preferred node affinity, no spread constraint
and no default one, no inter-pod term anywhere) is not run and not recorded; ImageLocality
is recorded where it gives some node more than 0 (where it gives every node 0 it changes no
total).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.profile import RECORD_ORDER, SCORES, WEIGHTS

MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """Upstream's adaptive default: 50% minus 1% per 125 nodes, at least 5%, at least 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(frozen=True, slots=True)
class NodeScore:
    node: str
    total: int
    plugins: dict[str, int]


def score_nodes(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo] | None = None,
    default_selector: Selector | None = None,
) -> list[NodeScore]:
    """Weighted totals per node, in the order given (``all_nodes``: every node in the
    cache, which spread, inter-pod affinity and image locality count over)."""
    everyone = all_nodes if all_nodes is not None else nodes
    per_plugin: dict[str, list[int]] = {}
    for plugin in SCORES:
        got = plugin.score(pod, nodes, everyone, default_selector)
        if got is not None:
            per_plugin[plugin.name] = got
    names = [p for p in RECORD_ORDER if p in per_plugin]
    out = []
    for j, n in enumerate(nodes):
        plugins = {p: per_plugin[p][j] for p in names}
        out.append(NodeScore(n.name, sum(v * WEIGHTS[k] for k, v in plugins.items()), plugins))
    return out
