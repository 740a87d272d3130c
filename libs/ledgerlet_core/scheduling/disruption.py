"""PodDisruptionBudgets as preemption reads them: ``status.disruptionsAllowed`` as the
disruption controller computes it.

Upstream ``pkg/controller/disruption/disruption.go``: ``getPodsForPdb`` (the pods of the
budget's namespace its selector matches; a nil selector matches none, an empty one all),
``getExpectedPodCount`` (``maxUnavailable``: expected = the summed scale of the pods'
controllers, desired healthy = expected - maxUnavailable, at least 0; ``minAvailable`` as an
integer: desired = it, expected = the number of pods; as a percentage: expected = the
controllers' scale, desired = the percentage of it rounded up), ``getExpectedScale`` (a pod
without a controller is left out; a ReplicaSet that a Deployment controls counts as the
Deployment's scale, its own when that Deployment is gone (``getScaleController``); a
controller that cannot be found, or whose kind has no scale (a Job, a DaemonSet), fails the
sync: ``failSafe`` sets disruptionsAllowed to 0), ``countHealthyPods`` (not being deleted,
and Ready: here, started by its kubelet) and ``updatePdbStatus`` (disruptionsAllowed =
healthy - desired, and 0 when negative or when no pod is expected).
``intstr.GetScaledValueFromIntOrPercent`` rounds a percentage up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ledgerlet_core.model.k8s.objects import LabelSelector, PodDisruptionBudget, Workload
from ledgerlet_core.model.k8s.selection import Selector, label_selector
from ledgerlet_core.scheduling.info import PodInfo
from ledgerlet_core.scheduling.preemption import PDB

#: the kinds the disruption controller finds a scale for (``dc.finders()``)
SCALED_KINDS = frozenset({"ReplicationController", "ReplicaSet", "Deployment", "StatefulSet"})


@dataclass(frozen=True, slots=True)
class Controller:
    """A workload controller as the scheduler and the disruption controller read it."""

    namespace: str
    kind: str
    name: str
    #: its pods' selector (``spec.selector``; the template's labels where a scenario omits it)
    selector: Selector
    #: ``spec.replicas`` (the scale subresource)
    replicas: int
    #: the Deployment that controls this ReplicaSet (its scale counts instead)
    deployment: str = ""


def workload_controllers(w: Workload, replica_set: str = "") -> list[Controller]:
    """A workload as controllers: itself, and for a Deployment the ReplicaSet it runs its
    current template with (``replica_set``: that ReplicaSet's name). A ReplicaSet that a
    Deployment controls (by its ``ownerReferences``) says so."""
    ns = w.metadata.namespace or "default"
    selector = label_selector(w.spec.selector or LabelSelector(match_labels=dict(w.spec.template.metadata.labels)))
    replicas = w.spec.replicas if w.spec.replicas is not None else 1
    deployment = ""
    if w.kind == "ReplicaSet":
        deployment = next((r.name for r in w.metadata.owner_references if r.controller and r.kind == "Deployment"), "")
    out = [Controller(ns, w.kind, w.metadata.name, selector, replicas, deployment)]
    if w.kind == "Deployment" and replica_set:
        out.append(Controller(ns, "ReplicaSet", replica_set, selector, replicas, w.metadata.name))
    return out


class SyncFailed(ValueError):
    """What makes the disruption controller fail safe (disruptionsAllowed 0)."""


def scaled_value(value: int | str, total: int) -> int:
    """``GetScaledValueFromIntOrPercent(value, total, roundUp=true)``."""
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise SyncFailed(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")
    try:
        pct = int(value[:-1])
    except ValueError:
        raise SyncFailed(f"invalid value for IntOrString: invalid value {value!r}") from None
    return -(-pct * total // 100)


def expected_scale(
    pods: Iterable[PodInfo], controllers: Mapping[tuple[str, str, str], Controller], namespace: str
) -> int:
    """``getExpectedScale``: the sum of the scales of the pods' controllers, each once."""
    scale: dict[tuple[str, str], int] = {}
    for p in pods:
        owner = p.sched.owner
        if owner is None:
            continue  # unmanaged: left out
        kind, name = owner
        c = controllers.get((namespace, kind, name))
        if c is None or kind not in SCALED_KINDS:
            what = "no controllers" if c is None or kind in SCALED_KINDS else f"{kind} has no scale subresource:"
            raise SyncFailed(f"found {what} for pod {p.name!r}")
        deployment = controllers.get((namespace, "Deployment", c.deployment)) if c.deployment else None
        if kind == "ReplicaSet" and deployment is not None:
            scale[("Deployment", deployment.name)] = deployment.replicas
        else:
            # (a ReplicaSet whose Deployment is gone: the scale finder reads its own scale)
            scale[(kind, name)] = c.replicas
    return sum(scale.values())


@dataclass(frozen=True, slots=True)
class Budget:
    """A budget's status as the controller writes it."""

    expected: int
    desired: int
    healthy: int
    allowed: int


def budget_status(
    pdb: PodDisruptionBudget, pods: Iterable[PodInfo], controllers: Mapping[tuple[str, str, str], Controller]
) -> Budget:
    """``trySync``: the pods the budget covers, expected and desired, healthy, allowed."""
    ns = pdb.metadata.namespace or "default"
    selector = label_selector(pdb.spec.selector)
    covered = [p for p in pods if p.namespace == ns and selector.matches(p.labels)]
    spec = pdb.spec
    try:
        if spec.max_unavailable is not None:
            expected = expected_scale(covered, controllers, ns)
            desired = max(expected - scaled_value(spec.max_unavailable, expected), 0)
        elif spec.min_available is not None:
            if isinstance(spec.min_available, int):
                desired, expected = spec.min_available, len(covered)
            else:
                expected = expected_scale(covered, controllers, ns)
                desired = scaled_value(spec.min_available, expected)
        else:
            expected = desired = 0
    except SyncFailed:
        return Budget(0, 0, 0, 0)  # failSafe
    healthy = sum(1 for p in covered if not p.terminating and p.start is not None)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return Budget(expected, desired, healthy, allowed)


def pdb_views(
    pdbs: Iterable[PodDisruptionBudget],
    pods: Iterable[PodInfo],
    controllers: Mapping[tuple[str, str, str], Controller],
) -> list[PDB]:
    """Each budget with what it allows now, given the pods that exist."""
    pods = list(pods)
    views = []
    for pdb in pdbs:
        ns = pdb.metadata.namespace or "default"
        allowed = budget_status(pdb, pods, controllers).allowed
        views.append(PDB(pdb.metadata.name, ns, pdb.spec.selector, allowed))
    return views
