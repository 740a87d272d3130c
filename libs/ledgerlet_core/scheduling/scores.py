"""Score plugins of the default profile that ledgerlet models, and how many nodes to score.

Upstream: ``noderesources/least_allocated.go`` (weight 1, cpu and memory weight 1 each,
non-zero requests), ``noderesources/balanced_allocation.go`` (weight 1, plain requests),
``tainttoleration/taint_toleration.go`` (weight 3: fewer intolerable PreferNoSchedule
taints is better, normalised in reverse), and ``schedule_one.go:
numFeasibleNodesToFind`` for ``percentageOfNodesToScore``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.taints import PREFER_NO_SCHEDULE, tolerates
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

MAX_NODE_SCORE: Final = 100
MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
WEIGHTS: Final = {"NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "TaintToleration": 3}


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """Upstream's adaptive default: 50% minus 1% per 125 nodes, at least 5%, at least 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


def least_allocated(pod: PodInfo, node: NodeInfo) -> int:
    total = 0
    for want, used, cap in (
        (pod.nonzero_cpu, node.nonzero_cpu, node.allocatable.get("cpu", 0)),
        (pod.nonzero_memory, node.nonzero_memory, node.allocatable.get("memory", 0)),
    ):
        requested = want + used
        total += 0 if cap == 0 or requested > cap else (cap - requested) * MAX_NODE_SCORE // cap
    return total // 2


def balanced_allocation(pod: PodInfo, node: NodeInfo) -> int:
    fractions = []
    for name in ("cpu", "memory"):
        cap = node.allocatable.get(name, 0)
        if cap == 0:
            continue
        f = (node.requested.get(name, 0) + pod.requests.get(name, 0)) / cap
        fractions.append(min(f, 1.0))
    if len(fractions) < 2:
        return MAX_NODE_SCORE
    mean = sum(fractions) / len(fractions)
    std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def intolerable_prefer_no_schedule(pod: PodInfo, node: NodeInfo) -> int:
    prefer = [t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(1 for t in node.taints if t.effect == PREFER_NO_SCHEDULE and not any(tolerates(x, t) for x in prefer))


@dataclass(frozen=True, slots=True)
class NodeScore:
    node: str
    total: int
    plugins: dict[str, int]


def score_nodes(pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeScore]:
    """Weighted totals per node, in the order given."""
    taint_raw = [intolerable_prefer_no_schedule(pod, n) for n in nodes]
    worst = max(taint_raw, default=0)
    out = []
    for n, raw in zip(nodes, taint_raw, strict=True):
        taint = MAX_NODE_SCORE if worst == 0 else MAX_NODE_SCORE - raw * MAX_NODE_SCORE // worst
        plugins = {
            "NodeResourcesFit": least_allocated(pod, n),
            "NodeResourcesBalancedAllocation": balanced_allocation(pod, n),
            "TaintToleration": taint,
        }
        out.append(NodeScore(n.name, sum(v * WEIGHTS[k] for k, v in plugins.items()), plugins))
    return out
