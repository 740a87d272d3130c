"""PodTopologySpread: the filter (DoNotSchedule constraints) and the score (ScheduleAnyway
constraints, or the cluster's default constraints for a pod without any of its own).

Upstream ``framework/plugins/podtopologyspread``: ``calPreFilterState`` (per constraint, the
matching pods counted per topology value over the nodes that carry every topology key of
the pod's constraints and pass its inclusion policies; terminating pods are not counted),
``Filter`` (a node without the key is UnschedulableAndUnresolvable; else the skew,
``count(node's value) + (pod matches) - global minimum``, must not exceed ``maxSkew``; the
minimum is 0 while there are fewer domains than ``minDomains``), ``updateWithPod`` (the
dry run's AddPod/RemovePod), ``initPreScoreState``/``PreScore``/``Score``/``NormalizeScore``
(per-node counts for ``kubernetes.io/hostname``, per-domain counts otherwise, each weighted
by ``log(domains + 2)`` plus ``maxSkew - 1``; rounded; reversed and scaled to 100) and
``buildDefaultConstraints`` with the system defaults (hostname maxSkew 3, zone maxSkew 5,
ScheduleAnyway) over the selector of the pod's ReplicaSet, StatefulSet or
ReplicationController. Upstream keeps the two smallest domain counts (``criticalPaths``);
the minimum it reads is the exact minimum (one node's domain changes at a time in a dry
run), which is what is kept here.

Each function has a node-by-node form (dicts, loops) and a form over every node at once
(:mod:`..table` columns, counts the cache keeps per node); a property test holds them
together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.selection import NOTHING, Selector
from ledgerlet_core.model.k8s.taints import NO_EXECUTE, NO_SCHEDULE, tolerations_tolerate_taint
from ledgerlet_core.scheduling.domains import ArrayCounts, Bools, DictCounts, DomainCounts, Int64s
from ledgerlet_core.scheduling.plugins.base import AllNodes, FirstOf, ScoreNodes, Verdict
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, UNSCHEDULABLE, NodeStatus, interned
from ledgerlet_core.scheduling.terms import HONOR, HOSTNAME, SYSTEM_DEFAULT, PodMatch, SpreadConstraint

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.index import PodIndex
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
    from ledgerlet_core.scheduling.table import NodeTable

NAME: Final = "PodTopologySpread"
ERR_CONSTRAINTS: Final = "node(s) didn't match pod topology spread constraints"
ERR_LABEL: Final = ERR_CONSTRAINTS + " (missing required label)"
MAX_INT32: Final = 2**31 - 1
MAX_NODE_SCORE: Final = 100


def untolerated(pod: PodInfo, taints: Sequence[Taint]) -> bool:
    """``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``."""
    return any(
        t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate_taint(pod.tolerations, t) for t in taints
    )


def included(c: SpreadConstraint, pod: PodInfo, node: NodeInfo) -> bool:
    """``matchNodeInclusionPolicies``: node affinity honoured by default, taints ignored."""
    if c.node_affinity_policy == HONOR and not pod.sched.required.matches(node.labels, node.name):
        return False
    return not (c.node_taints_policy == HONOR and untolerated(pod, node.taints))


def has_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def matching(node: NodeInfo, selector: Selector, namespace: str) -> int:
    """``countPodsMatchSelector``: pods of that namespace the selector matches, not terminating."""
    return sum(
        1 for p in node.pods.values() if not p.terminating and p.namespace == namespace and selector.matches(p.labels)
    )


def spread_match(namespace: str, selector: Selector) -> PodMatch:
    """What a constraint counts, as the cache's per-node counts are keyed (made once per
    namespace and selector object)."""
    kept = _MATCHES.get((namespace, id(selector)))
    if kept is None or kept[0] is not selector:
        if len(_MATCHES) >= _DEFAULTS_KEPT:
            _MATCHES.clear()
        kept = _MATCHES[(namespace, id(selector))] = (selector, PodMatch(frozenset({namespace}), NOTHING, selector))
    return kept[1]


_MATCHES: dict[tuple[str, int], tuple[Selector, PodMatch]] = {}


# -- Filter --------------------------------------------------------------------------------------
@dataclass(slots=True)
class FilterState:
    constraints: tuple[SpreadConstraint, ...]
    counts: list[DomainCounts]

    def clone(self) -> FilterState:
        return FilterState(self.constraints, [c.copy() for c in self.counts])

    def min_match(self, i: int) -> int:
        counts = self.counts[i]
        if counts.size() < self.constraints[i].min_domains:
            return 0
        low = counts.minimum()
        return MAX_INT32 if low is None else low

    def update(self, preemptor: PodInfo, pod: PodInfo, node: NodeInfo, delta: int) -> None:
        """``updateWithPod``: a pod added to or removed from ``node`` (as upstream, whether
        or not it is terminating)."""
        if pod.namespace != preemptor.namespace or not has_keys(node.labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if c.selector.matches(pod.labels) and included(c, preemptor, node):
                self.counts[i].add(node.labels[c.topology_key], delta)


def filter_state(pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterState | None:
    """``calPreFilterState`` node by node; None: nothing to filter (Skip)."""
    constraints = pod.sched.spread_hard
    if not constraints:
        return None
    counts: list[DomainCounts] = [DictCounts() for _ in constraints]
    for node in nodes:
        if not has_keys(node.labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if included(c, pod, node):
                counts[i].add(node.labels[c.topology_key], matching(node, c.selector, pod.namespace))
    return FilterState(constraints, counts)


def filter_node(pod: PodInfo, state: FilterState, node: NodeInfo) -> tuple[bool, str] | None:
    """``Filter`` on one node: None when it passes, else (unresolvable, reason)."""
    for i, c in enumerate(state.constraints):
        value = node.labels.get(c.topology_key)
        if value is None:
            return True, ERR_LABEL
        own = 1 if c.selector.matches(pod.labels) else 0
        if state.counts[i].get(value) + own - state.min_match(i) > c.max_skew:
            return False, ERR_CONSTRAINTS
    return None


def vector_filter_state(
    pod: PodInfo, table: NodeTable, index: PodIndex, affinity_ok: Bools, taints_ok: Bools
) -> FilterState | None:
    """:func:`filter_state` from the cache's per-node counts (``affinity_ok``: the pod's
    required node affinity per row; ``taints_ok``: no untolerated NoSchedule/NoExecute)."""
    constraints = pod.sched.spread_hard
    if not constraints:
        return None
    domains = [table.domains(c.topology_key) for c in constraints]
    keys_ok = np.ones(len(table.names), np.bool_)
    for d in domains:
        keys_ok &= d.ids >= 0
    counts: list[DomainCounts] = []
    for c, d in zip(constraints, domains, strict=True):
        rows = keys_ok.copy()
        if c.node_affinity_policy == HONOR:
            rows &= affinity_ok
        if c.node_taints_policy == HONOR:
            rows &= taints_ok
        live = index.live(spread_match(pod.namespace, c.selector))
        counts.append(ArrayCounts(d.id_of, d.counts(rows, live), d.present(rows)))
    return FilterState(constraints, counts)


def vector_filter(pod: PodInfo, state: FilterState, table: NodeTable) -> tuple[Bools, Bools]:
    """:func:`filter_node` on every row of a state built by :func:`vector_filter_state`:
    (missing the key: unresolvable, skew too large: unschedulable), first constraint first."""
    n = len(table.names)
    decided = np.zeros(n, np.bool_)
    missing = np.zeros(n, np.bool_)
    skewed = np.zeros(n, np.bool_)
    for i, c in enumerate(state.constraints):
        ids = table.domains(c.topology_key).ids
        lacks = (ids < 0) & ~decided
        missing |= lacks
        decided |= lacks
        counts = state.counts[i]
        assert isinstance(counts, ArrayCounts)
        own = 1 if c.selector.matches(pod.labels) else 0
        over = (ids >= 0) & ~decided & (counts.per_node(ids) + own - state.min_match(i) > c.max_skew)
        skewed |= over
        decided |= over
    return missing, skewed


# -- Score ---------------------------------------------------------------------------------------
def score_constraints(pod: PodInfo, default_selector: Selector | None) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """The soft constraints the score uses, and whether every topology key is required
    (the pod's own constraints; the system defaults do not require them)."""
    if pod.sched.own_spread:
        return pod.sched.spread_soft, True
    if default_selector is None or default_selector.empty or default_selector.nothing:
        return (), False
    kept = _DEFAULTS.get(id(default_selector))
    if kept is None or kept[0] is not default_selector:
        if len(_DEFAULTS) >= _DEFAULTS_KEPT:
            _DEFAULTS.clear()
        made = tuple(SpreadConstraint(skew, key, default_selector) for key, skew in SYSTEM_DEFAULT)
        kept = _DEFAULTS[id(default_selector)] = (default_selector, made)
    return kept[1], False


#: the system default constraints of a controller's selector (by the selector object: a
#: controller's pods share it, and every cycle of one of them reads them)
_DEFAULTS: dict[int, tuple[Selector, tuple[SpreadConstraint, ...]]] = {}
_DEFAULTS_KEPT: Final = 1024


def go_round(x: float) -> int:
    """``math.Round`` for x >= 0: half away from zero."""
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def normalize(raw: Sequence[int], ignored: Sequence[bool]) -> list[int]:
    """``NormalizeScore``: fewer matching pods is better; ignored nodes 0."""
    kept = [s for s, skip in zip(raw, ignored, strict=True) if not skip]
    low = min(kept, default=2**63 - 1)
    high = max(kept, default=0)
    out = []
    for s, skip in zip(raw, ignored, strict=True):
        if skip:
            out.append(0)
        elif high == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (high + low - s) // high)
    return out


def score(
    pod: PodInfo,
    feasible: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    default_selector: Selector | None,
) -> list[int] | None:
    """``PreScore`` + ``Score`` + ``NormalizeScore`` node by node; None: skipped."""
    constraints, require_all = score_constraints(pod, default_selector)
    if not all_nodes or not constraints:
        return None
    ignored = [require_all and not has_keys(n.labels, constraints) for n in feasible]
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for node, skip in zip(feasible, ignored, strict=True):
        if skip:
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != HOSTNAME:
                counts[i].setdefault(node.labels.get(c.topology_key, ""), 0)
    scored = len(feasible) - sum(ignored)
    weights = [
        math.log((scored if c.topology_key == HOSTNAME else len(counts[i])) + 2) for i, c in enumerate(constraints)
    ]
    for node in all_nodes:
        if require_all and not has_keys(node.labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not included(c, pod, node):
                continue
            value = node.labels.get(c.topology_key, "")
            if value in counts[i]:
                counts[i][value] += matching(node, c.selector, pod.namespace)
    raw = []
    for node, skip in zip(feasible, ignored, strict=True):
        if skip:
            raw.append(0)
            continue
        total = 0.0
        for i, c in enumerate(constraints):
            here = node.labels.get(c.topology_key)
            if here is None:
                continue
            cnt = matching(node, c.selector, pod.namespace) if c.topology_key == HOSTNAME else counts[i][here]
            total += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw.append(go_round(total))
    return normalize(raw, ignored)


def vector_score(
    pod: PodInfo,
    table: NodeTable,
    index: PodIndex,
    rows: Int64s,
    default_selector: Selector | None,
    affinity_ok: Bools,
    taints_ok: Bools,
) -> Int64s | None:
    """:func:`score` for the feasible ``rows`` over every node at once."""
    constraints, require_all = score_constraints(pod, default_selector)
    if not len(table.names) or not constraints:
        return None
    domains = [table.domains(c.topology_key) for c in constraints]
    has_all: Bools | None = None  # (the rows with every key, when they are all required)
    if require_all:
        has_all = domains[0].labelled
        for d in domains[1:]:
            has_all = has_all & d.labelled
        assert has_all is not None
        ignored = ~has_all[rows]
        kept = rows[~ignored]
    else:
        ignored = np.zeros(rows.size, np.bool_)
        kept = rows
    total = np.zeros(rows.size, np.float64)
    for c, d in zip(constraints, domains, strict=True):
        if not d.n:
            continue  # no node has the key: it adds 0 everywhere
        live = index.live(spread_match(pod.namespace, c.selector))
        node_has = d.labelled[rows]
        if c.topology_key == HOSTNAME:
            weight = math.log(int(kept.size) + 2)
            cnt = live[rows]
        else:
            # a node without the key counts under "" when the keys are not all required
            bucket = d.bucket
            in_map = np.bincount(bucket[kept], minlength=d.n + 1) > 0
            weight = math.log(int(in_map.sum()) + 2)
            eligible = has_all
            if c.node_affinity_policy == HONOR:
                eligible = affinity_ok if eligible is None else eligible & affinity_ok
            if c.node_taints_policy == HONOR:
                eligible = taints_ok if eligible is None else eligible & taints_ok
            counted = live if eligible is None or eligible.all() else np.where(eligible, live, 0)
            per_bucket = np.bincount(bucket, weights=counted, minlength=d.n + 1).astype(np.int64)
            cnt = per_bucket[bucket[rows]]
        here = cnt.astype(np.float64) * weight + float(c.max_skew - 1)
        total += here if node_has.all() else np.where(node_has, here, 0.0)
    floor = np.floor(total)
    raw = (floor + (total - floor >= 0.5)).astype(np.int64)
    if not require_all and rows.size:  # (nothing ignored)
        low, high = int(raw.min()), max(int(raw.max()), 0)
        if high == 0:
            return np.full(rows.size, MAX_NODE_SCORE, np.int64)
        return MAX_NODE_SCORE * (high + low - raw) // high
    raw = np.where(ignored, 0, raw)
    if ignored.all():
        return np.zeros(rows.size, np.int64)
    low = int(raw[~ignored].min())
    high = int(max(int(raw[~ignored].max()), 0))
    out = np.full(rows.size, MAX_NODE_SCORE, np.int64) if high == 0 else MAX_NODE_SCORE * (high + low - raw) // high
    return np.where(ignored, 0, out)


# -- the plugin's two forms ----------------------------------------------------------------------
_MISSING: Final = interned(UNRESOLVABLE, (ERR_LABEL,), NAME)
_SKEWED: Final = interned(UNSCHEDULABLE, (ERR_CONSTRAINTS,), NAME)


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    if state is None or state.spread is None:
        return FITS
    failed = filter_node(pod, state.spread, node)
    if failed is None:
        return FITS
    return _MISSING if failed[0] else _SKEWED


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    state = nodes.state
    if state is None or state.spread is None:
        return None
    missing, skewed = vector_filter(pod, state.spread, nodes.table)
    return FirstOf(((missing, _MISSING), (skewed, _SKEWED)))


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    """:func:`vector_score`; not run without the cache's per-node counts."""
    if nodes.index is None:
        return None
    masks = nodes.masks
    return vector_score(
        pod, nodes.table, nodes.index, nodes.rows, nodes.default_selector, masks.affinity_ok, masks.taints_ok
    )
