"""InterPodAffinity: required affinity and anti-affinity (the incoming pod's, and existing
pods' anti-affinity against it) and the preferred score.

Upstream ``framework/plugins/interpodaffinity``: ``PreFilter`` counts, per (topology key,
value), the existing pods whose required anti-affinity terms match the incoming pod, the
pods that match *all* its required affinity terms and the pods matching each of its
anti-affinity terms (terminating pods included: the cache holds them until they are gone);
``Filter`` refuses a node where an affinity term's key is missing or no matching pod is in
its domain (UnschedulableAndUnresolvable, unless no pod anywhere matches and the pod matches
its own terms), where one of its anti-affinity terms has a match (Unschedulable), or where an
existing pod's anti-affinity forbids it (Unschedulable); ``updateWithPod`` is the dry run's
AddPod/RemovePod. ``PreScore``/``Score``/``NormalizeScore``: the incoming pod's preferred
terms against every pod, existing pods' required affinity (``hardPodAffinityWeight``, 1)
and preferred terms against the incoming pod, summed per (key, value), scaled min..max to
0..100. Namespace selectors read the namespace's ``kubernetes.io/metadata.name`` label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.scheduling.domains import ArrayCounts, Bools, Int64s, PairCounts
from ledgerlet_core.scheduling.plugins.base import AllNodes, FirstOf, ScoreNodes, Verdict
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, UNSCHEDULABLE, NodeStatus, interned
from ledgerlet_core.scheduling.terms import AffinityTerm

if TYPE_CHECKING:
    from ledgerlet_core.model.k8s.selection import Selector
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.index import PodIndex
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo
    from ledgerlet_core.scheduling.table import NodeTable

NAME: Final = "InterPodAffinity"
ERR_EXISTING_ANTI: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_AFFINITY: Final = "node(s) didn't match pod affinity rules"
ERR_ANTI: Final = "node(s) didn't match pod anti-affinity rules"
#: ``InterPodAffinityArgs.hardPodAffinityWeight`` default
HARD_POD_AFFINITY_WEIGHT: Final = 1
MAX_NODE_SCORE: Final = 100


def matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    return bool(terms) and all(t.match.matches(pod.namespace, pod.labels) for t in terms)


@dataclass(slots=True)
class FilterState:
    pod: PodInfo
    existing: PairCounts
    affinity: PairCounts
    anti: PairCounts
    #: the node table the counts are arrays over (None: dicts, node by node)
    table: NodeTable | None = None

    def clone(self) -> FilterState:
        return FilterState(self.pod, self.existing.copy(), self.affinity.copy(), self.anti.copy(), self.table)

    def update(self, other: PodInfo, node: NodeInfo, delta: int) -> None:
        """``updateWithPod``: ``other`` added to or removed from ``node``."""
        labels, table = node.labels, self.table

        def bump(counts: PairCounts, key: str) -> None:
            if key in labels:
                counts.add(key, labels[key], delta, table.domains(key).id_of if table is not None else None)

        for t in other.sched.anti_affinity:
            if t.match.matches(self.pod.namespace, self.pod.labels):
                bump(self.existing, t.topology_key)
        if matches_all(self.pod.sched.affinity, other):
            for t in self.pod.sched.affinity:
                bump(self.affinity, t.topology_key)
        for t in self.pod.sched.anti_affinity:
            if t.match.matches(other.namespace, other.labels):
                bump(self.anti, t.topology_key)


def filter_state(pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterState | None:
    """``PreFilter`` node by node; None: nothing to filter (Skip)."""
    state = FilterState(pod, PairCounts(), PairCounts(), PairCounts())
    aff, anti = pod.sched.affinity, pod.sched.anti_affinity
    for node in nodes:
        labels = node.labels
        for other in node.affinity_pods.values():
            for t in other.sched.anti_affinity:
                if t.match.matches(pod.namespace, pod.labels) and t.topology_key in labels:
                    state.existing.add_dict(t.topology_key, labels[t.topology_key], 1)
        if not aff and not anti:
            continue
        for other in node.pods.values():
            if matches_all(aff, other):
                for t in aff:
                    if t.topology_key in labels:
                        state.affinity.add_dict(t.topology_key, labels[t.topology_key], 1)
            for t in anti:
                if t.topology_key in labels and t.match.matches(other.namespace, other.labels):
                    state.anti.add_dict(t.topology_key, labels[t.topology_key], 1)
    if state.existing.empty() and not aff and not anti:
        return None
    return state


def filter_node(state: FilterState, node: NodeInfo) -> tuple[bool, str] | None:
    """``Filter`` on one node: None when it passes, else (unresolvable, reason)."""
    pod, labels = state.pod, node.labels
    exist = True
    for t in pod.sched.affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return True, ERR_AFFINITY
        if state.affinity.get(t.topology_key, value) <= 0:
            exist = False
    if not exist and not (state.affinity.empty() and matches_all(pod.sched.affinity, pod)):
        return True, ERR_AFFINITY
    if not state.anti.empty():
        for t in pod.sched.anti_affinity:
            value = labels.get(t.topology_key)
            if value is not None and state.anti.get(t.topology_key, value) > 0:
                return False, ERR_ANTI
    if state.existing.blocks(labels):
        return False, ERR_EXISTING_ANTI
    return None


def _per_key(table: NodeTable, key: str, counts: Int64s) -> ArrayCounts:
    d = table.domains(key)
    return ArrayCounts(d.id_of, counts, np.ones(d.n, np.bool_))


def _add(counts: PairCounts, key: str, arr: ArrayCounts) -> None:
    found = counts.by_key.get(key)
    if found is None:
        counts.by_key[key] = arr
    else:
        assert isinstance(found, ArrayCounts)
        found.counts += arr.counts


def vector_filter_state(pod: PodInfo, table: NodeTable, index: PodIndex) -> FilterState | None:
    """:func:`filter_state` from the cache's counts per node, summed per domain (kept by
    the index from one pod to the next)."""
    state = FilterState(pod, PairCounts(), PairCounts(), PairCounts(), table)
    for term_key in index.terms():
        kind, _, term = term_key
        if kind == "anti" and term.match.matches(pod.namespace, pod.labels):
            key = term.topology_key
            _add(state.existing, key, _per_key(table, key, index.per_domain(table.domains(key), key, term=term_key)))
    aff, anti = pod.sched.affinity, pod.sched.anti_affinity
    if aff:
        together = tuple(t.match for t in aff)
        for t in aff:
            key = t.topology_key
            _add(state.affinity, key, _per_key(table, key, index.per_domain(table.domains(key), key, together)))
    for t in anti:
        key = t.topology_key
        _add(state.anti, key, _per_key(table, key, index.per_domain(table.domains(key), key, (t.match,))))
    if state.existing.empty() and not aff and not anti:
        return None
    return state


def _positive(counts: PairCounts, table: NodeTable, key: str) -> Bools:
    """The rows whose domain of ``key`` holds a positive count (a row without the key: no)."""
    c = counts.by_key.get(key)
    d = table.domains(key)
    if c is None or not d.n:
        return np.zeros(d.ids.size, np.bool_)
    assert isinstance(c, ArrayCounts)
    return ((c.counts > 0) & c.present)[d.ids] & d.labelled


def vector_filter(state: FilterState, table: NodeTable) -> tuple[Bools, Bools, Bools]:
    """:func:`filter_node` on every row: (affinity: unresolvable, anti-affinity, existing
    pods' anti-affinity), each row in the first that refuses it."""
    pod = state.pod
    n = len(table.names)
    missing = np.zeros(n, np.bool_)
    exist = np.ones(n, np.bool_)
    for t in pod.sched.affinity:
        missing |= table.domains(t.topology_key).ids < 0
        exist &= _positive(state.affinity, table, t.topology_key)
    if pod.sched.affinity and state.affinity.empty() and matches_all(pod.sched.affinity, pod):
        exist[:] = True
    affinity_bad = missing | ~exist
    anti_bad = np.zeros(n, np.bool_)
    if not state.anti.empty():
        for t in pod.sched.anti_affinity:
            anti_bad |= _positive(state.anti, table, t.topology_key)
    existing_bad = np.zeros(n, np.bool_)
    for key in state.existing.by_key:
        existing_bad |= _positive(state.existing, table, key)
    anti_bad &= ~affinity_bad
    existing_bad &= ~affinity_bad & ~anti_bad
    return affinity_bad, anti_bad, existing_bad


# -- Score -------------------------------------------------------------------------------------------
def _existing_terms(other: PodInfo) -> list[tuple[int, AffinityTerm]]:
    """An existing pod's terms that count toward the incoming pod, with their weights."""
    s = other.sched
    out = [(HARD_POD_AFFINITY_WEIGHT, t) for t in s.affinity] if HARD_POD_AFFINITY_WEIGHT > 0 else []
    out += list(s.preferred_affinity)
    out += [(-w, t) for w, t in s.preferred_anti_affinity]
    return out


def score(pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo]) -> list[int] | None:
    """``PreScore`` + ``Score`` + ``NormalizeScore`` node by node; None: skipped."""
    own = [*pod.sched.preferred_affinity, *((-w, t) for w, t in pod.sched.preferred_anti_affinity)]
    topo: dict[str, dict[str, int]] = {}
    for node in all_nodes:
        labels = node.labels
        if not labels:
            continue
        others = node.pods.values() if own else node.affinity_pods.values()
        for other in others:
            for w, t in own:
                if t.topology_key in labels and t.match.matches(other.namespace, other.labels):
                    by_value = topo.setdefault(t.topology_key, {})
                    by_value[labels[t.topology_key]] = by_value.get(labels[t.topology_key], 0) + w
            for w, t in _existing_terms(other):
                if t.topology_key in labels and t.match.matches(pod.namespace, pod.labels):
                    by_value = topo.setdefault(t.topology_key, {})
                    by_value[labels[t.topology_key]] = by_value.get(labels[t.topology_key], 0) + w
    if not topo:
        return None
    raw = [sum(v.get(node.labels[k], 0) for k, v in topo.items() if k in node.labels) for node in feasible]
    low, high = min(raw, default=0), max(raw, default=0)
    diff = high - low
    return [int(float(MAX_NODE_SCORE) * (float(s - low) / float(diff))) if diff > 0 else 0 for s in raw]


