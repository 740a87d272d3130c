"""One scheduling cycle for one pod: PreFilter, filter, score, or (all failing) preempt.

Upstream: ``pkg/scheduler/schedule_one.go`` (``schedulePod``, ``findNodesThatFitPod``
with the PreFilter plugins first (NodeAffinity's node set narrows the nodes filtered; a
PreFilter may also refuse the pod outright), the nominated node tried next,
``findNodesThatPassFilters`` with the rotating start index and ``numFeasibleNodesToFind``
(over the nodes PreFilter left), ``prioritizeNodes``, ``selectHost``) and
the DefaultPreemption PostFilter. Equal scores go to the first node in node order
(upstream picks among them at random).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cyclestate import CycleState, prefilter, vector_prefilter
from ledgerlet_core.scheduling.filters import fit_error, run_filters
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.plugins.base import NodeMasks
from ledgerlet_core.scheduling.preemption import PDB, DryRuns, Preemption, preempt
from ledgerlet_core.scheduling.scores import NodeScore, num_feasible_nodes_to_find, score_nodes
from ledgerlet_core.scheduling.status import NodeStatus
from ledgerlet_core.scheduling.table import NodeTable, supports
from ledgerlet_core.scheduling.vector import filter_all, node_masks, score_all

NO_NODES: Final = "no nodes available to schedule pods"
#: the status of nodes a PreFilter's node set leaves out (``findNodesThatFitPod``)
PREFILTER_LEFT_OUT: Final = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


@dataclass(slots=True)
class CycleResult:
    node: str = ""
    #: the nodes the cycle evaluated that failed filtering, in the order evaluated
    statuses: Mapping[str, NodeStatus] = field(default_factory=dict)
    #: how many evaluated nodes passed filtering
    feasible: int = 0
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
    table: NodeTable | None = None,
    dry_runs: DryRuns | None = None,
    index: PodIndex | None = None,
    default_selector: Selector | None = None,
) -> CycleResult:
    """``table`` (with ``index``, the cache's per-node counts): the nodes as columns
    (:mod:`.table`): every node filtered at once (:mod:`.vector`), with the same result; node by node
    without them (or for a pod the table cannot hold exactly). ``dry_runs``: preemption's
    dry runs kept while their nodes stay the same. ``default_selector``: the selector of
    the pod's controller, for the default topology spreading (None: no controller known)."""
    total = len(nodes)
    if total == 0:
        return CycleResult(message=NO_NODES, reasons=[NO_NODES], next_start=start_index)
    vector = table is not None and index is not None and supports(table, pod)
    masks: NodeMasks | None = None
    if vector:
        assert table is not None and index is not None
        masks = node_masks(pod, table)
        state = vector_prefilter(pod, table, index, masks.affinity_ok, masks.taints_ok)
    else:
        state = prefilter(pod, nodes)
    if state.rejected:  # a PreFilter refused the pod on every node
        return _unfeasible(pod, nodes, {}, nominated_by_node, pdbs, settings, now, start_index, 0, dry_runs, state)
    if pod.nominated:
        nominee = next((n for n in nodes if n.name == pod.nominated), None)
        if (
            nominee is not None
            and (state.node_names is None or nominee.name in state.node_names)
            and run_filters(pod, nominee, nominated_by_node.get(nominee.name, ()), state).fits
        ):
            return CycleResult(
                node=nominee.name,
                feasible=1,
                why="its nominated node fits",
                next_start=start_index,
                evaluated=1,
            )
    candidates = nodes if state.node_names is None else [n for n in nodes if n.name in state.node_names]
    want = num_feasible_nodes_to_find(settings.percentage_of_nodes_to_score, len(candidates))
    if vector:
        assert table is not None and index is not None and masks is not None
        return _vector_cycle(
            pod, nodes, candidates, table, nominated_by_node, pdbs, settings, now, start_index, want, dry_runs,
            state, index, default_selector, masks,
        )  # fmt: skip
    statuses: dict[str, NodeStatus] = {}
    feasible: list[NodeInfo] = []
    processed = 0
    count = len(candidates)
    for i in range(count):
        node = candidates[(start_index + i) % count]
        processed += 1
        status = run_filters(pod, node, nominated_by_node.get(node.name, ()), state)
        if status.fits:
            feasible.append(node)
            if len(feasible) >= want:
                break
        else:
            statuses[node.name] = status
    next_start = (start_index + processed) % total
    if not feasible:
        return _unfeasible(
            pod, nodes, statuses, nominated_by_node, pdbs, settings, now, next_start, processed, dry_runs, state
        )
    if len(feasible) == 1:
        return CycleResult(
            node=feasible[0].name,
            statuses=statuses,
            feasible=1,
            why="the only feasible node",
            next_start=next_start,
            evaluated=processed,
        )
    scores = score_nodes(pod, feasible, nodes, default_selector)
    best = max(s.total for s in scores)
    winners = [s for s, n in zip(scores, feasible, strict=True) if s.total == best]
    order = {n.name: n.order for n in feasible}
    winners.sort(key=lambda s: order[s.node])
    return CycleResult(
        node=winners[0].node,
        statuses=statuses,
        feasible=len(feasible),
        scores=scores,
        why=_why(len(winners)),
        next_start=next_start,
        evaluated=processed,
    )


def _why(winners: int) -> str:
    return "highest score" if winners == 1 else f"highest score, tied with {winners - 1} (node order)"


def _vector_cycle(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    candidates: Sequence[NodeInfo],
    table: NodeTable,
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    pdbs: Sequence[PDB],
    settings: SchedulerConfig,
    now: int,
    start_index: int,
    want: int,
    dry_runs: DryRuns | None,
    state: CycleState,
    index: PodIndex,
    default_selector: Selector | None,
    masks: NodeMasks,
) -> CycleResult:
    """The same cycle with every node filtered at once: the first ``want`` feasible nodes
    in rotated order, exactly as the node-by-node loop would stop at them."""
    total = len(nodes)
    filtered = filter_all(pod, table, nodes, nominated_by_node, state, masks)
    count = len(candidates)
    if count == total:
        rotated = (start_index + np.arange(total)) % total
    else:
        rows = np.array([table.index[n.name] for n in candidates], np.int64)
        rotated = rows[(start_index + np.arange(count)) % count] if count else rows
    fits = filtered.fits[rotated]
    found = np.cumsum(fits)
    processed = int(np.searchsorted(found, want)) + 1 if count and found[-1] >= want else count
    evaluated = rotated[:processed]
    statuses = filtered.grouped(evaluated[~fits[:processed]], table.names)
    feasible = evaluated[fits[:processed]]
    next_start = (start_index + processed) % total
    if feasible.size == 0:
        return _unfeasible(
            pod, nodes, statuses, nominated_by_node, pdbs, settings, now, next_start, processed, dry_runs, state
        )
    if feasible.size == 1:
        name = table.names[int(feasible[0])]
        return CycleResult(
            node=name,
            statuses=statuses,
            feasible=1,
            why="the only feasible node",
            next_start=next_start,
            evaluated=processed,
        )
    scored = score_all(pod, table, feasible, nodes, index=index, default_selector=default_selector, masks=masks)
    best = scored.totals.max()
    winners = feasible[scored.totals == best]
    return CycleResult(
        node=table.names[int(winners.min())],  # rows are in node order: ties go to the first
        statuses=statuses,
        feasible=int(feasible.size),
        scores=scored.best,
        why=_why(int(winners.size)),
        next_start=next_start,
        evaluated=processed,
    )


def _unfeasible(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    statuses: Mapping[str, NodeStatus],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    pdbs: Sequence[PDB],
    settings: SchedulerConfig,
    now: int,
    next_start: int,
    processed: int,
    dry_runs: DryRuns | None,
    state: CycleState,
) -> CycleResult:
    """No node fits: the FitError, and DefaultPreemption's PostFilter. Nodes a PreFilter
    left out count as "node(s) didn't satisfy plugin(s) [NodeAffinity]"; a PreFilter that
    refused the pod gives the whole message."""
    total = len(nodes)
    failures = list(statuses.values())  # (only the nodes that failed are kept)
    absent = 0
    absent_reason = ""
    if state.rejected:
        reasons = [state.rejected]
    else:
        reasons = sorted({r for s in failures for r in s.reasons})
        if state.node_names is not None:
            absent = total - len(statuses)
            absent_reason = PREFILTER_LEFT_OUT
            if absent:
                reasons = sorted({*reasons, absent_reason})
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
            dry_runs=dry_runs,
            state=state,
        )
    message = fit_error(
        total,
        failures,
        post.message if post is not None else "",
        absent=absent,
        absent_reason=absent_reason,
        prefilter=state.rejected,
    )
    return CycleResult(
        statuses=statuses,
        reasons=reasons,
        message=message,
        preemption=post,
        next_start=next_start,
        evaluated=processed,
    )
