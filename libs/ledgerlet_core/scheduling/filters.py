"""Filter plugins, in the default profile's order, and the FitError message.

Upstream (``apis/config/v1/default_plugins.go``): NodeUnschedulable, NodeName,
TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit (``noderesources/fit.go:
fitsRequest``), PodTopologySpread, InterPodAffinity, run as ``RunFilterPlugins`` does:
the first plugin that fails gives the node's status. The volume plugins and
DynamicResources read what ledgerlet does not model (named at load when a pod uses it).
Nominated pods of at least the pod's priority are counted on their node, and the filters
must pass with them and without them (``RunFilterPluginsWithNominatedPods``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_UNSCHEDULABLE,
    tolerations_tolerate_taint,
)
from ledgerlet_core.scheduling import interpodaffinity, nodeaffinity, nodeports, podtopologyspread
from ledgerlet_core.scheduling.cyclestate import CycleState
from ledgerlet_core.scheduling.info import FIT_ORDER, NodeInfo, PodInfo

UNSCHEDULABLE: Final = "Unschedulable"
#: preemption cannot help: the node is never a candidate
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"

TOO_MANY_PODS: Final = "Too many pods"
NODE_UNSCHEDULABLE: Final = "node(s) were unschedulable"
SELECTOR_MISMATCH: Final = nodeaffinity.ERR_REASON_POD
NODE_NAME_MISMATCH: Final = "node(s) didn't match the requested node name"


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One node's filter result: ``code`` "" when it fits."""

    code: str = ""
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def fits(self) -> bool:
        return not self.code


FITS: Final = NodeStatus()


class GroupedStatuses(Mapping[str, NodeStatus]):
    """Failing nodes' statuses as groups of nodes sharing one status object: each group's
    nodes in the order evaluated, the groups in the order of their first node. A decision's
    lists are made from the groups (a few), not node by node (hundreds per cycle); the map
    node -> status, in the order evaluated, is made only when something reads it."""

    __slots__ = ("_map", "_order", "groups")

    def __init__(
        self, groups: list[tuple[NodeStatus, list[str]]], order: Callable[[], Iterable[tuple[str, int]]]
    ) -> None:
        self.groups = groups
        #: gives (node, its group number) in the order evaluated
        self._order = order
        self._map: dict[str, NodeStatus] | None = None

    def _dict(self) -> dict[str, NodeStatus]:
        if self._map is None:
            self._map = {name: self.groups[g][0] for name, g in self._order()}
        return self._map

    def __getitem__(self, name: str) -> NodeStatus:
        return self._dict()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return sum(len(names) for _, names in self.groups)


UNSCHEDULABLE_TAINT: Final = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def untolerated_taint(pod: PodInfo, node: NodeInfo) -> str | None:
    """``TaintToleration.Filter``: the first NoSchedule/NoExecute taint the pod does not tolerate."""
    for taint in node.taints:
        if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate_taint(pod.tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    return None


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


def counted_nominated(pod: PodInfo, node: NodeInfo, nominated: Iterable[PodInfo]) -> list[PodInfo]:
    """``addGENominatedPods``: the pods nominated to ``node`` that count against ``pod``."""
    return [p for p in nominated if p.key != pod.key and p.priority >= pod.priority and p.key not in node.pods]


def run_filters(
    pod: PodInfo, node: NodeInfo, nominated: Iterable[PodInfo] = (), state: CycleState | None = None
) -> NodeStatus:
    """The filter chain on one node, with nominated pods of >= priority counted there
    (``state``: what PreFilter worked out for the pod; None: no filter reads other nodes)."""
    extra = counted_nominated(pod, node, nominated)
    if extra and (
        (state is not None and state.pod_dependent) or pod.sched.host_ports or any(e.sched.host_ports for e in extra)
    ):
        trial = node.clone()
        with_them = state.clone() if state is not None else None
        for e in extra:
            trial.add(e)
            if with_them is not None:
                with_them.added(pod, e, trial)
        status = _chain(pod, trial, (), with_them)
        if not status.fits:
            return status
        return _chain(pod, node, (), state)
    return _chain(pod, node, extra, state)


def _chain(pod: PodInfo, node: NodeInfo, extra: Sequence[PodInfo], state: CycleState | None) -> NodeStatus:
    """``RunFilterPlugins``; ``extra``: nominated pods counted for their resources alone."""
    # NodeUnschedulable: tolerating the unschedulable taint is the normal rule
    # (``node_unschedulable.go: Filter`` -> ``TolerationsTolerateTaint``)
    if node.unschedulable and not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
        return NodeStatus(UNRESOLVABLE, (NODE_UNSCHEDULABLE,), "NodeUnschedulable")
    sched = pod.sched
    if sched.node_name and sched.node_name != node.name:
        return NodeStatus(UNRESOLVABLE, (NODE_NAME_MISMATCH,), "NodeName")
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return NodeStatus(UNRESOLVABLE, (taint,), "TaintToleration")
    if not sched.required.matches(node.labels, node.name):
        return NodeStatus(UNRESOLVABLE, (SELECTOR_MISMATCH,), nodeaffinity.NAME)
    if sched.host_ports and nodeports.conflicts(sched.host_ports, node.ports):
        return NodeStatus(UNSCHEDULABLE, (nodeports.ERR_REASON,), nodeports.NAME)
    short = insufficient(pod, node, extra)
    if short:
        return NodeStatus(UNSCHEDULABLE, tuple(short), "NodeResourcesFit")
    if state is not None and state.spread is not None:
        failed = podtopologyspread.filter_node(pod, state.spread, node)
        if failed is not None:
            return NodeStatus(UNRESOLVABLE if failed[0] else UNSCHEDULABLE, (failed[1],), podtopologyspread.NAME)
    if state is not None and state.affinity is not None:
        failed = interpodaffinity.filter_node(state.affinity, node)
        if failed is not None:
            return NodeStatus(UNRESOLVABLE if failed[0] else UNSCHEDULABLE, (failed[1],), interpodaffinity.NAME)
    return FITS


def histogram(statuses: Iterable[NodeStatus]) -> str:
    """``FitError.Error``'s counts: "<n> <reason>" sorted as strings, joined by ", "."""
    # nodes failing alike share one status object (:mod:`.vector`): counted once per object
    groups: dict[int, tuple[NodeStatus, int]] = {}
    for s in statuses:
        group = groups.get(id(s))
        groups[id(s)] = (s, 1) if group is None else (s, group[1] + 1)
    counts: Counter[str] = Counter()
    for s, n in groups.values():
        for r in s.reasons:
            counts[r] += n
    return ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))


def fit_error(
    num_nodes: int,
    statuses: Iterable[NodeStatus],
    post_filter: str = "",
    *,
    absent: int = 0,
    absent_reason: str = "",
    prefilter: str = "",
) -> str:
    """``FitError.Error``: a PreFilter's refusal, or the reasons counted over the nodes
    filtered and the nodes a PreFilter left out (``absent``), then PostFilter's message."""
    if prefilter:
        msg = f"0/{num_nodes} nodes are available: {prefilter}."
    else:
        statuses = list(statuses)
        if absent and absent_reason:
            statuses += [NodeStatus(UNRESOLVABLE, (absent_reason,))] * absent
        text = histogram(statuses)
        msg = f"0/{num_nodes} nodes are available: {text}." if text else f"0/{num_nodes} nodes are available:"
    return f"{msg} {post_filter}" if post_filter else msg
