"""The scheduling cycle's filters and scores over every node at once.

kube-scheduler runs its Filter and Score plugins node by node (in parallel); here one pod is
checked against every row of the node table (:mod:`.table`) by each plugin's all-nodes form
(:mod:`.plugins`), in the profile's order (:mod:`.profile`, resolved once). The result is
exactly the node-by-node result (:func:`ledgerlet_core.scheduling.cycle.schedule_one`
without a table), which property tests hold it to (per plugin, and for the whole cycle):

* a plugin without an all-nodes form runs node by node on every row;
* nodes with nominated pods that count against them are filtered node by node where more
  than their resources matters (host ports, topology spread, inter-pod affinity);
* failure reasons are built only for the nodes the cycle processed and that failed (the
  records' lists, the FitError message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling.cyclestate import CycleState
from ledgerlet_core.scheduling.filters import GroupedStatuses, counted_nominated, run_filters
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
from ledgerlet_core.scheduling.plugins import node_affinity, taint_toleration
from ledgerlet_core.scheduling.plugins.base import (
    AllNodes,
    NodeFilter,
    NodeMasks,
    NodeScorer,
    NodesFilter,
    NodesScorer,
    ScoreNodes,
    Verdict,
)
from ledgerlet_core.scheduling.profile import FILTERS, RECORD_ORDER, SCORES, WEIGHTS
from ledgerlet_core.scheduling.scores import NodeScore
from ledgerlet_core.scheduling.status import FITS, NodeStatus
from ledgerlet_core.scheduling.table import Bools, Int64s, NodeTable, unit


def node_masks(pod: PodInfo, table: NodeTable) -> NodeMasks:
    """What the PreFilters and filters read of every row that does not depend on pods."""
    affinity_ok = node_affinity.affinity_mask(pod.sched.required, table)
    reasons = taint_toleration.taint_reasons(pod, table)
    taints_ok = np.array([r is None for r in reasons], np.bool_)[table.taint_set]
    return NodeMasks(affinity_ok, taints_ok, reasons)


class _ByNode:
    """The all-nodes form of a plugin that has only its per-node form: every row node by
    node (no default plugin is one; a plugin added without its all-nodes form still runs)."""

    __slots__ = ("_filter", "_nodes", "_nominated")

    def __init__(
        self, filter_one: NodeFilter, nodes: Sequence[NodeInfo], nominated_by_node: Mapping[str, Sequence[PodInfo]]
    ) -> None:
        self._filter, self._nodes, self._nominated = filter_one, nodes, nominated_by_node

    def __call__(self, pod: PodInfo, nodes: AllNodes) -> Verdict | None:
        """Each node with the nominated pods that count there (for their resources alone, as
        in the all-nodes forms; the rows where more matters are filtered node by node)."""
        nominated = self._nominated
        statuses = [
            self._filter(pod, node, nodes.state, counted_nominated(pod, node, nominated.get(node.name, ())))
            for node in self._nodes
        ]
        failing = [s for s in statuses if s.code]
        if not failing:
            return None
        kinds = {id(s): k for k, s in enumerate({id(s): s for s in failing}.values())}
        return _Listed(np.array([bool(s.code) for s in statuses], np.bool_), statuses, kinds)


@dataclass(slots=True)
class _Listed:
    """A verdict made node by node."""

    failed: Bools
    statuses: list[NodeStatus]
    kind_of: dict[int, int]

    def kinds(self, rows: Int64s) -> Int64s:
        return np.array([self.kind_of[id(self.statuses[i])] for i in rows.tolist()], np.int64)

    def status(self, row: int) -> NodeStatus:
        return self.statuses[row]


@dataclass(slots=True)
class Filtered:
    """One pod against every node: which fit, and each failing node's status."""

    fits: Bools
    #: statuses already known (nodes filtered node by node)
    _statuses: dict[int, NodeStatus]
    #: the plugins' verdicts, in the chain's order (the first that fails a row gives its status)
    _verdicts: list[Verdict]

    def status(self, i: int) -> NodeStatus:
        if self.fits[i]:
            return FITS
        found = self._statuses.get(i)
        if found is None:
            verdict = next(v for v in self._verdicts if v.failed[i])
            found = self._statuses[i] = verdict.status(i)
        return found

    def _kinds(self, rows: Int64s) -> Int64s:
        """Per failing row given, a number the same for rows failing alike (>= 0)."""
        verdicts = self._verdicts
        count = len(verdicts)
        if count <= 1:
            return verdicts[0].kinds(rows) if verdicts else np.zeros(rows.size, np.int64)
        which = np.zeros(rows.size, np.int64)  # the first verdict that fails each row
        for k in range(count - 1, -1, -1):
            which = np.where(verdicts[k].failed[rows], k, which)
        kind = np.zeros(rows.size, np.int64)
        for k, verdict in enumerate(verdicts):
            here = which == k
            if here.any():
                kind[here] = verdict.kinds(rows[here])
        return kind * count + which

    def grouped(self, rows: Int64s, names: Sequence[str]) -> GroupedStatuses:
        """The status of each row (in the order given), rows failing alike sharing one
        (built once per kind), held as groups of rows by status."""
        if not rows.size:
            return GroupedStatuses([], list)
        kind = np.where(self.fits[rows], -1, self._kinds(rows))
        for i in self._statuses:  # filtered node by node: a kind of their own
            kind = np.where(rows == i, -2 - i, kind)
        if not (kind != kind[0]).any():  # all alike (the common case): one group
            status = FITS if kind[0] == -1 else self.status(int(rows[0]))
            group = [names[i] for i in rows.tolist()]
            return GroupedStatuses([(status, group)], lambda: ((name, 0) for name in group))
        uniq, first, inverse = np.unique(kind, return_index=True, return_inverse=True)
        groups: list[tuple[NodeStatus, list[str]]] = []
        by_status: dict[int, int] = {}
        group_of_kind = np.zeros(uniq.size, np.int64)
        for u in np.argsort(first, kind="stable").tolist():  # kinds in the order first seen
            status = FITS if uniq[u] == -1 else self.status(int(rows[first[u]]))
            g = by_status.get(id(status))
            if g is None:
                g = by_status[id(status)] = len(groups)
                groups.append((status, []))
            group_of_kind[u] = g
        group_of = group_of_kind[inverse.reshape(-1)]
        for g, (_, into) in enumerate(groups):
            into.extend([names[i] for i in rows[group_of == g].tolist()])
        return GroupedStatuses(groups, lambda: zip([names[i] for i in rows.tolist()], group_of.tolist(), strict=True))


