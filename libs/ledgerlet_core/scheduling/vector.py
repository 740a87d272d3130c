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
* nodes with nominated pods that count against them are filtered node by node;
* taints and node selectors are evaluated once per distinct taint list and label set.

Failure reasons are built only for the nodes the cycle processed and that failed (the
records' lists, the FitError message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.taints import PREFER_NO_SCHEDULE, tolerates, tolerations_tolerate_taint
from ledgerlet_core.scheduling.filters import (
    FITS,
    NODE_UNSCHEDULABLE,
    SELECTOR_MISMATCH,
    TOO_MANY_PODS,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    NodeStatus,
    run_filters,
    untolerated_taint,
)
from ledgerlet_core.scheduling.info import FIT_ORDER, NodeInfo, PodInfo
from ledgerlet_core.scheduling.scores import MAX_NODE_SCORE, WEIGHTS, NodeScore, balanced_allocation

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
    #: per node, an index into ``taint_sets`` / ``label_sets``
    taint_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    label_set: Int64s = field(default_factory=lambda: np.zeros(0, np.int64))
    taint_sets: list[tuple[Taint, ...]] = field(default_factory=list)
    label_sets: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    #: False when a value cannot be held exactly: the cycle then runs node by node
    exact: bool = True
    _taint_ids: dict[tuple[tuple[str, str, str], ...], int] = field(default_factory=dict)
    _label_ids: dict[tuple[tuple[str, str], ...], int] = field(default_factory=dict)

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
        t.label_set = np.zeros(n, np.int64)
        for i, node in enumerate(nodes):
            t.refresh(i, node)
        return t

    def refresh(self, i: int, node: NodeInfo) -> None:
        """Row ``i`` from the node as the cache holds it now."""
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
        self.label_set[i] = self._intern_labels(tuple(sorted(node.labels.items())))

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

    def statuses(self, rows: Int64s) -> list[NodeStatus]:
        """The status of each row, nodes failing alike sharing one (built once per kind)."""
        kind = self._codes.kinds()
        kind = np.where(self.fits, -1, kind)[rows]
        for i in self._statuses:  # filtered node by node: a kind of their own
            kind = np.where(rows == i, -2 - i, kind)
        found: dict[int, NodeStatus] = {-1: FITS}
        out = []
        for k, row in zip(kind.tolist(), rows.tolist(), strict=True):
            status = found.get(k)
            if status is None:
                status = found[k] = self.status(row)
            out.append(status)
        return out


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


def filter_all(
    pod: PodInfo,
    table: NodeTable,
    nodes: Sequence[NodeInfo],
    nominated_by_node: Mapping[str, Sequence[PodInfo]],
) -> Filtered:
    """The default filter chain on every node (``RunFilterPluginsWithNominatedPods``)."""
    n = len(table.names)
    # NodeUnschedulable: tolerating the unschedulable taint is the normal rule
    unsched = table.unschedulable & (not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT))
    # TaintToleration: the first untolerated NoSchedule/NoExecute taint, per distinct taint list
    taint_reason = [_first_untolerated(pod, taints) for taints in table.taint_sets]
    taint_bad_by_set = np.array([r is not None for r in taint_reason], np.bool_)
    taint_bad = taint_bad_by_set[table.taint_set] & ~unsched
    # NodeAffinity (nodeSelector), per distinct label set
    selector = pod.node_selector
    if selector:
        ok_by_set = np.array(
            [all(dict(labels).get(k) == v for k, v in selector.items()) for labels in table.label_sets]
        )
        selector_bad = ~ok_by_set[table.label_set] & ~unsched & ~taint_bad
    else:
        selector_bad = np.zeros(n, np.bool_)
    unresolvable = unsched | taint_bad | selector_bad
    # nominated pods of at least this priority count on their node (RunFilterPluginsWithNominatedPods)
    extra_pods, extra_requests, exact = _nominated_load(pod, table, nodes, nominated_by_node)
    # NodeResourcesFit: every shortage, pod count first
    too_many = table.pods + extra_pods + 1 > table.allowed_pods
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
            short.append((f"Insufficient {r}", unit > table.alloc[r] - requested))
    resource_bad = too_many.copy()
    for _, mask in short:
        resource_bad |= mask
    fits = ~unresolvable & ~resource_bad
    statuses: dict[int, NodeStatus] = {}
    for i in exact:  # a nominated pod's request the table cannot hold exactly: node by node
        status = run_filters(pod, nodes[i], nominated_by_node.get(table.names[i], ()))
        fits[i] = status.fits
        if not status.fits:
            statuses[i] = status
    return Filtered(fits, statuses, _Reasons(table, unsched, taint_bad, taint_reason, selector_bad, too_many, short))


