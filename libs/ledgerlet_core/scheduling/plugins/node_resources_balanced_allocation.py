"""NodeResourcesBalancedAllocation: prefer the node whose cpu and memory would be used alike.

Upstream ``framework/plugins/noderesources/balanced_allocation.go`` (weight 1, plain
requests: ``(1 - std(fractions)) * 100`` over cpu and memory, each fraction capped at 1; a
node without both scores 100). Floating point in upstream as here: where the all-nodes
result is within a hair of an integer boundary the node's score is computed again node by
node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np

from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.plugins.base import MAX_NODE_SCORE, ScoreNodes
from ledgerlet_core.scheduling.table import Int64s, NodeTable, row_scores, unit

NAME: Final = "NodeResourcesBalancedAllocation"
#: how close to an integer an all-nodes score may be before it is computed again exactly
_BOUNDARY: Final = 1e-9


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


def score_one(
    pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo], default_selector: Selector | None
) -> list[int] | None:
    return [balanced_allocation(pod, n) for n in feasible]


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    """Kept per row and pod shape while the row stays the same (:func:`..table.row_scores`)."""
    table, everyone = nodes.table, nodes.nodes
    return row_scores(
        table,
        ("balanced", pod.requests.get("cpu", 0), pod.requests.get("memory", 0)),
        nodes.rows,
        lambda stale: _balanced_all(pod, table, stale, everyone),
        lambda row: balanced_allocation(pod, everyone[row]),
    )


def _balanced_all(pod: PodInfo, table: NodeTable, rows: Int64s, nodes: Sequence[NodeInfo]) -> Int64s:
    fractions = []
    present = []
    for r in ("cpu", "memory"):
        if r not in table.alloc:
            present.append(np.zeros(rows.size, np.bool_))
            fractions.append(np.zeros(rows.size, np.float64))
            continue
        cap = table.alloc[r][rows]
        want = unit(r, pod.requests.get(r, 0)) or 0
        req = (table.requested[r][rows] + want).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.minimum(req / cap.astype(np.float64), 1.0)
        present.append(cap != 0)
        fractions.append(np.where(cap != 0, f, 0.0))
    both = present[0] & present[1]
    f1, f2 = fractions
    mean = (f1 + f2) / 2
    d1, d2 = f1 - mean, f2 - mean
    std = np.sqrt((d1 * d1 + d2 * d2) / 2)
    value = (1 - std) * MAX_NODE_SCORE
    score = np.where(both, np.floor(value), MAX_NODE_SCORE).astype(np.int64)
    # near an integer boundary the float result could be a hair off node-by-node's: recompute
    near = both & (np.abs(value - np.round(value)) < _BOUNDARY)
    for j in np.flatnonzero(near):
        score[j] = balanced_allocation(pod, nodes[int(rows[j])])
    return score
