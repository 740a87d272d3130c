"""PodDisruptionBudgets as preemption reads them: ``status.disruptionsAllowed`` as the
disruption controller computes it (``pkg/controller/disruption: getExpectedPodCount``,
``countHealthyPods``): healthy (running, not terminating) matching pods minus what must
stay available."""

from __future__ import annotations

from collections.abc import Iterable

from ledgerlet_core.model.k8s.objects import PodDisruptionBudget
from ledgerlet_core.model.k8s.selectors import matches
from ledgerlet_core.scheduling.info import PodInfo
from ledgerlet_core.scheduling.preemption import PDB


def resolve_int_or_percent(value: int | str, total: int, *, up: bool) -> int:
    """An IntOrString: an int, or a percentage of ``total`` (rounded up, as the PDB controller)."""
    if isinstance(value, int):
        return value
    pct = int(value.rstrip("%"))
    return -(-total * pct // 100) if up else total * pct // 100


def disruptions_allowed(pdb: PodDisruptionBudget, healthy: int) -> int:
    spec = pdb.spec
    if spec.min_available is not None:
        want = resolve_int_or_percent(spec.min_available, healthy, up=True)
    elif spec.max_unavailable is not None:
        want = healthy - resolve_int_or_percent(spec.max_unavailable, healthy, up=True)
    else:
        want = 0
    return max(healthy - want, 0)


def pdb_views(pdbs: Iterable[PodDisruptionBudget], pods: Iterable[PodInfo]) -> list[PDB]:
    """Each budget with what it allows now, given the pods the scheduler knows."""
    running = [p for p in pods if not p.terminating]
    views = []
    for pdb in pdbs:
        ns = pdb.metadata.namespace or "default"
        healthy = sum(1 for p in running if p.namespace == ns and matches(pdb.spec.selector, p.labels))
        views.append(PDB(pdb.metadata.name, ns, pdb.spec.selector, disruptions_allowed(pdb, healthy)))
    return views
