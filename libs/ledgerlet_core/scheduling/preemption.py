"""DefaultPreemption: who may preempt, which victims on a node, which node.

Upstream: ``framework/plugins/defaultpreemption/default_preemption.go``
(``PodEligibleToPreemptOthers``, ``SelectVictimsOnNode``, ``filterPodsWithPDBViolation``,
``calculateNumCandidates``) and ``framework/preemption/preemption.go``
(``findCandidates``, ``DryRunPreemption``, ``pickOneNodeForPreemption``). Upstream
starts the dry run at a random offset and takes the first of equal nodes from a Go map;
here the offset is 0 and ties go to node order, and the decision records both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import msgspec

from ledgerlet_core.model.k8s.objects import LabelSelector
from ledgerlet_core.model.k8s.selection import is_empty, label_selector
from ledgerlet_core.scheduling.cyclestate import CycleState
from ledgerlet_core.scheduling.filters import histogram, run_filters
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.status import UNRESOLVABLE, UNSCHEDULABLE, NodeStatus

NO_VICTIMS: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER: Final = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
#: int32 max + 1: victims' priorities are shifted by it before summing (all terms positive)
PRIORITY_SHIFT: Final = 2**31


@dataclass(frozen=True, slots=True)
class PDB:
    """A PodDisruptionBudget as preemption reads it: ``status.disruptionsAllowed``."""

    name: str
    namespace: str
    selector: LabelSelector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    order: int
    victims: tuple[PodInfo, ...]
    pdb_violations: int


@dataclass(slots=True)
class Preemption:
    """The PostFilter's outcome. ``nominate``: node to nominate, "" to clear, None to leave."""

    nominate: str | None
    message: str
    victims: list[PodInfo] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    #: which step of the node-pick chain settled it, and the nodes still tied before it
    decided_by: str = ""
    tied: list[str] = field(default_factory=list)
    offset: int = 0
    examined: int = 0
    node_statuses: dict[str, NodeStatus] = field(default_factory=dict)


def more_important(a: PodInfo, b: PodInfo, now: int) -> bool:
    """``MoreImportantPod``: higher priority, then the one that started earlier (unset = now)."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return (a.start if a.start is not None else now) < (b.start if b.start is not None else now)


def importance_key(now: int) -> Callable[[PodInfo], tuple[int, int]]:
    return lambda p: (-p.priority, p.start if p.start is not None else now)


def eligible(pod: PodInfo, nodes: Mapping[str, NodeInfo], statuses: Mapping[str, NodeStatus]) -> str | None:
    """``PodEligibleToPreemptOthers``: None if eligible, else why not."""
    if pod.preemption_policy == "Never":
        return NOT_ELIGIBLE_NEVER
    nominated = pod.nominated
    if nominated:
        status = statuses.get(nominated)
        if status is not None and status.code == UNRESOLVABLE:
            return None
        node = nodes.get(nominated)
        if node is not None and any(
            p.priority < pod.priority and p.terminating and p.by_preemption for p in node.pods.values()
        ):
            return NOT_ELIGIBLE_TERMINATING
    return None


def num_candidates(num_potential: int, percentage: int, absolute: int) -> int:
    """``calculateNumCandidates``: a share of the potential nodes, at least ``absolute``."""
    n = num_potential * percentage // 100
    return min(max(n, absolute), num_potential)


def pdb_violations(victims: Sequence[PodInfo], pdbs: Sequence[PDB]) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), keeping the order given."""
    allowed = {(p.namespace, p.name): p.disruptions_allowed for p in pdbs}
    selectors = [label_selector(p.selector) for p in pdbs]  # (LabelSelectorAsSelector, once per PDB)
    violating: list[PodInfo] = []
    ok: list[PodInfo] = []
    for pod in victims:
        violates = False
        if pod.labels:
            for pdb, selector in zip(pdbs, selectors, strict=True):
                if pdb.namespace != pod.namespace or is_empty(pdb.selector):
                    continue
                if not selector.matches(pod.labels) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[(pdb.namespace, pdb.name)] -= 1
                if allowed[(pdb.namespace, pdb.name)] < 0:
                    violates = True
        (violating if violates else ok).append(pod)
    return violating, ok


