"""The default profile's filters node by node (``RunFilterPluginsWithNominatedPods``), and
the FitError message.

The plugins run in :data:`.profile.FILTERS`' order, as ``RunFilterPlugins`` does: the first
plugin that fails gives the node's status. Nominated pods of at least the pod's priority are
counted on their node, and the filters must pass with them and without them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final

from ledgerlet_core.scheduling.cyclestate import CycleState
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.plugins.base import NodeFilter
from ledgerlet_core.scheduling.profile import FILTERS
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, NodeStatus


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


#: the per-node forms, resolved once (the chain runs for every node a cycle or a dry run filters)
_PER_NODE: Final[tuple[NodeFilter, ...]] = tuple(p.filter for p in FILTERS)


def _chain(pod: PodInfo, node: NodeInfo, extra: Sequence[PodInfo], state: CycleState | None) -> NodeStatus:
    """``RunFilterPlugins``; ``extra``: nominated pods counted for their resources alone."""
    for plugin in _PER_NODE:
        status = plugin(pod, node, state, extra)
        if status.code:
            return status
    return FITS


def histogram(statuses: Iterable[NodeStatus]) -> str:
    """``FitError.Error``'s counts: "<n> <reason>" sorted as strings, joined by ", "."""
    # nodes failing alike share one status object (:func:`.status.interned`): counted once per object
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