def vector_score(pod: PodInfo, table: NodeTable, index: PodIndex, rows: Int64s) -> Int64s | None:
    """:func:`score` for the feasible ``rows`` from the cache's per-node counts."""
    labelled = table.labelled
    sums: dict[str, Int64s] = {}
    seen = False

    def add(key: str, weight: int, per_row: Int64s) -> None:
        nonlocal seen
        d = table.domains(key)
        where = (d.ids >= 0) & labelled
        if not per_row[where].any():
            return
        seen = True
        counts = d.counts(where, per_row)
        sums[key] = sums[key] + weight * counts if key in sums else weight * counts

    for w, t in pod.sched.preferred_affinity:
        add(t.topology_key, w, index.every((t.match,)))
    for w, t in pod.sched.preferred_anti_affinity:
        add(t.topology_key, -w, index.every((t.match,)))
    for (kind, weight, term), per_row in index.terms().items():
        if kind == "anti" or not term.match.matches(pod.namespace, pod.labels):
            continue
        if kind == "aff":
            weight = HARD_POD_AFFINITY_WEIGHT
            if weight <= 0:
                continue
        add(term.topology_key, weight, per_row)
    if not seen:
        return None
    raw = np.zeros(rows.size, np.int64)
    for key, counts in sums.items():
        ids = table.domains(key).ids[rows]
        raw += np.where(ids >= 0, counts[np.where(ids >= 0, ids, 0)], 0)
    if not raw.size:
        return raw
    low, high = int(raw.min()), int(raw.max())
    diff = high - low
    if diff <= 0:
        return np.zeros(rows.size, np.int64)
    return (float(MAX_NODE_SCORE) * ((raw - low).astype(np.float64) / float(diff))).astype(np.int64)


