"""The scheduling cycle's filters and scores as vector operations over every node.

kube-scheduler runs its Filter and Score plugins node by node (in parallel); here the
node state they read (allocatable and requested per resource, pod counts, cordons, taint
and label sets) is kept in columns updated as pods bind and leave, and one pod is checked
against all nodes at once. The result is exactly the node-by-node result
(:func:`ledgerlet_core.scheduling.cycle.schedule_one` without a table), which a property
test holds it to:

* integers stay integers: cpu in nanocores, memory and storage in bytes (a table holding a
  fractional byte is refused, and the cycle runs node by node), so ``fitsRequest`` and
  ``LeastAllocated`` are the same integer arithmetic;
* ``BalancedAllocation`` is floating point in upstream as here; where the vector result is
  within a hair of an integer boundary the node's score is computed again node by node;
* nodes with nominated pods that count against them are filtered node by node where more
  than their resources matters (host ports, topology spread, inter-pod affinity);
* taints, node affinity, host ports and images are evaluated once per distinct taint list,
  label set, port set and image set;
* topology spread and inter-pod affinity read per-node counts the cache keeps
  (:mod:`.index`), summed per topology domain with one ``bincount``.

Failure reasons are built only for the nodes the cycle processed and that failed (the
records' lists, the FitError message).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.selection import NodeTerm, RequiredNodeAffinity, Requirement, Selector
from ledgerlet_core.model.k8s.taints import PREFER_NO_SCHEDULE, tolerates, tolerations_tolerate_taint
from ledgerlet_core.scheduling import imagelocality, interpodaffinity, nodeaffinity, nodeports, podtopologyspread
from ledgerlet_core.scheduling.cyclestate import CycleState
from ledgerlet_core.scheduling.domains import Domains, domains_of
from ledgerlet_core.scheduling.filters import (
    FITS,
    NODE_NAME_MISMATCH,
    NODE_UNSCHEDULABLE,
    SELECTOR_MISMATCH,
    TOO_MANY_PODS,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    GroupedStatuses,
    NodeStatus,
    run_filters,
    untolerated_taint,
)
from ledgerlet_core.scheduling.index import PodIndex
from ledgerlet_core.scheduling.info import FIT_ORDER, NodeInfo, PodInfo
from ledgerlet_core.scheduling.scores import (
    MAX_NODE_SCORE,
    PLUGIN_ORDER,
    WEIGHTS,
    NodeScore,
    balanced_allocation,
    least_allocated,
)
from ledgerlet_core.scheduling.terms import HostPort

NANO: Final = 10**9
#: resources held in bytes (their nanos divided by 1e9); every other one in nanos
BYTE_RESOURCES: Final = frozenset({"memory", "ephemeral-storage"})
Int64s = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: how close to an integer a vector balanced score may be before it is computed again exactly
_BOUNDARY: Final = 1e-9


def _unit(resource: str, nanos: int) -> int | None:
    """The table's integer for a quantity; None when it would not be exact."""
    if resource in BYTE_RESOURCES:
        return nanos // NANO if nanos % NANO == 0 else None
    return nanos


def _held(values: list[int | None], *, bound: bool = True) -> list[int] | None:
    """``values`` when every one is held exactly (and, ``bound``, below 2**62 in size)."""
    out = [v for v in values if v is not None and (not bound or abs(v) < 2**62)]
    return out if len(out) == len(values) else None


