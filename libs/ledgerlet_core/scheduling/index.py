"""Per-node counts the scheduler cache keeps up to date, so that PodTopologySpread and
InterPodAffinity read a count per node (and, by one ``bincount``, per topology domain)
instead of looking at every pod on every node for every pod they place.

* For a :class:`~.terms.PodMatch` (or several that must all hold): how many pods on each
  node match, all of them and those not terminating. A count is made on first use from
  the nodes' pods, then moved by one as a pod binds, starts terminating or leaves; the
  counts looked at least recently are dropped beyond :data:`KEPT`.
* For each (anti-)affinity term some existing pod carries: how many pods on each node
  carry it (the existing pods' side of the filter and the score).
* Either, summed per domain of a topology key once asked for (:meth:`PodIndex.per_domain`),
  then moved by one with the node's count: InterPodAffinity's PreFilter reads its counts
  per (key, value) without summing 5,000 hostnames again for every pod it places.

Rows follow the node table (:mod:`.table`); when the table is rebuilt (a node added or
removed) the counts are made again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np

from ledgerlet_core.scheduling.domains import Domains, Int64s
from ledgerlet_core.scheduling.terms import AffinityTerm, PodMatch

if TYPE_CHECKING:
    from ledgerlet_core.scheduling.info import NodeInfo, PodInfo

#: how many per-node counts are kept at most (each is two int64 columns over the nodes)
KEPT: Final = 256

Matches = tuple[PodMatch, ...]
#: (kind, weight, term): kind "aff" / "anti" (required), "paff" / "panti" (preferred,
#: weight negative for anti-affinity)
TermKey = tuple[str, int, AffinityTerm]


def pod_terms(p: PodInfo) -> list[TermKey]:
    s = p.sched
    out: list[TermKey] = [("aff", 0, t) for t in s.affinity]
    out += [("anti", 0, t) for t in s.anti_affinity]
    out += [("paff", w, t) for w, t in s.preferred_affinity]
    out += [("panti", -w, t) for w, t in s.preferred_anti_affinity]
    return out


def _pivot(m: PodMatch) -> tuple[str, ...] | None:
    """Where a count is filed, so that a pod is checked only against counts it may move:
    (namespace, key, value) of an equality requirement, (namespace,), or None (any pod)."""
    if len(m.namespaces) != 1 or not m.ns_selector.nothing:
        return None
    (ns,) = m.namespaces
    for r in m.selector.reqs:
        if r.op == "In" and len(r.values) == 1:
            return (ns, r.key, r.values[0])
    return (ns,)


class _PerDomain:
    """A per-node count summed per domain of some topology keys (each valid while the
    node table keeps the same :class:`Domains` for the key)."""

    __slots__ = ("by_key",)

    def __init__(self) -> None:
        self.by_key: dict[str, tuple[Domains, Int64s]] = {}

    def get(self, key: str, d: Domains, per_row: Int64s) -> Int64s:
        found = self.by_key.get(key)
        if found is None or found[0] is not d:
            sel = d.labelled
            counts = np.bincount(d.ids[sel], weights=per_row[sel], minlength=d.n).astype(np.int64)[: d.n]
            found = self.by_key[key] = (d, counts)
        return found[1]

    def move(self, row: int, delta: int) -> None:
        for d, counts in self.by_key.values():
            i = int(d.ids[row])
            if i >= 0:
                counts[i] += delta


@dataclass(slots=True, eq=False)
class _Count:
    matches: Matches
    all: Int64s
    live: Int64s
    #: ``all`` per domain
    domains: _PerDomain = field(default_factory=_PerDomain)

    def holds(self, p: PodInfo) -> bool:
        return all(m.matches(p.namespace, p.labels) for m in self.matches)


class PodIndex:
    def __init__(self) -> None:
        self._nodes: Sequence[NodeInfo] = ()
        self._counts: OrderedDict[Matches, _Count] = OrderedDict()
        self._filed: dict[tuple[str, ...] | None, list[_Count]] = {}
        self._terms: dict[TermKey, Int64s] | None = None
        self._term_domains: dict[TermKey, _PerDomain] = {}

    def reset(self, nodes: Sequence[NodeInfo]) -> None:
        """The node table was built again (``nodes``: its rows, in order)."""
        self._nodes = nodes
        self._counts.clear()
        self._filed.clear()
        self._terms = None
        self._term_domains.clear()

    # -- reading --------------------------------------------------------------------------
    def _count(self, matches: Matches) -> _Count:
        found = self._counts.get(matches)
        if found is not None:
            self._counts.move_to_end(matches)
            return found
        n = len(self._nodes)
        c = _Count(matches, np.zeros(n, np.int64), np.zeros(n, np.int64))
        for row, node in enumerate(self._nodes):
            for p in node.pods.values():
                if c.holds(p):
                    c.all[row] += 1
                    c.live[row] += not p.terminating
        if len(self._counts) >= KEPT:
            _, dropped = self._counts.popitem(last=False)
            self._filed[_pivot(dropped.matches[0])].remove(dropped)
        self._counts[matches] = c
        self._filed.setdefault(_pivot(matches[0]), []).append(c)
        return c

    def every(self, matches: Matches) -> Int64s:
        """Per node, the pods matching every one of ``matches`` (terminating ones too)."""
        return self._count(matches).all

    def live(self, match: PodMatch) -> Int64s:
        """Per node, the pods ``match`` counts that are not terminating."""
        return self._count((match,)).live

    def terms(self) -> dict[TermKey, Int64s]:
        """Per node, how many pods carry each (anti-)affinity term existing pods have."""
        if self._terms is None:
            self._terms = {}
            for row, node in enumerate(self._nodes):
                for p in node.affinity_pods.values():
                    self._move_terms(p, row, 1)
        return self._terms

    def per_domain(self, d: Domains, key: str, matches: Matches | None = None, term: TermKey | None = None) -> Int64s:
        """:meth:`every` (``matches``) or a term's count (``term``) summed per domain of
        ``d`` (the node table's domains of the topology ``key``): a copy, the caller's."""
        if matches is not None:
            c = self._count(matches)
            return c.domains.get(key, d, c.all).copy()
        assert term is not None
        per_row = self.terms()[term]
        return self._term_domains.setdefault(term, _PerDomain()).get(key, d, per_row).copy()

    # -- pods coming and going ---------------------------------------------------------------
    def _candidates(self, p: PodInfo) -> list[_Count]:
        out = list(self._filed.get(None, ()))
        out += self._filed.get((p.namespace,), ())
        for k, v in p.labels.items():
            out += self._filed.get((p.namespace, k, v), ())
        return out

    def _move_terms(self, p: PodInfo, row: int, delta: int) -> None:
        assert self._terms is not None
        for key in pod_terms(p):
            arr = self._terms.get(key)
            if arr is None:
                arr = self._terms[key] = np.zeros(len(self._nodes), np.int64)
            arr[row] += delta
            kept = self._term_domains.get(key)
            if kept is not None:
                kept.move(row, delta)

    def added(self, p: PodInfo, row: int) -> None:
        if not self._filed and self._terms is None:
            return
        for c in self._candidates(p):
            if c.holds(p):
                c.all[row] += 1
                c.live[row] += not p.terminating
                c.domains.move(row, 1)
        if self._terms is not None and p.sched.has_affinity_terms:
            self._move_terms(p, row, 1)

    def removed(self, p: PodInfo, row: int) -> None:
        if not self._filed and self._terms is None:
            return
        for c in self._candidates(p):
            if c.holds(p):
                c.all[row] -= 1
                c.live[row] -= not p.terminating
                c.domains.move(row, -1)
        if self._terms is not None and p.sched.has_affinity_terms:
            self._move_terms(p, row, -1)

    def terminating(self, p: PodInfo, row: int) -> None:
        """``p`` (not terminating until now) starts terminating."""
        for c in self._candidates(p):
            if c.holds(p):
                c.live[row] -= 1
