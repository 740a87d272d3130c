"""NodeResourcesFit: the pod's requests must fit what the node has left (filter); the least
allocated node is preferred (score, its default strategy).

Upstream ``framework/plugins/noderesources/fit.go: fitsRequest`` (every shortage, the pod
count first, then cpu, memory, ephemeral storage and the scalar resources sorted; nothing
but the pod count for a pod that requests nothing) and ``least_allocated.go`` (cpu and
memory, weight 1 each, over the non-zero requests). Nominated pods of at least the pod's
priority count on their node (the ``extra`` pods; in the all-nodes form their number and
requests per row).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling.info import FIT_ORDER, NodeInfo, PodInfo
from ledgerlet_core.scheduling.plugins.base import MAX_NODE_SCORE, AllNodes, AllOf, ScoreNodes, Verdict
from ledgerlet_core.scheduling.status import FITS, UNSCHEDULABLE, NodeStatus, interned
from ledgerlet_core.scheduling.table import Bools, Int64s, NodeTable, row_scores, unit

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState

NAME: Final = "NodeResourcesFit"
TOO_MANY_PODS: Final = "Too many pods"


def insufficient(pod: PodInfo, node: NodeInfo, extra: Iterable[PodInfo] = ()) -> list[str]:
    """``fitsRequest``: every shortage, pod count first, then cpu, memory, storage, scalars."""
    extra = list(extra)
    requested = dict(node.requested)
    for e in extra:
        for k, v in e.requests.items():
            requested[k] = requested.get(k, 0) + v
    out: list[str] = []
    if len(node.pods) + len(extra) + 1 > node.allowed_pods:
        out.append(TOO_MANY_PODS)
    if pod.requests_nothing:
        return out
    for name in FIT_ORDER:
        want = pod.requests.get(name, 0)
        if want > 0 and want > node.allocatable.get(name, 0) - requested.get(name, 0):
            out.append(f"Insufficient {name}")
    for name in sorted(k for k in pod.requests if k not in FIT_ORDER and k != "pods"):
        want = pod.requests[name]
        if want > 0 and want > node.allocatable.get(name, 0) - requested.get(name, 0):
            out.append(f"Insufficient {name}")
    return out


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    short = insufficient(pod, node, extra)
    return interned(UNSCHEDULABLE, tuple(short), NAME) if short else FITS


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    """Every shortage, a mask each; the pod's requests in table units (the cycle runs node by
    node for a pod whose requests the table cannot hold exactly)."""
    table, extra_requests = nodes.table, nodes.extra_requests
    parts: list[tuple[str, Bools]] = [(TOO_MANY_PODS, table.pods + nodes.extra_pods + 1 > table.allowed_pods)]
    if not pod.requests_nothing:
        scalars = sorted(k for k in pod.requests if k not in FIT_ORDER and k != "pods")
        for r in [*FIT_ORDER, *scalars]:
            want = pod.requests.get(r, 0)
            if want <= 0 or r not in table.alloc:
                continue
            amount = unit(r, want)
            assert amount is not None  # (supports() checked it)
            requested = table.requested[r] + extra_requests[r] if r in extra_requests else table.requested[r]
            parts.append((f"Insufficient {r}", amount > table.alloc[r] - requested))
    return AllOf(UNSCHEDULABLE, NAME, parts)


def least_allocated(pod: PodInfo, node: NodeInfo) -> int:
    total = 0
    for want, used, cap in (
        (pod.nonzero_cpu, node.nonzero_cpu, node.allocatable.get("cpu", 0)),
        (pod.nonzero_memory, node.nonzero_memory, node.allocatable.get("memory", 0)),
    ):
        requested = want + used
        total += 0 if cap == 0 or requested > cap else (cap - requested) * MAX_NODE_SCORE // cap
    return total // 2


def score_one(
    pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo], default_selector: Selector | None
) -> list[int] | None:
    return [least_allocated(pod, n) for n in feasible]


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    """Kept per row and pod shape while the row stays the same (:func:`..table.row_scores`)."""
    table, everyone = nodes.table, nodes.nodes
    return row_scores(
        table,
        ("least", pod.nonzero_cpu, pod.nonzero_memory),
        nodes.rows,
        lambda stale: _least_allocated(pod, table, stale),
        lambda row: least_allocated(pod, everyone[row]),
    )


def _least_allocated(pod: PodInfo, table: NodeTable, rows: Int64s) -> Int64s:
    total = np.zeros(rows.size, np.int64)
    memory = unit("memory", pod.nonzero_memory)
    assert memory is not None
    none = np.zeros(rows.size, np.int64)  # (a resource no node has)
    cpu_cap = table.alloc["cpu"][rows] if "cpu" in table.alloc else none
    memory_cap = table.alloc["memory"][rows] if "memory" in table.alloc else none
    for want, used, cap in (
        (pod.nonzero_cpu, table.nonzero_cpu[rows], cpu_cap),
        (memory, table.nonzero_memory[rows], memory_cap),
    ):
        requested = want + used
        ok = (cap != 0) & (requested <= cap)
        safe = np.where(cap == 0, 1, cap)
        total += np.where(ok, (cap - requested) * MAX_NODE_SCORE // safe, 0)
    return total // 2