@dataclass(slots=True)
class NodeTable:
    """Columns of the scheduler cache's nodes, in node order (rows follow ``names``)."""

    names: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    #: resource -> allocatable / requested per node (table units)
    alloc: dict[str, Int64s] = field(default_factory=dict)
    requested: dict[str, Int64s] = field(default_factory=dict)
    nonzero_cpu: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    nonzero_memory: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    pods: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    allowed_pods: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    unschedulable: Bools = field(default_factory=lambda: np.zeros(0, np.bool_))
    #: per node, an index into ``taint_sets`` / ``label_sets`` / ``port_sets`` / ``image_sets``
    taint_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    label_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    port_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    image_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    taint_sets: list[tuple[Taint, ...]] = field(default_factory=list)
    label_sets: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    port_sets: list[dict[HostPort, int]] = field(default_factory=list)
    image_sets: list[dict[str, int]] = field(default_factory=list)
    #: False when a value cannot be held exactly: the cycle then runs node by node
    exact: bool = True
    _taint_ids: dict[tuple[tuple[str, str, str], ...], int] = field(default_factory=dict)
    _label_ids: dict[tuple[tuple[str, str], ...], int] = field(default_factory=dict)
    _port_ids: dict[tuple[tuple[HostPort, int], ...], int] = field(default_factory=dict)
    _image_ids: dict[tuple[tuple[str, int], ...], int] = field(default_factory=dict)
    #: per topology key, each row's domain; and how many nodes hold each image (made when
    #: first asked for, dropped when a row's labels or images change)
    _domains: dict[str, Domains] = field(default_factory=dict)
    _masks: dict[RequiredNodeAffinity, Bools] = field(default_factory=dict)
    _holders: dict[str, int] | None = None
    _names_array: npt.NDArray[np.str_] | None = None
    _labelled: Bools | None = None
    #: per node, the load of its nominated pods as :func:`_nominated_load` last found it
    nominated_memo: dict[str, _NominatedMemo] = field(default_factory=dict)
    #: score columns that depend on a row alone (:func:`_row_scores`), by plugin and pod shape
    score_columns: dict[tuple[object, ...], _ScoreColumn] = field(default_factory=dict)

    @classmethod
    def build(cls, nodes: Sequence[NodeInfo]) -> NodeTable:
        t = cls()
        n = len(nodes)
        t.names = [node.name for node in nodes]
        t.index = {name: i for i, name in enumerate(t.names)}
        resources = sorted({k for node in nodes for k in (*node.allocatable, *node.requested)} - {"pods"})
        t.alloc = {r: np.zeros(n, np.int64) for r in resources}
        t.requested = {r: np.zeros(n, np.int64) for r in resources}
        t.nonzero_cpu = np.zeros(n, np.int64)
        t.nonzero_memory = np.zeros(n, np.int64)
        t.pods = np.zeros(n, np.int64)
        t.allowed_pods = np.zeros(n, np.int64)
        t.unschedulable = np.zeros(n, np.bool_)
        t.taint_set = np.zeros(n, np.int64)
        t.label_set = np.full(n, -1, np.int64)
        t.port_set = np.zeros(n, np.int64)
        t.image_set = np.full(n, -1, np.int64)
        if not t._fill(nodes, resources):  # a value not held exactly: row by row, as refresh has it
            for i, node in enumerate(nodes):
                t.refresh(i, node)
        return t

    def _fill(self, nodes: Sequence[NodeInfo], resources: list[str]) -> bool:
        """Every row at once, as :meth:`refresh` row by row would leave it (the first pod of a
        5,000-node cluster waited for 5,000 refreshes); False (nothing changed) when some
        value cannot be held exactly."""
        columns: dict[str, tuple[list[int], list[int]]] = {}
        for r in resources:
            a = _held([_unit(r, node.allocatable.get(r, 0)) for node in nodes])
            q = _held([_unit(r, node.requested.get(r, 0)) for node in nodes])
            if a is None or q is None:
                return False
            columns[r] = (a, q)
        memory = _held([_unit("memory", node.nonzero_memory) for node in nodes], bound=False)
        if memory is None:
            return False
        for r, (a, q) in columns.items():
            self.alloc[r] = np.array(a, np.int64)
            self.requested[r] = np.array(q, np.int64)
        self.nonzero_cpu = np.array([node.nonzero_cpu for node in nodes], np.int64)
        self.nonzero_memory = np.array(memory, np.int64)
        self.pods = np.array([len(node.pods) for node in nodes], np.int64)
        self.allowed_pods = np.array([node.allowed_pods for node in nodes], np.int64)
        self.unschedulable = np.array([node.unschedulable for node in nodes], np.bool_)
        self.taint_set = np.array([self._intern_taints(tuple(node.taints)) for node in nodes], np.int64)
        self.label_set = np.array([self._intern_labels(tuple(sorted(node.labels.items()))) for node in nodes], np.int64)
        self.port_set = np.array([self._intern_ports(node.ports) for node in nodes], np.int64)
        self.image_set = np.array([self._intern_images(node.images) for node in nodes], np.int64)
        return True

    def refresh(self, i: int, node: NodeInfo) -> None:
        """Row ``i`` from the node as the cache holds it now."""
        for column in self.score_columns.values():
            column.fresh[i] = False
        for r in set(node.allocatable) | set(node.requested):
            if r == "pods":
                continue
            if r not in self.alloc:  # a resource no node had: a new column
                self.alloc[r] = np.zeros(len(self.names), np.int64)
                self.requested[r] = np.zeros(len(self.names), np.int64)
        for r in self.alloc:
            a = _unit(r, node.allocatable.get(r, 0))
            q = _unit(r, node.requested.get(r, 0))
            if a is None or q is None or max(abs(a), abs(q)) >= 2**62:
                self.exact = False
                return
            self.alloc[r][i] = a
            self.requested[r][i] = q
        memory = _unit("memory", node.nonzero_memory)
        if memory is None:
            self.exact = False
            return
        self.nonzero_cpu[i] = node.nonzero_cpu
        self.nonzero_memory[i] = memory
        self.pods[i] = len(node.pods)
        self.allowed_pods[i] = node.allowed_pods
        self.unschedulable[i] = node.unschedulable
        self.taint_set[i] = self._intern_taints(tuple(node.taints))
        labels = self._intern_labels(tuple(sorted(node.labels.items())))
        if labels != self.label_set[i]:
            self.label_set[i] = labels
            self._domains.clear()
            self._masks.clear()
            self._labelled = None
        self.port_set[i] = self._intern_ports(node.ports)
        images = self._intern_images(node.images)
        if images != self.image_set[i]:
            self.image_set[i] = images
            self._holders = None

    def _intern_taints(self, taints: tuple[Taint, ...]) -> int:
        key = tuple((t.key, t.value, t.effect) for t in taints)
        found = self._taint_ids.get(key)
        if found is None:
            found = self._taint_ids[key] = len(self.taint_sets)
            self.taint_sets.append(taints)
        return found

    def _intern_labels(self, labels: tuple[tuple[str, str], ...]) -> int:
        found = self._label_ids.get(labels)
        if found is None:
            found = self._label_ids[labels] = len(self.label_sets)
            self.label_sets.append(labels)
        return found

    def _intern_ports(self, ports: Mapping[HostPort, int]) -> int:
        key = tuple(sorted(ports.items()))
        found = self._port_ids.get(key)
        if found is None:
            found = self._port_ids[key] = len(self.port_sets)
            self.port_sets.append(dict(ports))
        return found

    def _intern_images(self, images: Mapping[str, int]) -> int:
        key = tuple(sorted(images.items()))
        found = self._image_ids.get(key)
        if found is None:
            found = self._image_ids[key] = len(self.image_sets)
            self.image_sets.append(dict(images))
        return found

    def domains(self, key: str) -> Domains:
        """Each row's domain for the topology ``key`` (-1 where a node lacks the label)."""
        found = self._domains.get(key)
        if found is None:
            found = domains_of((dict(labels) for labels in self.label_sets), key)
            found.ids = found.ids[self.label_set] if found.ids.size else np.full(len(self.names), -1, np.int64)
            self._domains[key] = found
        return found

    def names_array(self) -> npt.NDArray[np.str_]:
        if self._names_array is None or self._names_array.size != len(self.names):
            self._names_array = np.array(self.names)
        return self._names_array

    @property
    def labelled(self) -> Bools:
        """Rows whose node has some label (kept until a row's labels change)."""
        if self._labelled is None:
            has = np.array([bool(labels) for labels in self.label_sets], np.bool_)
            self._labelled = has[self.label_set]
        return self._labelled

    def holders(self) -> dict[str, int]:
        """How many nodes hold each image."""
        if self._holders is None:
            per_set = np.bincount(self.image_set, minlength=len(self.image_sets))
            out: dict[str, int] = {}
            for set_id, count in enumerate(per_set.tolist()):
                if count:
                    for name in self.image_sets[set_id]:
                        out[name] = out.get(name, 0) + count
            self._holders = out
        return self._holders


