"""TaintToleration: a node's NoSchedule/NoExecute taints must be tolerated (filter); fewer
intolerable PreferNoSchedule taints is better (score).

Upstream ``framework/plugins/tainttoleration/taint_toleration.go``: ``Filter``
(UnschedulableAndUnresolvable, naming the first untolerated taint), ``Score`` (the count of
PreferNoSchedule taints not tolerated by the pod's tolerations with an empty or
PreferNoSchedule effect) and ``NormalizeScore`` (reversed: the node with most gets 0).
The all-nodes forms run once per distinct taint list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.model.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    tolerates,
    tolerations_tolerate_taint,
)
from ledgerlet_core.scheduling.plugins.base import MAX_NODE_SCORE, AllNodes, PerSet, ScoreNodes, Verdict
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, NodeStatus, interned
from ledgerlet_core.scheduling.table import Int64s, NodeTable

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

NAME: Final = "TaintToleration"


def first_untolerated(pod: PodInfo, taints: Sequence[Taint]) -> str | None:
    """The reason naming the first NoSchedule/NoExecute taint the pod does not tolerate."""
    for taint in taints:
        if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate_taint(pod.tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    return None


def taint_reasons(pod: PodInfo, table: NodeTable) -> list[str | None]:
    """:func:`first_untolerated` per taint set of the table."""
    return [first_untolerated(pod, taints) for taints in table.taint_sets]


def intolerable_prefer_no_schedule(pod: PodInfo, taints: Sequence[Taint]) -> int:
    prefer = [t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not any(tolerates(x, t) for x in prefer))


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    reason = first_untolerated(pod, node.taints)
    return FITS if reason is None else interned(UNRESOLVABLE, (reason,), NAME)


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    masks = nodes.masks
    if masks.taints_ok.all():
        return None
    statuses = [None if r is None else interned(UNRESOLVABLE, (r,), NAME) for r in masks.taint_reasons]
    return PerSet(~masks.taints_ok, nodes.table.taint_set, statuses)


def score_one(
    pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo], default_selector: Selector | None
) -> list[int] | None:
    raw = [intolerable_prefer_no_schedule(pod, n.taints) for n in feasible]
    worst = max(raw, default=0)
    return [MAX_NODE_SCORE if worst == 0 else MAX_NODE_SCORE - r * MAX_NODE_SCORE // worst for r in raw]


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    table, rows = nodes.table, nodes.rows
    by_set = np.array([intolerable_prefer_no_schedule(pod, s) for s in table.taint_sets], np.int64)
    raw = by_set[table.taint_set[rows]]
    worst = int(raw.max()) if raw.size else 0
    if worst == 0:
        return np.full(rows.size, MAX_NODE_SCORE, np.int64)
    return MAX_NODE_SCORE - raw * MAX_NODE_SCORE // worst