#: the all-nodes forms, resolved once (None: the plugin runs node by node)
_ALL_NODES: Final[tuple[tuple[NodeFilter, NodesFilter | None], ...]] = tuple((p.filter, p.filter_all) for p in FILTERS)


def filter_all(
    pod: PodInfo,
    table: NodeTable,
    nodes: Sequence[NodeInfo],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    state: CycleState | None = None,
    masks: NodeMasks | None = None,
    plugins: Sequence[tuple[NodeFilter, NodesFilter | None]] = _ALL_NODES,
) -> Filtered:
    """The default filter chain on every node (``RunFilterPluginsWithNominatedPods``);
    ``state``: the pod's PreFilter state from the cache (:func:`.cyclestate.vector_prefilter`);
    ``plugins``: each filter's per-node and all-nodes forms (the profile's)."""
    n = len(table.names)
    masks = masks if masks is not None else node_masks(pod, table)
    # nominated pods of at least this priority count on their node (RunFilterPluginsWithNominatedPods)
    extra_pods, extra_requests, by_hand = nominated_load(pod, table, nodes, nominated_by_node, state)
    context = AllNodes(table, masks, state, extra_pods, extra_requests)
    verdicts: list[Verdict] = []
    failed: Bools | None = None
    for one, every in plugins:
        verdict = (every if every is not None else _ByNode(one, nodes, nominated_by_node))(pod, context)
        if verdict is not None:
            failed = verdict.failed if failed is None else failed | verdict.failed
            verdicts.append(verdict)
    fits = ~failed if failed is not None else np.ones(n, np.bool_)
    statuses: dict[int, NodeStatus] = {}
    for i in by_hand:  # nominated pods this table cannot count exactly, or whose pods matter: node by node
        status = run_filters(pod, nodes[i], nominated_by_node.get(table.names[i], ()), state)
        fits[i] = status.fits
        if not status.fits:
            statuses[i] = status
    return Filtered(fits, statuses, verdicts)