@dataclass(slots=True)
class Filtered:
    """One pod against every node: which fit, and each failing node's status."""

    fits: Bools
    #: statuses already known (nodes filtered node by node), and the rest, built when asked for
    _statuses: dict[int, NodeStatus]
    _codes: _Reasons

    def status(self, i: int) -> NodeStatus:
        if self.fits[i]:
            return FITS
        found = self._statuses.get(i)
        if found is None:
            code, reasons, plugin = self._codes[i]
            found = self._statuses[i] = _interned(code, reasons, plugin)
        return found

    def grouped(self, rows: Int64s, names: Sequence[str]) -> GroupedStatuses:
        """The status of each row (in the order given), rows failing alike sharing one
        (built once per kind), held as groups of rows by status."""
        if not rows.size:
            return GroupedStatuses([], list)
        kind = np.where(self.fits[rows], -1, self._codes.kinds(rows))
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


_STATUSES: dict[tuple[str, tuple[str, ...], str], NodeStatus] = {}


def _interned(code: str, reasons: tuple[str, ...], plugin: str) -> NodeStatus:
    key = (code, reasons, plugin)
    found = _STATUSES.get(key)
    if found is None:
        found = _STATUSES[key] = NodeStatus(code, reasons, plugin)
    return found


def supports(table: NodeTable, pod: PodInfo) -> bool:
    """Whether the vector cycle is exact for this pod on this table."""
    if not table.exact:
        return False
    for r, nanos in pod.requests.items():
        if r == "pods" or not nanos:
            continue
        if r not in table.alloc or _unit(r, nanos) is None:
            return False
    return _unit("memory", pod.nonzero_memory) is not None