def select_victims_on_node(
    pod: PodInfo,
    node: NodeInfo,
    pdbs: Sequence[PDB],
    nominated: Sequence[PodInfo],
    now: int,
    *,
    arithmetic: bool = True,
    state: CycleState | None = None,
) -> tuple[list[PodInfo], int] | NodeStatus:
    """Remove every lower-priority pod, check the pod fits, then reprieve as many as possible
    (PDB-violating ones first, most important first). Victims in importance order.
    ``state``: the pod's PreFilter state; a copy follows the pods taken away and given back
    (``RunPreFilterExtensionRemovePod``/``AddPod``), so that removing a victim can satisfy
    an anti-affinity or a spread constraint."""
    potential = [p for p in node.pods.values() if p.priority < pod.priority]
    if not potential:
        return NodeStatus(UNRESOLVABLE, (NO_VICTIMS,), "DefaultPreemption")
    if arithmetic and not nominated and (state is None or not state.pod_dependent) and not pod.sched.host_ports:
        fast = _victims_by_arithmetic(pod, node, potential, pdbs, now)
        if fast is not None:
            return fast
    trial = node.clone()
    st = state.clone() if state is not None else None
    for p in potential:
        trial.remove(p.key)
        if st is not None:
            st.removed(pod, p, trial)
    status = run_filters(pod, trial, nominated, st)
    if not status.fits:
        return status
    potential.sort(key=importance_key(now))
    violating, ok = pdb_violations(potential, pdbs)
    victims: list[PodInfo] = []
    violations = 0
    for group, counts in ((violating, True), (ok, False)):
        for p in group:
            trial.add(p)
            if st is not None:
                st.added(pod, p, trial)
            if not run_filters(pod, trial, nominated, st).fits:
                trial.remove(p.key)
                if st is not None:
                    st.removed(pod, p, trial)
                victims.append(p)
                violations += counts
    victims.sort(key=importance_key(now))
    return victims, violations


def _victims_by_arithmetic(
    pod: PodInfo, node: NodeInfo, potential: list[PodInfo], pdbs: Sequence[PDB], now: int
) -> tuple[list[PodInfo], int] | None:
    """:func:`select_victims_on_node` on a node whose only failing filter is
    NodeResourcesFit and that has no nominated pods: removing pods changes nothing but the
    node's requests and pod count, so each fit check is arithmetic on them (no copies of
    the node, no statuses). None when the pod still does not fit with every victim gone
    (the caller reports the filter's status)."""
    if run_filters(pod, _static_probe(node), ()).code == UNRESOLVABLE:
        return None
    wants = [(k, v) for k, v in pod.requests.items() if v > 0 and k != "pods"]
    requested = dict(node.requested)
    count = len(node.pods)

    def fits() -> bool:
        if count + 1 > node.allowed_pods:
            return False
        return all(want <= node.allocatable.get(k, 0) - requested.get(k, 0) for k, want in wants)

    for p in potential:
        for k, v in p.requests.items():
            requested[k] = requested.get(k, 0) - v
        count -= 1
    if not fits():
        return None
    potential.sort(key=importance_key(now))
    violating, ok = pdb_violations(potential, pdbs) if pdbs else ([], potential)
    victims: list[PodInfo] = []
    violations = 0
    for group, counts in ((violating, True), (ok, False)):
        for p in group:
            for k, v in p.requests.items():
                requested[k] = requested.get(k, 0) + v
            count += 1
            if not fits():
                for k, v in p.requests.items():
                    requested[k] = requested.get(k, 0) - v
                count -= 1
                victims.append(p)
                violations += counts
    victims.sort(key=importance_key(now))
    return victims, violations


