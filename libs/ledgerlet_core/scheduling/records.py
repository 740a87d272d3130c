"""A scheduling cycle's outcome as its decision records: ``PodScheduled``,
``PodUnschedulable``, ``PodNominated`` and one ``PodPreempted`` per victim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.model.k8s.resources import quantities
from ledgerlet_core.scheduling.cycle import CycleResult
from ledgerlet_core.scheduling.filters import GroupedStatuses
from ledgerlet_core.scheduling.info import PodInfo
from ledgerlet_core.scheduling.preemption import Preemption
from ledgerlet_core.scheduling.status import NodeStatus

#: how many of the best-scored nodes a PodScheduled shows, and of the candidates a PodNominated
TOP_SCORES = 5
TOP_CANDIDATES = 10


def filtered(statuses: Mapping[str, NodeStatus]) -> dict[str, list[str]]:
    """Nodes by the reason a filter refused them. Nodes failing alike share one status
    object (:mod:`.vector`): grouped by it first (the vector cycle hands them over grouped),
    each reason's list is made once."""
    if isinstance(statuses, GroupedStatuses):
        groups = statuses.groups
    else:
        by_id: dict[int, tuple[NodeStatus, list[str]]] = {}
        for node, s in statuses.items():
            group = by_id.get(id(s))
            if group is None:
                by_id[id(s)] = (s, [node])
            else:
                group[1].append(node)
        groups = list(by_id.values())
    seen: set[str] = set()
    for s, _ in groups:
        if seen.intersection(s.reasons) or len(set(s.reasons)) != len(s.reasons):
            return _filtered_node_by_node(statuses)  # a reason in two groups: keep node order
        seen.update(s.reasons)
    out: dict[str, list[str]] = {}
    for s, names in groups:
        for r in s.reasons:
            out[r] = names if len(s.reasons) == 1 else list(names)
    return out


def _filtered_node_by_node(statuses: Mapping[str, NodeStatus]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node, s in statuses.items():
        for r in s.reasons:
            out.setdefault(r, []).append(node)
    return out


def printed(nanos: Mapping[str, int]) -> dict[str, str]:
    return {k: str(v) for k, v in quantities(dict(nanos)).items()}


def scheduled(info: PodInfo, result: CycleResult, *, nominated: str, attempts: int) -> dec.PodScheduled:
    top = sorted(result.scores, key=lambda s: -s.total)[:TOP_SCORES]
    return dec.PodScheduled(
        requests=printed(info.requests),
        why=result.why,
        priority=info.priority,
        evaluated_nodes=result.evaluated,
        feasible_nodes=result.feasible,
        filtered=filtered(result.statuses),
        scores=[dec.NodeScoreSeen(node=s.node, total=s.total, plugins=s.plugins) for s in top],
        nominated_node=nominated,
        attempts=attempts,
    )


def unschedulable(info: PodInfo, result: CycleResult, *, attempts: int, backoff_seconds: float) -> dec.PodUnschedulable:
    return dec.PodUnschedulable(
        reasons=result.reasons,
        message=result.message,
        priority=info.priority,
        requests=printed(info.requests),
        filtered=filtered(result.statuses),
        attempts=attempts,
        backoff_seconds=backoff_seconds,
        nominated_node=info.nominated,
    )


#: the pod's PodScheduled condition reason while gated (``pkg/registry/core/pod/strategy.go``)
GATED_REASON = "SchedulingGated"


def gated(info: PodInfo) -> dec.PodUnschedulable:
    """A pod held by its scheduling gates: not tried until they are removed (the message
    is ``schedulinggates.PreEnqueue``'s status, Go's ``%v`` of the gate names)."""
    return dec.PodUnschedulable(
        reasons=[GATED_REASON],
        message=f"waiting for scheduling gates: [{' '.join(info.sched.gates)}]",
        priority=info.priority,
        requests=printed(info.requests),
    )


def nominated(
    info: PodInfo, post: Preemption, result: CycleResult, *, node: str, cleared: Sequence[str]
) -> dec.PodNominated:
    return dec.PodNominated(
        victims=[v.key for v in post.victims],
        priority=info.priority,
        message=(
            f"{len(post.victims)} pod(s) of lower priority removed from {node} so that the pod fits; "
            "every other lower-priority pod there was reprieved"
        ),
        candidates=[
            dec.PreemptionCandidate(
                node=c.node,
                victims=[v.key for v in c.victims],
                pdb_violations=c.pdb_violations,
                highest_victim_priority=c.victims[0].priority,
            )
            for c in post.candidates[:TOP_CANDIDATES]
        ],
        decided_by=post.decided_by,
        tied=post.tied,
        offset=post.offset,
        examined_nodes=post.examined,
        pdb_violations=next((c.pdb_violations for c in post.candidates if c.node == node), 0),
        cleared_nominations=list(cleared),
        filtered=filtered(result.statuses),
    )


def preempted(victim: PodInfo, preemptor: PodInfo, *, violates_pdb: bool) -> dec.PodPreempted:
    """The victim is deleted with its own grace period (``prepareCandidate``)."""
    return dec.PodPreempted(
        preemptor=preemptor.key,
        grace_period_seconds=victim.termination_grace,
        priority=victim.priority,
        preemptor_priority=preemptor.priority,
        message=f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
        violates_pdb=violates_pdb,
    )