def nominated_load(
    pod: PodInfo,
    table: NodeTable,
    nodes: Sequence[NodeInfo],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    state: CycleState | None,
) -> tuple[Int64s | int, dict[str, Int64s], list[int]]:
    """The pods nominated to each node that count against ``pod`` there (at least its
    priority, not itself, not already bound there): how many, and what they request.
    Rows whose nominated pods matter beyond their requests (host ports, a filter that reads
    other pods) or whose requests the table cannot hold exactly are returned, to filter
    node by node."""
    by_hand: list[int] = []
    pod_dependent = (state is not None and state.pod_dependent) or bool(pod.sched.host_ports)
    rows: list[int] = []
    counted: list[int] = []
    amounts: dict[str, tuple[list[int], list[int]]] = {}
    key, priority, index, memo = pod.key, pod.priority, table.index, table.nominated_memo
    for name, nominated in nominated_by_node.items():
        i = index.get(name)
        if i is None:
            continue
        node = nodes[i]
        kept = memo.get(name)
        if (
            kept is not None
            and kept.nominated is nominated
            and kept.version == node.version
            and kept.priority == priority
            and key not in kept.keys
        ):
            load = kept.load
        else:
            load = _load_of(nominated, node, priority, key)
            if not any(p.key == key for p in nominated):  # (the pod itself there: not kept)
                memo[name] = NominatedMemo(nominated, node.version, priority, {p.key for p in nominated}, load)
        if not load.count:
            continue
        if pod_dependent or load.ports:
            by_hand.append(i)
            continue
        rows.append(i)
        counted.append(load.count)
        for r, amount in load.units:
            at, values = amounts.setdefault(r, ([], []))
            at.append(i)
            values.append(amount)
        if not load.exact:
            by_hand.append(i)
    if not rows:
        return 0, {}, sorted(set(by_hand))
    n = len(table.names)
    counts = np.zeros(n, np.int64)
    np.add.at(counts, np.array(rows, np.int64), np.array(counted, np.int64))
    requests: dict[str, Int64s] = {}
    for r, (at, values) in amounts.items():
        column = requests[r] = np.zeros(n, np.int64)
        np.add.at(column, np.array(at, np.int64), np.array(values, np.int64))
    return counts, requests, sorted(set(by_hand))


@dataclass(frozen=True, slots=True)
class _Load:
    """The nominated pods that count against a pod on one node: how many, their requests
    in table units, whether one uses host ports, whether every request fits a unit."""

    count: int
    units: tuple[tuple[str, int], ...]
    ports: bool
    exact: bool


@dataclass(frozen=True, slots=True)
class NominatedMemo:
    """A node's :class:`_Load`, valid while its nominated list (the same object), its
    version and the preemptor's priority stay the same, for a pod not nominated there."""

    nominated: Sequence[PodInfo]
    version: int
    priority: int
    keys: set[str]
    load: _Load


def _load_of(nominated: Sequence[PodInfo], node: NodeInfo, priority: int, key: str) -> _Load:
    """``counted_nominated`` and what those pods request (the pod's own key excluded)."""
    bound = node.pods
    here = [p for p in nominated if p.priority >= priority and p.key != key and p.key not in bound]
    units: list[tuple[str, int]] = []
    exact = True
    for p in here:
        for r, nanos in p.requests.items():
            amount = unit(r, nanos)
            if amount is None:
                exact = False
            else:
                units.append((r, amount))
    return _Load(len(here), tuple(units), any(p.sched.host_ports for p in here), exact)


# -- scores ----------------------------------------------------------------------------------
@dataclass(slots=True)
class Scored:
    """Weighted totals of the feasible nodes, in the order given, and the best five."""

    totals: Int64s
    best: list[NodeScore]


#: the all-nodes scores, resolved once (None: the plugin scores node by node)
_SCORES: Final[tuple[tuple[str, NodeScorer, NodesScorer | None], ...]] = tuple(
    (p.name, p.score, p.score_all) for p in SCORES
)


def score_all(
    pod: PodInfo,
    table: NodeTable,
    rows: Int64s,
    nodes: Sequence[NodeInfo],
    top: int = 5,
    *,
    index: PodIndex | None = None,
    default_selector: Selector | None = None,
    masks: NodeMasks | None = None,
    plugins: Sequence[tuple[str, NodeScorer, NodesScorer | None]] = _SCORES,
) -> Scored:
    """The default profile's scores for ``rows`` (feasible nodes in processing order), as
    :func:`scores.score_nodes` computes them; a plugin whose PreScore skips is left out
    (and, without ``index``, the plugins that count other pods); ``plugins``: each score's
    name, per-node and all-nodes forms (the profile's)."""
    masks = masks if masks is not None else node_masks(pod, table)
    context = ScoreNodes(table, rows, nodes, masks, index, default_selector)
    by_plugin: dict[str, Int64s] = {}
    for name, one, every in plugins:
        if every is not None:
            got = every(pod, context)
        else:
            by_node = one(pod, [nodes[row] for row in rows.tolist()], nodes, default_selector)
            got = None if by_node is None else np.array(by_node, np.int64)
        if got is not None:
            by_plugin[name] = got
    names = [p for p in RECORD_ORDER if p in by_plugin]
    totals = np.zeros(rows.size, np.int64)
    for p in names:
        totals += by_plugin[p] * WEIGHTS[p]
    # the best ``top`` as a stable sort by descending total keeps them (ties in the order given)
    order = np.argsort(-totals, kind="stable")[:top]
    columns = [(p, by_plugin[p][order].tolist()) for p in names]
    best = [
        NodeScore(table.names[row], total, {p: column[k] for p, column in columns})
        for k, (row, total) in enumerate(zip(rows[order].tolist(), totals[order].tolist(), strict=True))
    ]
    return Scored(totals, best)