def _static_probe(node: NodeInfo) -> NodeInfo:
    """The node's filters that pods do not change (cordon, taints, labels), with room for anything."""
    return NodeInfo(node.name, node.order, node.labels, {"pods": 1 << 62}, node.taints, node.unschedulable)


DryRun = tuple[list[PodInfo], int] | NodeStatus


class DryRuns:
    """``SelectVictimsOnNode`` results, kept while nothing they depend on changes: the node
    (its version), the preemptor's priority, requests and filters, the pods nominated there,
    the disruption budgets, and the clock when a pod there has no start time. A high-priority
    workload that preempts node after node meets the same unchanged nodes at every attempt.
    One result is kept per node (the last preemptor's)."""

    def __init__(self) -> None:
        #: per node: its version, whether a pod there has no start time (at that version),
        #: the key the result was computed for, the result, and the nominated pods' list it
        #: was computed with (the scheduler cache's lists are never changed in place: the
        #: same list is the same pods)
        self._kept: dict[str, tuple[int, bool, tuple[object, ...], DryRun, Sequence[PodInfo]]] = {}
        self._context: tuple[object, ...] = ()

    def context(self, pod: PodInfo, pdbs: Sequence[PDB]) -> tuple[object, ...]:
        """:func:`attempt_context`, the same object while it stays equal (the preemptors of
        one workload share it: comparing it to a kept key is then an identity check)."""
        context = attempt_context(pod, pdbs)
        if context != self._context:
            self._context = context
        return self._context

    def victims(
        self,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PDB],
        nominated: Sequence[PodInfo],
        now: int,
        context: tuple[object, ...],
        state: CycleState | None = None,
    ) -> DryRun:
        """``context``: :meth:`context` (computed once per attempt). A pod whose
        filters read other nodes' pods (spread, inter-pod affinity) is not kept: its
        result depends on more than this node."""
        if state is not None and state.pod_dependent:
            return select_victims_on_node(pod, node, pdbs, nominated, now, state=state)
        kept = self._kept.get(node.name)
        same_node = kept is not None and kept[0] == node.version
        # (a pod's start time changes only with the node's version: ``SchedulerCache.started``)
        unstarted = kept[1] if kept is not None and same_node else any(p.start is None for p in node.pods.values())
        if kept is not None and same_node and kept[4] is nominated:  # the key, without building it
            kept_context, _, own, clock = kept[2]
            if (
                kept_context is context
                and clock == (now if unstarted else None)
                and (not nominated or own == (pod.key if any(p.key == pod.key for p in nominated) else ""))
            ):
                return kept[3]
        key = (
            context,
            # (requests dicts are never changed in place: equal when the same object)
            tuple([(p.key, p.priority, p.requests) for p in nominated]) if nominated else (),
            pod.key if nominated and any(p.key == pod.key for p in nominated) else "",
            now if unstarted else None,
        )
        if kept is not None and same_node and kept[2] == key:
            return kept[3]
        result = select_victims_on_node(pod, node, pdbs, nominated, now)
        self._kept[node.name] = (node.version, unstarted, key, result, nominated)
        return result


def attempt_context(pod: PodInfo, pdbs: Sequence[PDB]) -> tuple[object, ...]:
    """What every dry run of one attempt reads of the preemptor and the budgets."""
    return (_preemptor(pod), budgets_key(pdbs))


def budgets_key(pdbs: Sequence[PDB]) -> tuple[object, ...]:
    """What a dry run reads of the disruption budgets."""
    return tuple(
        (b.namespace, b.name, b.disruptions_allowed, b.disrupted_pods, msgspec.json.encode(b.selector)) for b in pdbs
    )


def _preemptor(pod: PodInfo) -> tuple[object, ...]:
    """What a dry run reads of the preemptor."""
    return (
        pod.priority,
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        tuple((t.key, t.operator, t.value, t.effect) for t in pod.tolerations),
        pod.sched,
    )