# -- the plugin's two forms ----------------------------------------------------------------------
_AFFINITY: Final = interned(UNRESOLVABLE, (ERR_AFFINITY,), NAME)
_ANTI: Final = interned(UNSCHEDULABLE, (ERR_ANTI,), NAME)
_EXISTING: Final = interned(UNSCHEDULABLE, (ERR_EXISTING_ANTI,), NAME)
_BY_REASON: Final = {ERR_AFFINITY: _AFFINITY, ERR_ANTI: _ANTI, ERR_EXISTING_ANTI: _EXISTING}


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    if state is None or state.affinity is None:
        return FITS
    failed = filter_node(state.affinity, node)
    return FITS if failed is None else _BY_REASON[failed[1]]


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    state = nodes.state
    if state is None or state.affinity is None:
        return None
    aff, anti, existing = vector_filter(state.affinity, nodes.table)
    return FirstOf(((aff, _AFFINITY), (anti, _ANTI), (existing, _EXISTING)))


def score_one(
    pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo], default_selector: Selector | None
) -> list[int] | None:
    return score(pod, feasible, all_nodes)


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    """:func:`vector_score`; not run without the cache's per-node counts."""
    if nodes.index is None:
        return None
    return vector_score(pod, nodes.table, nodes.index, nodes.rows)
