"""PodGC's bookkeeping: the terminated pods it counts and the missing nodes it waits on.

Upstream ``pkg/controller/podgc/gc_controller.go``, every 20 s (``gcCheckPeriod``):

* ``gcTerminated`` (when ``terminatedPodGCThreshold`` > 0): the pods whose phase is
  Succeeded or Failed, beyond the threshold, are force-deleted, evicted ones first, then
  the oldest by ``creationTimestamp``, ties by name (``byEvictionAndCreationTimestamp``;
  "evicted" is ``eviction.PodIsEvicted``: phase Failed, reason Evicted). A terminated pod
  stays in the API until then (or until its owner or a user deletes it): one the kubelet
  evicted, one its node's graceful shutdown stopped, one whose containers failed for good,
  one the kubelet refused at admission; a pod whose deletion was asked for is gone instead.
* ``gcOrphaned``: a node that pods name but that does not exist is put on a delaying queue
  for ``quarantineTime`` (40 s) at the first pass that finds it missing (a later
  ``AddAfter`` keeps the earlier time); at the first pass after that, if the node is still
  missing, every pod bound to it is force-deleted whatever its phase; if it came back in
  between, nothing is.
* ``gcTerminating`` (out-of-service nodes) is in :mod:`.node_loss_controllers`;
  ``gcUnscheduledTerminating`` has nothing to do here: a pod never bound is gone as soon as
  its deletion is asked for.

Creation times are whole seconds since the epoch, as the API serializes them.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime

from ledgerlet_core.controllers.node_loss import ORPHAN_QUARANTINE
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.timefmt import parse_rfc3339

#: ``PodForceDeleted.by`` for every PodGC deletion
POD_GC: str = "pod-garbage-collector"
#: the kubelet's status reason for a pod it evicted (``pkg/kubelet/eviction``)
EVICTED_REASON: str = "Evicted"


def creation_seconds(pod: Pod | None, start: datetime, fallback_ns: int) -> int:
    """A pod's ``creationTimestamp`` in epoch seconds: its own when it has one, else
    ``start + fallback_ns`` (when the API server admitted it), truncated to the second."""
    stamp = pod.metadata.creation_timestamp if pod is not None else None
    if stamp:
        try:
            return int(parse_rfc3339(stamp).timestamp() // 1)
        except ValueError:
            pass
    return int(start.timestamp() // 1) + fallback_ns // SECOND


@dataclass(frozen=True, slots=True, order=True)
class Terminated:
    """A terminated pod in ``byEvictionAndCreationTimestamp`` order (then its key, so that
    equal names in two namespaces keep one order)."""

    not_evicted: bool
    created: int
    name: str
    key: str
    node: str = field(compare=False)


class TerminatedPods:
    """The terminated pods still in the API, for ``gcTerminated`` and ``gcOrphaned``."""

    def __init__(self) -> None:
        self._pods: dict[str, Terminated] = {}
        self._by_node: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def add(self, key: str, node: str, *, evicted: bool, created: int) -> None:
        self.remove(key)
        self._pods[key] = Terminated(not evicted, created, key.partition("/")[2] or key, key, node)
        self._by_node.setdefault(node, set()).add(key)

    def remove(self, key: str) -> Terminated | None:
        gone = self._pods.pop(key, None)
        if gone is not None:
            on = self._by_node.get(gone.node)
            if on is not None:
                on.discard(key)
                if not on:
                    del self._by_node[gone.node]
        return gone

    def excess(self, threshold: int) -> list[Terminated]:
        """The pods ``gcTerminated`` deletes now, in its order (none when the threshold is 0)."""
        count = len(self._pods) - threshold
        if threshold <= 0 or count <= 0:
            return []
        return heapq.nsmallest(count, self._pods.values())

    def on_node(self, node: str) -> list[str]:
        return sorted(self._by_node.get(node, ()))

    def nodes(self) -> set[str]:
        return set(self._by_node)


class OrphanQuarantine:
    """``gcOrphaned``'s delaying queue of missing node names."""

    def __init__(self) -> None:
        self._ready: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self._ready)

    def seen_missing(self, node: str, now: int) -> None:
        """``nodeQueue.AddAfter(node, quarantineTime)``: an earlier ready time is kept."""
        self._ready.setdefault(node, now + ORPHAN_QUARANTINE)

    def due(self, now: int) -> list[str]:
        """``discoverDeletedNodes``: the names whose quarantine is over, taken off the queue
        (the caller keeps those still missing)."""
        names = sorted(n for n, at in self._ready.items() if at <= now)
        for n in names:
            del self._ready[n]
        return names

    def waiting(self, node: str) -> bool:
        return node in self._ready