def _pick(candidates: list[Candidate], now: int) -> tuple[Candidate, str, list[str]]:
    """``pickOneNodeForPreemption``: each step keeps the best; stop when one is left."""

    def earliest_top_start(c: Candidate) -> int:
        top = c.victims[0].priority
        return min((v.start if v.start is not None else now) for v in c.victims if v.priority == top)

    steps: list[tuple[str, Callable[[Candidate], int]]] = [
        ("fewest PDB violations", lambda c: -c.pdb_violations),
        ("lowest highest-priority victim", lambda c: -c.victims[0].priority),
        ("smallest sum of victim priorities", lambda c: -sum(v.priority + PRIORITY_SHIFT for v in c.victims)),
        ("fewest victims", lambda c: -len(c.victims)),
        ("latest start of highest-priority victims", earliest_top_start),
    ]
    left = list(candidates)
    if len(left) == 1:
        return left[0], "only candidate", [left[0].node]
    for name, score in steps:
        scores = [score(c) for c in left]
        best = max(scores)
        kept = [c for c, s in zip(left, scores, strict=True) if s == best]
        if len(kept) == 1:
            return kept[0], name, [c.node for c in left]
        left = kept
    left.sort(key=lambda c: c.order)
    return left[0], "node order (upstream: first of a map, arbitrary)", [c.node for c in left]


def preempt(
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    statuses: Mapping[str, NodeStatus],
    pdbs: Sequence[PDB],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    *,
    now: int,
    min_percentage: int,
    min_absolute: int,
    dry_runs: DryRuns | None = None,
    state: CycleState | None = None,
) -> Preemption:
    """``Evaluator.Preempt`` for one pod whose every node failed filtering (``dry_runs``:
    results kept from earlier attempts, used while their node is unchanged)."""
    by_name = {n.name: n for n in nodes} if pod.nominated else {}  # (eligible reads the nominee alone)
    why_not = eligible(pod, by_name, statuses)
    if why_not is not None:
        return Preemption(nominate=None, message=f"preemption: {why_not}")
    potential = [n for n in nodes if (s := statuses.get(n.name)) is not None and s.code == UNSCHEDULABLE]
    total = len(nodes)
    if not potential:
        return Preemption(
            nominate="",
            message=f"preemption: 0/{total} nodes are available: {total} {NOT_HELPFUL}.",
        )
    want = num_candidates(len(potential), min_percentage, min_absolute)
    offset = 0
    ok_list: list[Candidate] = []
    bad_list: list[Candidate] = []
    dry: dict[str, NodeStatus] = {}
    examined = 0
    context = dry_runs.context(pod, pdbs) if dry_runs is not None else ()
    for i in range(len(potential)):
        node = potential[(offset + i) % len(potential)]
        examined += 1
        nominated = nominated_by_node.get(node.name, ())
        if dry_runs is None:
            result = select_victims_on_node(pod, node, pdbs, nominated, now, state=state)
        else:
            result = dry_runs.victims(pod, node, pdbs, nominated, now, context, state)
        if isinstance(result, NodeStatus):
            dry[node.name] = result
        else:
            victims, violations = result
            c = Candidate(node.name, node.order, tuple(victims), violations)
            target = ok_list if violations == 0 else bad_list
            if len(target) < want:
                target.append(c)
        if ok_list and len(ok_list) + len(bad_list) >= want:
            break
    candidates = ok_list + bad_list
    if not candidates:
        statuses_all = [dry.get(n.name, NodeStatus(UNRESOLVABLE, (NOT_HELPFUL,))) for n in nodes]
        return Preemption(
            nominate="",
            message=f"preemption: 0/{total} nodes are available: {histogram(statuses_all)}.",
            offset=offset,
            examined=examined,
            node_statuses=dry,
        )
    chosen, decided_by, tied = _pick(candidates, now)
    return Preemption(
        nominate=chosen.node,
        message="",
        victims=list(chosen.victims),
        candidates=candidates,
        decided_by=decided_by,
        tied=tied,
        offset=offset,
        examined=examined,
        node_statuses=dry,
    )