def _nominated_load(
    pod: PodInfo, table: NodeTable, nodes: Sequence[NodeInfo], nominated_by_node: Mapping[str, Sequence[PodInfo]]
) -> tuple[Int64s | int, dict[str, Int64s], list[int]]:
    """The pods nominated to each node that count against ``pod`` there (at least its
    priority, not itself, not already bound there): how many, and what they request.
    Rows whose nominated requests cannot be held exactly are returned to filter node by node."""
    counts: Int64s | int = 0
    requests: dict[str, Int64s] = {}
    by_hand: list[int] = []
    for name, nominated in nominated_by_node.items():
        i = table.index.get(name)
        if i is None:
            continue
        here = [p for p in nominated if p.key != pod.key and p.priority >= pod.priority and p.key not in nodes[i].pods]
        if not here:
            continue
        if isinstance(counts, int):
            counts = np.zeros(len(table.names), np.int64)
        counts[i] += len(here)
        for p in here:
            for r, nanos in p.requests.items():
                unit = _unit(r, nanos)
                if unit is None:
                    by_hand.append(i)
                    continue
                if r not in requests:
                    requests[r] = np.zeros(len(table.names), np.int64)
                requests[r][i] += unit
    return counts, requests, sorted(set(by_hand))


class _Reasons(dict[int, tuple[str, tuple[str, ...], str]]):
    """A failing node's (code, reasons, plugin), computed when first asked for."""

    def __init__(
        self,
        table: NodeTable,
        unsched: Bools,
        taint_bad: Bools,
        taint_reason: list[str | None],
        selector_bad: Bools,
        too_many: Bools,
        short: list[tuple[str, Bools]],
    ) -> None:
        super().__init__()
        self._table = table
        self._unsched, self._taint_bad, self._taint_reason = unsched, taint_bad, taint_reason
        self._selector_bad, self._too_many, self._short = selector_bad, too_many, short

    def kinds(self) -> Int64s:
        """Per node, a number that is the same for nodes failing for the same reasons."""
        bits = self._unsched.astype(np.int64) | self._selector_bad.astype(np.int64) << 1
        bits |= self._too_many.astype(np.int64) << 2
        for n, (_, mask) in enumerate(self._short):
            bits |= mask.astype(np.int64) << (3 + n)
        taint = np.where(self._taint_bad, self._table.taint_set + 1, 0)
        return bits | taint << 32

    def __missing__(self, i: int) -> tuple[str, tuple[str, ...], str]:
        if self._unsched[i]:
            return (UNRESOLVABLE, (NODE_UNSCHEDULABLE,), "NodeUnschedulable")
        if self._taint_bad[i]:
            reason = self._taint_reason[int(self._table.taint_set[i])]
            assert reason is not None
            return (UNRESOLVABLE, (reason,), "TaintToleration")
        if self._selector_bad[i]:
            return (UNRESOLVABLE, (SELECTOR_MISMATCH,), "NodeAffinity")
        reasons = [TOO_MANY_PODS] if self._too_many[i] else []
        reasons += [why for why, mask in self._short if mask[i]]
        return (UNSCHEDULABLE, tuple(reasons), "NodeResourcesFit")


def _first_untolerated(pod: PodInfo, taints: tuple[Taint, ...]) -> str | None:
    probe = NodeInfo("", 0, {}, {}, list(taints))
    return untolerated_taint(pod, probe)


# -- scores ----------------------------------------------------------------------------------
@dataclass(slots=True)
class Scored:
    """Weighted totals of the feasible nodes, in the order given, and the best five."""

    totals: Int64s
    best: list[NodeScore]


def score_all(pod: PodInfo, table: NodeTable, rows: Int64s, nodes: Sequence[NodeInfo], top: int = 5) -> Scored:
    """``LeastAllocated``, ``BalancedAllocation`` and ``TaintToleration`` for ``rows``
    (feasible nodes in processing order), as :func:`scores.score_nodes` computes them."""
    fit = _least_allocated(pod, table, rows)
    balanced = _balanced(pod, table, rows, nodes)
    raw = np.array([_prefer_no_schedule(pod, s) for s in table.taint_sets], np.int64)[table.taint_set[rows]]
    worst = int(raw.max()) if raw.size else 0
    taint = (
        np.full(rows.size, MAX_NODE_SCORE, np.int64) if worst == 0 else MAX_NODE_SCORE - raw * MAX_NODE_SCORE // worst
    )
    w = WEIGHTS
    totals = (
        fit * w["NodeResourcesFit"] + balanced * w["NodeResourcesBalancedAllocation"] + taint * w["TaintToleration"]
    )
    # the best ``top`` as a stable sort by descending total keeps them (ties in the order given)
    order = np.argsort(-totals, kind="stable")[:top]
    best = [
        NodeScore(
            table.names[int(rows[j])],
            int(totals[j]),
            {
                "NodeResourcesFit": int(fit[j]),
                "NodeResourcesBalancedAllocation": int(balanced[j]),
                "TaintToleration": int(taint[j]),
            },
        )
        for j in order
    ]
    return Scored(totals, best)


def _least_allocated(pod: PodInfo, table: NodeTable, rows: Int64s) -> Int64s:
    total = np.zeros(rows.size, np.int64)
    memory = _unit("memory", pod.nonzero_memory)
    assert memory is not None
    for want, used, cap in (
        (pod.nonzero_cpu, table.nonzero_cpu[rows], table.alloc.get("cpu", np.zeros(len(table.names), np.int64))[rows]),
        (memory, table.nonzero_memory[rows], table.alloc.get("memory", np.zeros(len(table.names), np.int64))[rows]),
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