@dataclass(slots=True)
class NodeMasks:
    """What a pod's PreFilter and filters read of every node that does not depend on
    pods: its required node affinity, its taints (for topology spread's policy)."""

    affinity_ok: Bools
    taints_ok: Bools
    #: per taint set, the TaintToleration reason (None: tolerated)
    taint_reasons: list[str | None]


def _requirement_mask(r: Requirement, table: NodeTable) -> Bools:
    """``Requirement.Matches`` on every row, evaluated once per domain of its key."""
    d = table.domains(r.key)
    per_domain = np.array([r.matches({r.key: v}) for v in d.values], np.bool_)
    absent = r.matches({})
    if not per_domain.size:
        return np.full(len(table.names), absent, np.bool_)
    return np.where(d.ids >= 0, per_domain[np.where(d.ids >= 0, d.ids, 0)], absent)


def _selector_mask(sel: Selector, table: NodeTable) -> Bools:
    out = np.full(len(table.names), not sel.nothing, np.bool_)
    for r in sel.reqs:
        out &= _requirement_mask(r, table)
    return out


def _term_mask(term: NodeTerm, table: NodeTable) -> Bools:
    """``nodeSelectorTerm.match`` on every row."""
    n = len(table.names)
    if term.broken:
        return np.zeros(n, np.bool_)
    out = _selector_mask(term.labels, table) if term.labels is not None else np.ones(n, np.bool_)
    for op, value in term.fields or ():
        same = table.names_array() == value
        out &= same if op == "In" else ~same
    return out


def affinity_mask(required: RequiredNodeAffinity, table: NodeTable) -> Bools:
    """``RequiredNodeAffinity.Match`` on every row (kept while no row's labels change)."""
    n = len(table.names)
    if required.anything:
        return np.ones(n, np.bool_)
    found = table._masks.get(required)
    if found is None:
        found = np.ones(n, np.bool_)
        for k, v in required.selector:
            found &= _requirement_mask(Requirement(k, "In", (v,)), table)
        if required.terms is not None:
            any_term = np.zeros(n, np.bool_)
            for t in required.terms:
                any_term |= _term_mask(t, table)
            found &= any_term
        table._masks[required] = found
    return found


def node_masks(pod: PodInfo, table: NodeTable) -> NodeMasks:
    affinity_ok = affinity_mask(pod.sched.required, table)
    reasons = [_first_untolerated(pod, taints) for taints in table.taint_sets]
    taints_ok = np.array([r is None for r in reasons], np.bool_)[table.taint_set]
    return NodeMasks(affinity_ok, taints_ok, reasons)


