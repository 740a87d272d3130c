"""NodeAffinity: the pod's nodeSelector and required node affinity (filter), its preferred
terms (score).

Upstream ``framework/plugins/nodeaffinity/node_affinity.go``: ``PreFilter`` (a node set
when every required term names nodes with ``metadata.name In``; "pod affinity terms
conflict" when those sets leave none), ``Filter`` (UnschedulableAndUnresolvable "node(s)
didn't match Pod's node affinity/selector"), ``PreScore`` (skipped without preferred
terms), ``Score`` (the summed weights of the preferred terms the node matches) and
``NormalizeScore`` (``helper.DefaultNormalizeScore``: scaled so the best node has 100).
The matching itself is :mod:`..terms`; here node by node, and over every row of the
node table once per distinct label value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.model.k8s.selection import NodeTerm, RequiredNodeAffinity, Requirement, Selector
from ledgerlet_core.scheduling.plugins.base import AllNodes, ScoreNodes, Uniform, Verdict
from ledgerlet_core.scheduling.status import FITS, UNRESOLVABLE, NodeStatus, interned
from ledgerlet_core.scheduling.table import Bools, Int64s, NodeTable

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.cyclestate import CycleState
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

NAME: Final = "NodeAffinity"
ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"
MAX_NODE_SCORE: Final = 100


def preferred_score(terms: Sequence[tuple[int, NodeTerm]], labels: Mapping[str, str], name: str) -> int:
    return sum(w for w, t in terms if t.matches(labels, name))


def default_normalize(scores: Sequence[int], reverse: bool = False) -> list[int]:
    """``helper.DefaultNormalizeScore``."""
    high = max(scores, default=0)
    if high <= 0:
        return [MAX_NODE_SCORE if reverse else s for s in scores]
    out = [MAX_NODE_SCORE * s // high for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out


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


def term_mask(term: NodeTerm, table: NodeTable) -> Bools:
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
    found = table.affinity_masks.get(required)
    if found is None:
        found = np.ones(n, np.bool_)
        for k, v in required.selector:
            found &= _requirement_mask(Requirement(k, "In", (v,)), table)
        if required.terms is not None:
            any_term = np.zeros(n, np.bool_)
            for t in required.terms:
                any_term |= term_mask(t, table)
            found &= any_term
        table.affinity_masks[required] = found
    return found


# -- the plugin's two forms ----------------------------------------------------------------------
_MISMATCH: Final = interned(UNRESOLVABLE, (ERR_REASON_POD,), NAME)


def filter_one(pod: PodInfo, node: NodeInfo, state: CycleState | None, extra: Sequence[PodInfo]) -> NodeStatus:
    return FITS if pod.sched.required.matches(node.labels, node.name) else _MISMATCH


def filter_all(pod: PodInfo, nodes: AllNodes) -> Verdict | None:
    if pod.sched.required.anything:
        return None
    return Uniform(~nodes.masks.affinity_ok, _MISMATCH)


def score_one(
    pod: PodInfo, feasible: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo], default_selector: Selector | None
) -> list[int] | None:
    preferred = pod.sched.preferred
    if preferred is None:
        return None
    return default_normalize([preferred_score(preferred, n.labels, n.name) for n in feasible])


def score_all(pod: PodInfo, nodes: ScoreNodes) -> Int64s | None:
    preferred = pod.sched.preferred
    if preferred is None:
        return None
    rows = nodes.rows
    pref = np.zeros(rows.size, np.int64)
    for w, t in preferred:
        pref += w * term_mask(t, nodes.table)[rows]
    high = int(pref.max()) if pref.size else 0
    return pref * MAX_NODE_SCORE // high if high > 0 else pref
