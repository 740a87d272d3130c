"""One scheduling cycle for one pod: filter, score, or (all failing) preempt.

Upstream: ``pkg/scheduler/schedule_one.go`` (``schedulePod``, ``findNodesThatFitPod``
with the nominated node tried first, ``findNodesThatPassFilters`` with the rotating
start index and ``numFeasibleNodesToFind``, ``prioritizeNodes``, ``selectHost``) and
the DefaultPreemption PostFilter. Equal scores go to the first node in node order
(upstream picks among them at random).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.filters import FITS, NodeStatus, fit_error, run_filters
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.preemption import PDB, Preemption, preempt
from ledgerlet_core.scheduling.scores import NodeScore, num_feasible_nodes_to_find, score_nodes

NO_NODES: Final = "no nodes available to schedule pods"


@dataclass(slots=True)
class CycleResult:
    node: str = ""
    statuses: dict[str, NodeStatus] = field(default_factory=dict)
    scores: list[NodeScore] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    message: str = ""
    preemption: Preemption | None = None
    #: why the node won: the nominated node fit, the only feasible one, best score, tie
    why: str = ""
    next_start: int = 0
    evaluated: int = 0


def schedule_one(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    pdbs: Sequence[PDB],
    settings: SchedulerConfig,
    *,
    now: int,
    start_index: int,
) -> CycleResult:
    total = len(nodes)
    if total == 0:
        return CycleResult(message=NO_NODES, reasons=[NO_NODES], next_start=start_index)
    if pod.nominated:
        nominee = next((n for n in nodes if n.name == pod.nominated), None)
        if nominee is not None and run_filters(pod, nominee, nominated_by_node.get(nominee.name, ())).fits:
            return CycleResult(
                node=nominee.name,
                statuses={nominee.name: FITS},
                why="its nominated node fits",
                next_start=start_index,
                evaluated=1,
            )
    want = num_feasible_nodes_to_find(settings.percentage_of_nodes_to_score, total)
    statuses: dict[str, NodeStatus] = {}
    feasible: list[NodeInfo] = []
    processed = 0
    for i in range(total):
        node = nodes[(start_index + i) % total]
        processed += 1
        status = run_filters(pod, node, nominated_by_node.get(node.name, ()))
        statuses[node.name] = status
        if status.fits:
            feasible.append(node)
            if len(feasible) >= want:
                break
    next_start = (start_index + processed) % total
    if not feasible:
        failures = [s for s in statuses.values() if not s.fits]
        reasons = sorted({r for s in failures for r in s.reasons})
        post = None
        if not settings.disable_preemption:
            post = preempt(
                pod,
                nodes,
                statuses,
                pdbs,
                nominated_by_node,
                now=now,
                min_percentage=settings.min_candidate_nodes_percentage,
                min_absolute=settings.min_candidate_nodes_absolute,
            )
        message = fit_error(total, failures, post.message if post is not None else "")
        return CycleResult(
            statuses=statuses,
            reasons=reasons,
            message=message,
            preemption=post,
            next_start=next_start,
            evaluated=processed,
        )
    if len(feasible) == 1:
        return CycleResult(
            node=feasible[0].name,
            statuses=statuses,
            why="the only feasible node",
            next_start=next_start,
            evaluated=processed,
        )
    scores = score_nodes(pod, feasible)
    best = max(s.total for s in scores)
    winners = [s for s, n in zip(scores, feasible, strict=True) if s.total == best]
    order = {n.name: n.order for n in feasible}
    winners.sort(key=lambda s: order[s.node])
    why = "highest score" if len(winners) == 1 else f"highest score, tied with {len(winners) - 1} (node order)"
    return CycleResult(
        node=winners[0].node,
        statuses=statuses,
        scores=scores,
        why=why,
        next_start=next_start,
        evaluated=processed,
    )