def filter_all(
    pod: PodInfo,
    table: NodeTable,
    nodes: Sequence[NodeInfo],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
    state: CycleState | None = None,
    masks: NodeMasks | None = None,
) -> Filtered:
    """The default filter chain on every node (``RunFilterPluginsWithNominatedPods``);
    ``state``: the pod's PreFilter state from the cache (:func:`.cyclestate.vector_prefilter`)."""
    n = len(table.names)
    masks = masks if masks is not None else node_masks(pod, table)
    sched = pod.sched
    # NodeUnschedulable: tolerating the unschedulable taint is the normal rule
    unsched = table.unschedulable & (not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT))
    earlier = unsched.copy()
    name_bad = np.zeros(n, np.bool_)
    if sched.node_name:
        name_bad = np.array([name != sched.node_name for name in table.names], np.bool_) & ~earlier
        earlier |= name_bad
    # TaintToleration: the first untolerated NoSchedule/NoExecute taint, per distinct taint list
    taint_bad = ~masks.taints_ok & ~earlier
    earlier |= taint_bad
    # NodeAffinity: nodeSelector and required node affinity
    selector_bad = ~masks.affinity_ok & ~earlier
    earlier |= selector_bad
    # NodePorts, per distinct set of ports in use
    ports_bad = np.zeros(n, np.bool_)
    if sched.host_ports:
        by_set = np.array([nodeports.conflicts(sched.host_ports, used) for used in table.port_sets], np.bool_)
        ports_bad = by_set[table.port_set] & ~earlier
        earlier |= ports_bad
    # nominated pods of at least this priority count on their node (RunFilterPluginsWithNominatedPods)
    extra_pods, extra_requests, by_hand = _nominated_load(pod, table, nodes, nominated_by_node, state)
    # NodeResourcesFit: every shortage, pod count first
    too_many = (table.pods + extra_pods + 1 > table.allowed_pods) & ~earlier
    short: list[tuple[str, Bools]] = []
    if not pod.requests_nothing:
        extra = sorted(k for k in pod.requests if k not in FIT_ORDER and k != "pods")
        for r in [*FIT_ORDER, *extra]:
            want = pod.requests.get(r, 0)
            if want <= 0 or r not in table.alloc:
                continue
            unit = _unit(r, want)
            assert unit is not None  # (supports() checked it)
            requested = table.requested[r] + extra_requests[r] if r in extra_requests else table.requested[r]
            short.append((f"Insufficient {r}", (unit > table.alloc[r] - requested) & ~earlier))
    resource_bad = too_many.copy()
    for _, mask in short:
        resource_bad |= mask
    earlier |= resource_bad
    # PodTopologySpread and InterPodAffinity, from the counts per domain
    stages: list[tuple[Bools, str, str, str]] = []
    if state is not None and state.spread is not None:
        missing, skewed = podtopologyspread.vector_filter(pod, state.spread, table)
        stages += [
            (missing & ~earlier, UNRESOLVABLE, podtopologyspread.ERR_LABEL, podtopologyspread.NAME),
            (skewed & ~earlier, UNSCHEDULABLE, podtopologyspread.ERR_CONSTRAINTS, podtopologyspread.NAME),
        ]
        earlier |= missing | skewed
    if state is not None and state.affinity is not None:
        aff, anti, existing = interpodaffinity.vector_filter(state.affinity, table)
        stages += [
            (aff & ~earlier, UNRESOLVABLE, interpodaffinity.ERR_AFFINITY, interpodaffinity.NAME),
            (anti & ~earlier, UNSCHEDULABLE, interpodaffinity.ERR_ANTI, interpodaffinity.NAME),
            (existing & ~earlier, UNSCHEDULABLE, interpodaffinity.ERR_EXISTING_ANTI, interpodaffinity.NAME),
        ]
        earlier |= aff | anti | existing
    fits = ~earlier
    statuses: dict[int, NodeStatus] = {}
    for i in by_hand:  # nominated pods this table cannot count exactly, or whose pods matter: node by node
        status = run_filters(pod, nodes[i], nominated_by_node.get(table.names[i], ()), state)
        fits[i] = status.fits
        if not status.fits:
            statuses[i] = status
    reasons = _Reasons(
        table,
        [
            (unsched, UNRESOLVABLE, NODE_UNSCHEDULABLE, "NodeUnschedulable"),
            (name_bad, UNRESOLVABLE, NODE_NAME_MISMATCH, "NodeName"),
            (taint_bad, UNRESOLVABLE, "", "TaintToleration"),
            (selector_bad, UNRESOLVABLE, SELECTOR_MISMATCH, nodeaffinity.NAME),
            (ports_bad, UNSCHEDULABLE, nodeports.ERR_REASON, nodeports.NAME),
        ],
        masks.taint_reasons,
        too_many,
        short,
        stages,
    )
    return Filtered(fits, statuses, reasons)


