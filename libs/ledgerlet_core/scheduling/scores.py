"""Score plugins of the default profile, and how many nodes to score.

Upstream (weights from ``apis/config/v1/default_plugins.go``): ``noderesources/least_allocated.go``
(weight 1, cpu and memory weight 1 each, non-zero requests),
``noderesources/balanced_allocation.go`` (weight 1, plain requests),
``tainttoleration/taint_toleration.go`` (weight 3: fewer intolerable PreferNoSchedule taints
is better, normalised in reverse), NodeAffinity (weight 2), PodTopologySpread (weight 2),
InterPodAffinity (weight 2), ImageLocality (weight 1) (:mod:`.nodeaffinity`,
:mod:`.podtopologyspread`, :mod:`.interpodaffinity`, :mod:`.imagelocality`), and
``schedule_one.go: numFeasibleNodesToFind`` for ``percentageOfNodesToScore``.

A plugin whose PreScore skips the pod (no preferred node affinity, no spread constraint
and no default one, no inter-pod term anywhere) is not run and not recorded; ImageLocality
is recorded where it gives some node more than 0 (where it gives every node 0 it changes no
total).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.model.k8s.taints import PREFER_NO_SCHEDULE, tolerates
from ledgerlet_core.scheduling import imagelocality, interpodaffinity, nodeaffinity, podtopologyspread
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

MAX_NODE_SCORE: Final = 100
MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
WEIGHTS: Final = {
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "TaintToleration": 3,
    nodeaffinity.NAME: 2,
    podtopologyspread.NAME: 2,
    interpodaffinity.NAME: 2,
    imagelocality.NAME: 1,
}
#: the order plugins appear in a decision's scores
PLUGIN_ORDER: Final = tuple(WEIGHTS)


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


def score_nodes(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo] | None = None,
    default_selector: Selector | None = None,
) -> list[NodeScore]:
    """Weighted totals per node, in the order given (``all_nodes``: every node in the
    cache, which spread, inter-pod affinity and image locality count over)."""
    everyone = all_nodes if all_nodes is not None else nodes
    taint_raw = [intolerable_prefer_no_schedule(pod, n) for n in nodes]
    worst = max(taint_raw, default=0)
    per_plugin: dict[str, list[int]] = {
        "NodeResourcesFit": [least_allocated(pod, n) for n in nodes],
        "NodeResourcesBalancedAllocation": [balanced_allocation(pod, n) for n in nodes],
        "TaintToleration": [
            MAX_NODE_SCORE if worst == 0 else MAX_NODE_SCORE - raw * MAX_NODE_SCORE // worst for raw in taint_raw
        ],
    }
    preferred = pod.sched.preferred
    if preferred is not None:
        per_plugin[nodeaffinity.NAME] = nodeaffinity.default_normalize(
            [nodeaffinity.preferred_score(preferred, n.labels, n.name) for n in nodes]
        )
    spread = podtopologyspread.score(pod, nodes, everyone, default_selector)
    if spread is not None:
        per_plugin[podtopologyspread.NAME] = spread
    ipa = interpodaffinity.score(pod, nodes, everyone)
    if ipa is not None:
        per_plugin[interpodaffinity.NAME] = ipa
    if pod.sched.images:
        holders = imagelocality.holders([n.images for n in everyone])
        images = [
            imagelocality.score(pod.sched.images, pod.sched.num_containers, n.images, holders, len(everyone))
            for n in nodes
        ]
        if any(images):
            per_plugin[imagelocality.NAME] = images
    names = [p for p in PLUGIN_ORDER if p in per_plugin]
    out = []
    for j, n in enumerate(nodes):
        plugins = {p: per_plugin[p][j] for p in names}
        out.append(NodeScore(n.name, sum(v * WEIGHTS[k] for k, v in plugins.items()), plugins))
    return out