def _nominated_load(
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
                memo[name] = _NominatedMemo(nominated, node.version, priority, {p.key for p in nominated}, load)
        if not load.count:
            continue
        if pod_dependent or load.ports:
            by_hand.append(i)
            continue
        rows.append(i)
        counted.append(load.count)
        for r, unit in load.units:
            at, values = amounts.setdefault(r, ([], []))
            at.append(i)
            values.append(unit)
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
class _NominatedMemo:
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
            unit = _unit(r, nanos)
            if unit is None:
                exact = False
            else:
                units.append((r, unit))
    return _Load(len(here), tuple(units), any(p.sched.host_ports for p in here), exact)


class _Reasons(dict[int, tuple[str, tuple[str, ...], str]]):
    """A failing node's (code, reasons, plugin), computed when first asked for. Each row
    fails at most one stage (the masks are exclusive, in the chain's order)."""

    def __init__(
        self,
        table: NodeTable,
        before: list[tuple[Bools, str, str, str]],
        taint_reasons: list[str | None],
        too_many: Bools,
        short: list[tuple[str, Bools]],
        after: list[tuple[Bools, str, str, str]],
    ) -> None:
        super().__init__()
        self._table = table
        self._before, self._after = before, after
        self._taint_reasons = taint_reasons
        self._too_many, self._short = too_many, short

    def kinds(self, rows: Int64s) -> Int64s:
        """Per row given, a number that is the same for nodes failing for the same reasons."""
        bits = np.zeros(rows.size, np.int64)
        bit = 0
        for mask, *_ in (*self._before, *self._after):
            bits |= mask[rows].astype(np.int64) << bit
            bit += 1
        bits |= self._too_many[rows].astype(np.int64) << bit
        for n, (_, mask) in enumerate(self._short):
            bits |= mask[rows].astype(np.int64) << (bit + 1 + n)
        taint = np.where(self._before[2][0][rows], self._table.taint_set[rows] + 1, 0)
        return bits | taint << 32

    def __missing__(self, i: int) -> tuple[str, tuple[str, ...], str]:
        for mask, code, reason, plugin in self._before:
            if mask[i]:
                if plugin == "TaintToleration":
                    found = self._taint_reasons[int(self._table.taint_set[i])]
                    assert found is not None
                    reason = found
                return (code, (reason,), plugin)
        reasons = [TOO_MANY_PODS] if self._too_many[i] else []
        reasons += [why for why, mask in self._short if mask[i]]
        if reasons:
            return (UNSCHEDULABLE, tuple(reasons), "NodeResourcesFit")
        for mask, code, reason, plugin in self._after:
            if mask[i]:
                return (code, (reason,), plugin)
        raise KeyError(i)


def _first_untolerated(pod: PodInfo, taints: tuple[Taint, ...]) -> str | None:
    probe = NodeInfo("", 0, {}, {}, list(taints))
    return untolerated_taint(pod, probe)


# -- scores ----------------------------------------------------------------------------------
@dataclass(slots=True)
class Scored:
    """Weighted totals of the feasible nodes, in the order given, and the best five."""

    totals: Int64s
    best: list[NodeScore]


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
) -> Scored:
    """The default profile's scores for ``rows`` (feasible nodes in processing order), as
    :func:`scores.score_nodes` computes them; a plugin whose PreScore skips is left out."""
    plugins: dict[str, Int64s] = {
        "NodeResourcesFit": _row_scores(
            table,
            ("least", pod.nonzero_cpu, pod.nonzero_memory),
            rows,
            lambda stale: _least_allocated(pod, table, stale),
            lambda row: least_allocated(pod, nodes[row]),
        ),
        "NodeResourcesBalancedAllocation": _row_scores(
            table,
            ("balanced", pod.requests.get("cpu", 0), pod.requests.get("memory", 0)),
            rows,
            lambda stale: _balanced(pod, table, stale, nodes),
            lambda row: balanced_allocation(pod, nodes[row]),
        ),
    }
    raw = np.array([_prefer_no_schedule(pod, s) for s in table.taint_sets], np.int64)[table.taint_set[rows]]
    worst = int(raw.max()) if raw.size else 0
    plugins["TaintToleration"] = (
        np.full(rows.size, MAX_NODE_SCORE, np.int64) if worst == 0 else MAX_NODE_SCORE - raw * MAX_NODE_SCORE // worst
    )
    sched = pod.sched
    if sched.preferred is not None:
        pref = np.zeros(rows.size, np.int64)
        for w, t in sched.preferred:
            pref += w * _term_mask(t, table)[rows]
        high = int(pref.max()) if pref.size else 0
        plugins[nodeaffinity.NAME] = pref * MAX_NODE_SCORE // high if high > 0 else pref
    if index is not None:
        masks = masks if masks is not None else node_masks(pod, table)
        spread = podtopologyspread.vector_score(
            pod, table, index, rows, default_selector, masks.affinity_ok, masks.taints_ok
        )
        if spread is not None:
            plugins[podtopologyspread.NAME] = spread
        ipa = interpodaffinity.vector_score(pod, table, index, rows)
        if ipa is not None:
            plugins[interpodaffinity.NAME] = ipa
    images = _image_locality(pod, table, rows)
    if images is not None:
        plugins[imagelocality.NAME] = images
    names = [p for p in PLUGIN_ORDER if p in plugins]
    totals = np.zeros(rows.size, np.int64)
    for p in names:
        totals += plugins[p] * WEIGHTS[p]
    # the best ``top`` as a stable sort by descending total keeps them (ties in the order given)
    order = np.argsort(-totals, kind="stable")[:top]
    columns = [(p, plugins[p][order].tolist()) for p in names]
    best = [
        NodeScore(table.names[row], total, {p: column[k] for p, column in columns})
        for k, (row, total) in enumerate(zip(rows[order].tolist(), totals[order].tolist(), strict=True))
    ]
    return Scored(totals, best)


def _image_locality(pod: PodInfo, table: NodeTable, rows: Int64s) -> Int64s | None:
    """ImageLocality per image set; None when it gives every node 0 (it changes no total)."""
    images = pod.sched.images
    if not images or not any(table.image_sets):
        return None
    holders = table.holders()
    total = len(table.names)
    by_set = np.array(
        [imagelocality.score(images, pod.sched.num_containers, s, holders, total) for s in table.image_sets],
        np.int64,
    )
    out = by_set[table.image_set[rows]]
    return out if out.any() else None


@dataclass(slots=True)
class _ScoreColumn:
    """One plugin's score of every row for one pod shape, and which rows still hold it
    (:meth:`NodeTable.refresh` marks a row whose node changed)."""

    values: Int64s
    fresh: Bools


#: score columns kept per table at most (pod shapes x plugins)
_COLUMNS_KEPT: Final = 64
#: at most this many stale rows are scored node by node (each numpy call costs as much)
_BY_HAND_ROWS: Final = 16


def _row_scores(
    table: NodeTable,
    key: tuple[object, ...],
    rows: Int64s,
    vector: Callable[[Int64s], Int64s],
    one: Callable[[int], int],
) -> Int64s:
    """A score that depends on the pod's shape (``key``) and the row alone, for ``rows``:
    kept per row until the row changes. A few stale rows are scored node by node (the
    reference the vector form equals), more at once by ``vector``. Between two cycles of a
    workload one node changes: every other row's score is the one kept."""
    column = table.score_columns.get(key)
    if column is None:
        if len(table.score_columns) >= _COLUMNS_KEPT:
            table.score_columns.clear()
        n = len(table.names)
        column = table.score_columns[key] = _ScoreColumn(np.zeros(n, np.int64), np.zeros(n, np.bool_))
    stale = rows[~column.fresh[rows]]
    if stale.size:
        if stale.size <= _BY_HAND_ROWS:
            for row in stale.tolist():
                column.values[row] = one(row)
        else:
            column.values[stale] = vector(stale)
        column.fresh[stale] = True
    return column.values[rows]


def _least_allocated(pod: PodInfo, table: NodeTable, rows: Int64s) -> Int64s:
    total = np.zeros(rows.size, np.int64)
    memory = _unit("memory", pod.nonzero_memory)
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


def _balanced(pod: PodInfo, table: NodeTable, rows: Int64s, nodes: Sequence[NodeInfo]) -> Int64s:
    fractions = []
    present = []
    for r in ("cpu", "memory"):
        if r not in table.alloc:
            present.append(np.zeros(rows.size, np.bool_))
            fractions.append(np.zeros(rows.size, np.float64))
            continue
        cap = table.alloc[r][rows]
        want = _unit(r, pod.requests.get(r, 0)) or 0
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


def _prefer_no_schedule(pod: PodInfo, taints: tuple[Taint, ...]) -> int:
    prefer = [t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not any(tolerates(x, t) for x in prefer))
